/* SPDX-License-Identifier: MIT */
/* test_model_comms.c - what the model keeps of a rank's communicators and
 * point-to-point calls (viewer/model/comms.c), from events built in memory:
 * the latest rt_comm of a communicator wins (a non-blocking one is made on
 * its second), its end (destroy, abort, revoke), ncclSend/ncclRecv with
 * their peer and per-peer number, rt_dev_p2p tied to the call it is (not to
 * the same number of another peer or direction), groups; and the blame the
 * analyses put on a communicator's members only, in global ranks, with the
 * communicator said (issue 27). */
#include <stdio.h>

#include "model_rig.h"
#include "comms.h"
#include "export.h"

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

/* ---- blame on a communicator's members only ---- */

/* The world of 4 and, where split, its halves {0,2},{1,3} (color rank % 2)
 * as the ranks' calls and rt_comm records say; else (subsets) two
 * communicators of 2 made by ncclCommInitRank, the same halves. */
static void halves(bool split)
{
	for (int i = 0; i < 4; i++) {
		uint64_t half = SPLIT + (uint64_t)(i % 2);

		OK(i, cudaSetDevice, i, RT_FN_device, (uint64_t)i);
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, 4ull, RT_FN_rank, (uint64_t)i);
		comm(i, COMM, 4, i, RT_COMM_INIT, 0, -1, 1, "");
		if (split)
			OK(i, ncclCommSplit, i, RT_FN_parent_id, COMM, RT_FN_color, (uint64_t)(i % 2),
			   RT_FN_key, (uint64_t)i, RT_FN_comm_id, half, RT_FN_nranks, 2ull);
		else
			OK(i, ncclCommInitRank, i, RT_FN_comm_id, half, RT_FN_nranks, 2ull, RT_FN_rank,
			   (uint64_t)(i / 2));
		comm(i, half, 2, i / 2, split ? RT_COMM_SPLIT : RT_COMM_INIT, split ? COMM : 0,
		     split ? i % 2 : -1, 1, "");
	}
}

/* n all-reduces on each rank's half; rank skip leaves out its skip_nth */
static void halves_allreduce(int n, int skip, int skip_nth)
{
	for (int i = 0; i < 4; i++)
		for (int k = 1, seq = 1; k <= n; k++) {
			if (i == skip && k == skip_nth)
				continue;
			ev(i, RT_ID_ncclAllReduce, i, 0, false, RT_FN_comm_id, SPLIT + (uint64_t)(i % 2),
			   RT_FN_seq, (uint64_t)seq++, RT_FN_count, 1024ull, -1);
		}
	for (int i = 0; i < 4; i++)
		OK(i, rt_exit, i, RT_FN_status, 0ull);
}

/* The one finding of kind k (asserted), its sentence in text. */
static const struct rt_vw_finding *only(enum rt_finding_kind k, char *text, size_t n)
{
	const struct rt_vw_finding *f = NULL;
	int count = 0;

	for (int i = 0; i < t->nfindings; i++)
		if (t->findings[i].kind == k) {
			f = &t->findings[i];
			count++;
		}
	cr_assert_eq(count, 1, "one %s finding (%d)", rt_findings[k].id, count);
	rt_vw_finding_text(t, f, text, n);
	return f;
}

Test(blame, a_rank_skipping_on_a_split_is_the_only_one_blamed)
{
	char text[RT_VW_FINDING_TEXT];
	const struct rt_vw_finding *f;

	rig(4);
	halves(true);
	halves_allreduce(5, 1, 3);
	rt_vw_model_finish(m);
	f = only(RT_FK_NEVER_CALLED, text, sizeof(text));
	cr_expect(f->nranks == 1 && f->ranks[0] == 1, "rank 1 alone (%d ranks: %s)", f->nranks, text);
	cr_expect_eq(f->coll.comm, SPLIT + 1, "on the split {1,3}");
	cr_expect(strstr(text, "{1,3}, split from the world with color 1 was never called by rank 1"),
		  "%s", text);
	cr_expect_eq(t->verdict, RT_V_COLLECTIVE_MISMATCH);
	rt_vw_free(t);
	free(m);
}

Test(blame, comm_ranks_are_not_read_as_global_ranks)
{
	char text[RT_VW_FINDING_TEXT];
	const struct rt_vw_finding *f;

	rig(4);
	halves(false);
	halves_allreduce(5, 2, 4);
	rt_vw_model_finish(m);
	f = only(RT_FK_NEVER_CALLED, text, sizeof(text));
	cr_expect(f->nranks == 1 && f->ranks[0] == 2, "rank 2 alone (%d ranks: %s)", f->nranks, text);
	cr_expect(strstr(text, "{0,2}, made by ncclCommInitRank was never called by rank 2"), "%s", text);
	rt_vw_free(t);
	free(m);
}

Test(blame, a_mismatch_on_a_split_says_the_split)
{
	char text[RT_VW_FINDING_TEXT];
	const struct rt_vw_finding *f;

	rig(4);
	halves(true);
	for (int i = 0; i < 4; i++)
		ev(i, RT_ID_ncclAllReduce, i, 0, false, RT_FN_comm_id, SPLIT + (uint64_t)(i % 2),
		   RT_FN_seq, 1ull, RT_FN_count, i == 3 ? 512ull : 1024ull, -1);
	for (int i = 0; i < 4; i++)
		OK(i, rt_exit, i, RT_FN_status, 0ull);
	rt_vw_model_finish(m);
	f = only(RT_FK_COLLECTIVE_MISMATCH, text, sizeof(text));
	cr_expect(f->nranks == 1 && f->ranks[0] == 3, "%s", text);
	cr_expect(strstr(text, " {1,3}, split from the world with color 1: rank 3 called "), "%s", text);
	rt_vw_free(t);
	free(m);
}

Test(blame, without_communicator_records_every_rank_may_be_a_member)
{
	char text[RT_VW_FINDING_TEXT];
	const struct rt_vw_finding *f;

	/* a trace before rt_comm records: the world's collective never called
	 * by rank 1 names rank 1, and the sentence says no members */
	rig(4);
	for (int i = 0; i < 4; i++)
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, 4ull, RT_FN_rank, (uint64_t)i);
	for (int i = 0; i < 4; i++)
		for (uint64_t seq = 1; seq <= (i == 1 ? 1u : 2u); seq++)
			ev(i, RT_ID_ncclAllReduce, i, 0, false, RT_FN_comm_id, COMM, RT_FN_seq, seq,
			   RT_FN_count, 64ull, -1);
	for (int i = 0; i < 4; i++)
		OK(i, rt_exit, i, RT_FN_status, 0ull);
	rt_vw_model_finish(m);
	f = only(RT_FK_NEVER_CALLED, text, sizeof(text));
	cr_expect(f->nranks == 1 && f->ranks[0] == 1, "%s", text);
	cr_expect(!strchr(text, '{'), "%s", text);
	rt_vw_free(t);
	free(m);
}

/* ---- the communicators across ranks (comm_index.c) and view's list ---- */

Test(comm_index, every_communicator_with_its_members_and_calls)
{
	const struct rt_vw_comm_entry *c;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	rig(4);
	halves(true);
	halves_allreduce(5, 1, 3);
	rt_vw_model_finish(m);
	cr_assert_eq(rt_vw_comm_count(t), 3, "the world and its two halves");
	cr_expect_eq(rt_vw_comm_at(t, 0)->id, COMM, "the world first: made first");
	c = rt_vw_comm_entry(t, SPLIT + 1);
	cr_assert_not_null(c);
	cr_assert_eq(c->nmembers, 2);
	cr_expect(c->members[0].global == 1 && c->members[1].global == 3, "{1,3} in place order");
	cr_expect(c->members[0].key == 1 && c->members[1].key == 3, "their split keys");
	cr_expect(c->colls_most == 5 && c->colls_fewest == 4, "rank 1 skipped one (%llu, %llu)",
		  (unsigned long long)c->colls_most, (unsigned long long)c->colls_fewest);
	cr_expect_eq(rt_vw_comm_entry(t, COMM)->nmembers, 4);
	cr_expect_eq(rt_vw_comm_entry(t, COMM)->colls_most, 0, "no collective on the world");
	cr_expect_null(rt_vw_comm_entry(t, 0x999), "no rank recorded it");
	f = open_memstream(&text, &len);
	rt_vw_comms_text(f, t, 3, false); /* view --rank 3: its communicators only */
	fclose(f);
	cr_expect(strstr(text, "{0-3}: made by ncclCommInitRank; made; 0 collectives"), "%s", text);
	cr_expect(strstr(text, "{1,3}: split from the world with color 1, keys 1,3; made; "
			       "5 collectives (a member called 4)"), "%s", text);
	cr_expect(!strstr(text, "{0,2}"), "rank 3 is not in {0,2}: %s", text);
	free(text);
	rt_vw_free(t);
	free(m);
}

/* A non-blocking split's call returns ncclInProgress with no communicator
 * and no size; its rt_comm record, once made, says both. The matcher
 * learns the size from it, so its collectives close as every member calls
 * them (before: open to the end, its size unknown, taken as the trace's 4
 * ranks: the matcher's memory grew with every collective on it). */
Test(comm_index, a_non_blocking_splits_collectives_close)
{
	rig(4);
	for (int i = 0; i < 4; i++) {
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, 4ull, RT_FN_rank, (uint64_t)i);
		comm(i, COMM, 4, i, RT_COMM_INIT_CONFIG, 0, -1, 1, "");
		ev(i, RT_ID_ncclCommSplit, i, 7 /* ncclInProgress */, false, RT_FN_parent_id, COMM,
		   RT_FN_color, (uint64_t)(i % 2), RT_FN_key, (uint64_t)i, -1);
		comm(i, SPLIT + (uint64_t)(i % 2), 2, i / 2, RT_COMM_SPLIT, COMM, i % 2, 1, "");
	}
	for (int i = 0; i < 4; i++)
		for (uint64_t seq = 1; seq <= 3; seq++)
			ev(i, RT_ID_ncclAllReduce, i, 0, false, RT_FN_comm_id, SPLIT + (uint64_t)(i % 2),
			   RT_FN_seq, seq, RT_FN_count, 1024ull, -1);
	cr_expect_eq(m->open, 0, "every collective closed (%zu open)", m->open);
	for (int i = 0; i < 4; i++)
		OK(i, rt_exit, i, RT_FN_status, 0ull);
	rt_vw_model_finish(m);
	cr_expect_eq(t->verdict, RT_V_HEALTHY);
	rt_vw_free(t);
	free(m);
}

/* view's text of communicators being made, failed, shrunk, revoked; and
 * the first 16 listed unless --all. */
Test(comm_index, the_text_says_each_state_and_lists_16_unless_all)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int lines = 0;

	rig(4);
	for (int i = 0; i < 4; i++) {
		comm(i, COMM, 4, i, RT_COMM_INIT_CONFIG, 0, -1, i == 2 ? 0 : 1, "");
		if (i != 3)
			comm(i, 0x5a, 3, i, RT_COMM_SHRINK, COMM, -1, i == 1 ? 2 : 1, "3");
		for (int k = 0; k < 20; k++) /* 20 more, by ncclCommInitRank */
			comm(i, 0x100 + (uint64_t)k, 4, i, RT_COMM_INIT, 0, -1, 1, "");
	}
	OK(0, ncclCommRevoke, 0, RT_FN_comm_id, 0x5aull, RT_FN_flags, 0ull);
	rt_vw_model_finish(m);
	cr_assert_eq(rt_vw_comm_count(t), 22);
	f = open_memstream(&text, &len);
	rt_vw_comms_text(f, t, -1, false);
	fclose(f);
	cr_expect(strstr(text, "{0-3}: made by ncclCommInitRankConfig; being made on 1 of 4; 0 collectives"),
		  "%s", text);
	cr_expect(strstr(text, "  (6 more: --all lists every one)\n"), "inits first, 16 of them: %s",
		  text);
	cr_expect(!strstr(text, "shrunk"), "the shrink is the last: %s", text);
	free(text);
	text = NULL;
	f = open_memstream(&text, &len);
	rt_vw_comms_text(f, t, -1, true);
	fclose(f);
	for (const char *p = text; (p = strstr(p, "\n  ")); p++)
		lines++;
	cr_expect_eq(lines, 22, "--all: every one (%d): %s", lines, text);
	cr_expect(strstr(text, "{0-2}: shrunk from the world without its ranks 3; failed on 1 of 3, "
			       "revoked by 1; 0 collectives\n"), "%s", text);
	free(text);
	rt_vw_free(t);
	free(m);
}

/* A 3-D parallel job's rank enters collectives on a dozen communicators or
 * more (tp, pp, dp, cp, ep, their embedding groups): the model keeps the
 * highest sequence entered on each, which the hang analysis asks (a table
 * of 8 lost the 9th on). */
Test(model_comms, a_rank_keeps_its_sequence_on_every_communicator)
{
	rig(1);
	for (uint64_t c = 0; c < 20; c++)
		for (uint64_t seq = 1; seq <= c + 1; seq++)
			ev(0, RT_ID_ncclAllReduce, 0, 0, false, RT_FN_comm_id, 0x100 + c, RT_FN_seq, seq,
			   RT_FN_count, 16ull, -1);
	for (uint64_t c = 0; c < 20; c++)
		cr_expect_eq(rt_vw_entered_seq(&t->ranks[0], 0x100 + c), (uint32_t)c + 1,
			     "communicator %llu: entered #%u", (unsigned long long)c,
			     rt_vw_entered_seq(&t->ranks[0], 0x100 + c));
	rt_vw_free(t);
	free(m);
}
