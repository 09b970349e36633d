/* SPDX-License-Identifier: MIT */
/* parallel.c - the model's pass on several cores: ranks are independent
 * until matching.
 *
 * Phase 1, on `jobs` threads: each takes the next rank, merges that rank's
 * streams by time and runs the rank model (model.c) on every event. What
 * crosses ranks (communicator sizes learned, collectives to match) is not
 * done there but logged per rank, with the event's time (rt_vw_defer_*).
 * Phase 2, on one thread: every rank's log in one order, (time, rank, order
 * logged), fed to the matcher. The result does not depend on `jobs`: one
 * thread runs the very same two phases. Memory: the logs hold one record per
 * collective and init until phase 2. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "model_int.h"

enum { LOG_LEARN, LOG_JOIN, LOG_MATCH };

struct rec {
	uint64_t ts;
	uint32_t n;      /* order within the rank's log */
	uint8_t kind;
	int ri, nranks;
	uint64_t comm;
	uint32_t seq;
	struct sig s;
};

struct rt_vw_log {
	struct rec *r;
	uint32_t n, cap;
};

int rt_vw_jobs; /* 0: one per core */

void rt_vw_set_jobs(int n)
{
	rt_vw_jobs = n > 0 ? n : 0;
}

/* Which rank and event this thread is modelling (phase 1 only). */
static _Thread_local struct rt_vw_log *cur_log;
static _Thread_local int cur_ri;
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
	r.ri = cur_ri;
	r.n = l->n;
	l->r[l->n++] = r;
}

bool rt_vw_defer_learn(uint64_t id, int nranks)
{
	if (!cur_log)
		return false;
	log_add((struct rec){ .kind = LOG_LEARN, .comm = id, .nranks = nranks });
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
	cur_ri = ri;
	for (int k = 0; k < n; k++)
		live[k] = rt_vw_src_first(p->t, &p->srcs[a + k]);
	for (;;) {
		int best = -1;

		for (int k = 0; k < n; k++)
			if (live[k] && (best < 0 || p->srcs[a + k].e.ts < p->srcs[a + best].e.ts))
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

static int cmp_rec(const void *x, const void *y)
{
	const struct rec *a = x, *b = y;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->ri != b->ri)
		return a->ri < b->ri ? -1 : 1;
	return a->n < b->n ? -1 : a->n > b->n;
}

/* Phase 2: every log in (time, rank, order) to the matcher. */
static int replay(struct pass *p)
{
	size_t total = 0, k = 0;
	struct rec *all;

	for (int i = 0; i < p->t->nranks; i++)
		total += p->logs[i].n;
	all = malloc(sizeof(*all) * (total + 1));
	if (!all)
		return -1;
	for (int i = 0; i < p->t->nranks; i++) {
		memcpy(all + k, p->logs[i].r, sizeof(*all) * p->logs[i].n);
		k += p->logs[i].n;
	}
	qsort(all, total, sizeof(*all), cmp_rec);
	for (k = 0; k < total; k++) {
		const struct rec *r = &all[k];

		if (r->kind == LOG_LEARN)
			rt_vw_comm_learn(p->m, r->comm, r->nranks);
		else if (r->kind == LOG_JOIN)
			rt_vw_comm_join(p->m, r->comm);
		else
			rt_vw_match(p->m, r->ri, r->comm, r->seq, r->s);
	}
	free(all);
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
	p.logs = calloc((size_t)t->nranks + 1, sizeof(*p.logs));
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
