/* SPDX-License-Identifier: MIT */
/* merge.c - a trace's streams as sources, and all of them merged by time.
 *
 * rt_vw_open_sources opens a cursor on each stream of each readable rank
 * (reader.c; ranks on the pass's threads, fanout.c; an LTTng trace's events
 * were read at load, read_bt2.c); the pass (parallel.c) takes each
 * source's events with rt_vw_src_first/next.
 * rt_vw_foreach merges every stream of every rank by order time
 * (rt_vw_order_ts) for the exports. A rank's read errors are noted on it
 * (rt_vw_note_damage: the first one, thread-safe). The streams' mappings
 * let go of: the pass's paused cursors' pages dropped in batches
 * (rt_vw_dontneed_*), the files unmapped in runs after it
 * (rt_vw_close_sources). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "model.h"
#include "model_int.h"
#include "read_bt2.h"
#include "rt_heap.h"
#include "rt_util.h"

void rt_vw_note_damage(struct rt_vw_trace *t, int ri, const char *msg)
{
	if (!t->ranks[ri].damaged[0]) {
		snprintf(t->ranks[ri].damaged, sizeof(t->ranks[ri].damaged), "%s", msg);
		__atomic_add_fetch(&t->damaged, 1, __ATOMIC_RELAXED); /* ranks run in parallel */
	}
}

/* Deliver every event of srcs in time order; closes nothing. */
static int merge_streams(struct rt_vw_trace *t, struct rt_vw_src *srcs, int nsrc,
			 void (*fn)(void *arg, int rank, const struct rt_vw_event *e), void *arg)
{
	/* the key inline: with a thousand ranks, comparing through pointers
	 * to the sources costs a cache miss per level */
	struct rt_heap_node *heap = calloc((size_t)nsrc + 1, sizeof(*heap));
	int hn = 0;

	if (!heap)
		return -1;
	for (int k = 0; k < nsrc; k++) {
		int rc = rt_vw_cursor_next(srcs[k].c, &srcs[k].e);

		if (rc == 1)
			heap[hn++] = (struct rt_heap_node){ rt_vw_order_ts(&srcs[k].e), k };
		else if (rc < 0 && t)
			rt_vw_note_damage(t, srcs[k].rank, rt_vw_cursor_error(srcs[k].c));
	}
	rt_heap_build(heap, hn); /* by (time, source) */
	while (hn > 0) {
		int k = heap[0].idx;
		struct rt_vw_src *s = &srcs[k];
		int rc;

		fn(arg, s->rank, &s->e);
		rc = rt_vw_cursor_next(s->c, &s->e);
		if (rc == 1) {
			rt_heap_replace_top(heap, hn, (struct rt_heap_node){ rt_vw_order_ts(&s->e), k });
		} else {
			if (rc < 0 && t)
				rt_vw_note_damage(t, s->rank, rt_vw_cursor_error(s->c));
			if (t)
				t->ranks[s->rank].discarded += rt_vw_cursor_info(s->c)->discarded;
			hn = rt_heap_pop(heap, hn);
		}
	}
	free(heap);
	return 0;
}

/* A source's first event (false: none). An event at a time that cannot be
 * ordered (rt_vw_ts_orderable) ends the source as damage: with no place in
 * the merge, neither it nor what follows it on that clock can be used. */
bool rt_vw_src_first(struct rt_vw_trace *t, struct rt_vw_src *s)
{
	int rc = rt_vw_cursor_next(s->c, &s->e);

	if (rc == 1 && !rt_vw_ts_orderable(&s->e)) {
		char msg[600];

		snprintf(msg, sizeof(msg), "%.400s: event %" PRIu64 " (%s) at time %" PRIu64 " ns, "
			 "duration %" PRIu64 ": a time no clock reaches (2^62 ns or more), it cannot be "
			 "ordered", rt_vw_cursor_path(s->c), rt_vw_cursor_info(s->c)->events,
			 rt_events[s->e.id].name, s->e.ts, s->e.pending ? 0 : s->e.dur);
		rt_vw_note_damage(t, s->rank, msg);
		rc = 0;
	}
	if (rc < 0)
		rt_vw_note_damage(t, s->rank, rt_vw_cursor_error(s->c));
	if (rc != 1)
		t->ranks[s->rank].discarded += rt_vw_cursor_info(s->c)->discarded;
	return rc == 1;
}

/* The source's next event (false: it ended; its damage and discarded
 * count are noted on its rank). */
bool rt_vw_src_next(struct rt_vw_trace *t, struct rt_vw_src *s)
{
	return rt_vw_src_first(t, s);
}

/* An LTTng trace: each rank's events were read at load (read_bt2.c). */
static int lttng_sources(struct rt_vw_trace *t, struct rt_vw_src **out, int *nout)
{
	struct rt_vw_src *srcs = calloc((size_t)t->nranks + 1, sizeof(*srcs));
	int nsrc = 0;

	if (!srcs)
		return -1;
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_bt2_rank *br = &t->lttng->ranks[i];

		srcs[nsrc].c = rt_vw_cursor_mem(br->ev, br->n, br->discarded);
		srcs[nsrc].rank = i;
		if (!srcs[nsrc].c) {
			while (nsrc > 0)
				rt_vw_cursor_close(srcs[--nsrc].c);
			free(srcs);
			return -1;
		}
		nsrc++;
	}
	*out = srcs;
	*nout = nsrc;
	return 0;
}

/* The sources of a chunk of ranks (open_ranks), in rank order. */
struct src_chunk {
	struct rt_vw_src *s;
	int n, cap;
	bool oom;
};

struct open_job {
	struct rt_vw_trace *t;
	struct src_chunk *ch; /* one per chunk of RT_VW_FANOUT_CHUNK ranks */
};

/* Rank i's streams, one source each, appended to c; a stream that cannot
 * be opened is noted on the rank. */
static void open_rank(struct rt_vw_trace *t, int i, struct src_chunk *c)
{
	char rd[4400], e2[512], **streams;
	int ns;

	snprintf(rd, sizeof(rd), "%s/%s", t->dir, t->ranks[i].name);
	/* kept: the live state asks again after the pass (load.c) */
	ns = rt_vw_list_streams_seen(rd, &t->ranks[i].listed);
	streams = t->ranks[i].listed.names;
	for (int k = 0, g; k < ns && !c->oom; k = g) {
		int base = rt_vw_stream_base_len(streams[k]);

		/* one source per stream: its files are adjacent (sorted names) */
		for (g = k + 1; g < ns && rt_vw_stream_base_len(streams[g]) == base &&
				!strncmp(streams[g], streams[k], (size_t)base); g++)
			;

		if (!RT_GROW(c->s, c->n, c->cap, 8, 0)) {
			c->oom = true;
			break;
		}
		c->s[c->n].c = rt_vw_cursor_open_chain(rd, streams + k, g - k, &t->ranks[i].meta, e2,
						       sizeof(e2));
		c->s[c->n].rank = i;
		/* the lock its file showed as it was mapped: the live state
		 * after the pass asks no more of it (load.c) */
		rt_vw_listing_unlocked(&t->ranks[i].listed, rt_vw_cursor_unlocked_file(c->s[c->n].c));
		if (c->s[c->n].c)
			c->n++;
		else
			rt_vw_note_damage(t, i, e2);
	}
}

/* Ranks [lo, hi) opened into their chunk (rt_vw_fanout: in parallel). */
static void open_ranks(void *arg, int slot, int lo, int hi)
{
	struct open_job *j = arg;
	struct src_chunk *c = &j->ch[lo / RT_VW_FANOUT_CHUNK];

	(void)slot;
	for (int i = lo; i < hi && !c->oom; i++)
		if (j->t->ranks[i].readable)
			open_rank(j->t, i, c);
}

/* The chunks' sources in one array, in rank order; frees the chunks. */
static int join_chunks(struct src_chunk *ch, int nch, struct rt_vw_src **out, int *nout)
{
	struct rt_vw_src *srcs;
	size_t total = 0;
	bool oom = false;

	for (int k = 0; k < nch; k++) {
		total += (size_t)ch[k].n;
		oom |= ch[k].oom;
	}
	srcs = oom ? NULL : malloc((total + 1) * sizeof(*srcs));
	*nout = 0;
	for (int k = 0; k < nch; k++) {
		if (srcs && ch[k].n)
			memcpy(srcs + *nout, ch[k].s, (size_t)ch[k].n * sizeof(*srcs));
		for (int i = 0; !srcs && i < ch[k].n; i++)
			rt_vw_cursor_close(ch[k].s[i].c);
		*nout += srcs ? ch[k].n : 0;
		free(ch[k].s);
	}
	free(ch);
	*out = srcs;
	return srcs ? 0 : -1;
}

/* Each readable rank's streams opened on the pass's threads (listing the
 * directory, mapping the files: the most of a 16k-rank load before its
 * pass), the sources in rank order and each rank's streams in name order,
 * as one thread opened them. */
int rt_vw_open_sources(struct rt_vw_trace *t, struct rt_vw_src **out, int *nout)
{
	int nch = (t->nranks + RT_VW_FANOUT_CHUNK - 1) / RT_VW_FANOUT_CHUNK;
	struct open_job j = { t, NULL };

	if (t->lttng)
		return lttng_sources(t, out, nout);
	j.ch = calloc((size_t)nch + 1, sizeof(*j.ch));
	if (!j.ch)
		return -1;
	rt_vw_fanout(t->nranks, rt_vw_fanout_slots(t->nranks), open_ranks, &j);
	return join_chunks(j.ch, nch, out, nout);
}

int rt_vw_foreach(const struct rt_vw_trace *t, void (*fn)(void *arg, int rank, const struct rt_vw_event *e),
		  void *arg)
{
	struct rt_vw_src *srcs;
	int nsrc, rc;

	if (rt_vw_open_sources((struct rt_vw_trace *)t, &srcs, &nsrc) != 0)
		return -1;
	rc = merge_streams(NULL, srcs, nsrc, fn, arg);
	rt_vw_close_sources(srcs, nsrc);
	return rc;
}

static int by_base(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct iovec *)a)->iov_base;
	uintptr_t y = (uintptr_t)((const struct iovec *)b)->iov_base;

	return (x > y) - (x < y);
}

/* The files still mapped after a pass of thousands of ranks (each cursor
 * keeps its file: rt_vw_cursor_keep_mapped), unmapped a run of adjacent
 * mappings at a time: mmap placed them next to each other, so a handful
 * of munmaps, where one per file (16,384) on two threads fought over the
 * process's mmap lock and flushed the other core's TLB each. Then the
 * cursors freed (a few small blocks each: one thread; the pass runs this
 * beside its last replays, load.c). Where the list cannot be had, each
 * cursor unmaps its own. */
void rt_vw_close_sources(struct rt_vw_src *srcs, int nsrc)
{
	struct iovec *m = nsrc > 1 ? malloc(sizeof(*m) * (size_t)nsrc) : NULL;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int n = 0;

	for (int k = 0; m && k < nsrc; k++)
		if (rt_vw_cursor_take_map(srcs[k].c, &m[n].iov_base, &m[n].iov_len)) {
			m[n].iov_len = (m[n].iov_len + page - 1) / page * page;
			n++;
		}
	if (n)
		qsort(m, (size_t)n, sizeof(*m), by_base);
	for (int a = 0, b; a < n; a = b) {
		char *end = (char *)m[a].iov_base + m[a].iov_len;

		for (b = a + 1; b < n && m[b].iov_base == end; b++)
			end += m[b].iov_len;
		munmap(m[a].iov_base, (size_t)(end - (char *)m[a].iov_base));
	}
	free(m);
	for (int k = 0; k < nsrc; k++)
		rt_vw_cursor_close(srcs[k].c);
	free(srcs);
}

void rt_vw_dontneed_init(struct rt_vw_dontneed *d)
{
	d->n = 0;
	d->pidfd = -1;
#ifdef SYS_pidfd_open
	d->pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0u);
#endif
}

/* One system call for the batch: process_madvise takes RT_VW_DONTNEED_BATCH
 * ranges (one TLB flush since Linux 6.16's batching; one each before, as
 * madvise). A madvise a paused rank job was 15 % of a 16,384-rank
 * verdict's CPU on 2 threads, most of it in the flush. Where refused
 * (before 5.10, or DONTNEED on oneself before 6.13): a madvise each. */
void rt_vw_dontneed_flush(struct rt_vw_dontneed *d)
{
	size_t want = 0;
	long got = -1;

	if (!d->n)
		return;
	for (int i = 0; i < d->n; i++)
		want += d->rel[i].iov_len;
#ifdef SYS_process_madvise
	if (d->pidfd >= 0)
		got = syscall(SYS_process_madvise, d->pidfd, d->rel, (size_t)d->n, MADV_DONTNEED, 0u);
#endif
	if (got < 0 || (size_t)got != want) {
		if (got < 0 && d->pidfd >= 0) { /* refused: not again */
			close(d->pidfd);
			d->pidfd = -1;
		}
		for (int i = 0; i < d->n; i++) /* again for a part done: harmless */
			madvise(d->rel[i].iov_base, d->rel[i].iov_len, MADV_DONTNEED);
	}
	d->n = 0;
}

void rt_vw_dontneed_add(struct rt_vw_dontneed *d, void *addr, size_t len)
{
	if (d->n == RT_VW_DONTNEED_BATCH)
		rt_vw_dontneed_flush(d);
	d->rel[d->n++] = (struct iovec){ addr, len };
}

void rt_vw_dontneed_fini(struct rt_vw_dontneed *d)
{
	if (d->pidfd >= 0)
		close(d->pidfd);
	d->pidfd = -1;
}
