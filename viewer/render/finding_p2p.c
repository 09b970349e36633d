/* SPDX-License-Identifier: MIT */
/* finding_p2p.c - the sentences of point to point (analyse/p2p.c): a Send
 * and its Recv that differ, a call whose counterpart was never made, and a
 * hang's who-waits-on-whom ("rank 3 waits in its ncclRecv #17 from rank 2
 * (...); rank 2, which the others wait for, never made ncclSend #17 to
 * rank 3 (it made 16): ...").
 *
 * Made from the findings' data only (their ranks, calls, values and
 * evidence). A hang's list of waiting ranks stops after a few; the
 * sentence is cut at the buffer's end. No allocation; thread-safe. */
#include <inttypes.h>
#include <stdio.h>

#include "finding_say.h"

#define WAITERS_SAID 6 /* the waiting ranks a hang's sentence names; then "N more" */

static bool is_send(const struct rt_vw_fcall *c)
{
	return c->kind == rt_vw_coll_kind(RT_ID_ncclSend);
}

/* "ncclSend #5 (count 1024, ncclFloat64)" */
static void say_p2p_call(struct rt_vw_sb *b, const struct rt_vw_fcall *c)
{
	const char *dt = rt_nccl_dtype_name(c->dtype);

	rt_vw_sb_printf(b, "%s #%u (count %" PRIu64, rt_events[is_send(c) ? RT_ID_ncclSend :
								   RT_ID_ncclRecv].name, c->seq, c->count);
	if (dt)
		rt_vw_sb_printf(b, ", %s", dt);
	else
		rt_vw_sb_printf(b, ", datatype %u", c->dtype);
	rt_vw_sb_printf(b, ")");
}

static int64_t value(const struct rt_vw_finding *f, enum rt_fvalue name)
{
	const struct rt_vw_fval *v = rt_vw_fv(f, name);

	return v ? v->v.i : -1;
}

static void say_on(struct rt_vw_sb *b, const struct rt_vw_trace *t, uint64_t comm)
{
	rt_vw_sb_printf(b, " on communicator %04" PRIx64, comm & 0xffff);
	rt_vw_say_comm(b, t, comm, " ");
}

void rt_vw_say_p2p_mismatch(struct rt_vw_sb *b, const struct rt_vw_trace *t,
			    const struct rt_vw_finding *f)
{
	rt_vw_sb_printf(b, "point-to-point mismatch: rank %" PRId64 "'s ", value(f, RT_FV_sender));
	say_p2p_call(b, &f->coll);
	rt_vw_sb_printf(b, " to rank %" PRId64 " pairs with rank %" PRId64 "'s ",
			value(f, RT_FV_receiver), value(f, RT_FV_receiver));
	say_p2p_call(b, &f->other);
	rt_vw_sb_printf(b, " from rank %" PRId64, value(f, RT_FV_sender));
	say_on(b, t, f->coll.comm);
	rt_vw_sb_printf(b, ": %s differ", f->coll.count != f->other.count ?
			(f->coll.dtype != f->other.dtype ? "counts and datatypes" : "counts") : "datatypes");
}

void rt_vw_say_p2p_unmatched(struct rt_vw_sb *b, const struct rt_vw_trace *t,
			     const struct rt_vw_finding *f)
{
	bool send = is_send(&f->coll);
	int64_t me = value(f, send ? RT_FV_sender : RT_FV_receiver);
	int64_t other = value(f, send ? RT_FV_receiver : RT_FV_sender), n = value(f, RT_FV_made);

	rt_vw_sb_printf(b, "rank %" PRId64 "'s ", me);
	say_p2p_call(b, &f->coll);
	rt_vw_sb_printf(b, " %s rank %" PRId64, send ? "to" : "from", other);
	say_on(b, t, f->coll.comm);
	rt_vw_sb_printf(b, " has no counterpart: rank %" PRId64 " made %" PRId64 " %s %s rank %" PRId64
			" and ended", other, n, send ? "ncclRecv" : "ncclSend", send ? "from" : "to", me);
}

/* "its ncclRecv #17 from rank 2" */
static void say_op(struct rt_vw_sb *b, const struct rt_vw_evidence *e, bool its)
{
	rt_vw_sb_printf(b, "%s", its ? "its " : "");
	rt_vw_say_call(b, e->op);
	rt_vw_sb_printf(b, " %s rank %d", e->op.id == RT_ID_ncclSend ? "to" : "from", e->peer);
}

/* Where a waiting rank is, briefly: "in cudaMemcpy, 25 s", "idle, 25 s". */
static void say_where_brief(struct rt_vw_sb *b, const struct rt_vw_evidence *e)
{
	if (!e->frozen) {
		rt_vw_say_where(b, e);
	} else if (e->call.id < RT_ID_COUNT) {
		rt_vw_sb_printf(b, "in ");
		rt_vw_say_call(b, e->call);
		rt_vw_sb_printf(b, ", %.0f s", e->secs);
	} else {
		rt_vw_sb_printf(b, "idle, %.0f s", e->secs);
	}
}

static bool is_culprit(const struct rt_vw_finding *f, int rank)
{
	for (int i = 0; i < f->nranks && i < RT_VW_FINDING_RANKS; i++)
		if (f->ranks[i] == rank)
			return true;
	return false;
}

/* "; rank 3 waits in its ncclRecv #17 from rank 2 (in cudaMemcpy, 25 s)":
 * the ranks that wait on a culprit first, then the ones behind them. */
static void say_waiters(struct rt_vw_sb *b, const struct rt_vw_finding *f)
{
	int said = 0, more = 0;

	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < f->nev; i++) {
			const struct rt_vw_evidence *e = &f->ev[i];

			if ((e->role != RT_EV_WAITS_P2P && e->role != RT_EV_WAITS_P2P_DEVICE) ||
			    is_culprit(f, e->peer) == (pass == 1))
				continue;
			if (said == WAITERS_SAID) {
				more++;
				continue;
			}
			said++;
			rt_vw_sb_printf(b, "; rank %d waits in ", e->rank);
			say_op(b, e, true);
			if (e->comm != f->coll.comm)
				rt_vw_sb_printf(b, " (communicator %04" PRIx64 ")", e->comm & 0xffff);
			if (e->role == RT_EV_WAITS_P2P_DEVICE)
				rt_vw_sb_printf(b, ", which rank %d made too, never completed on its device",
						e->peer);
			rt_vw_sb_printf(b, " (");
			say_where_brief(b, e);
			rt_vw_sb_printf(b, ")");
		}
	if (more)
		rt_vw_sb_printf(b, "; %d more rank%s wait%s", more, more > 1 ? "s" : "", more > 1 ? "" : "s");
}

/* "rank 2, which the others wait for, never made ncclSend #17 to rank 3
 * (it made 16) nor ncclRecv #18 from rank 1 (it made 17): ..." */
static void say_culprit(struct rt_vw_sb *b, const struct rt_vw_finding *f, int rank, size_t start)
{
	const struct rt_vw_evidence *where = NULL;
	int n = 0;

	for (int i = 0; i < f->nev; i++) {
		const struct rt_vw_evidence *e = &f->ev[i];

		if (e->role != RT_EV_NEVER_MADE || e->rank != rank)
			continue;
		if (!n++)
			rt_vw_sb_printf(b, "%srank %d, which the others wait for, never made ",
					b->len > start ? "; " : "", rank);
		else
			rt_vw_sb_printf(b, " nor ");
		say_op(b, e, false);
		rt_vw_sb_printf(b, " (it made %u)", e->last_seq);
		where = e;
	}
	if (where) {
		rt_vw_sb_printf(b, ": ");
		rt_vw_say_where(b, where);
	}
}

bool rt_vw_say_p2p_hang(struct rt_vw_sb *b, const struct rt_vw_trace *t, const struct rt_vw_finding *f)
{
	bool any = false;
	size_t start;

	for (int i = 0; i < f->nev && !any; i++)
		any = f->ev[i].role == RT_EV_NEVER_MADE;
	if (!any)
		return false;
	rt_vw_sb_printf(b, "point to point");
	say_on(b, t, f->coll.comm);
	rt_vw_sb_printf(b, ": ");
	start = b->len;
	for (int i = 0; i < f->nranks && i < RT_VW_FINDING_RANKS; i++)
		say_culprit(b, f, f->ranks[i], start);
	say_waiters(b, f);
	return true;
}
