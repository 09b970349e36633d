/* SPDX-License-Identifier: MIT */
/* test_p2p.c - point to point across ranks (viewer/analyse/p2p.c), from
 * events built in memory: a rank's k-th Send to a peer pairs with the
 * peer's k-th Recv from it on that communicator (per peer and direction,
 * places read as global ranks through the members' rt_comm records); a
 * pair whose count or datatype differs and a call whose peer ended without
 * its counterpart are findings naming global ranks; a live pipeline whose
 * stage 2 never sent its microbatch hangs with stage 3 waiting in its Recv
 * from 2, stage 1 in its Send to 2, stage 0 behind them, and rank 2 alone
 * the one the others wait for (issue 27, item 3). */
#include "model_rig.h"
#include "comms.h"

#define SPLIT 0x5b1ull
#define F64 8 /* ncclFloat64 */

static uint64_t u(int64_t v)
{
	return (uint64_t)v;
}

/* Rank ri's record of communicator id: nranks, its place in it. */
static void comm(int ri, uint64_t id, int nranks, int place, int how, uint64_t parent)
{
	OK(ri, rt_comm, ri, RT_FN_comm_id, id, RT_FN_nranks, u(nranks), RT_FN_rank, u(place),
	   RT_FN_global_rank, u(ri), RT_FN_how, u(how), RT_FN_parent_id, parent, RT_FN_color,
	   u(how == RT_COMM_SPLIT ? ri % 2 : -1), RT_FN_key, u(ri), RT_FN_ordinal, 1ull,
	   RT_FN_excluded, "", RT_FN_device, u(ri), RT_FN_state, 1ull);
}

static void world(void)
{
	for (int i = 0; i < 4; i++) {
		OK(i, cudaSetDevice, i, RT_FN_device, u(i));
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, 4ull, RT_FN_rank, u(i));
		comm(i, COMM, 4, i, RT_COMM_INIT, 0);
	}
}

/* Rank ri's Send to (or Recv from) peer, its seq-th with it, on comm c. */
static void call(int ri, uint64_t c, bool send, int peer, uint32_t seq, uint64_t count, int dtype)
{
	ev(ri, send ? RT_ID_ncclSend : RT_ID_ncclRecv, ri, 0, false, RT_FN_comm_id, c, RT_FN_seq,
	   u(seq), RT_FN_peer, u(peer), RT_FN_count, count, RT_FN_datatype, u(dtype), -1);
}

static void dev_done(int ri, bool send, int peer, uint32_t seq, bool done)
{
	OK(ri, rt_dev_p2p, ri, RT_FN_dev_phase, u(RT_DEV_STARTED), RT_FN_comm_id, COMM, RT_FN_peer,
	   u(peer), RT_FN_seq, u(seq), RT_FN_p2p_send, u(send), RT_FN_source, 1ull);
	if (done)
		OK(ri, rt_dev_p2p, ri, RT_FN_dev_phase, u(RT_DEV_COMPLETED), RT_FN_comm_id, COMM,
		   RT_FN_peer, u(peer), RT_FN_seq, u(seq), RT_FN_p2p_send, u(send), RT_FN_source, 1ull);
}

/* n microbatches forward through the 4 stages, each Send met by its Recv;
 * stage 1's Send #short_nth (0: none) one element short. */
static void pipeline(uint32_t n, uint32_t short_nth)
{
	for (uint32_t k = 1; k <= n; k++)
		for (int s = 0; s < 4; s++) {
			if (s > 0)
				call(s, COMM, false, s - 1, k, 64, F64);
			if (s < 3)
				call(s, COMM, true, s + 1, k, s == 1 && k == short_nth ? 63 : 64, F64);
		}
}

static void all_exit(void)
{
	for (int i = 0; i < 4; i++)
		OK(i, rt_exit, i, RT_FN_status, 0ull);
}

static int count_kind(enum rt_finding_kind k)
{
	int n = 0;

	for (int i = 0; i < t->nfindings; i++)
		n += t->findings[i].kind == k;
	return n;
}

/* The one finding of kind k (asserted), its sentence in text. */
static const struct rt_vw_finding *only(enum rt_finding_kind k, char *text, size_t n)
{
	const struct rt_vw_finding *f = NULL;

	cr_assert_eq(count_kind(k), 1, "one %s finding (%d)", rt_findings[k].id, count_kind(k));
	for (int i = 0; i < t->nfindings; i++)
		if (t->findings[i].kind == k)
			f = &t->findings[i];
	rt_vw_finding_text(t, f, text, n);
	return f;
}

static int64_t value(const struct rt_vw_finding *f, enum rt_fvalue name)
{
	const struct rt_vw_fval *v = rt_vw_fv(f, name);

	return v ? v->v.i : -1;
}

Test(p2p, a_healthy_pipeline_pairs_every_send_with_its_recv)
{
	rig(4);
	world();
	pipeline(8, 0);
	all_exit();
	rt_vw_model_finish(m);
	cr_expect_eq(count_kind(RT_FK_P2P_MISMATCH) + count_kind(RT_FK_P2P_UNMATCHED), 0);
	cr_expect_eq(t->verdict, RT_V_HEALTHY);
	rt_vw_free(t);
	free(m);
}

Test(p2p, a_count_mismatch_names_the_sender_and_the_receiver)
{
	char text[RT_VW_FINDING_TEXT];
	const struct rt_vw_finding *f;

	rig(4);
	world();
	pipeline(4, 3);
	all_exit();
	rt_vw_model_finish(m);
	f = only(RT_FK_P2P_MISMATCH, text, sizeof(text));
	cr_expect(f->nranks == 2 && f->ranks[0] == 1 && f->ranks[1] == 2, "ranks 1,2: %s", text);
	cr_expect(value(f, RT_FV_sender) == 1 && value(f, RT_FV_receiver) == 2, "%s", text);
	cr_expect(f->coll.comm == COMM && f->coll.seq == 3 && f->coll.count == 63 &&
		  f->other.count == 64, "%s", text);
	cr_expect(strstr(text, "rank 1's ncclSend #3 (count 63, ncclFloat64) to rank 2 pairs with "
			 "rank 2's ncclRecv #3 (count 64, ncclFloat64) from rank 1") &&
		  strstr(text, ": counts differ"), "%s", text);
	cr_expect_eq(t->verdict, RT_V_COLLECTIVE_MISMATCH);
	rt_vw_free(t);
	free(m);
}

Test(p2p, pairs_are_counted_per_peer_and_direction)
{
	rig(4);
	world();
	/* rank 0 sends #1 to 1 and #1 to 2 with other counts; rank 1 sends
	 * its #1 to 0 while 0 receives its #1 from 1: four pairs, all equal */
	call(0, COMM, true, 1, 1, 4, F64);
	call(0, COMM, true, 2, 1, 8, F64);
	call(1, COMM, true, 0, 1, 16, F64);
	call(2, COMM, false, 0, 1, 8, F64);
	call(1, COMM, false, 0, 1, 4, F64);
	call(0, COMM, false, 1, 1, 16, F64);
	all_exit();
	rt_vw_model_finish(m);
	cr_expect_eq(count_kind(RT_FK_P2P_MISMATCH) + count_kind(RT_FK_P2P_UNMATCHED), 0);
	cr_expect_eq(t->verdict, RT_V_HEALTHY);
	rt_vw_free(t);
	free(m);
}

Test(p2p, places_on_a_split_are_said_as_global_ranks)
{
	char text[RT_VW_FINDING_TEXT];
	const struct rt_vw_finding *f;

	rig(4);
	world();
	for (int i = 0; i < 4; i++)
		comm(i, SPLIT + (uint64_t)(i % 2), 2, i / 2, RT_COMM_SPLIT, COMM);
	/* on {1,3}: rank 1 (place 0) sends to place 1, rank 3 receives from place 0 */
	call(1, SPLIT + 1, true, 1, 1, 32, F64);
	call(3, SPLIT + 1, false, 0, 1, 32, 4 /* ncclInt64 */);
	all_exit();
	rt_vw_model_finish(m);
	f = only(RT_FK_P2P_MISMATCH, text, sizeof(text));
	cr_expect(f->nranks == 2 && f->ranks[0] == 1 && f->ranks[1] == 3, "ranks 1,3: %s", text);
	cr_expect(strstr(text, "rank 1's ncclSend #1 (count 32, ncclFloat64) to rank 3") &&
		  strstr(text, "{1,3}, split from the world with color 1: datatypes differ"), "%s", text);
	rt_vw_free(t);
	free(m);
}

Test(p2p, a_send_whose_peer_ended_without_its_recv_names_the_peer)
{
	char text[RT_VW_FINDING_TEXT];
	const struct rt_vw_finding *f;

	rig(4);
	world();
	pipeline(2, 0);
	call(1, COMM, true, 2, 3, 64, F64); /* rank 2 never receives it */
	all_exit();
	rt_vw_model_finish(m);
	f = only(RT_FK_P2P_UNMATCHED, text, sizeof(text));
	cr_expect(f->nranks == 1 && f->ranks[0] == 2, "rank 2: %s", text);
	cr_expect(value(f, RT_FV_made) == 2, "%s", text);
	cr_expect(strstr(text, "rank 1's ncclSend #3 (count 64, ncclFloat64) to rank 2 on "
			 "communicator 00c0 has no counterpart: rank 2 made 2 ncclRecv from rank 1 "
			 "and ended"), "%s", text);
	cr_expect_eq(t->verdict, RT_V_COLLECTIVE_MISMATCH);
	rt_vw_free(t);
	free(m);
}

/* Every rank alive, asked secs after the trace's last event. */
static void live_job(struct rt_vw_live *live, double secs)
{
	uint64_t last = 0;

	for (int i = 0; i < t->nranks; i++)
		last = t->ranks[i].last_ts > last ? t->ranks[i].last_ts : last;
	for (int i = 0; i < t->nranks; i++)
		live[i] = (struct rt_vw_live){ .streams = 1, .own = 1, .locked = true,
					       .proc_state = 'S', .now = last + (uint64_t)(secs * 1e9) };
}

/* Stage 2 received 3 microbatches from 1 and sent 2 to 3, then went
 * elsewhere (no call open); stage 3 waits in Recv #3 from 2; stage 1 sent
 * #3 (received) and #4 to 2; stage 0 sent 4 to 1, which received them,
 * its Send #4 never completed on its device (when devices says so). */
static void stalled_pipeline(bool devices)
{
	world();
	pipeline(2, 0);
	call(0, COMM, true, 1, 3, 64, F64);
	call(1, COMM, false, 0, 3, 64, F64);
	call(1, COMM, true, 2, 3, 64, F64);
	call(2, COMM, false, 1, 3, 64, F64);
	call(3, COMM, false, 2, 3, 64, F64);
	call(0, COMM, true, 1, 4, 64, F64);
	call(1, COMM, false, 0, 4, 64, F64);
	call(1, COMM, true, 2, 4, 64, F64);
	for (uint32_t k = 1; devices && k <= 4; k++)
		dev_done(0, true, 1, k, k < 4);
	for (int i = 0; i < 4; i++)
		if (i != 2)
			ev(i, RT_ID_cudaMemcpy, i, 0, true, RT_FN_count, 64ull, -1);
}

static const struct rt_vw_evidence *ev_of(const struct rt_vw_finding *f, int rank, int role)
{
	for (int i = 0; i < f->nev; i++)
		if (f->ev[i].rank == rank && f->ev[i].role == role)
			return &f->ev[i];
	return NULL;
}

static void expect_op(const struct rt_vw_evidence *e, unsigned id, uint32_t seq, int peer)
{
	cr_assert_not_null(e);
	cr_expect(e->op.id == id && e->op.seq == seq && e->peer == peer && e->comm == COMM,
		  "%s #%u with %d, want %s #%u with %d", rt_events[e->op.id].name, e->op.seq, e->peer,
		  rt_events[id].name, seq, peer);
}

static void judge_stall(bool devices)
{
	char text[RT_VW_FINDING_TEXT];
	struct rt_vw_live live[4];
	const struct rt_vw_finding *f;

	rig(4);
	stalled_pipeline(devices);
	live_job(live, 31);
	rt_vw_model_finish_live(m, live);
	cr_expect(t->hung, "alive and idle for 31 s: hung");
	f = only(RT_FK_HUNG, text, sizeof(text));
	cr_expect(f->nranks == 1 && f->ranks[0] == 2, "rank 2 alone is blamed: %s", text);
	expect_op(ev_of(f, 3, RT_EV_WAITS_P2P), RT_ID_ncclRecv, 3, 2);
	expect_op(ev_of(f, 1, RT_EV_WAITS_P2P), RT_ID_ncclSend, 4, 2);
	expect_op(ev_of(f, 2, RT_EV_NEVER_MADE), RT_ID_ncclSend, 3, 3);
	cr_expect_eq(ev_of(f, 2, RT_EV_NEVER_MADE)->last_seq, 2, "it sent 2 to rank 3");
	cr_expect_null(ev_of(f, 2, RT_EV_WAITS_P2P), "rank 2 waits in nothing");
	cr_expect(f->coll.comm == COMM && f->coll.kind == RT_CK_Recv && f->coll.seq == 3,
		  "the hang's call: rank 3's Recv #3 (kind %d seq %u)", f->coll.kind, f->coll.seq);
	if (devices)
		expect_op(ev_of(f, 0, RT_EV_WAITS_P2P_DEVICE), RT_ID_ncclSend, 4, 1);
	else
		cr_expect(!ev_of(f, 0, RT_EV_WAITS_P2P_DEVICE) && !ev_of(f, 0, RT_EV_WAITS_P2P),
			  "without device records rank 0's Send #4, received, shows no wait");
	cr_expect(strstr(text, "hung: point to point on communicator 00c0: rank 2, which the others "
			 "wait for, never made ncclSend #3 to rank 3 (it made 2) nor ncclRecv #4 from "
			 "rank 1 (it made 3): no call open, idle for 31 s; rank 1 waits in its ncclSend "
			 "#4 to rank 2 (in cudaMemcpy, 31 s); rank 3 waits in its ncclRecv #3 from rank "
			 "2 (in cudaMemcpy, 31 s)"), "%s", text);
	cr_expect(!devices || strstr(text, "; rank 0 waits in its ncclSend #4 to rank 1, which rank 1 "
				     "made too, never completed on its device (in cudaMemcpy, 31 s)"),
		  "%s", text);
	cr_expect_eq(t->verdict, RT_V_HUNG);
	rt_vw_free(t);
	free(m);
}

Test(p2p, a_stage_that_never_sent_is_the_one_the_others_wait_for)
{
	judge_stall(true);
}

Test(p2p, the_host_trace_alone_names_the_stage_that_never_sent)
{
	judge_stall(false);
}

Test(p2p, a_running_pipeline_is_no_mismatch)
{
	struct rt_vw_live live[4];

	/* live, calls moments ago: in flight, not unmatched, not hung */
	rig(4);
	stalled_pipeline(true);
	live_job(live, 0.001);
	rt_vw_model_finish_live(m, live);
	cr_expect(!t->hung);
	cr_expect_eq(count_kind(RT_FK_P2P_UNMATCHED) + count_kind(RT_FK_HUNG), 0);
	rt_vw_free(t);
	free(m);
}
