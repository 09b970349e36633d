/* SPDX-License-Identifier: MIT */
/* calls.c - what a rank is inside, in its model: its main process's open
 * calls (entered, not returned; one per thread, the latest), the highest
 * collective sequence number it entered on each communicator, and when its
 * last call returned. The liveness analysis (analyse/hang.c) reads them.
 *
 * rt_vw_track_calls runs per event in the rank model (model.c), one rank
 * per thread; a fixed table of RT_VW_MAX_OPEN calls per rank, and one
 * entry per communicator, grown when a rank enters a collective on one
 * more (a 3-D parallel job's rank is in a dozen or more: a table of 8
 * lost the rest, and the hang analysis their sequence numbers).
 *
 * Each thread's newest RT_VW_RECENT returned calls are kept too, and its
 * newest long one (a table grown per thread, a ring each): rt_vw_calls_at,
 * run by the interruption analysis (hang.c) after the pass, reads from
 * them what the rank was inside at an earlier moment, the job's first
 * stop. */
#include <stdlib.h>
#include <string.h>

#include "model_int.h"

static void note_entered(struct rt_vw_rank *r, uint64_t comm, uint32_t seq)
{
	int k;

	for (k = 0; k < r->nentered; k++)
		if (r->entered[k].comm_id == comm)
			break;
	if (k == r->nentered) {
		if (k == r->entered_cap) {
			int cap = r->entered_cap ? 2 * r->entered_cap : 8;
			struct rt_vw_entered *v = realloc(r->entered, (size_t)cap * sizeof(*v));

			if (!v)
				return; /* out of memory: this communicator's entries are not known */
			r->entered = v;
			r->entered_cap = cap;
		}
		r->nentered++;
		r->entered[k].comm_id = comm;
		r->entered[k].seq = 0;
	}
	if (seq > r->entered[k].seq)
		r->entered[k].seq = seq;
}

/* Rank r's table entry of thread tid, made when new (main: of its main
 * process); NULL out of memory (then r->threads_lost). */
static struct rt_vw_thread_calls *thread_of(struct rt_vw_rank *r, uint32_t tid, bool main)
{
	struct rt_vw_thread_calls *th;
	int k = r->last_thread;

	if (k < r->nthreads && r->threads[k].tid == tid)
		return &r->threads[k];
	for (k = 0; k < r->nthreads && r->threads[k].tid != tid; k++)
		;
	if (k == r->nthreads) {
		if (k == r->threads_cap) {
			int cap = r->threads_cap ? 2 * r->threads_cap : 2;

			th = realloc(r->threads, (size_t)cap * sizeof(*th));
			if (!th) {
				r->threads_lost = true;
				return NULL;
			}
			r->threads = th;
			r->threads_cap = cap;
		}
		r->threads[k] = (struct rt_vw_thread_calls){ .tid = tid, .main = main };
		r->nthreads++;
	}
	r->last_thread = k;
	return &r->threads[k];
}

/* A call that returned: its thread's newest, and its newest long one (with
 * the end of the call before it). */
static void note_returned(struct rt_vw_rank *r, const struct rt_vw_event *e, uint64_t comm,
			  uint32_t seq)
{
	struct rt_vw_thread_calls *th = thread_of(r, e->tid, (int)e->pid == r->meta.pid);
	struct rt_vw_returned c = { e->ts, e->ts + e->dur, comm, seq, (uint16_t)e->id };

	if (!th)
		return;
	if (e->dur >= RT_VW_LONG_CALL_NS) {
		th->lng = c;
		th->lng_prev = th->n ? th->call[(th->n - 1) % RT_VW_RECENT].end : 0;
	}
	th->call[th->n++ % RT_VW_RECENT] = c;
}

bool rt_vw_ending_record(int id)
{
	return id == RT_ID_rt_signal || id == RT_ID_rt_inj_rule || id == RT_ID_rt_exit ||
	       id == RT_ID_rt_trace_stop;
}

void rt_vw_track_calls(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	int ck = rt_vw_coll_kind(e->id);
	uint64_t comm = ck >= 0 ? (uint64_t)rt_vw_fld(e, RT_FN_comm_id) : 0;
	uint32_t seq = ck >= 0 ? (uint32_t)rt_vw_fld(e, RT_FN_seq) : 0;
	int k;

	if (comm && rt_ck_is_collective(ck))
		note_entered(r, comm, seq);
	if (!e->pending) {
		/* what the tracer writes as the process ends (the signal, each
		 * fault rule's count, the exit, the trace's stop) is no call that
		 * returned: a job hung, then interrupted, stays hung as it stood */
		if (rt_vw_ending_record(e->id))
			return;
		if (e->ts + e->dur > r->last_done_ts)
			r->last_done_ts = e->ts + e->dur;
		note_returned(r, e, comm, seq);
		return;
	}
	if ((int)e->pid != r->meta.pid)
		return;
	/* one open call per thread: the latest */
	for (k = 0; k < r->nopen; k++)
		if (r->open[k].tid == e->tid)
			break;
	if (k == r->nopen) {
		if (k == RT_VW_MAX_OPEN)
			return;
		r->nopen++;
	} else if (r->open[k].ts > e->ts) {
		return;
	}
	r->open[k] = (struct rt_vw_open_call){ e->id, e->tid, e->ts, comm, seq, -1 };
}

uint32_t rt_vw_entered_seq(const struct rt_vw_rank *r, uint64_t comm)
{
	for (int k = 0; k < r->nentered; k++)
		if (r->entered[k].comm_id == comm)
			return r->entered[k].seq;
	return 0;
}

/* The oldest open call of rank r (its main thread's, when several). */
const struct rt_vw_open_call *rt_vw_oldest_open(const struct rt_vw_rank *r)
{
	const struct rt_vw_open_call *o = NULL;

	for (int k = 0; k < r->nopen; k++)
		if (!o || r->open[k].ts < o->ts)
			o = &r->open[k];
	return o;
}

/* Call c of thread th as the one open at a moment: into open, and the
 * end of the thread's call before it into *last (prev: that end, when
 * known; else c's entry, which it ended before). */
static void open_then(const struct rt_vw_thread_calls *th, const struct rt_vw_returned *c,
		      uint64_t prev, struct rt_vw_open_call *open, uint64_t *last)
{
	prev = prev ? prev : c->ts;
	*last = prev > *last ? prev : *last;
	*open = (struct rt_vw_open_call){ c->id, th->tid, c->ts, c->comm_id, c->seq, -1 };
}

/* Thread th's state at time at into open (its call entered before at and
 * returned after it, if any; *is_open) and *last (its latest return at or
 * before at). False when neither its newest calls nor its newest long one
 * reach back to at. */
static bool thread_at(const struct rt_vw_thread_calls *th, uint64_t at,
		      struct rt_vw_open_call *open, bool *is_open, uint64_t *last)
{
	uint64_t kept = th->n < RT_VW_RECENT ? th->n : RT_VW_RECENT, prev = 0;

	*is_open = false;
	for (uint64_t j = th->n - kept; j < th->n; j++) {
		const struct rt_vw_returned *c = &th->call[j % RT_VW_RECENT];

		if (c->ts >= at)
			break; /* entered after: the thread's calls come in order */
		if (c->end <= at) {
			*last = c->end > *last ? c->end : *last;
			prev = c->end;
			continue;
		}
		if (!prev && c->ts == th->lng.ts)
			prev = th->lng_prev;
		open_then(th, c, prev, open, last);
		*is_open = true;
		return true;
	}
	if (th->n <= RT_VW_RECENT || th->call[(th->n - kept) % RT_VW_RECENT].ts < at)
		return true; /* every call kept, or one before at */
	if (!th->lng.end || th->lng.ts >= at || th->lng.end <= at)
		return false; /* the calls between its long one and at are not kept */
	open_then(th, &th->lng, th->lng_prev, open, last);
	*is_open = true;
	return true;
}

bool rt_vw_calls_at(struct rt_vw_rank *r, uint64_t at)
{
	struct rt_vw_open_call open[RT_VW_MAX_OPEN];
	uint64_t last = 0;
	int nopen = 0;

	if (r->threads_lost)
		return false;
	for (int k = 0; k < r->nopen; k++)
		if (r->open[k].ts < at)
			open[nopen++] = r->open[k];
	for (int k = 0; k < r->nthreads; k++) {
		struct rt_vw_open_call o;
		bool is_open;

		if (!thread_at(&r->threads[k], at, &o, &is_open, &last))
			return false;
		for (int j = 0; is_open && j < nopen; j++)
			is_open = open[j].tid != o.tid; /* read at this moment before */
		if (is_open && r->threads[k].main && nopen < RT_VW_MAX_OPEN)
			open[nopen++] = o;
	}
	memcpy(r->open, open, (size_t)nopen * sizeof(open[0]));
	r->nopen = nopen;
	r->last_done_ts = last;
	return true;
}
