/* SPDX-License-Identifier: MIT */
/* logs.c - the parallel pass's per-rank logs (logs.h): records in chunks
 * sized to what the rank logs, and the replay that merges the logs'
 * finished records into the matcher by sorting them (rt_sort.h). */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "logs.h"

enum { LOG_LEARN, LOG_JOIN, LOG_MATCH, LOG_LEARN_LOCAL };
enum { RT_CHUNK = 1024, RT_CHUNK_MIN = 16 }; /* RT_CHUNK_MIN << (RT_CHUNK_CLASSES - 1) */
#define RT_SLAB_FIRST ((size_t)64 << 10)
#define RT_SLAB_MAX ((size_t)64 << 20)
#define RT_SLAB_HEAD 64 /* a slab's link to the one before, a cache line */
/* a slab's pages made present this far ahead of its cut at once: a
 * madvise(MADV_POPULATE_WRITE) each 4 MiB, not a page fault each page
 * (16,384 x 2,000 logs 400 MB: 96 k faults, whose entries and page walks
 * were 3 % of the verdict's time beside the pages' own allocation and
 * clearing; 1 MiB saved 1 % less). A kernel without it (before 5.14)
 * fails the call and faults the pages as before. */
#define RT_POPULATE ((uintptr_t)4 << 20)
#define RT_PAGE ((uintptr_t)4095)

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
	struct chunk *next_batch; /* in the pool, a batch's first: the batch after it */
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

/* A chunk of cap records cut from cc's slab, or from a new one (the pool
 * keeps every slab, to free them). */
static struct chunk *chunk_cut(struct rt_vw_chunks *pool, struct rt_vw_chunk_cache *cc, uint32_t cap)
{
	size_t need = (sizeof(struct chunk) + sizeof(struct rec) * cap + 63) & ~(size_t)63;
	struct chunk *c;

	if (cc->left < need) {
		size_t size;
		char *slab;

		pthread_mutex_lock(&pool->mu); /* the size under the lock, the malloc not */
		size = pool->next_size ? pool->next_size : RT_SLAB_FIRST;
		pool->next_size = size < RT_SLAB_MAX ? size * 2 : size;
		pthread_mutex_unlock(&pool->mu);
		slab = malloc(size);
		if (!slab)
			return NULL;
		pthread_mutex_lock(&pool->mu);
		*(void **)slab = pool->slabs;
		pool->slabs = slab;
		pthread_mutex_unlock(&pool->mu);
		cc->slab = slab + RT_SLAB_HEAD;
		cc->left = size - RT_SLAB_HEAD;
		cc->pop = slab; /* its first page, the link: written above */
	}
	c = (struct chunk *)cc->slab;
	cc->slab += need;
	cc->left -= need;
	if (cc->slab > cc->pop) { /* the cut ends past what was made present */
		uintptr_t from = ((uintptr_t)cc->pop + RT_PAGE) & ~RT_PAGE, end = (uintptr_t)(cc->slab + cc->left);
		uintptr_t to = end - (uintptr_t)cc->slab > RT_POPULATE ? (uintptr_t)cc->slab + RT_POPULATE : end;

#ifdef MADV_POPULATE_WRITE /* headers before glibc 2.35 lack it: the pages fault */
		if (to > from)
			(void)madvise((void *)from, to - from, MADV_POPULATE_WRITE);
#endif
		cc->pop = (char *)to;
	}
	c->cap = cap;
	return c;
}

/* A chunk of about want records for log l: from its thread's cache, else
 * a batch from the pool: of its class, else of a smaller one (the nearest
 * first), else of a larger one; else cut new. A round's chunks come in the
 * classes its ranks' counts ask for, and the next rounds' may ask for
 * others: chunks of the first round's small classes (16 to 128 records a
 * rank while its count grew) stayed in the pool while later rounds cut new
 * ones (collectives only at 16,384 ranks: 671 MB of slabs for rounds of 212
 * MB of records). */
static struct chunk *chunk_get(struct rt_vw_log *l, uint32_t want)
{
	struct rt_vw_chunk_cache *cc = l->cache;
	struct rt_vw_chunks *pool = l->pool;
	unsigned k = class_of(want);
	struct chunk *c = cc->free[k];

	if (!c) {
		unsigned want_k = k;

		pthread_mutex_lock(&pool->mu);
		for (unsigned d = 0; d < RT_CHUNK_CLASSES && !c; d++) { /* k, k-1 .. 0, k+1 .. */
			unsigned j = d <= want_k ? want_k - d : d;

			if ((c = cc->free[j]) != NULL) { /* this thread's own, first */
				k = j;
			} else if ((c = pool->free[j]) != NULL) { /* a batch: the cache's class is empty */
				pool->free[j] = c->next_batch;
				k = j;
			}
		}
		pthread_mutex_unlock(&pool->mu);
		if (!c)
			return chunk_cut(pool, cc, (uint32_t)RT_CHUNK_MIN << want_k);
	}
	cc->free[k] = c->next;
	return c;
}

/* Chunks from *l (linked by next, NULL-ended) back to the pool: sorted
 * into batches of their class unlocked, each class's batches spliced in
 * under the lock (a replay gives back thousands of chunks; the rank jobs
 * waited on the lock while it walked them). */
static void chunks_put(struct rt_vw_chunks *pool, struct chunk *l)
{
	struct chunk *first[RT_CHUNK_CLASSES] = { 0 }, *last[RT_CHUNK_CLASSES] = { 0 };
	unsigned n[RT_CHUNK_CLASSES] = { 0 };

	while (l) {
		struct chunk *c = l;
		unsigned k = class_of(c->cap);

		l = c->next;
		if (n[k]++ % RT_CHUNK_BATCH == 0) { /* a new batch */
			c->next = NULL;
			c->next_batch = first[k];
		} else {
			c->next = first[k];
			c->next_batch = first[k]->next_batch;
		}
		first[k] = c; /* its batch's first */
		if (n[k] <= RT_CHUNK_BATCH) /* the last batch's first, spliced onto the pool's */
			last[k] = c;
	}
	pthread_mutex_lock(&pool->mu);
	for (unsigned k = 0; k < RT_CHUNK_CLASSES; k++)
		if (first[k]) {
			last[k]->next_batch = pool->free[k];
			pool->free[k] = first[k];
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
		struct chunk *c = chunk_get(l, l->round_n ? l->round_n : l->last_n);

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

/* Where the replay stands in a log with records to take: the next record
 * r, the end of its chunk c's records (r == end: the chunk after c), how
 * many are left. The chunk's end is kept here: at 16,384 ranks
 * a slice takes a few records a log, and reading the chunk's capacity
 * beside the record was a second cache miss a log and slice. */
struct rt_vw_log_cursor {
	const struct rec *r, *end;
	const struct chunk *c;
	uint64_t left;
	int log;
};

static void cursor_at(struct rt_vw_log_cursor *q, const struct chunk *c, uint32_t i)
{
	q->c = c;
	q->r = c->r + i;
	q->end = c->r + c->cap;
}

static const struct rec *cursor_rec(struct rt_vw_log_cursor *q)
{
	if (q->r == q->end) /* published past it: next is set */
		cursor_at(q, q->c->next, 0);
	return q->r;
}

/* The room for at least need entries, those at e and their records kept. */
static int room_fit(struct rt_vw_replay_room *rm, size_t need)
{
	size_t cap = need + need / 4 + 64;
	struct rt_sort_entry *e;
	struct rec *r;

	if (need <= rm->cap)
		return 0;
	if (cap > UINT32_MAX) /* rt_sort_by_key counts in 32 bits */
		return -1;
	e = realloc(rm->e, cap * sizeof(*e));
	if (e)
		rm->e = e;
	r = e ? realloc(rm->rec, cap * sizeof(*r)) : NULL;
	if (!r)
		return -1;
	rm->rec = r;
	free(rm->tmp);
	rm->tmp = malloc(cap * sizeof(*rm->tmp));
	rm->cap = rm->tmp ? cap : 0;
	return rm->tmp ? 0 : -1;
}

/* A cursor per log with records up to lim (in rank order, at rm->cur[0,
 * return)); lo, hi: the smallest and largest clock among those records
 * (each log's are in clock order: its first and its last). -1: no room. */
static int cursors_open(struct rt_vw_replay_room *rm, struct rt_vw_log *logs, int nranks, const uint64_t *lim,
			uint64_t *lo, uint64_t *hi)
{
	int n = 0;

	if (rm->ncur < nranks) {
		free(rm->cur);
		rm->cur = malloc(sizeof(*rm->cur) * (size_t)nranks);
		rm->ncur = rm->cur ? nranks : 0;
		if (!rm->cur)
			return -1;
	}
	*lo = UINT64_MAX;
	*hi = 0;
	for (int i = 0; i < nranks; i++) {
		struct rt_vw_log_cursor *q = &rm->cur[n];
		uint64_t left = lim[i] - logs[i].used, first;
		const struct chunk *c;
		uint32_t at;

		if (!left)
			continue;
		cursor_at(q, logs[i].head, logs[i].head_i);
		q->left = left;
		q->log = i;
		n++;
		first = cursor_rec(q)->ts;
		*lo = first < *lo ? first : *lo;
		for (c = logs[i].head, at = logs[i].head_i; c->cap - at < left; c = c->next, at = 0)
			left -= c->cap - at;
		*hi = c->r[at + left - 1].ts > *hi ? c->r[at + left - 1].ts : *hi;
	}
	return n;
}

/* Every record with clock <= upto of the logs at cur[0, *ncur) copied to
 * rm->rec, log after log in rank order, with its (clock, index) entry at
 * rm->e; the logs left with none to take dropped from cur, *next the
 * smallest clock they have left. Returns the records, or -1: no room. */
static long gather_upto(struct rt_vw_replay_room *rm, int *ncur, uint64_t upto, uint64_t *next)
{
	size_t k = 0;
	int kept = 0;

	*next = UINT64_MAX;
	for (int j = 0; j < *ncur; j++) {
		struct rt_vw_log_cursor *q = &rm->cur[j];

		if (j + 8 < *ncur) /* a log's next record: a cache miss a log and slice */
			__builtin_prefetch(rm->cur[j + 8].r);
		for (const struct rec *r; q->left && (r = cursor_rec(q))->ts <= upto; q->r++, q->left--) {
			if (k == rm->cap && room_fit(rm, k + 1) != 0)
				return -1;
			rm->rec[k] = *r;
			rm->e[k] = (struct rt_sort_entry){ r->ts, k };
			k++;
		}
		if (q->left) {
			*next = cursor_rec(q)->ts < *next ? cursor_rec(q)->ts : *next;
			rm->cur[kept++] = *q;
		}
	}
	*ncur = kept;
	return (long)k;
}

/* Replay job: every record of finished rounds (lim[ri] per rank) with a
 * clock below bound (UINT64_MAX: every one), merged in (clock, rank,
 * order logged), into the matcher: each log's records laid end to end in
 * rank order and sorted by clock, stable (rt_sort.h: a pass per 11 bits of
 * the clocks' spread, where a heap over 16,384 logs cost 14 levels a
 * record). Those at bound or past it stay in their logs for a later replay
 * (a round cut short: parallel.c).
 *
 * A slice of the clocks at a time, about rm->slice records each: every
 * log's records up to a clock are a prefix of it, and a slice's records
 * all sort before the next's, so the order is the whole sort's. The
 * slice's records are copied into the room as they are gathered: in clock
 * order consecutive records are mostly other ranks', and each read where
 * its log holds it was a cache miss (35 % of the replay at 16,384 ranks).
 * A round of 16,384 ranks was 3 M records, its sort 100 MB of room out
 * of the caches; a slice is a few MB, the room reused. */
int rt_vw_logs_replay(struct rt_vw_log *logs, int nranks, const uint64_t *lim, uint64_t bound,
		      struct rt_vw_matcher *m, struct rt_vw_replay_room *rm)
{
	struct chunk *done = NULL;
	uint64_t n = 0, lo, hi, slices, step, next, last = bound == UINT64_MAX ? UINT64_MAX : bound - 1;
	int ncur, k = 0;

	for (int i = 0; i < nranks; i++)
		n += lim[i] - logs[i].used;
	if (n == 0 || bound == 0)
		return 0;
	ncur = cursors_open(rm, logs, nranks, lim, &lo, &hi);
	slices = rm->slice ? (n + rm->slice - 1) / rm->slice : 1;
	if (ncur < 0 || room_fit(rm, slices > 1 ? rm->slice : n) != 0)
		return -1;
	hi = hi < last ? hi : last;
	step = lo <= hi ? (hi - lo) / slices : 0;
	/* slice j takes the clocks up to lo + step * j (the last: up to the
	 * bound); past the ones without a record */
	for (uint64_t j = 1; ncur > 0 && lo <= last;) {
		uint64_t upto = j < slices ? lo + step * j : last;
		long got = gather_upto(rm, &ncur, upto, &next);
		const struct rt_sort_entry *e;

		if (got < 0)
			return -1;
		e = rt_sort_by_key(rm->e, rm->tmp, (size_t)got);
		for (long x = 0; x < got; x++) {
			const struct rec *r = &rm->rec[e[x].val];

			apply(m, r->ri, r);
		}
		if (upto == last)
			break;
		j = step && next - lo < step * slices ? (next - lo) / step + 1 : slices;
	}
	/* each log past what was taken: all up to lim[i] but the records its
	 * cursor has left (the cursors left are in rank order) */
	for (int i = 0; i < nranks; i++) {
		uint64_t to = lim[i];

		if (k < ncur && rm->cur[k].log == i)
			to -= rm->cur[k++].left;
		if (logs[i].used < to)
			log_advance(&logs[i], to, &done);
	}
	if (nranks > 0 && done)
		chunks_put(logs[0].pool, done);
	return 0;
}

void rt_vw_replay_room_free(struct rt_vw_replay_room *rm)
{
	free(rm->e);
	free(rm->tmp);
	free(rm->rec);
	free(rm->cur);
	*rm = (struct rt_vw_replay_room){ 0 };
}
