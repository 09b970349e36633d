/* SPDX-License-Identifier: MIT */
/* parallel.c - the model's pass on several cores: ranks are independent
 * until matching.
 *
 * Phase 1 (rank jobs): a job takes one rank, merges that rank's streams by
 * time and runs the rank model (model.c) on its events. What crosses ranks
 * (communicator sizes learned, collectives to match) is not done there: the
 * rank model's sink (struct rt_vw_sink) is the rank's log, each record
 * under the rank's clock: the largest order time (rt_vw_order_ts) of its
 * events so far, so each log is sorted.
 * Phase 2 (replay): the logs merged in one order, (clock, rank, order
 * logged), into the matcher.
 *
 * The two phases overlap by time windows. Round k runs every rank's job up
 * to window end W_k: its events with order time < W_k; its next event, and
 * every later one, is logged with a clock >= W_k (a window end saturated
 * at 2^64-1 has no end: that round takes all). So once round k is done
 * for all ranks, the records logged so far all sort before any record still
 * to come: replaying them (a replay job) is exactly a prefix of the merge of
 * the whole logs. A round may end earlier for the jobs still to run than
 * for those done (windows.c cuts a round that logs too much short): W_k is
 * then the smallest end any job had, and the replay takes the records with
 * clocks below it only, the others' later ones waiting in their logs (the
 * replay's bound, logs.c). Round k+1's rank jobs run beside that replay; the replay
 * gives back the log chunks it has read (logs.c). The result depends neither on the
 * windows (sized on the fly to about RT_ROUND_EVENTS events, RT_JOB_EVENTS
 * per rank at least; tests make them tiny with RANKTRACE_ROUND_EVENTS; the
 * first from the streams' first packet headers, else from a round 0 that
 * reads each stream's first event) nor on `jobs`: one thread runs the same
 * jobs in turn.
 *
 * Threads take jobs under one mutex (rank jobs a batch at a time): the
 * first thread takes a replay first when one is due (the matcher stays in
 * one core's caches), then every thread its own slice of the round's ranks
 * (a rank's model, cursors and log stay on one core), then the others';
 * phase 1 runs at most RT_LOOKAHEAD rounds ahead of the replay. Memory: the
 * records of those rounds only. */
#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "model_int.h"
#include "env.h"
#include "logs.h"
#include "pass_int.h"
#include "rt_sort.h"

/* rank jobs a thread takes under the mutex at once: about RT_BATCH_EVENTS
 * of the round's events, RT_BATCH_MAX jobs at most and a quarter of a
 * thread's share of the round's ranks (at 16,384 ranks a job a take was 2
 * takes of the mutex a rank and round) */
enum { RT_BATCH_MAX = 16, RT_BATCH_EVENTS = 8192 };
/* records a replay sorts at once (logs.c: a slice of the clocks; more
 * where more share a clock), 72 bytes of room each: 1.2 MB, about the
 * replaying core's L2 cache (1 MiB on this VM). Slices of 64 Ki (4.5 MB,
 * out to the shared L3) replayed 16,384 x 2,000 in 25-40 % more time, its
 * last replay (alone on the critical path) 230 ms instead of 178; 8 Ki
 * were as fast, 32 Ki between (the verdict's whole time and CPU: the same
 * within this VM's noise). */
#define RT_REPLAY_SLICE ((size_t)16 << 10)
/* pages read and not yet dropped, all cursors together: the more cursors,
 * the sooner each drops (a madvise is a TLB shootdown, an IPI to the other
 * threads' cores: 900 of them were 7 % of the CPU time at 64 ranks) */
#define RT_READ_BUDGET ((size_t)64 << 20)
#define RT_DROP_MIN ((size_t)64 << 10)
/* a read fault maps 64 KiB around it (the kernel's fault-around; with the
 * page cache's large folios, the folio: 192-432 KiB on this VM): beyond
 * RT_READ_BUDGET / RT_FAULT_AROUND cursors, each rank job unmaps its
 * cursors' pages when it pauses (16,384 paused cursors held 1 GB). From
 * 256 cursors on instead, 1,024 x 20,000 peaked at 120 MiB, not 300, for
 * 10 % more CPU: not taken. */
#define RT_FAULT_AROUND ((size_t)64 << 10)
#define RT_DROP_MAX ((size_t)2 << 20)

int rt_vw_jobs; /* 0: one per core */
bool rt_vw_pass_no_peek; /* tests: round 0 though the streams' packets could be peeked */
unsigned long rt_vw_pass_cuts; /* tests: rounds cut short (windows.c) */

void rt_vw_set_jobs(int n)
{
	rt_vw_jobs = n > 0 ? n : 0;
}

/* Rank job: rj's events with order time < w through the model, its log's
 * chunks from cc (this thread's). Returns the events modelled; rj->more
 * and rj->next say what is left. */
static uint64_t model_rank(struct pass *p, struct rank_job *rj, uint64_t w, struct rt_vw_chunk_cache *cc)
{
	struct rt_vw_log *l = &p->logs[rj->ri];
	struct rt_vw_src *s = rj->s;
	const struct rt_vw_sink to = rt_vw_log_sink(l);
	int n = rj->n;
	uint64_t count = 0;

	l->cache = cc; /* the chunks it logs into: this thread's */
	if (l->round_n)
		l->last_n = l->round_n;
	l->round_n = 0;
	if (!rj->started) {
		rj->started = true;
		for (int k = 0; k < n; k++) {
			uint64_t bytes, ns;

			rj->live[k] = rt_vw_src_first(p->t, &s[k]);
			if (rj->live[k] && !p->peeked && rt_vw_cursor_pace(s[k].c, &bytes, &ns))
				rj->pace += (double)bytes / (double)ns;
		}
	}
	for (;;) {
		int best = -1;
		uint64_t key = 0;

		for (int k = 0; k < n; k++)
			if (rj->live[k] && (best < 0 || rt_vw_order_ts(&s[k].e) < key)) {
				best = k;
				key = rt_vw_order_ts(&s[k].e);
			}
		rj->more = best >= 0;
		if (best < 0 || (key >= w && w != UINT64_MAX)) { /* UINT64_MAX: no end */
			rj->next = key;
			break;
		}
		if (key > l->clock)
			l->clock = key;
		rt_vw_on_event(p->t, &to, rj->ri, &s[best].e);
		rj->live[best] = rt_vw_src_next(p->t, &s[best]);
		count++;
	}
	return count;
}

/* Under mu, rank job rj paused: its live cursors' pages to drop, and those
 * of the cursors that ended in it (kept mapped till close: keep_mapped). */
static void release_job(struct pass *p, const struct rank_job *rj)
{
	for (int k = 0; p->release && k < rj->n; k++) {
		void *addr;
		size_t len;

		if (!(rj->live[k] ? rt_vw_cursor_release_range(rj->s[k].c, &addr, &len) :
				    rt_vw_cursor_ended_range(rj->s[k].c, &addr, &len)))
			continue;
		rt_vw_dontneed_add(&p->drops, addr, len);
	}
}

/* The last rank job of a round ended (under mu): publish the round's
 * records, size the next window, list the ranks with events left. */
static void end_round(struct pass *p)
{
	uint64_t lo = UINT64_MAX;
	int n = 0;

	rt_vw_dontneed_flush(&p->drops);
	/* every rank read all its events before the round's window end (the
	 * smallest any of its jobs had: rt_vw_pass_check_window): the records
	 * with clocks below it are all logged */
	p->pub_bound = p->w;
	for (int i = 0; i < p->t->nranks; i++) {
		p->logs[i].pub = p->logs[i].n;
		p->failed |= p->logs[i].oom || p->t->ranks[i].lists_lost;
	}
	for (int k = 0; k < p->ntodo; k++) {
		struct rank_job *rj = &p->rj[p->todo[k]];

		if (!rj->more)
			continue;
		p->todo[n++] = p->todo[k];
		if (rj->next < lo)
			lo = rj->next;
	}
	p->ntodo = n;
	p->next = p->done = 0;
	memset(p->taken, 0, (size_t)n * sizeof(*p->taken));
	memset(p->pos, 0, sizeof(p->pos));
	p->back = n - 1;
	p->finished = n == 0;
	if (p->finished)
		p->pub_bound = UINT64_MAX;
	rt_vw_pass_next_window(p, lo);
}

/* Under mu: a replay job, if one is due and none runs: its records' limits
 * and the clock they are complete below. */
static bool take_replay(struct pass *p, uint64_t *lim, uint64_t *bound)
{
	if (p->replaying || p->replayed == p->rounds_done)
		return false;
	for (int i = 0; i < p->t->nranks; i++)
		lim[i] = p->logs[i].pub;
	*bound = p->pub_bound;
	p->replaying = true;
	return true;
}

/* Under mu: the next rank job for thread id, from its own slice of the
 * round's list first: a rank stays on one core from round to round (its
 * model, cursors and log stay in that core's caches); then another's,
 * from the end. -1: none left. */
static int take_rank(struct pass *p, int id)
{
	int a = (int)((long)id * p->ntodo / p->threads), b = (int)((long)(id + 1) * p->ntodo / p->threads);

	/* where each search stopped: a round's takes cost O(ranks), not
	 * O(ranks^2) (taken entries stay taken until the round ends) */
	for (int i = p->pos[id] > a ? p->pos[id] : a; i < b; i++)
		if (!p->taken[i]) {
			p->pos[id] = i + 1;
			return i;
		}
	p->pos[id] = b;
	for (int i = p->back; i >= 0; i--)
		if (!p->taken[i]) {
			p->back = i - 1;
			return i;
		}
	p->back = -1;
	return -1;
}

/* Under mu: how many rank jobs a take (RT_BATCH_EVENTS). */
static int take_batch(const struct pass *p)
{
	uint64_t per_job = p->round_target / (uint64_t)p->ntodo + 1;
	uint64_t b = RT_BATCH_EVENTS / per_job, share = (uint64_t)p->ntodo / ((uint64_t)p->threads * 4);

	b = b < share ? b : share;
	return b < 1 ? 1 : b > RT_BATCH_MAX ? RT_BATCH_MAX : (int)b;
}

struct worker_arg {
	struct pass *p;
	int id;
};

/* Under mu, every rank job done: a piece of the work after reading, run
 * unlocked; false when none is left to take. */
static bool after_read(struct pass *p)
{
	const struct rt_vw_after_read *a = p->after;

	if (!a)
		return false;
	if (a->once && !p->once_taken) {
		p->once_taken = true;
		pthread_mutex_unlock(&p->mu);
		a->once(a->arg);
		pthread_mutex_lock(&p->mu);
		p->after_done++;
		return true;
	}
	if (a->each && p->after_next < p->after_chunks) {
		int lo = p->after_next++ * RT_VW_FANOUT_CHUNK, hi = lo + RT_VW_FANOUT_CHUNK;

		pthread_mutex_unlock(&p->mu);
		a->each(a->arg, lo, hi < a->n ? hi : a->n);
		pthread_mutex_lock(&p->mu);
		p->after_done++;
		return true;
	}
	return false;
}

/* What no thread took of the work after reading (a failed pass): done here. */
static void after_rest(struct pass *p)
{
	pthread_mutex_lock(&p->mu);
	while (after_read(p))
		;
	pthread_mutex_unlock(&p->mu);
}

/* Under mu: is the work after reading all done (or none)? */
static bool after_done(const struct pass *p)
{
	return !p->after || p->after_done == p->after_chunks + (p->after->once != NULL);
}

static void *worker(void *arg)
{
	struct pass *p = ((struct worker_arg *)arg)->p;
	int id = ((struct worker_arg *)arg)->id, nr = p->t->nranks;
	uint64_t *lim = malloc(sizeof(*lim) * ((size_t)nr + 1));
	struct rt_vw_replay_room rr = { .slice = p->slice };
	struct rt_vw_chunk_cache cc = { 0 };

	pthread_mutex_lock(&p->mu);
	if (!lim)
		p->failed = true;
	while (!p->failed) {
		uint64_t bound;

		if (id == 0 && take_replay(p, lim, &bound)) {
			int upto = p->rounds_done, ret;

			pthread_mutex_unlock(&p->mu);
			ret = rt_vw_logs_replay(p->logs, p->t->nranks, lim, bound, p->m, &rr);
			pthread_mutex_lock(&p->mu);
			p->failed |= ret != 0;
			p->replaying = false;
			p->replayed = upto;
			pthread_cond_broadcast(&p->cv);
		} else if (!p->finished && p->next < p->ntodo &&
			   p->rounds_done - p->replayed <= RT_LOOKAHEAD) {
			struct rank_job *js[RT_BATCH_MAX];
			int nb = 0, batch = take_batch(p), k;
			uint64_t w = p->w, ev[RT_BATCH_MAX];

			while (nb < batch && p->next < p->ntodo && (k = take_rank(p, id)) >= 0) {
				p->taken[k] = true;
				p->next++;
				js[nb++] = &p->rj[p->todo[k]];
			}
			pthread_mutex_unlock(&p->mu);
			for (int b = 0; b < nb; b++)
				ev[b] = model_rank(p, js[b], w, &cc);
			pthread_mutex_lock(&p->mu);
			for (int b = 0; b < nb; b++) {
				release_job(p, js[b]);
				p->round_events += ev[b];
				p->round_records += p->logs[js[b]->ri].round_n;
			}
			p->done += nb;
			if (p->done >= p->check_at && p->done < p->ntodo)
				rt_vw_pass_check_window(p);
			if (p->done == p->ntodo) {
				end_round(p);
				pthread_cond_broadcast(&p->cv);
			}
		} else if (p->finished && after_read(p)) {
			pthread_cond_broadcast(&p->cv);
		} else if (p->finished && !p->replaying && p->replayed == p->rounds_done && after_done(p)) {
			break;
		} else {
			pthread_cond_wait(&p->cv, &p->mu);
		}
	}
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	free(lim);
	rt_vw_replay_room_free(&rr);
	return NULL;
}

/* The rank jobs (srcs are grouped by rank) and the first window: from the
 * streams' first packets (windows.c), else round 0's first events. */
static int plan(struct pass *p, int nsrc)
{
	struct rt_env_val round; /* tests: many small rounds (the CLI refuses a bad value) */
	bool set = rt_env_get(RT_ENV_ROUND_EVENTS, &round, NULL, 0) == 0;

	p->rj = calloc((size_t)nsrc + 1, sizeof(*p->rj));
	p->todo = calloc((size_t)nsrc + 1, sizeof(*p->todo));
	p->taken = calloc((size_t)nsrc + 1, sizeof(*p->taken));
	if (!p->rj || !p->todo || !p->taken)
		return -1;
	for (int a = 0; a < nsrc;) {
		struct rank_job *rj = &p->rj[p->nrj];
		size_t bytes;
		int b = a;

		while (b < nsrc && p->srcs[b].rank == p->srcs[a].rank)
			b++;
		bytes = ((size_t)(b - a) * (sizeof(struct rt_vw_src) + 1) + 63) & ~(size_t)63;
		*rj = (struct rank_job){ .ri = p->srcs[a].rank, .n = b - a };
		rj->s = aligned_alloc(64, bytes);
		if (!rj->s)
			return -1;
		memcpy(rj->s, p->srcs + a, sizeof(*rj->s) * (size_t)(b - a));
		rj->live = (bool *)(rj->s + (b - a));
		p->todo[p->ntodo++] = p->nrj++;
		a = b;
	}
	/* a rank job of RT_JOB_EVENTS at least: with a thousand ranks, jobs of a
	 * few hundred events spent their time on the mutex */
	p->round_target = (uint64_t)p->nrj * RT_JOB_EVENTS > RT_ROUND_EVENTS ?
			  (uint64_t)p->nrj * RT_JOB_EVENTS : RT_ROUND_EVENTS;
	if (p->round_target > RT_ROUND_MAX_EVENTS) /* the logs hold a few rounds */
		p->round_target = RT_ROUND_MAX_EVENTS;
	/* the first window narrow, the more so the more ranks (it grows x4 a
	 * round): 1 ms of 16,384 ranks was 40 % of their events in one round */
	p->width = RT_FIRST_WINDOW_NS / (uint64_t)(p->nrj > 0 ? p->nrj : 1) + 1;
	p->slice = RT_REPLAY_SLICE;
	p->rec_cap = RT_ROUND_MAX_RECORDS;
	if (set) {
		p->round_target = (uint64_t)round.n;
		p->width = 1;
		p->slice = (size_t)round.n; /* slices as small */
		p->rec_cap = (uint64_t)round.n; /* rounds cut short often */
	}
	p->drop = nsrc > 0 ? RT_READ_BUDGET / (size_t)nsrc : RT_DROP_MAX;
	p->drop = p->drop < RT_DROP_MIN ? RT_DROP_MIN : p->drop > RT_DROP_MAX ? RT_DROP_MAX : p->drop;
	p->drop &= ~(size_t)4095;
	p->release = (size_t)nsrc > RT_READ_BUDGET / RT_FAULT_AROUND;
	/* paused cursors hold nothing (release_job), and only the jobs running
	 * read: each may read RT_DROP_MAX before it drops (at 16,384 ranks a
	 * drop 64 KiB into every file was 16 k madvise calls, 16 k TLB flushes) */
	if (p->release)
		p->drop = RT_DROP_MAX;
	if (p->release)
		rt_vw_dontneed_init(&p->drops);
	for (int i = 0; i < nsrc; i++) {
		if (!p->srcs[i].c)
			continue;
		rt_vw_cursor_set_drop(p->srcs[i].c, p->drop);
		if (p->release) /* unmapped at close, after the pass: no shootdown */
			rt_vw_cursor_keep_mapped(p->srcs[i].c);
	}
	p->back = p->ntodo - 1;
	p->finished = p->ntodo == 0;
	p->w = 0; /* round 0 starts every rank: its first events set the window */
	if (!p->finished)
		rt_vw_pass_peek_first_window(p); /* ... unless the files' first packets say it */
	return 0;
}

/* Frees what plan and the pass allocated; also after a failed plan (logs
 * NULL when their allocation failed). */
static void unplan(struct pass *p)
{
	rt_vw_dontneed_fini(&p->drops);
	rt_vw_chunks_free(&p->chunks); /* the logs' chunks */
	for (int k = 0; k < p->nrj; k++)
		free(p->rj[k].s);
	free(p->rj);
	free(p->todo);
	free(p->taken);
	free(p->logs);
}

int rt_vw_parallel_pass(struct rt_vw_trace *t, struct rt_vw_matcher *m, struct rt_vw_src *srcs, int nsrc)
{
	return rt_vw_parallel_pass_then(t, m, srcs, nsrc, NULL);
}

int rt_vw_parallel_pass_then(struct rt_vw_trace *t, struct rt_vw_matcher *m, struct rt_vw_src *srcs, int nsrc,
			     const struct rt_vw_after_read *after)
{
	struct pass p = { .t = t, .m = m, .srcs = srcs, .drops.pidfd = -1, .after = after };
	pthread_t th[256];
	struct worker_arg args[256];
	int jobs, started = 0;

	if (after && after->each && after->n > 0)
		p.after_chunks = (after->n + RT_VW_FANOUT_CHUNK - 1) / RT_VW_FANOUT_CHUNK;
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.cv, NULL);
	p.logs = aligned_alloc(64, sizeof(*p.logs) * ((size_t)t->nranks + 1));
	if (p.logs) {
		memset(p.logs, 0, sizeof(*p.logs) * ((size_t)t->nranks + 1));
		for (int i = 0; i < t->nranks; i++)
			p.logs[i] = (struct rt_vw_log){ .ri = i, .pool = &p.chunks };
	}
	if (rt_vw_chunks_init(&p.chunks) != 0 || !p.logs || plan(&p, nsrc) != 0) {
		unplan(&p);
		after_rest(&p);
		return -1;
	}
	jobs = rt_vw_job_count(p.nrj);
	p.threads = jobs < 256 ? jobs : 256;
	for (int j = 0; j < p.threads; j++)
		args[j] = (struct worker_arg){ &p, j };
	for (int j = 1; j < p.threads; j++) /* a thread that fails to start: its slice is taken by others */
		started += pthread_create(&th[started], NULL, worker, &args[j]) == 0;
	worker(&args[0]);
	for (int j = 0; j < started; j++)
		pthread_join(th[j], NULL);
	after_rest(&p);
	for (int i = 0; i < t->nranks; i++)
		t->events += t->ranks[i].events;
	unplan(&p);
	pthread_mutex_destroy(&p.mu);
	pthread_cond_destroy(&p.cv);
	return p.failed ? -1 : 0;
}
