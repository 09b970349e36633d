/* SPDX-License-Identifier: MIT */
/* hooks.c - where the rooms meet: what the NCCL rows of the call tables
 * (format/nccl_api.def, events.def) call when one call concerns
 * several rooms.
 *
 * A collective takes its number on its communicator, a point-to-point call
 * its number for its peer and direction (identity/comms.c), and the device
 * side learns it (device/: the plugin ties NCCL's event to it, the CUDA-event
 * source its events). A group's outermost end records rt_group (one launch).
 * A communicator, however made, is recorded as rt_comm (core) once its
 * identity is known: at an init's call (a non-blocking one again when
 * ncclCommGetAsyncError says it is made), a split's or shrink's once NCCL
 * wrote its handle (at once, or at its group's end, or when a poll says the
 * parent is done). A communicator created with a rank tells the trace the
 * rank (identity/rank.c renames a pid-named directory, the store rewrites
 * the metadata, core records rt_rank); with the LTTng sink there is no
 * directory: the event says it. Not on the hot path of CUDA calls; no lock,
 * no allocation (but the metadata rewrite, once per process). */
#include <nccl.h>
#include <stdio.h>

#include "core.h"
#include "device.h"
#include "identity.h"
#include "interpose.h"

/* This thread's group (ncclGroupStart/End): depth, its number, what it
 * holds. */
static RT_TLS struct {
	int depth;
	uint32_t number, colls, p2ps;
} grp;

RT_TLS bool rt_tr_unnumbered;

uint32_t rt_tr_coll_seq(const void *comm, const void *send, const void *recv, uint64_t count)
{
	uint64_t id = 0;
	uint32_t seq;
	int dev = -1;

	if (rt_tr_unnumbered)
		return 0;
	if (rt_tr_comm_next_coll(comm, &id, &seq, &dev))
		rt_tr_dev_enqueued(id, seq, dev, send, recv, count, grp.depth > 0);
	grp.colls += grp.depth > 0;
	return seq;
}

uint32_t rt_tr_p2p_seq(const void *comm, int peer, int send, const void *buff, uint64_t count)
{
	uint64_t id = 0;
	uint32_t seq;
	int dev = -1;

	if (rt_tr_unnumbered)
		return 0;
	if (rt_tr_comm_next_p2p(comm, peer, send, &id, &seq, &dev))
		rt_tr_dev_p2p_enqueued(id, peer, seq, send, dev, buff, count, grp.depth > 0);
	grp.p2ps += grp.depth > 0;
	return seq;
}

/* ncclGroupStart (+1) and ncclGroupEnd (-1), before the call: at the
 * outermost end the group is one launch (rt_group). The device side's
 * group column is the row's device. */
int rt_tr_group_step(int step)
{
	if (rt_tr_off || rt_tr_depth != 0) /* as the device side counts them */
		return rt_tr_devev_group(step);
	if (step > 0 && grp.depth++ == 0) {
		grp.number++;
		grp.colls = grp.p2ps = 0;
	} else if (step < 0 && grp.depth > 0 && --grp.depth == 0) {
		rt_tr_ev_rt_group(grp.number, grp.colls, grp.p2ps);
	}
	return rt_tr_devev_group(step);
}

static void rank_from_nccl(int rank, int nranks)
{
	if (rt_tr_lttng_wanted) { /* no rank directory: the event says it */
		if (rt_tr_rank.rank >= 0 || rank < 0)
			return;
		rt_tr_rank.rank = rank;
		rt_tr_rank.world_size = nranks;
		rt_tr_rank.source = "nccl";
		rt_tr_ev_rt_rank(rank, nranks);
		return;
	}
	if (!rt_tr_rank_learn(rank, nranks))
		return;
	rt_tr_write_metadata(rt_tr_rank.dir, true);
	rt_tr_ev_rt_rank(rank, nranks);
}

static void record_comm(const struct rt_tr_comm_info *i)
{
	rt_tr_ev_rt_comm(i->id, i->nranks, i->rank, rt_tr_rank.rank, i->how, i->parent, i->color,
			 i->key, i->ordinal, i->excluded, i->comm, i->device, i->state);
}

/* A communicator made by an init call (how), or being made (ret
 * ncclInProgress: a non-blocking one, its identity known already). */
void rt_tr_comm_made(const void *comm, uint64_t id, int nranks, int rank, int how, long ret)
{
	struct rt_tr_comm_info i = { .comm = comm, .id = id, .nranks = nranks, .rank = rank,
				     .device = rt_tr_cur_dev, .how = how, .color = -1, .key = -1,
				     .ordinal = rt_tr_comm_ordinal(how),
				     .state = ret == 0 ? RT_TR_COMM_MADE : RT_TR_COMM_BEING_MADE };

	if (!comm)
		return;
	rt_tr_comm_register(&i);
	record_comm(&i);
	rank_from_nccl(rank, nranks);
}

void rt_tr_comm_init_all(const void *comms, int ndev, const int *devlist)
{
	const void *const *c = comms;
	int ordinal = rt_tr_comm_ordinal(RT_COMM_INIT_ALL);

	for (int k = 0; c && k < ndev; k++) {
		struct rt_tr_comm_info i = { .comm = c[k], .id = rt_tr_comm_init_all_id(ordinal),
					     .nranks = ndev, .rank = k,
					     .device = devlist ? devlist[k] : k,
					     .how = RT_COMM_INIT_ALL, .ordinal = ordinal,
					     .color = -1, .key = -1, .state = RT_TR_COMM_MADE };

		if (rt_tr_comm_register(&i))
			record_comm(&i);
	}
}

/* A split or shrink: made now (its handle written), or later (in a group,
 * non-blocking): then kept until its handle is (rt_tr_group_done,
 * rt_tr_comm_polled). */
static void child_made(struct rt_tr_comm_info *i, const void *const *where, long ret)
{
	const void *comm = where ? *where : NULL;

	if (comm && ret == 0) {
		i->comm = comm;
		i->nranks = rt_tr_comm_count(comm);
		i->rank = rt_tr_comm_user_rank(comm);
		i->state = RT_TR_COMM_MADE;
		if (rt_tr_comm_register(i))
			record_comm(i);
		return;
	}
	i->state = RT_TR_COMM_MADE;
	rt_tr_comm_pend(where, i);
}

void rt_tr_comm_split_made(const void *parent, int color, int key, const void *where, long ret)
{
	struct rt_tr_comm_info i = { .how = RT_COMM_SPLIT, .color = color, .key = key,
				     .ordinal = rt_tr_comm_ordinal(RT_COMM_SPLIT),
				     .device = rt_tr_comm_device(parent), .nranks = -1, .rank = -1 };

	i.id = rt_tr_comm_child_id(parent, RT_COMM_SPLIT, color, NULL, 0, &i.parent);
	if (i.id && color != NCCL_SPLIT_NOCOLOR) /* NOCOLOR: counted, no communicator */
		child_made(&i, where, ret);
}

void rt_tr_comm_shrunk(const void *parent, const int *excl, int nexcl, const void *where, long ret)
{
	struct rt_tr_comm_info i = { .how = RT_COMM_SHRINK, .color = -1, .key = -1,
				     .ordinal = rt_tr_comm_ordinal(RT_COMM_SHRINK),
				     .device = rt_tr_comm_device(parent), .nranks = -1, .rank = -1 };
	size_t len = 0;

	for (int k = 0; excl && k < nexcl && len < sizeof(i.excluded) - 12; k++)
		len += (size_t)snprintf(i.excluded + len, sizeof(i.excluded) - len, "%s%d",
					k ? "," : "", excl[k]);
	i.id = rt_tr_comm_child_id(parent, RT_COMM_SHRINK, 0, excl, nexcl, &i.parent);
	if (i.id)
		child_made(&i, where, ret);
}

/* Splits and shrinks whose handles NCCL has written since. */
static void take_pending(void)
{
	struct rt_tr_comm_info i;

	while (rt_tr_comm_pending_ready(&i)) {
		i.nranks = rt_tr_comm_count(i.comm);
		i.rank = rt_tr_comm_user_rank(i.comm);
		if (rt_tr_comm_register(&i))
			record_comm(&i);
	}
}

/* ncclCommGetAsyncError said state: a communicator being made is made
 * (or failed); a split or shrink of a non-blocking parent may be. */
void rt_tr_comm_polled(const void *comm, int state)
{
	struct rt_tr_comm_info i;

	if (state == ncclInProgress)
		return;
	if (rt_tr_comm_set_state(comm, state == ncclSuccess ? RT_TR_COMM_MADE : RT_TR_COMM_FAILED, &i))
		record_comm(&i);
	if (state == ncclSuccess)
		take_pending();
}

/* ncclGroupEnd returned (success or in progress): what its jobs made. */
void rt_tr_group_done(long ret)
{
	(void)ret;
	rt_tr_devev_group_done();
	take_pending();
}
