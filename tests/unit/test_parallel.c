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
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode_args.h"
#include "model_int.h"

#define MAXR 96
#define MAXS 3

struct stream {
	struct rt_vw_event *ev;
	uint8_t **buf; /* each event's encoding */
	size_t n, cap;
	uint64_t clock;
	uint32_t tid;
};

struct job {
	int nranks, nstreams[MAXR];
	struct stream s[MAXR][MAXS];
	uint64_t rng;
	bool fixed; /* clocks set by the caller: ev() leaves them */
};

static uint32_t rnd(struct job *j, uint32_t n)
{
	j->rng ^= j->rng << 13;
	j->rng ^= j->rng >> 7;
	j->rng ^= j->rng << 17;
	return (uint32_t)(j->rng % n);
}

/* One event on rank ri's stream si: id, result, then (enum rt_fname,
 * value) pairs ending with -1. Its clock advances; now and then backwards. */
static void ev(struct job *j, int ri, int si, unsigned id, int ret, bool pending, ...)
{
	struct stream *s = &j->s[ri][si];
	uint8_t *buf = calloc(1, RT_EVENT_MAX_BYTES), *fields;
	struct rt_fmt_header h;
	uint64_t dur = j->fixed ? 10 : 50 + rnd(j, 3000);
	va_list ap;

	cr_assert_not_null(buf);
	if (!j->fixed) {
		s->clock += 100 + rnd(j, 5000);
		if (rnd(j, 50) == 0 && s->clock > 20000)
			s->clock -= rnd(j, 20000); /* a clock that went back */
	}
	fields = rt_fmt_event_common(rt_fmt_event_header(buf, id, s->clock, s->clock),
				     pending ? RT_DUR_PENDING : dur, (int16_t)ret, (int8_t)ri);
	va_start(ap, pending);
	encode_args(fields, id, ap);
	va_end(ap);
	cr_assert_eq(rt_fmt_event_header_get(buf, RT_EVENT_MAX_BYTES, &h), 0);
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->ev = realloc(s->ev, sizeof(*s->ev) * s->cap);
		s->buf = realloc(s->buf, sizeof(*s->buf) * s->cap);
		cr_assert(s->ev && s->buf);
	}
	s->buf[s->n] = buf;
	s->ev[s->n++] = (struct rt_vw_event){ .id = id, .ts = s->clock, .dur = dur, .pending = pending,
					      .ret = ret, .dev = ri, .fields = buf + h.bytes + RT_COMMON_BYTES,
					      .pid = 100u + (uint32_t)ri, .tid = s->tid };
	if (!pending && !j->fixed)
		s->clock += dur;
}

#define U(x) ((uint64_t)(x))
#define COMM 0xC0ull
#define SPLIT 0x5B11ull

/* Collective seq of comm on rank ri: now and then another count. */
static void coll(struct job *j, int ri, unsigned id, uint64_t comm, uint32_t seq)
{
	uint64_t count = rnd(j, 400) == 0 ? 7 : 1024;

	int s = (int)rnd(j, (uint32_t)j->nstreams[ri]);

	if (id == RT_ID_ncclAllGather) /* no reduction op */
		ev(j, ri, s, id, 0, false, RT_FN_comm_id, comm, RT_FN_seq, U(seq), RT_FN_count, count,
		   RT_FN_datatype, U(7), -1);
	else
		ev(j, ri, s, id, 0, false, RT_FN_comm_id, comm, RT_FN_seq, U(seq), RT_FN_count, count,
		   RT_FN_datatype, U(7), RT_FN_op, U(0), -1);
}

static void build(struct job *j, uint64_t seed)
{
	static const unsigned kinds[] = { RT_ID_ncclAllGather, RT_ID_ncclReduceScatter, RT_ID_ncclAllReduce };
	int steps;

	memset(j, 0, sizeof(*j));
	j->rng = seed * 0x9E3779B97F4A7C15ull + 1;
	/* every 8th seed up to MAXR ranks: rank jobs taken in batches, logs'
	 * chunks given back by the batch (parallel.c, logs.c) */
	j->nranks = 2 + (int)rnd(j, (seed % 8 == 0 ? MAXR : 8) - 1);
	steps = 20 + (int)rnd(j, 300);
	for (int r = 0; r < j->nranks; r++) {
		j->nstreams[r] = 1 + (int)rnd(j, MAXS);
		for (int s = 0; s < j->nstreams[r]; s++) {
			j->s[r][s].clock = 1000 + rnd(j, 100000);
			j->s[r][s].tid = 100u + (uint32_t)r + 1000u * (uint32_t)s;
		}
		ev(j, r, 0, RT_ID_cudaSetDevice, 0, false, RT_FN_device, U(r), -1);
		ev(j, r, 0, RT_ID_ncclCommInitRank, 0, false, RT_FN_comm_id, COMM, RT_FN_nranks,
		   U(j->nranks + (rnd(j, 8) == 0 ? 1 : 0)), RT_FN_rank, U(r), -1);
		if (r % 2 == 0) /* the even ranks split off; their size recorded or not */
			ev(j, r, 0, RT_ID_ncclCommSplit, 0, false, RT_FN_comm_id, SPLIT, RT_FN_nranks,
			   U(rnd(j, 2) ? (j->nranks + 1) / 2 : 0), -1);
	}
	for (int r = 0; r < j->nranks; r++) {
		uint32_t seq = 0, sseq = 0;
		bool dies = rnd(j, 6) == 0;

		for (int k = 0; k < steps; k++) {
			int s = (int)rnd(j, (uint32_t)j->nstreams[r]);
			uint64_t ptr = 0x7f0000000000ull + ((uint64_t)rnd(j, 64) << 16);

			if (rnd(j, 2))
				ev(j, r, s, RT_ID_cudaMalloc, 0, false, RT_FN_ptr, ptr, RT_FN_size, U(4096), -1);
			else
				ev(j, r, s, RT_ID_cudaFree, 0, false, RT_FN_ptr, ptr, -1);
			if (rnd(j, 300) != 0) /* now and then a rank skips one */
				coll(j, r, kinds[k % 3], COMM, ++seq);
			if (r % 2 == 0 && k % 4 == 0)
				coll(j, r, RT_ID_ncclAllReduce, SPLIT, ++sseq);
			if (dies && k == steps / 2) {
				coll(j, r, RT_ID_ncclAllReduce, COMM, ++seq);
				j->s[r][0].ev[j->s[r][0].n - 1].pending = true;
				break;
			}
		}
		if (!dies)
			ev(j, r, 0, RT_ID_rt_exit, 0, false, RT_FN_status, U(0), -1);
	}
}

static void job_free(struct job *j)
{
	for (int r = 0; r < j->nranks; r++)
		for (int s = 0; s < j->nstreams[r]; s++) {
			for (size_t i = 0; i < j->s[r][s].n; i++)
				free(j->s[r][s].buf[i]);
			free(j->s[r][s].ev);
			free(j->s[r][s].buf);
		}
}

/* The model of job j on `jobs` threads, windows of about `window` events
 * (0: the default), as one string. */
static char *model(struct job *j, int jobs, int window)
{
	struct rt_vw_matcher *m = calloc(1, sizeof(*m));
	struct rt_vw_trace *t = calloc(1, sizeof(*t));
	struct rt_vw_src srcs[MAXR * MAXS];
	int nsrc = 0;
	char *out = NULL, num[32];
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	cr_assert(m && t && f);
	m->t = t;
	snprintf(t->dir, sizeof(t->dir), "/nonexistent/ranktrace-test");
	t->nranks = j->nranks;
	t->ranks = calloc((size_t)j->nranks, sizeof(*t->ranks));
	for (int r = 0; r < j->nranks; r++) {
		struct rt_vw_rank *rk = &t->ranks[r];

		snprintf(rk->name, sizeof(rk->name), "rank-%05d", r);
		rk->readable = true;
		rk->meta.rank = rk->meta.local_rank = r;
		rk->meta.world_size = j->nranks;
		rk->meta.pid = 100 + r;
		rk->live = rt_vw_map_new();
		rk->comm_device = rk->init_device = rk->dup_of = -1;
		for (int s = 0; s < j->nstreams[r]; s++)
			srcs[nsrc++] = (struct rt_vw_src){ .c = rt_vw_cursor_mem(j->s[r][s].ev, j->s[r][s].n, 0),
							   .rank = r };
	}
	snprintf(num, sizeof(num), "%d", window);
	if (window)
		setenv("RANKTRACE_ROUND_EVENTS", num, 1);
	else
		unsetenv("RANKTRACE_ROUND_EVENTS");
	rt_vw_set_jobs(jobs);
	cr_assert_eq(rt_vw_parallel_pass(t, m, srcs, nsrc), 0);
	for (int k = 0; k < nsrc; k++)
		rt_vw_cursor_close(srcs[k].c);
	rt_vw_model_finish(m);
	fprintf(f, "verdict %s events %llu diverged %d %llx %u\n", rt_verdicts[t->verdict].word,
		(unsigned long long)t->events, t->diverged, (unsigned long long)t->div_comm, t->div_seq);
	{
		char why[600];

		rt_vw_inconclusive_text(t, why, sizeof(why));
		fprintf(f, "inconclusive %s\n", why);
	}
	for (int i = 0; i < t->nfindings; i++) {
		char text[RT_VW_FINDING_TEXT];

		rt_vw_finding_text(t, &t->findings[i], text, sizeof(text));
		fprintf(f, "finding %s %d %s\n", rt_findings[t->findings[i].kind].id, t->findings[i].rank,
			text);
	}
	for (int i = 0; i < t->ncomms; i++)
		fprintf(f, "comm %llx %d %d\n", (unsigned long long)t->comms[i].id, t->comms[i].nranks,
			t->comms[i].split);
	for (int r = 0; r < t->nranks; r++) {
		const struct rt_vw_rank *rk = &t->ranks[r];
		char end[128];

		rt_vw_rank_end(rk, end, sizeof(end));
		fprintf(f, "rank %d: %llu events, %llu allocs, %llu frees, %llu unknown, peak %llu, %s\n", r,
			(unsigned long long)rk->events, (unsigned long long)rk->allocs,
			(unsigned long long)rk->frees, (unsigned long long)rk->unknown_frees,
			(unsigned long long)rk->dev_peak[r % RT_VW_MAX_DEV], end);
	}
	fclose(f);
	rt_vw_free(t);
	free(m);
	return out;
}

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

/* A round logging far more records than it aims at is cut short (windows of 40 events aim at
 * 40 records): some of these are, the model the same (test_logs.c: the replay's bound). */
Test(parallel, a_round_that_logs_too_much_is_cut_short_and_the_model_is_the_same)
{
	unsigned long cuts = rt_vw_pass_cuts;

	for (uint64_t seed = 8; seed <= 64; seed += 8) { /* every 8th: up to 96 ranks */
		struct job j;
		char *ref, *got;

		build(&j, seed);
		ref = model(&j, 1, 0);
		for (int jobs = 1; jobs <= 2; jobs++) {
			got = model(&j, jobs, 40);
			cr_assert_str_eq(got, ref, "seed %llu, --jobs %d", (unsigned long long)seed, jobs);
			free(got);
		}
		free(ref);
		job_free(&j);
	}
	cr_assert_gt(rt_vw_pass_cuts, cuts, "no round was cut short");
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
/* Job j's model is ref for --jobs 1 and 2 and windows of 1 to 5 events
 * and the whole trace. */
static void same_everywhere(struct job *j, const char *ref)
{
	static const int jobs[] = { 1, 2 }, windows[] = { 1, 2, 3, 4, 5, 0 };

	for (size_t a = 0; a < sizeof(jobs) / sizeof(jobs[0]); a++)
		for (size_t b = 0; b < sizeof(windows) / sizeof(windows[0]); b++) {
			char *got = model(j, jobs[a], windows[b]);

			cr_assert_str_eq(got, ref, "--jobs %d, windows of %d events:\n%s\nexpected:\n%s",
					 jobs[a], windows[b], got, ref);
			free(got);
		}
}

static void at(struct job *j, int r, uint64_t clock)
{
	j->s[r][0].clock = clock;
}

static void allreduce(struct job *j, int r, uint64_t comm, uint64_t count)
{
	ev(j, r, 0, RT_ID_ncclAllReduce, 0, false, RT_FN_comm_id, comm, RT_FN_seq, U(1), RT_FN_count,
	   count, RT_FN_datatype, U(7), RT_FN_op, U(0), -1);
}

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
