/* SPDX-License-Identifier: MIT */
/* test_parallel.c - the model's parallel pass (viewer/load/parallel.c) gives the
 * same model for any number of threads and any window size.
 *
 * Each case is a random job built in memory (seeded: a failure names its
 * seed): 2-8 ranks of 1-3 threads each (a stream per thread, on clocks that
 * drift, some going backwards), a communicator whose init disagrees on its
 * size now and then, a split communicator (its size recorded, or only
 * counted from who joins), collectives that now and then diverge or are
 * skipped by a rank, allocations and frees across threads, ranks that die
 * inside a call. The model of one thread with one window (the two phases one
 * after the other) is the reference; 2, 3 and 8 threads with windows of 1,
 * 3, 40 and 1000 events must give the same digest: verdict, findings in
 * order, first divergence, communicators, and every rank's counters. One
 * hand-built case pins a stream clock going back across a window edge. */
#include "pass_job.h"

static void same_model(uint64_t seed)
{
	static const int jobs[] = { 1, 2, 3, 8 }, windows[] = { 1, 3, 40, 1000, 0 };
	struct job j;
	char *ref;

	build(&j, seed);
	ref = model(&j, 1, 0);
	cr_assert(strstr(ref, "verdict "), "seed %llu: no model", (unsigned long long)seed);
	for (size_t a = 0; a < sizeof(jobs) / sizeof(jobs[0]); a++)
		for (size_t b = 0; b < sizeof(windows) / sizeof(windows[0]); b++) {
			char *got = model(&j, jobs[a], windows[b]);

			cr_assert_str_eq(got, ref, "seed %llu, --jobs %d, windows of %d events:\n%s\nexpected:\n%s",
					 (unsigned long long)seed, jobs[a], windows[b], got, ref);
			free(got);
		}
	free(ref);
	job_free(&j);
}

Test(parallel, same_model_for_any_jobs_and_windows)
{
	for (uint64_t seed = 1; seed <= 40; seed++)
		same_model(seed);
}

/* A stream's clock that goes back does not move a collective before what
 * its rank did first. Two communicators diverge at their first all-reduce;
 * the finding names the one whose collective completed first. Rank 0 calls
 * C1's (count 1024) at t=1500, frees at t=2000, then calls C0's (count 7)
 * on a clock gone back to t=300; rank 1 calls C0's (count 1024) at t=250
 * and C1's (count 9) at t=1600. C1 completes first (t=1600, C0 after
 * rank 0's t=2000), for one window and for every window size: a record
 * logged at its event's own time instead of its rank's clock so far would
 * put C0 first with one window and C1 first with a window edge between
 * 1600 and 2000. */
Test(parallel, a_clock_that_goes_back_keeps_the_rank_order)
{
	struct job j = { .nranks = 2, .nstreams = { 1, 1 }, .fixed = true };
	char *ref;

	for (int r = 0; r < 2; r++) {
		j.s[r][0].tid = 100u + (uint32_t)r;
		at(&j, r, 100);
		ev(&j, r, 0, RT_ID_cudaSetDevice, 0, false, RT_FN_device, U(r), -1);
		for (uint64_t c = 0; c < 2; c++) {
			at(&j, r, 200 + c);
			ev(&j, r, 0, RT_ID_ncclCommInitRank, 0, false, RT_FN_comm_id, COMM + c,
			   RT_FN_nranks, U(2), RT_FN_rank, U(r), -1);
		}
	}
	at(&j, 0, 1500);
	allreduce(&j, 0, COMM + 1, 1024);
	at(&j, 0, 2000);
	ev(&j, 0, 0, RT_ID_cudaFree, 0, false, RT_FN_ptr, U(0x7f0000000000), -1);
	at(&j, 0, 300);
	allreduce(&j, 0, COMM, 7);
	at(&j, 1, 250);
	allreduce(&j, 1, COMM, 1024);
	at(&j, 1, 1600);
	allreduce(&j, 1, COMM + 1, 9);
	for (int r = 0; r < 2; r++) {
		at(&j, r, 2100 + 100 * (uint64_t)r);
		ev(&j, r, 0, RT_ID_rt_exit, 0, false, RT_FN_status, U(0), -1);
	}
	ref = model(&j, 1, 0);
	cr_assert(strstr(ref, "collective mismatch at sequence 1 of communicator 00000000000000c1"),
		  "C1 completed first:\n%s", ref);
	same_everywhere(&j, ref);
	free(ref);
	job_free(&j);
}

/* An injected skip (a collective of sequence 0) reaches the matcher in
 * the replay's order, not when the rank job ran: rank 0 calls AllReduce #1
 * at t=300 and skips one at t=2000, rank 1 calls AllGather #1 at t=500. At
 * #1 the two disagree one against one, and a tie goes against the rank a
 * skip left short: rank 0 had skipped nothing by then, so rank 1 is the odd
 * one, for every window. The matcher read the rank model's field: with one
 * window the skip was already there (rank 0 named), with small ones not
 * (fuzz_parallel found it). */
Test(parallel, an_injected_skip_is_seen_in_time_order)
{
	struct job j = { .nranks = 2, .nstreams = { 1, 1 }, .fixed = true };
	char *ref;

	for (int r = 0; r < 2; r++) {
		j.s[r][0].tid = 100u + (uint32_t)r;
		at(&j, r, 200);
		ev(&j, r, 0, RT_ID_ncclCommInitRank, 0, false, RT_FN_comm_id, COMM, RT_FN_nranks, U(2),
		   RT_FN_rank, U(r), -1);
	}
	at(&j, 0, 300);
	allreduce(&j, 0, COMM, 1024);
	at(&j, 1, 500);
	ev(&j, 1, 0, RT_ID_ncclAllGather, 0, false, RT_FN_comm_id, COMM, RT_FN_seq, U(1), RT_FN_count,
	   U(1024), RT_FN_datatype, U(7), -1);
	at(&j, 0, 2000);
	ev(&j, 0, 0, RT_ID_ncclAllReduce, 0, false, RT_FN_comm_id, COMM, RT_FN_seq, U(0), RT_FN_count,
	   U(1024), RT_FN_datatype, U(7), RT_FN_op, U(0), -1);
	ref = model(&j, 1, 0);
	cr_assert(strstr(ref, "rank 1 called AllGather"), "rank 1 is the odd one:\n%s", ref);
	same_everywhere(&j, ref);
	free(ref);
	job_free(&j);
}

/* The digest is not blind: the random jobs do diverge, die and split. */
Test(parallel, the_jobs_cover_what_matters)
{
	int mismatch = 0, died = 0, unsized = 0;

	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct job j;
		char *d;

		build(&j, seed);
		d = model(&j, 2, 3);
		mismatch += strstr(d, "collective mismatch") != NULL;
		died += strstr(d, "died in") != NULL || strstr(d, "trace ends in") != NULL;
		unsized += strstr(d, "comm 5b11") != NULL;
		free(d);
		job_free(&j);
	}
	cr_assert_gt(mismatch, 3, "only %d of 40 jobs diverge", mismatch);
	cr_assert_gt(died, 3, "only %d of 40 jobs have a rank dying", died);
	cr_assert_gt(unsized, 20, "only %d of 40 jobs split", unsized);
}

/* A time no clock reaches (2^64-1: the window end saturated there and the
 * rounds repeated forever) is damage: the pass ends, the rank is damaged
 * with the time named, its events before it are kept; times going back
 * and equal across ranks are not damage. */
static char *hostile(uint64_t bad, int jobs, int window)
{
	struct job j = { .nranks = 2, .nstreams = { 1, 1 }, .fixed = true };
	char *d;

	for (int r = 0; r < 2; r++) {
		j.s[r][0].tid = 100u + (uint32_t)r;
		at(&j, r, 500);
		ev(&j, r, 0, RT_ID_ncclCommInitRank, 0, false, RT_FN_comm_id, COMM, RT_FN_nranks, U(2),
		   RT_FN_rank, U(r), -1);
		at(&j, r, 400); /* back in time, and equal across ranks */
		allreduce(&j, r, COMM, 64);
	}
	at(&j, 0, bad);
	ev(&j, 0, 0, RT_ID_cudaFree, 0, false, RT_FN_ptr, U(0x7f0000000000), -1);
	for (int r = 0; r < 2; r++) {
		at(&j, r, 600);
		ev(&j, r, 0, RT_ID_rt_exit, 0, false, RT_FN_status, U(0), -1);
	}
	d = model(&j, jobs, window);
	job_free(&j);
	return d;
}

Test(parallel, a_time_no_clock_reaches_is_damage_and_the_pass_ends, .timeout = 60)
{
	static const uint64_t bad[] = { UINT64_MAX, UINT64_MAX - 1, 1ull << 63, RT_TS_UNUSED };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		for (int w = 0; w < 3; w++) {
			char *d = hostile(bad[i], 1 + w, w == 1 ? 1 : w == 2 ? 3 : 0);

			cr_assert(strstr(d, "verdict inconclusive"), "time %llx:\n%s", (unsigned long long)bad[i], d);
			cr_assert(strstr(d, "cannot be ordered"), "time %llx: damage named:\n%s",
				  (unsigned long long)bad[i], d);
			free(d);
		}
	{
		char *d = hostile(550, 2, 1);

		cr_assert(strstr(d, "verdict healthy"), "a plain time:\n%s", d);
		free(d);
	}
}

/* aligned_alloc, failing from its fail_at-th call on (-1: never): the
 * pass's logs and rank jobs are its only users once the ranks exist. */
static int fail_at = -1;

void *aligned_alloc(size_t align, size_t size)
{
	void *p;

	if (fail_at == 0)
		return NULL;
	if (fail_at > 0)
		fail_at--;
	return posix_memalign(&p, align, size) ? NULL : p;
}

/* j's ranks as a trace with no directory, its streams as sources at srcs
 * (*nsrc), and a matcher for it (*m). */
static struct rt_vw_trace *bare_trace(const struct job *j, struct rt_vw_matcher **m, struct rt_vw_src *srcs,
				      int *nsrc)
{
	struct rt_vw_trace *t = calloc(1, sizeof(*t));

	*m = calloc(1, sizeof(**m));
	cr_assert(*m && t);
	(*m)->t = t;
	t->nranks = j->nranks;
	t->ranks = calloc((size_t)j->nranks, sizeof(*t->ranks));
	*nsrc = 0;
	for (int r = 0; r < j->nranks; r++) {
		t->ranks[r].live = rt_vw_map_new();
		t->ranks[r].comm_device = t->ranks[r].init_device = t->ranks[r].dup_of = -1;
		for (int s = 0; s < j->nstreams[r]; s++)
			srcs[(*nsrc)++] = (struct rt_vw_src){ .c = rt_vw_cursor_mem(j->s[r][s].ev, j->s[r][s].n, 0),
							      .rank = r };
	}
	return t;
}

/* Out of memory for the ranks' logs (the first aligned_alloc) or a rank
 * job's sources (a later one): the pass fails, frees what it took and
 * crashes nowhere (unplan used to walk the logs it failed to allocate). */
Test(parallel, out_of_memory_fails_the_pass_and_frees_what_it_took)
{
	struct job j;

	build(&j, 7);
	for (int at = 0; at < 3; at++) {
		struct rt_vw_matcher *m;
		struct rt_vw_src srcs[MAXR * MAXS];
		int nsrc;
		struct rt_vw_trace *t = bare_trace(&j, &m, srcs, &nsrc);

		rt_vw_set_jobs(2);
		fail_at = at;
		cr_assert_eq(rt_vw_parallel_pass(t, m, srcs, nsrc), -1, "aligned_alloc call %d failed", at);
		fail_at = -1;
		for (int k = 0; k < nsrc; k++)
			rt_vw_cursor_close(srcs[k].c);
		rt_vw_free(t);
		free(m);
	}
	job_free(&j);
}

/* The work after reading (rt_vw_parallel_pass_then: the load closes the
 * streams and asks each rank's live state there, beside the last replays):
 * once runs once and each covers [0, n) once, chunk by chunk, on one thread
 * or two, after every rank job (each rank's events all modelled by then);
 * and when the pass fails for memory, all the same (the load counts on
 * its streams being closed). */
struct after_count {
	struct rt_vw_trace *t;
	const struct job *j;
	int once, seen[100];
	bool all_read, check_read;
};

static void count_once(void *arg)
{
	__atomic_add_fetch(&((struct after_count *)arg)->once, 1, __ATOMIC_RELAXED);
}

static void count_each(void *arg, int lo, int hi)
{
	struct after_count *a = arg;

	for (int i = lo; i < hi; i++)
		__atomic_add_fetch(&a->seen[i], 1, __ATOMIC_RELAXED);
	for (int r = 0; a->check_read && r < a->j->nranks; r++) {
		uint64_t n = 0;

		for (int s = 0; s < a->j->nstreams[r]; s++)
			n += a->j->s[r][s].n;
		if (a->t->ranks[r].events != n)
			a->all_read = false;
	}
}

Test(parallel, the_work_after_reading_runs_once_after_every_rank_job_failed_or_not)
{
	struct job j;

	build(&j, 11);
	for (int run = 0; run < 5; run++) {
		int at = run < 2 ? -1 : run - 2; /* runs 2-4: out of memory at each allocation */
		struct rt_vw_matcher *m;
		struct rt_vw_src srcs[MAXR * MAXS];
		int nsrc;
		struct rt_vw_trace *t = bare_trace(&j, &m, srcs, &nsrc);
		struct after_count a = { .t = t, .j = &j, .all_read = true, .check_read = at < 0 };
		struct rt_vw_after_read after = { count_once, count_each, 100, &a };

		rt_vw_set_jobs(run % 2 ? 2 : 1);
		setenv("RANKTRACE_ROUND_EVENTS", "3", 1); /* many rounds, replays beside the jobs */
		fail_at = at;
		cr_assert_eq(rt_vw_parallel_pass_then(t, m, srcs, nsrc, &after), at < 0 ? 0 : -1, "run %d", run);
		fail_at = -1;
		unsetenv("RANKTRACE_ROUND_EVENTS");
		cr_assert_eq(a.once, 1, "run %d: once ran %d times", run, a.once);
		for (int i = 0; i < 100; i++)
			cr_assert_eq(a.seen[i], 1, "run %d: index %d covered %d times", run, i, a.seen[i]);
		cr_assert(a.all_read, "run %d: a chunk ran before every rank's events were modelled", run);
		for (int k = 0; k < nsrc; k++)
			rt_vw_cursor_close(srcs[k].c);
		rt_vw_free(t);
		free(m);
	}
	job_free(&j);
}
