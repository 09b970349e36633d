/* SPDX-License-Identifier: MIT */
/* hang.c - live jobs: each rank's open calls and their ages, hung or not,
 * and the laggard analysis of a hang (who waits in which collective, who
 * never entered it and what it is inside instead, whose process is
 * stopped); interrupted jobs, seen as they stood when they were stopped.
 *
 * What each rank is inside is the model's (model/calls.c, per event);
 * rt_vw_interruption and rt_vw_liveness run once after rt_vw_completeness
 * (analyses.c). Ages are measured on the trace's clock when the pipeline
 * asked the system, before the analyses (r->sys, read/live.c: exact on the
 * host that wrote it, through the realtime offset elsewhere), as is whether
 * a live rank's process is stopped; an interrupted rank's age at its stop
 * (its last event). Nothing here asks the system.
 *
 * An interrupted job: SIGINT, SIGTERM or SIGHUP to `run` (Ctrl-C, a
 * scheduler's stop) reaches the launcher, which stops every rank with it.
 * The ranks die a collective apart, as they happened to be: what a rank had
 * not called yet when it was stopped is no evidence that it never would,
 * and its kill is no crash of the program. The stop reaches them a moment
 * apart (a launcher signals one rank after another; a multi-host job's
 * agents each get it): the first rank gone fails the others' collectives
 * (NCCL's remote error; the simulator's after 0.1 s), and a rank stopped a
 * fraction of a second later had returned from the call it was hung in.
 * So the job is judged as it stood at its first stop: each rank stopped
 * within RT_VW_STOP_SPREAD_NS of the first (real time: each host's clock
 * through its offset) is read at that moment (rt_vw_calls_at: a call it
 * returned from after it was still open, one it made after was not yet
 * made), its ages measured then (r->judged_ts); a rank whose model no
 * longer holds that moment (more calls returned since than it keeps) is
 * read at its own stop, as is one stopped later than that. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyse.h"
#include "comms.h"
#include "device.h"

/* Ranks stopped further apart than this are no one stop (hang.c's header). */
#define RT_VW_STOP_SPREAD_NS 10000000000ll

/* Rank r's stop signal in real time (its clock's offset from the
 * metadata, which a hostile trace may make overflow: false). */
static bool stop_real(const struct rt_vw_rank *r, int64_t *out)
{
	return r->interrupted && r->signal_ts &&
	       !__builtin_add_overflow((int64_t)r->signal_ts, r->meta.clock_offset_ns, out);
}

/* The stop's first moment (real time), and each interrupted rank's calls
 * as they stood then (r->judged_ts: that moment on its clock, else its
 * own last event). */
static void judge_at_first_stop(struct rt_vw_trace *t)
{
	int64_t first = INT64_MAX, s;

	for (int i = 0; i < t->nranks; i++)
		if (stop_real(&t->ranks[i], &s) && s < first)
			first = s;
	t->stop_rt_ns = first == INT64_MAX || first <= 0 ? 0 : (uint64_t)first;
	for (int i = 0; i < t->nranks; i++) {
		struct rt_vw_rank *r = &t->ranks[i];
		int64_t at;

		if (!r->interrupted)
			continue;
		r->judged_ts = r->last_ts;
		if (!t->stop_rt_ns || !stop_real(r, &s) ||
		    __builtin_sub_overflow(first, r->meta.clock_offset_ns, &at) || at <= 0 ||
		    (int64_t)r->signal_ts - at > RT_VW_STOP_SPREAD_NS)
			continue;
		if (rt_vw_calls_at(r, (uint64_t)at))
			r->judged_ts = (uint64_t)at;
	}
}

void rt_vw_interruption(struct rt_vw_trace *t)
{
	int sig = 0;

	t->interrupted = 0;
	t->stop_rt_ns = 0;
	for (int i = 0; i < t->nranks; i++)
		t->ranks[i].judged_ts = 0;
	/* A rank that left no trace may be the one that died: the launcher's
	 * SIGTERM to the others is then its consequence (torchrun, rt-launch),
	 * no interruption from outside. */
	if (t->nmissing)
		return;
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		if (!r->readable)
			continue;
		if (r->state != RT_S_KILLED ||
		    (r->signo != SIGINT && r->signo != SIGTERM && r->signo != SIGHUP))
			return;
		sig = sig ? sig : r->signo;
	}
	t->interrupted = sig;
	for (int i = 0; i < t->nranks; i++)
		t->ranks[i].interrupted = sig && t->ranks[i].readable;
	judge_at_first_stop(t);
}

static bool is_stopped(const struct rt_vw_rank *r)
{
	return r->sys.proc_state == 'T' || r->sys.proc_state == 't';
}

/* The collective most running ranks wait in: the laggard analysis's
 * subject. */
static const struct rt_vw_open_call *waited_collective(const struct rt_vw_trace *t)
{
	const struct rt_vw_open_call *best = NULL;
	int best_n = 0;

	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_open_call *o = rt_vw_oldest_open(&t->ranks[i]);
		int n = 0;

		/* a Send or Recv's number counts per peer: no collective's (p2p.c) */
		if (!rt_vw_frozen(&t->ranks[i]) || !o || !rt_ck_is_collective(rt_vw_coll_kind(o->id)) ||
		    !o->comm_id)
			continue;
		for (int j = 0; j < t->nranks; j++) {
			const struct rt_vw_open_call *p = rt_vw_oldest_open(&t->ranks[j]);

			n += rt_vw_frozen(&t->ranks[j]) && p && p->comm_id == o->comm_id && p->seq == o->seq;
		}
		if (n > best_n || (n == best_n && best && o->seq < best->seq)) {
			best = o;
			best_n = n;
		}
	}
	return best;
}

/* Stopped live ranks (process state T): the ones the others wait for,
 * whatever collective they all appear to be in. */
static void stopped_ranks(const struct rt_vw_trace *t, struct rt_vw_finding *f)
{
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].state == RT_S_RUNNING && is_stopped(&t->ranks[i]))
			rt_vw_finding_ev(f, t->ranks[i].meta.rank, RT_EV_STOPPED);
}

/* Where rank r is, as evidence e shows it: alive (or stopped with the job)
 * inside its oldest open call or idle, else how it ended. */
void rt_vw_ev_where(struct rt_vw_evidence *e, const struct rt_vw_rank *r)
{
	const struct rt_vw_open_call *o = rt_vw_oldest_open(r);

	if (!e)
		return;
	e->state = (uint8_t)r->state;
	e->frozen = rt_vw_frozen(r);
	e->signo = r->signo;
	e->call = rt_vw_callref_of(o);
	e->secs = !e->frozen ? 0 : o ? o->age_s : r->idle_s;
}

/* The laggard analysis into the hang finding f: the collective most ranks
 * wait in (f->coll, the call), who waits (and how long), who never entered
 * it and where it is instead; with no host thread waiting in a collective
 * (asynchronous collectives), a Send or Recv whose peer never made its
 * counterpart (p2p.c: a pipeline stage that never sent), else the device
 * records' collective that never completed (devhang.c). */
static void laggards(struct rt_vw_trace *t, struct rt_vw_finding *f)
{
	const struct rt_vw_open_call *w = waited_collective(t);
	const struct rt_vw_devcoll *c;

	stopped_ranks(t, f);
	rt_vw_dev_dropped_value(t, f);
	if (!w) {
		if (rt_vw_p2p_hang_evidence(t, f))
			return;
		if ((c = rt_vw_dev_stuck(t)) != NULL)
			rt_vw_dev_hang_evidence(t, c, f);
		else if ((c = rt_vw_host_stuck(t)) != NULL)
			rt_vw_host_hang_evidence(t, c, f);
		return;
	}
	if (f) {
		f->coll.comm = w->comm_id;
		f->coll.seq = w->seq;
	}
	rt_vw_fv_call(f, RT_FV_call, rt_vw_callref_of(w));
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		const struct rt_vw_open_call *o = rt_vw_oldest_open(r);
		struct rt_vw_evidence *e;

		if (!rt_vw_frozen(r) || !o || o->comm_id != w->comm_id || o->seq != w->seq)
			continue;
		e = rt_vw_finding_ev(f, r->meta.rank, RT_EV_WAITS);
		rt_vw_ev_where(e, r);
	}
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		struct rt_vw_evidence *e;

		if (!r->readable || rt_vw_entered_seq(r, w->comm_id) >= w->seq ||
		    rt_vw_comm_outside(r, w->comm_id))
			continue;
		e = rt_vw_finding_ev(f, r->meta.rank, RT_EV_NEVER_ENTERED);
		rt_vw_ev_where(e, r);
		if (e)
			e->last_seq = rt_vw_entered_seq(r, w->comm_id);
	}
}

/* Ages of r's open calls and its idle time, now (interrupted: at the
 * moment it is judged at, the job's first stop). */
static void ages(struct rt_vw_rank *r)
{
	uint64_t now = r->state == RT_S_RUNNING ? r->sys.now : r->judged_ts ? r->judged_ts : r->last_ts;

	r->idle_s = now > r->last_done_ts ? (double)(now - r->last_done_ts) / 1e9 : 0;
	for (int k = 0; k < r->nopen; k++)
		r->open[k].age_s = now > r->open[k].ts ? (double)(now - r->open[k].ts) / 1e9 : 0;
}

static void rank_findings(struct rt_vw_trace *t)
{
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		const struct rt_vw_open_call *o = rt_vw_oldest_open(r);
		struct rt_vw_finding *f;

		if (!rt_vw_frozen(r))
			continue;
		f = rt_vw_finding_add(t, RT_FK_RANK_STALLED, r->meta.rank);
		if (o) {
			rt_vw_fv_call(f, RT_FV_call, rt_vw_callref_of(o));
			rt_vw_fv_real(f, RT_FV_age_s, o->age_s);
		} else {
			rt_vw_fv_real(f, RT_FV_idle_s, r->idle_s);
		}
		rt_vw_fv_flag(f, RT_FV_stopped, is_stopped(r));
	}
}

void rt_vw_liveness(struct rt_vw_trace *t)
{
	struct rt_vw_finding *f;
	bool all_stalled = true;
	int n = 0;

	t->hung = false;
	for (int i = 0; i < t->nranks; i++) {
		struct rt_vw_rank *r = &t->ranks[i];

		r->idle_s = -1;
		if (!rt_vw_frozen(r))
			continue;
		n++;
		ages(r);
		if (r->idle_s * 1e9 < (double)t->stall_ns)
			all_stalled = false;
	}
	if (!n || !all_stalled)
		return;
	t->hung = true;
	f = rt_vw_finding_add(t, RT_FK_HUNG, -1);
	rt_vw_fv_flag(f, RT_FV_interrupted, t->interrupted != 0);
	rt_vw_fv_real(f, RT_FV_stall_s, (double)t->stall_ns / 1e9);
	laggards(t, f);
	rank_findings(t);
}
