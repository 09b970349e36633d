/* SPDX-License-Identifier: MIT */
/* devhang.c - a hang seen on device truth. With asynchronous collectives a
 * hung job's host threads sit in a stream synchronisation (or further on):
 * the collective that never completed shows only in the device records
 * (model/device.c). The evidence of it, for the hang finding (hang.c) and
 * the NCCL watchdog's: which ranks enqueued it, which devices started it,
 * which ranks of its communicator never enqueued it and where their host
 * threads are ("AllGather #4 (comm 3f2a, 512 KiB) was enqueued by ranks
 * 0,1,3 and never completed on any device; rank 2 never enqueued #4: its
 * host thread has been inside cudaMalloc for 31 s (last collective it
 * enqueued: #3)", as render/finding_say.c says it). A trace without device
 * records gets hang.c's analysis. */
#include <signal.h>

#include "analyse.h"
#include "comms.h"
#include "device.h"

/* Is r of comm? Its rt_comm records say so; a trace without them: it
 * entered a collective on comm. */
static bool in_comm(const struct rt_vw_rank *r, uint64_t comm)
{
	if (r->rcomms && r->rcomms->n > 0)
		return !rt_vw_comm_outside(r, comm);
	return rt_vw_entered_seq(r, comm) > 0;
}

/* Did rank r enqueue c? Its record says so, or, where the rank dropped its
 * enqueues before it had a device record (model/device.c), its entered
 * sequence on c's communicator: it called c or a later one. */
static bool enqueued(const struct rt_vw_rank *r, const struct rt_vw_devcoll *o, const struct rt_vw_devcoll *c)
{
	return (o && o->enq_ts) ||
	       (!o && r->dev && r->dev->dropped && rt_vw_entered_seq(r, c->comm_id) >= c->seq);
}

/* The first ncclCommAbort of comm entered on any rank (UINT64_MAX: none). */
static uint64_t first_abort(const struct rt_vw_trace *t, uint64_t comm)
{
	uint64_t ts = UINT64_MAX;

	for (int k = 0; k < t->nranks; k++) {
		const struct rt_vw_devlog *d = t->ranks[k].dev;

		for (int j = 0; t->ranks[k].readable && d && j < d->naborted; j++)
			if (d->aborted[j].comm_id == comm && d->aborted[j].ts < ts)
				ts = d->aborted[j].ts;
	}
	return ts;
}

/* Did c complete on some device? A completion counts only on a rank that
 * had not aborted the communicator before, and only before any rank of it
 * aborted it (devevents: a CUDA event after a failed or aborted collective
 * completes too, and a peer's abort fails the others' collectives: the
 * watchdog that fired on rank 2 completes #4's events on ranks 0,1 whose
 * device never saw rank 3's), not after the moment an interrupted rank is
 * judged at (the job's first stop: the first rank gone fails the others'
 * collectives, hang.c), and only when every rank of the communicator
 * enqueued it: without one of them no collective can complete, so that
 * completion was a failure's. */
static bool completed(const struct rt_vw_trace *t, const struct rt_vw_devcoll *c)
{
	uint64_t abort_ts = first_abort(t, c->comm_id);
	bool done = false;

	for (int k = 0; k < t->nranks; k++) {
		const struct rt_vw_rank *r = &t->ranks[k];
		const struct rt_vw_devcoll *o;

		if (!r->readable)
			continue;
		if (in_comm(r, c->comm_id) && rt_vw_entered_seq(r, c->comm_id) < c->seq)
			return false;
		o = rt_vw_dev_find(r->dev, c->comm_id, c->seq);
		/* an interrupted job is judged as it stood at its first stop (hang.c) */
		done = done || (rt_vw_dev_done(r->dev, o) && o->done_ts < abort_ts &&
				(!r->judged_ts || o->done_ts <= r->judged_ts));
	}
	return done;
}

static bool has_device_records(const struct rt_vw_trace *t)
{
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].readable && t->ranks[i].dev &&
		    (t->ranks[i].dev->started || t->ranks[i].dev->source_seen))
			return true;
	return false;
}

/* Did every rank of c's communicator enqueue c? */
static bool all_enqueued(const struct rt_vw_trace *t, const struct rt_vw_devcoll *c)
{
	for (int k = 0; k < t->nranks; k++)
		if (t->ranks[k].readable && in_comm(&t->ranks[k], c->comm_id) &&
		    rt_vw_entered_seq(&t->ranks[k], c->comm_id) < c->seq)
			return false;
	return true;
}

/* Is it known that c never completed? Not when a rank's device record of
 * it was dropped and every rank enqueued it: then only the lost record
 * could tell (a rank that never enqueued it is the host trace's proof). */
static bool known_stuck(const struct rt_vw_trace *t, const struct rt_vw_devcoll *c)
{
	if (completed(t, c))
		return false;
	return !rt_vw_dev_dropped(t, c->comm_id, c->seq) || !all_enqueued(t, c);
}

/* Is c the hang's subject rather than best (NULL: none yet)? On one
 * communicator the lower sequence, then the earlier enqueue (strict: never
 * the same sequence). Across communicators, whose sequences count apart
 * (HSDP's shard and replicate groups), the one every member enqueued: its
 * members' hosts went on, their devices held it (the cause); the other's
 * missing members wait behind it on their devices (the consequence: rank 2
 * and 3 inside a copy while the world's all-reduce waits for them). Else
 * the earlier enqueue. */
static bool earlier(const struct rt_vw_trace *t, const struct rt_vw_devcoll *c,
		    const struct rt_vw_devcoll *best, bool strict)
{
	bool all_c, all_best;

	if (!best)
		return true;
	if (c->comm_id == best->comm_id)
		return c->seq < best->seq || (!strict && c->seq == best->seq && c->enq_ts < best->enq_ts);
	all_c = all_enqueued(t, c);
	all_best = all_enqueued(t, best);
	return all_c != all_best ? all_c : c->enq_ts < best->enq_ts;
}

/* The subject: the earliest collective (lowest seq, then earliest enqueue)
 * some rank enqueued and no device completed, as far as the records that
 * were kept show. */
static const struct rt_vw_devcoll *subject(const struct rt_vw_trace *t)
{
	const struct rt_vw_devcoll *best = NULL;

	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_devlog *d = t->ranks[i].dev;

		for (uint32_t j = 0; t->ranks[i].readable && d && j < d->n; j++) {
			const struct rt_vw_devcoll *c = &d->v[j];

			if (!c->enq_ts || rt_vw_dev_done(d, c) || !earlier(t, c, best, false))
				continue;
			if (known_stuck(t, c))
				best = c;
		}
	}
	return best;
}

const struct rt_vw_devcoll *rt_vw_dev_stuck(const struct rt_vw_trace *t)
{
	return has_device_records(t) ? subject(t) : NULL;
}

const struct rt_vw_devcoll *rt_vw_host_stuck(const struct rt_vw_trace *t)
{
	const struct rt_vw_devcoll *best = NULL;

	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_devlog *d = t->ranks[i].dev;

		for (uint32_t j = 0; t->ranks[i].readable && d && j < d->n; j++) {
			const struct rt_vw_devcoll *c = &d->v[j];

			if (!c->enq_ts || !earlier(t, c, best, true))
				continue;
			if (!all_enqueued(t, c))
				best = c;
		}
	}
	return best;
}

/* Killed by SIGABRT after its call enqueued c had returned: a watchdog's
 * abort (one inside the call is the call's, an injected abort's). */
static bool watchdogged(const struct rt_vw_rank *r, const struct rt_vw_devcoll *c)
{
	if (r->state != RT_S_KILLED || r->signo != SIGABRT)
		return false;
	for (int k = 0; k < r->nopen; k++)
		if (r->open[k].comm_id == c->comm_id && r->open[k].seq == c->seq)
			return false;
	return true;
}

/* The collective c as f's: its communicator, sequence, kind and bytes. */
static void about(struct rt_vw_finding *f, const struct rt_vw_devcoll *c)
{
	if (f)
		f->coll = (struct rt_vw_fcall){ .comm = c->comm_id, .seq = c->seq, .sig = true,
						.kind = c->kind, .bytes = c->bytes };
}

/* Each rank of c's communicator that never enqueued it: where it is, the
 * last collective it enqueued. */
static void never_enqueued(const struct rt_vw_trace *t, const struct rt_vw_devcoll *c,
			   struct rt_vw_finding *f)
{
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		const struct rt_vw_devcoll *o = rt_vw_dev_find(r->dev, c->comm_id, c->seq);
		uint32_t last = rt_vw_entered_seq(r, c->comm_id);
		struct rt_vw_evidence *e;

		if (!r->readable || enqueued(r, o, c) || !in_comm(r, c->comm_id) || last >= c->seq)
			continue;
		e = rt_vw_finding_ev(f, r->meta.rank, RT_EV_NEVER_ENQUEUED);
		rt_vw_ev_where(e, r);
		if (e)
			e->last_seq = last;
	}
}

/* Every rank of c's communicator enqueued c and their records, from CUDA
 * events, hold no device start (a tracer before devevents.c recorded start
 * events, or its start events all lost): which device held it up cannot
 * be told. */
static bool start_unknown(const struct rt_vw_trace *t, const struct rt_vw_devcoll *c)
{
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_devlog *d = t->ranks[i].dev;
		const struct rt_vw_devcoll *o = rt_vw_dev_find(d, c->comm_id, c->seq);

		if (t->ranks[i].readable && enqueued(&t->ranks[i], o, c) &&
		    (d->started || d->source != RT_DEV_SRC_EVENT))
			return false;
	}
	return true;
}

/* Whose device started c, whose did not, whose record of it was dropped
 * (of the ranks that enqueued it; also those, when enq). */
static void started_evidence(const struct rt_vw_trace *t, const struct rt_vw_devcoll *c,
			     struct rt_vw_finding *f, bool enq)
{
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		const struct rt_vw_devcoll *o = rt_vw_dev_find(r->dev, c->comm_id, c->seq);

		if (!r->readable || !enqueued(r, o, c))
			continue;
		if (enq)
			rt_vw_finding_ev(f, r->meta.rank, RT_EV_ENQUEUED);
		rt_vw_finding_ev(f, r->meta.rank, o && o->dropped ? RT_EV_DROPPED :
					    o && o->start_ts ? RT_EV_STARTED : RT_EV_NOT_STARTED);
	}
}

void rt_vw_dev_dropped_value(const struct rt_vw_trace *t, struct rt_vw_finding *f)
{
	uint64_t n = rt_vw_dev_drops(t);

	if (n)
		rt_vw_fv_int(f, RT_FV_dropped, (int64_t)n);
}

void rt_vw_dev_hang_evidence(const struct rt_vw_trace *t, const struct rt_vw_devcoll *c,
			     struct rt_vw_finding *f)
{
	int before;

	about(f, c);
	started_evidence(t, c, f, true);
	before = f ? f->nev : 0;
	never_enqueued(t, c, f);
	if (f && f->nev == before && start_unknown(t, c))
		rt_vw_fv_flag(f, RT_FV_start_unknown, true);
}

void rt_vw_host_hang_evidence(const struct rt_vw_trace *t, const struct rt_vw_devcoll *c,
			      struct rt_vw_finding *f)
{
	about(f, c);
	rt_vw_fv_flag(f, RT_FV_host_only, true);
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_devcoll *o = rt_vw_dev_find(t->ranks[i].dev, c->comm_id, c->seq);

		if (t->ranks[i].readable && o && o->enq_ts)
			rt_vw_finding_ev(f, t->ranks[i].meta.rank, RT_EV_ENQUEUED);
	}
	never_enqueued(t, c, f);
}

/* The NCCL watchdog's ending (PyTorch's: SIGABRT after its timeout while a
 * collective had not completed): the ranks that died by SIGABRT with the
 * subject collective enqueued and never completed on any device, named as
 * ended by the watchdog on it; the rank that never enqueued it as the cause. */
void rt_vw_dev_watchdog(struct rt_vw_trace *t)
{
	const struct rt_vw_devcoll *c;
	struct rt_vw_finding *f;
	bool sigabrt = false;
	int n = 0;

	for (int i = 0; i < t->nranks; i++) /* no SIGABRT: no watchdog (and no search) */
		sigabrt = sigabrt || (t->ranks[i].readable && t->ranks[i].state == RT_S_KILLED &&
				      t->ranks[i].signo == SIGABRT);
	if (!sigabrt || t->hung || !(c = rt_vw_dev_stuck(t)))
		return;
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_devcoll *o = rt_vw_dev_find(t->ranks[i].dev, c->comm_id, c->seq);

		n += t->ranks[i].readable && enqueued(&t->ranks[i], o, c) && watchdogged(&t->ranks[i], c);
	}
	if (!n)
		return;
	f = rt_vw_finding_add(t, RT_FK_NCCL_WATCHDOG, -1);
	about(f, c);
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		const struct rt_vw_devcoll *o = rt_vw_dev_find(r->dev, c->comm_id, c->seq);

		if (r->readable && enqueued(r, o, c) && watchdogged(r, c)) {
			rt_vw_finding_rank(f, r->meta.rank);
			rt_vw_finding_ev(f, r->meta.rank, RT_EV_ABORTED);
		}
	}
	started_evidence(t, c, f, false);
	never_enqueued(t, c, f);
	rt_vw_dev_dropped_value(t, f);
}
