/* SPDX-License-Identifier: MIT */
/* logs.c - the parallel pass's per-rank logs (logs.h): records in chunks
 * sized to what the rank logs, and the replay that merges the logs'
 * finished records into the matcher by sorting them (rt_sort.h). */
#include <stdlib.h>

#include "logs.h"

enum { LOG_LEARN, LOG_JOIN, LOG_MATCH, LOG_LEARN_LOCAL };
enum { RT_CHUNK = 1024, RT_CHUNK_MIN = 16 };

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
 * a round holds what it logged in its last round (RT_CHUNK_MIN at least),
 * each next one twice the records the rank logged in the round so far, up
 * to RT_CHUNK (16,384 ranks each with a chunk of 1,024 were 655 MB, most of
 * it empty; starting each round at RT_CHUNK_MIN was 5 mallocs a rank and
 * round at 16,384 x 2,000). */
struct chunk {
	struct chunk *next;
	uint32_t cap;
	struct rec r[];
};

static void log_add(struct rt_vw_log *l, struct rec r)
{
	if (!l->tail || l->tail_n == l->tail->cap) {
		uint32_t want = l->round_n ? l->round_n : l->last_n;
		uint32_t cap = want < RT_CHUNK_MIN ? RT_CHUNK_MIN : want > RT_CHUNK ? RT_CHUNK : want;
		struct chunk *c = malloc(sizeof(*c) + sizeof(c->r[0]) * cap);

		if (!c) { /* a record lost would change the matching: fail the pass */
			l->oom = true;
			return;
		}
		c->next = NULL;
		c->cap = cap;
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

void rt_vw_log_free(struct rt_vw_log *l)
{
	while (l->head) {
		struct chunk *c = l->head;

		l->head = c->next;
		free(c);
	}
}

/* The replay took the log's records up to lim: its head moves past them,
 * freeing the chunks they emptied (a chunk read to its end stays head
 * until a record past it is taken: its next may not be set yet). */
static void log_advance(struct rt_vw_log *l, uint64_t lim)
{
	for (uint64_t left = lim - l->used; left > 0;) {
		uint32_t take;

		if (l->head_i == l->head->cap) { /* published past it: next is set */
			struct chunk *c = l->head;

			l->head = c->next;
			l->head_i = 0;
			free(c);
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
			log_advance(&logs[i], lim[i]);
}
