/* SPDX-License-Identifier: MIT */
/* parallel.c - the model's pass on several cores: ranks are independent
 * until matching.
 *
 * Phase 1, on `jobs` threads: each takes the next rank, merges that rank's
 * streams by time and runs the rank model (model.c) on every event. What
 * crosses ranks (communicator sizes learned, collectives to match) is not
 * done there but logged per rank, with the event's time (rt_vw_defer_*).
 * Phase 2, on one thread: the logs merged in one order, (time, rank, order
 * logged: each log is in time order), fed to the matcher. The result does not depend on `jobs`: one
 * thread runs the very same two phases. Memory: the logs hold one record per
 * collective and init until phase 2. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "model_int.h"

enum { LOG_LEARN, LOG_JOIN, LOG_MATCH };

/* 48 bytes: seq doubles as a learn's size; the rank is its log's. */
struct rec {
	uint64_t ts;
	uint64_t comm;
	uint32_t seq;
	uint8_t kind;
	struct sig s;
};

/* One cache line each: two threads append to neighbouring ranks' logs. */
struct rt_vw_log {
	_Alignas(64) struct rec *r;
	uint32_t n, cap;
};

int rt_vw_jobs; /* 0: one per core */

void rt_vw_set_jobs(int n)
{
	rt_vw_jobs = n > 0 ? n : 0;
}

/* Which rank and event this thread is modelling (phase 1 only). */
static _Thread_local struct rt_vw_log *cur_log;
static _Thread_local uint64_t cur_ts;

static void log_add(struct rec r)
{
	struct rt_vw_log *l = cur_log;

	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 256;
		void *p = realloc(l->r, sizeof(*l->r) * cap);

		if (!p)
			return;
		l->r = p;
		l->cap = cap;
	}
	r.ts = cur_ts;
	l->r[l->n++] = r;
}

bool rt_vw_defer_learn(uint64_t id, int nranks)
{
	if (!cur_log)
		return false;
	log_add((struct rec){ .kind = LOG_LEARN, .comm = id, .seq = (uint32_t)nranks });
	return true;
}

bool rt_vw_defer_join(uint64_t id)
{
	if (!cur_log)
		return false;
	log_add((struct rec){ .kind = LOG_JOIN, .comm = id });
	return true;
}

bool rt_vw_defer_match(uint64_t comm, uint32_t seq, const struct sig *s)
{
	if (!cur_log)
		return false;
	log_add((struct rec){ .kind = LOG_MATCH, .comm = comm, .seq = seq, .s = *s });
	return true;
}

struct pass {
	struct rt_vw_trace *t;
	struct matcher *m;
	struct src_range { int a, b; } *ranks; /* srcs of each rank */
	int nranks;
	struct rt_vw_src *srcs;
	struct rt_vw_log *logs;
	int next;   /* next rank to take (atomic) */
};

/* One rank: its streams merged by time (ties: the earlier stream first). */
static void model_rank(struct pass *p, int a, int b)
{
	int ri = p->srcs[a].rank, n = b - a;
	bool *live = calloc((size_t)n, sizeof(*live));

	if (!live)
		return;
	cur_log = &p->logs[ri];
	for (int k = 0; k < n; k++)
		live[k] = rt_vw_src_first(p->t, &p->srcs[a + k]);
	for (;;) {
		int best = -1;

		for (int k = 0; k < n; k++)
			if (live[k] && (best < 0 || rt_vw_order_ts(&p->srcs[a + k].e) <
						  rt_vw_order_ts(&p->srcs[a + best].e)))
				best = k;
		if (best < 0)
			break;
		cur_ts = p->srcs[a + best].e.ts;
		rt_vw_on_event(p->m, ri, &p->srcs[a + best].e);
		live[best] = rt_vw_src_next(p->t, &p->srcs[a + best]);
	}
	cur_log = NULL;
	free(live);
}

static void *worker(void *arg)
{
	struct pass *p = arg;
	int i;

	while ((i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED)) < p->nranks)
		model_rank(p, p->ranks[i].a, p->ranks[i].b);
	return NULL;
}

/* Heap of ranks by their next record: (time, rank); each log is in its
 * rank's event order, which is time order. */
struct head {
	uint64_t ts;
	int ri;
};

static bool before(const struct head *a, const struct head *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->ri < b->ri);
}

static void sift(struct head *h, int n, int i)
{
	struct head x = h[i];

	for (;;) {
		int l = 2 * i + 1, c;

		if (l >= n)
			break;
		c = l + 1 < n && before(&h[l + 1], &h[l]) ? l + 1 : l;
		if (!before(&h[c], &x))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

static void apply(struct matcher *m, int ri, const struct rec *r)
{
	if (r->kind == LOG_LEARN)
		rt_vw_comm_learn(m, r->comm, (int)r->seq);
	else if (r->kind == LOG_JOIN)
		rt_vw_comm_join(m, r->comm);
	else
		rt_vw_match(m, ri, r->comm, r->seq, r->s);
}

/* Phase 2: every log merged in (time, rank, order) into the matcher. */
static int replay(struct pass *p)
{
	int n = 0, nr = p->t->nranks;
	struct head *h = malloc(sizeof(*h) * ((size_t)nr + 1));
	uint32_t *at = calloc((size_t)nr + 1, sizeof(*at));

	if (!h || !at) {
		free(h);
		free(at);
		return -1;
	}
	for (int i = 0; i < nr; i++)
		if (p->logs[i].n)
			h[n++] = (struct head){ p->logs[i].r[0].ts, i };
	for (int i = n / 2 - 1; i >= 0; i--)
		sift(h, n, i);
	while (n > 0) {
		int ri = h[0].ri;
		struct rt_vw_log *l = &p->logs[ri];

		apply(p->m, ri, &l->r[at[ri]++]);
		if (at[ri] < l->n)
			h[0].ts = l->r[at[ri]].ts;
		else
			h[0] = h[--n];
		sift(h, n, 0);
	}
	free(h);
	free(at);
	return 0;
}

static int job_count(int nranks)
{
	long n = rt_vw_jobs > 0 ? rt_vw_jobs : sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		n = 1;
	return n > nranks ? (nranks > 0 ? nranks : 1) : (int)n;
}

int rt_vw_parallel_pass(struct rt_vw_trace *t, struct matcher *m, struct rt_vw_src *srcs, int nsrc)
{
	struct pass p = { .t = t, .m = m, .srcs = srcs };
	pthread_t th[256];
	int jobs, started = 0, rc;

	p.ranks = calloc((size_t)nsrc + 1, sizeof(*p.ranks));
	p.logs = aligned_alloc(64, sizeof(*p.logs) * ((size_t)t->nranks + 1));
	if (p.logs)
		memset(p.logs, 0, sizeof(*p.logs) * ((size_t)t->nranks + 1));
	if (!p.ranks || !p.logs) {
		free(p.ranks);
		free(p.logs);
		return -1;
	}
	for (int a = 0; a < nsrc;) { /* srcs are grouped by rank */
		int b = a;

		while (b < nsrc && srcs[b].rank == srcs[a].rank)
			b++;
		p.ranks[p.nranks++] = (struct src_range){ a, b };
		a = b;
	}
	jobs = job_count(p.nranks);
	for (int j = 1; j < jobs && j < 256; j++)
		started += pthread_create(&th[started], NULL, worker, &p) == 0;
	worker(&p);
	for (int j = 0; j < started; j++)
		pthread_join(th[j], NULL);
	for (int i = 0; i < t->nranks; i++)
		t->events += t->ranks[i].events;
	rc = replay(&p);
	for (int i = 0; i < t->nranks; i++)
		free(p.logs[i].r);
	free(p.logs);
	free(p.ranks);
	return rc;
}
