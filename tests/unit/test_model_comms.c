/* SPDX-License-Identifier: MIT */
/* test_model_comms.c - what the model keeps of a rank's communicators and
 * point-to-point calls (viewer/model/comms.c), from events built in memory:
 * the latest rt_comm of a communicator wins (a non-blocking one is made on
 * its second), its end (destroy, abort, revoke), ncclSend/ncclRecv with
 * their peer and per-peer number, rt_dev_p2p tied to the call it is (not to
 * the same number of another peer or direction), groups. */
#include "model_rig.h"
#include "comms.h"

#define SPLIT 0x5b1ull

static void comm(int ri, uint64_t id, int nranks, int rank, int how, uint64_t parent, int color,
		 int state, const char *excluded)
{
	OK(ri, rt_comm, ri, RT_FN_comm_id, id, RT_FN_nranks, (uint64_t)nranks, RT_FN_rank,
	   (uint64_t)rank, RT_FN_global_rank, (uint64_t)ri, RT_FN_how, (uint64_t)how,
	   RT_FN_parent_id, parent, RT_FN_color, (uint64_t)color, RT_FN_key, (uint64_t)ri,
	   RT_FN_ordinal, 1ull, RT_FN_excluded, excluded, RT_FN_device, (uint64_t)ri, RT_FN_state,
	   (uint64_t)state);
}

Test(model_comms, a_communicator_is_its_latest_record)
{
	const struct rt_vw_rank_comm *c;

	rig(4);
	comm(1, COMM, 4, 1, RT_COMM_INIT_CONFIG, 0, -1, 0, "");
	c = rt_vw_rank_comm_of(&t->ranks[1], COMM);
	cr_assert_not_null(c);
	cr_expect_eq(c->state, 0, "being made");
	comm(1, COMM, 4, 1, RT_COMM_INIT_CONFIG, 0, -1, 1, "");
	comm(1, SPLIT, 2, 0, RT_COMM_SPLIT, COMM, 1, 1, "");
	cr_assert_eq(t->ranks[1].rcomms->n, 2, "one entry per communicator");
	c = rt_vw_rank_comm_of(&t->ranks[1], COMM);
	cr_expect_eq(c->state, 1, "made by its second record");
	cr_expect_eq(c->how, RT_COMM_INIT_CONFIG);
	c = rt_vw_rank_comm_of(&t->ranks[1], SPLIT);
	cr_expect(c->parent == COMM && c->color == 1 && c->nranks == 2 && c->rank == 0 &&
		  c->global_rank == 1 && c->how == RT_COMM_SPLIT, "the split as recorded");
	OK(1, ncclCommRevoke, 1, RT_FN_comm_id, SPLIT, RT_FN_flags, 0ull);
	OK(1, ncclCommDestroy, 1, RT_FN_comm_id, COMM);
	cr_expect_eq(rt_vw_rank_comm_of(&t->ranks[1], SPLIT)->end_role, RT_R_COMM_REVOKE);
	cr_expect_eq(rt_vw_rank_comm_of(&t->ranks[1], COMM)->end_role, RT_R_COMM_END);
	cr_expect_null(rt_vw_rank_comm_of(&t->ranks[2], COMM), "rank 2 recorded none");
	rt_vw_free(t);
	free(m);
}

Test(model_comms, a_shrink_keeps_its_excluded_ranks)
{
	rig(4);
	comm(0, 0x5a, 3, 0, RT_COMM_SHRINK, COMM, -1, 1, "1,3");
	cr_expect_str_eq(rt_vw_rank_comm_of(&t->ranks[0], 0x5a)->excluded, "1,3");
	rt_vw_free(t);
	free(m);
}

static void p2p(int ri, bool send, int peer, uint32_t seq)
{
	if (send)
		OK(ri, ncclSend, ri, RT_FN_comm_id, COMM, RT_FN_seq, (uint64_t)seq, RT_FN_peer,
		   (uint64_t)peer, RT_FN_count, 4ull);
	else
		OK(ri, ncclRecv, ri, RT_FN_comm_id, COMM, RT_FN_seq, (uint64_t)seq, RT_FN_peer,
		   (uint64_t)peer, RT_FN_count, 4ull);
}

static void dev_p2p(int ri, int phase, bool send, int peer, uint32_t seq)
{
	OK(ri, rt_dev_p2p, ri, RT_FN_dev_phase, (uint64_t)phase, RT_FN_comm_id, COMM, RT_FN_peer,
	   (uint64_t)peer, RT_FN_seq, (uint64_t)seq, RT_FN_p2p_send, (uint64_t)send, RT_FN_source, 1ull);
}

Test(model_comms, send_and_recv_meet_their_device_records)
{
	const struct rt_vw_rank_comms *c;

	rig(4);
	p2p(2, false, 1, 1); /* Recv #1 from 1 */
	p2p(2, true, 3, 1);  /* Send #1 to 3 */
	p2p(2, false, 1, 2);
	dev_p2p(2, RT_DEV_STARTED, true, 3, 1);
	dev_p2p(2, RT_DEV_COMPLETED, true, 3, 1);
	dev_p2p(2, RT_DEV_STARTED, false, 1, 2);
	dev_p2p(2, RT_DEV_STARTED, false, 0, 1); /* no such call: peer 0 */
	c = t->ranks[2].rcomms;
	cr_assert_eq(c->np, 3);
	cr_expect(!c->p[0].send && c->p[0].peer == 1 && c->p[0].seq == 1 && !c->p[0].dev_start,
		  "the first Recv never started on the device");
	cr_expect(c->p[1].send && c->p[1].peer == 3 && c->p[1].dev_start && c->p[1].dev_done,
		  "the Send started and completed");
	cr_expect(c->p[2].dev_start && !c->p[2].dev_done, "Recv #2 started, never completed");
	cr_expect_eq(c->unbound_p2p, 1);
	rt_vw_free(t);
	free(m);
}

Test(model_comms, groups_are_counted_with_what_they_held)
{
	rig(4);
	OK(3, rt_group, 3, RT_FN_group, 1ull, RT_FN_colls, 20ull, RT_FN_p2ps, 0ull);
	OK(3, rt_group, 3, RT_FN_group, 2ull, RT_FN_colls, 2ull, RT_FN_p2ps, 4ull);
	cr_expect_eq(t->ranks[3].rcomms->groups, 2);
	cr_expect_eq(t->ranks[3].rcomms->group_calls, 26);
	rt_vw_free(t);
	free(m);
}
