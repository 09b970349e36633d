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
 * lost the rest, and the hang analysis their sequence numbers). */
#include <stdlib.h>

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
		if (!rt_vw_ending_record(e->id) && e->ts + e->dur > r->last_done_ts)
			r->last_done_ts = e->ts + e->dur;
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
