/* SPDX-License-Identifier: MIT */
/* hang.c - live jobs: each rank's open calls and their ages, hung or not,
 * and the laggard analysis of a hang (who waits in which collective, who
 * never entered it and what it is inside instead).
 *
 * rt_vw_track_calls runs per event during the merge (no allocation: fixed
 * tables per rank); rt_vw_liveness once after rt_vw_completeness. Ages are
 * measured on the trace's clock (rt_vw_trace_now): exact on the host that
 * wrote it, through the realtime offset elsewhere. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "model_int.h"

static void note_entered(struct rt_vw_rank *r, uint64_t comm, uint32_t seq)
{
	int k;

	for (k = 0; k < r->nentered; k++)
		if (r->entered[k].comm_id == comm)
			break;
	if (k == r->nentered) {
		if (k == RT_VW_MAX_COMMS)
			return;
		r->nentered++;
		r->entered[k].comm_id = comm;
		r->entered[k].seq = 0;
	}
	if (seq > r->entered[k].seq)
		r->entered[k].seq = seq;
}

static uint32_t entered_seq(const struct rt_vw_rank *r, uint64_t comm)
{
	for (int k = 0; k < r->nentered; k++)
		if (r->entered[k].comm_id == comm)
			return r->entered[k].seq;
	return 0;
}

void rt_vw_track_calls(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	int ck = rt_vw_coll_kind(e->id);
	uint64_t comm = ck >= 0 ? (uint64_t)rt_vw_fld(e, RT_FN_comm_id) : 0;
	uint32_t seq = ck >= 0 ? (uint32_t)rt_vw_fld(e, RT_FN_seq) : 0;
	int k;

	if (ck >= 0 && comm && ck != RT_CK_Send && ck != RT_CK_Recv)
		note_entered(r, comm, seq);
	if (!e->pending) {
		if (e->ts + e->dur > r->last_done_ts)
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

static void call_name(char *out, size_t n, const struct rt_vw_open_call *c)
{
	if (rt_vw_coll_kind(c->id) >= 0 && c->comm_id)
		snprintf(out, n, "%s #%u", rt_events[c->id].name, c->seq);
	else
		snprintf(out, n, "%s", rt_events[c->id].name);
}

/* The oldest open call of rank r (its main thread's, when several). */
static const struct rt_vw_open_call *oldest_open(const struct rt_vw_rank *r)
{
	const struct rt_vw_open_call *o = NULL;

	for (int k = 0; k < r->nopen; k++)
		if (!o || r->open[k].ts < o->ts)
			o = &r->open[k];
	return o;
}

/* The collective most running ranks wait in: the laggard analysis's
 * subject. */
static const struct rt_vw_open_call *waited_collective(const struct rt_vw_trace *t)
{
	const struct rt_vw_open_call *best = NULL;
	int best_n = 0;

	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_open_call *o = oldest_open(&t->ranks[i]);
		int n = 0;

		if (t->ranks[i].state != RT_S_RUNNING || !o || rt_vw_coll_kind(o->id) < 0 || !o->comm_id)
			continue;
		for (int j = 0; j < t->nranks; j++) {
			const struct rt_vw_open_call *p = oldest_open(&t->ranks[j]);

			n += t->ranks[j].state == RT_S_RUNNING && p && p->comm_id == o->comm_id &&
			     p->seq == o->seq;
		}
		if (n > best_n || (n == best_n && best && o->seq < best->seq)) {
			best = o;
			best_n = n;
		}
	}
	return best;
}

/* "ranks 0,1,3 wait in ncclAllReduce #58 (120 s); rank 2 never entered #58:
 * it has been inside cudaMalloc for 121 s" */
static void laggards(struct rt_vw_trace *t)
{
	const struct rt_vw_open_call *w = waited_collective(t);
	char waiting[200] = "", name[80];
	size_t len = 0, wl = 0;
	double age = 0;

	if (!w)
		return;
	call_name(name, sizeof(name), w);
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		const struct rt_vw_open_call *o = oldest_open(r);

		if (r->state != RT_S_RUNNING || !o || o->comm_id != w->comm_id || o->seq != w->seq)
			continue;
		if (wl < sizeof(waiting) - 12)
			wl += (size_t)snprintf(waiting + wl, sizeof(waiting) - wl, "%s%d", wl ? "," : "",
					       r->meta.rank);
		if (o->age_s > age)
			age = o->age_s;
	}
	len = (size_t)snprintf(t->laggard, sizeof(t->laggard), "rank%s %s wait%s in %s (%.0f s)",
			       strchr(waiting, ',') ? "s" : "", waiting, strchr(waiting, ',') ? "" : "s",
			       name, age);
	for (int i = 0; i < t->nranks && len < sizeof(t->laggard) - 1; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		const struct rt_vw_open_call *o = oldest_open(r);
		char inside[160];

		if (!r->readable || entered_seq(r, w->comm_id) >= w->seq)
			continue;
		if (r->state != RT_S_RUNNING) {
			snprintf(inside, sizeof(inside), "%s", r->state == RT_S_KILLED ? "it was killed" :
				 r->state == RT_S_EXITED ? "it exited" : "its process is gone");
		} else if (o) {
			call_name(name, sizeof(name), o);
			snprintf(inside, sizeof(inside), "%s for %.0f s", name, o->age_s);
		} else
			snprintf(inside, sizeof(inside), "no call open, idle for %.0f s", r->idle_s);
		len += (size_t)snprintf(t->laggard + len, sizeof(t->laggard) - len,
					"; rank %d never entered #%u: %s%s", r->meta.rank, w->seq,
					r->state == RT_S_RUNNING && o ? "it has been inside " : "", inside);
	}
}

void rt_vw_liveness(struct rt_vw_trace *t)
{
	bool all_stalled = t->running > 0;

	t->hung = false;
	t->laggard[0] = '\0';
	for (int i = 0; i < t->nranks; i++) {
		struct rt_vw_rank *r = &t->ranks[i];
		uint64_t now;

		r->idle_s = -1;
		if (r->state != RT_S_RUNNING)
			continue;
		now = rt_vw_trace_now(&r->meta);
		r->idle_s = now > r->last_done_ts ? (double)(now - r->last_done_ts) / 1e9 : 0;
		for (int k = 0; k < r->nopen; k++)
			r->open[k].age_s = now > r->open[k].ts ? (double)(now - r->open[k].ts) / 1e9 : 0;
		if (r->idle_s * 1e9 < (double)t->stall_ns)
			all_stalled = false;
	}
	if (!all_stalled)
		return;
	t->hung = true;
	laggards(t);
	if (t->laggard[0])
		rt_vw_add_finding(t, 1, RT_V_HUNG, "hung: %s", t->laggard);
	else
		rt_vw_add_finding(t, 1, RT_V_HUNG, "hung: no call returned on any live rank for %.0f s",
				  (double)t->stall_ns / 1e9);
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		const struct rt_vw_open_call *o = oldest_open(r);
		char name[80];

		if (r->state != RT_S_RUNNING)
			continue;
		if (o) {
			call_name(name, sizeof(name), o);
			rt_vw_add_rank_finding(t, r->meta.rank, 2, RT_V_HUNG, "rank %d has been inside %s for %.0f s",
					  r->meta.rank, name, o->age_s);
		} else {
			rt_vw_add_rank_finding(t, r->meta.rank, 2, RT_V_HUNG, "rank %d is alive, no call returned for %.0f s",
					  r->meta.rank, r->idle_s);
		}
	}
}
