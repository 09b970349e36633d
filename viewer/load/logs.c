/* SPDX-License-Identifier: MIT */
/* logs.c - the parallel pass's per-rank logs (logs.h): records in chunks
 * sized to what the rank logs, and the replay that merges the logs'
 * finished records into the matcher by sorting them (rt_sort.h). */
#include <stdlib.h>

#include "logs.h"

enum { LOG_LEARN, LOG_JOIN, LOG_MATCH, LOG_LEARN_LOCAL };
enum { RT_CHUNK = 1024, RT_CHUNK_MIN = 16 }; /* RT_CHUNK_MIN << (RT_CHUNK_CLASSES - 1) */
#define RT_SLAB_FIRST ((size_t)64 << 10)
#define RT_SLAB_MAX ((size_t)64 << 20)
#define RT_SLAB_HEAD 64 /* a slab's link to the one before, a cache line */

/* 40 bytes: seq doubles as a learn's size; ri is its log's rank (the
 * replay takes records in clock order, each without its log); the kind of
 * record sits in the signature's seen (the matcher sets seen). */
struct rec {
	uint64_t ts;
	uint64_t comm;
	struct rt_vw_sig s;
	uint32_t seq;
	int32_t ri;
};

/* A log's records in chunks sized to what it holds: a rank's first chunk of
 * a round holds about what it logged in its last round (RT_CHUNK_MIN at
 * least), each next one about twice the records the rank logged in the
 * round so far, up to RT_CHUNK (16,384 ranks each with a chunk of 1,024
 * were 655 MB, most of it empty; starting each round at RT_CHUNK_MIN was 5
 * mallocs a rank and round at 16,384 x 2,000): the capacity class at or
 * below that, so a chunk given back fits the next rank's. */
struct chunk {
	struct chunk *next;
	uint32_t cap;
	struct rec r[];
};

static unsigned class_of(uint32_t want)
{
	unsigned k = 0;

	while (k + 1 < RT_CHUNK_CLASSES && (uint32_t)RT_CHUNK_MIN << (k + 1) <= want)
		k++;
	return k;
}

/* Under pool->mu: a chunk of cap records cut from the current slab, or a
 * new one. */
static struct chunk *chunk_cut(struct rt_vw_chunks *pool, uint32_t cap)
{
	size_t need = (sizeof(struct chunk) + sizeof(struct rec) * cap + 63) & ~(size_t)63;
	struct chunk *c;

	if (pool->left < need) {
		size_t size = pool->next_size ? pool->next_size : RT_SLAB_FIRST;
		char *slab = malloc(size);

		if (!slab)
			return NULL;
		*(void **)slab = pool->slabs;
		pool->slabs = slab;
		pool->slab = slab + RT_SLAB_HEAD;
		pool->left = size - RT_SLAB_HEAD;
		pool->next_size = size < RT_SLAB_MAX ? size * 2 : size;
	}
	c = (struct chunk *)pool->slab;
	pool->slab += need;
	pool->left -= need;
	c->cap = cap;
	return c;
}

static struct chunk *chunk_get(struct rt_vw_chunks *pool, uint32_t want)
{
	unsigned k = class_of(want);
	struct chunk *c;

	pthread_mutex_lock(&pool->mu);
	c = pool->free[k];
	if (c)
		pool->free[k] = c->next;
	else
		c = chunk_cut(pool, (uint32_t)RT_CHUNK_MIN << k);
	pthread_mutex_unlock(&pool->mu);
	return c;
}

/* Chunks from *l (linked by next, NULL-ended) back to the pool. */
static void chunks_put(struct rt_vw_chunks *pool, struct chunk *l)
{
	pthread_mutex_lock(&pool->mu);
	while (l) {
		struct chunk *c = l;
		unsigned k = class_of(c->cap);

		l = c->next;
		c->next = pool->free[k];
		pool->free[k] = c;
	}
	pthread_mutex_unlock(&pool->mu);
}

int rt_vw_chunks_init(struct rt_vw_chunks *pool)
{
	*pool = (struct rt_vw_chunks){ 0 };
	return pthread_mutex_init(&pool->mu, NULL) == 0 ? 0 : -1;
}

void rt_vw_chunks_free(struct rt_vw_chunks *pool)
{
	while (pool->slabs) {
		void *slab = pool->slabs;

		pool->slabs = *(void **)slab;
		free(slab);
	}
	pthread_mutex_destroy(&pool->mu);
}

static void log_add(struct rt_vw_log *l, struct rec r)
{
	if (!l->tail || l->tail_n == l->tail->cap) {
		struct chunk *c = chunk_get(l->pool, l->round_n ? l->round_n : l->last_n);

		if (!c) { /* a record lost would change the matching: fail the pass */
			l->oom = true;
			return;
		}
		c->next = NULL;
		if (l->tail)
			l->tail->next = c;
		else
			l->head = c;
		l->tail = c;
		l->tail_n = 0;
	}
	r.ts = l->clock;
	r.ri = l->ri;
	l->tail->r[l->tail_n++] = r;
	l->n++;
	l->round_n++;
}

/* The rank job's sink: its rank's log (ctx); the rank is the log's. */
static void log_learn(void *l, uint64_t id, int nranks, bool local)
{
	log_add(l, (struct rec){ .s.seen = local ? LOG_LEARN_LOCAL : LOG_LEARN, .comm = id,
				 .seq = (uint32_t)nranks });
}

static void log_join(void *l, uint64_t id)
{
	log_add(l, (struct rec){ .s.seen = LOG_JOIN, .comm = id });
}

static void log_match(void *l, int ri, uint64_t comm, uint32_t seq, const struct rt_vw_sig *s)
{
	struct rec r = { .comm = comm, .seq = seq, .s = *s };

	(void)ri;
	r.s.seen = LOG_MATCH;
	log_add(l, r);
}

struct rt_vw_sink rt_vw_log_sink(struct rt_vw_log *l)
{
	return (struct rt_vw_sink){ log_learn, log_join, log_match, l };
}

/* The replay took the log's records up to lim: its head moves past them,
 * the chunks they emptied onto *done (a chunk read to its end stays head
 * until a record past it is taken: its next may not be set yet). */
static void log_advance(struct rt_vw_log *l, uint64_t lim, struct chunk **done)
{
	for (uint64_t left = lim - l->used; left > 0;) {
		uint32_t take;

		if (l->head_i == l->head->cap) { /* published past it: next is set */
			struct chunk *c = l->head;

			l->head = c->next;
			l->head_i = 0;
			c->next = *done;
			*done = c;
		}
		take = l->head->cap - l->head_i < left ? l->head->cap - l->head_i : (uint32_t)left;
		l->head_i += take;
		left -= take;
	}
	l->used = lim;
}

static void apply(struct rt_vw_matcher *m, int ri, const struct rec *r)
{
	if (r->s.seen == LOG_LEARN || r->s.seen == LOG_LEARN_LOCAL)
		rt_vw_comm_learn(m, r->comm, (int)r->seq, r->s.seen == LOG_LEARN_LOCAL);
	else if (r->s.seen == LOG_JOIN)
		rt_vw_comm_join(m, r->comm);
	else
		rt_vw_match(m, ri, r->comm, r->seq, (struct rt_vw_sig){ r->s.kind, r->s.dtype, r->s.op, 0,
								      r->s.root, r->s.count });
}

/* The records of log l up to lim as (clock, record) entries at e, in the
 * log's order; the log is not moved (log_advance moves it after). */
static size_t gather(const struct rt_vw_log *l, uint64_t lim, struct rt_sort_entry *e)
{
	const struct chunk *c = l->head;
	uint32_t i = l->head_i;
	size_t k = 0;

	for (uint64_t left = lim - l->used; left > 0; left--, i++) {
		if (i == c->cap) { /* published past it: next is set */
			c = c->next;
			i = 0;
		}
		e[k++] = (struct rt_sort_entry){ c->r[i].ts, (uintptr_t)&c->r[i] };
	}
	return k;
}

/* Replay job: every record of finished rounds (lim[ri] per rank), merged
 * in (clock, rank, order logged), into the matcher: each log's records
 * laid end to end in rank order and sorted by clock, stable (rt_sort.h:
 * a pass per 11 bits of the clocks' spread, where a heap over 16,384 logs
 * cost 14 levels a record). Each entry points at its record, which names
 * its rank: in clock order consecutive records are mostly other ranks',
 * and reaching each through its log was a cache miss more. */
void rt_vw_logs_replay(struct rt_vw_log *logs, int nranks, const uint64_t *lim, struct rt_vw_matcher *m,
		       struct rt_sort_entry *e, struct rt_sort_entry *tmp)
{
	struct chunk *done = NULL;
	size_t n = 0;

	for (int i = 0; i < nranks; i++)
		if (logs[i].used < lim[i])
			n += gather(&logs[i], lim[i], e + n);
	e = rt_sort_by_key(e, tmp, n);
	for (size_t k = 0; k < n; k++) {
		const struct rec *r = (const struct rec *)(uintptr_t)e[k].val;

		if (k + 8 < n)
			__builtin_prefetch((const void *)(uintptr_t)e[k + 8].val);
		apply(m, r->ri, r);
	}
	for (int i = 0; i < nranks; i++)
		if (logs[i].used < lim[i])
			log_advance(&logs[i], lim[i], &done);
	if (nranks > 0 && done)
		chunks_put(logs[0].pool, done);
}
