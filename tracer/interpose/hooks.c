/* SPDX-License-Identifier: MIT */
/* hooks.c - where the rooms meet: what the NCCL rows of the call tables
 * (format/nccl_api.def) call when one call concerns several rooms.
 *
 * A collective takes its number on its communicator (identity/comms.c) and
 * the device side learns it (device/device.c: the plugin ties NCCL's event
 * to it). A communicator created with a rank tells the trace the rank
 * (identity/rank.c renames a pid-named directory, the store rewrites the
 * metadata, core records rt_rank); with the LTTng sink there is no
 * directory: the event says it. Not on the hot path of CUDA calls; no lock,
 * no allocation (but the metadata rewrite, once per process). */
#include "core.h"
#include "device.h"
#include "identity.h"
#include "interpose.h"

uint32_t rt_tr_coll_seq(const void *comm)
{
	uint64_t id = 0;
	uint32_t seq;
	int dev = -1;

	if (rt_tr_comm_next_coll(comm, &id, &seq, &dev))
		rt_tr_dev_enqueued(id, seq, dev);
	return seq;
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

void rt_tr_comm_new(const void *comm, uint64_t id, int nranks, int rank)
{
	rt_tr_comm_add(comm, id, rt_tr_cur_dev, nranks, rank);
	rank_from_nccl(rank, nranks);
}
