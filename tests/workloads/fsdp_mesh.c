/* SPDX-License-Identifier: MIT */
/* fsdp_mesh.c - fsdp_mini's device mesh (--mesh): the world communicator
 * (ncclCommInitRank, or ncclCommInitRankConfig with blocking = 0 under
 * --nonblocking-init, polled until made) and the groups each mode splits
 * from it with ncclCommSplit, as PyTorch's DeviceMesh and new_group do:
 *   hsdp:S  shard groups {0..S-1}, {S..2S-1}... (color rank / S) and
 *           replicate groups {0,S,2S...}, ... (color rank % S)
 *   tp:T    tensor groups (color rank / T) and data groups (color rank % T)
 *   pp      the first and the last stage, for the tied embedding (the
 *           others split with NCCL_SPLIT_NOCOLOR)
 * and the host-side collectives the modes use (a device scratch buffer). */
#include <stdio.h>
#include <stdlib.h>

#include "fsdp_mini.h"

static double *scratch;
static size_t scratch_n;

/* A device buffer of at least n doubles (grown, never shrunk). */
static double *scratch_of(size_t n)
{
	if (n > scratch_n) {
		if (scratch)
			CUDA(cudaFree, scratch);
		CUDA(cudaMalloc, (void **)&scratch, n * sizeof(double));
		scratch_n = n;
	}
	return scratch;
}

/* ncclCommSplit of the world (non-blocking: polled on the world, as NCCL's
 * documentation does, until the split is done). */
static ncclComm_t split(struct model *m, int color, int key)
{
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclComm_t c = NULL;

	cfg.blocking = m->cfg.nonblocking ? 0 : 1;
	NCCL(m->comm, ncclCommSplit, m->comm, color, key, &c, &cfg);
	return c;
}

static void init_world(struct model *m, const ncclUniqueId *id)
{
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclResult_t r;

	if (!m->cfg.nonblocking) {
		NCCL(NULL, ncclCommInitRank, &m->comm, world, *id, rank);
		return;
	}
	cfg.blocking = 0;
	count_call("ncclCommInitRankConfig");
	r = ncclCommInitRankConfig(&m->comm, world, *id, rank, &cfg);
	r = nccl_settle(m->comm, r); /* ncclInProgress until every rank is there */
	if (r != ncclSuccess)
		nccl_failed("ncclCommInitRankConfig", r, m->comm);
}

static bool mesh_fits(const struct model *m)
{
	if ((m->cfg.mesh == MESH_HSDP || m->cfg.mesh == MESH_TP) && world % m->cfg.mesh_size) {
		fprintf(stderr, "fsdp_mini: --mesh %s:%d needs WORLD_SIZE divisible by %d (it is %d)\n",
			m->cfg.mesh == MESH_HSDP ? "hsdp" : "tp", m->cfg.mesh_size, m->cfg.mesh_size,
			world);
		return false;
	}
	return true;
}

void mesh_init(struct model *m, const ncclUniqueId *id)
{
	int s = m->cfg.mesh_size;

	if (!mesh_fits(m))
		die(2);
	init_world(m, id);
	m->shard_comm = m->comm;
	m->shard_size = world;
	m->shard_rank = rank;
	m->dp_size = world;
	m->dp_rank = rank;
	m->tp_size = 1;
	switch (m->cfg.mesh) {
	case MESH_HSDP:
		m->shard_comm = split(m, rank / s, rank);
		m->repl_comm = split(m, rank % s, rank);
		m->shard_size = s;
		m->shard_rank = rank % s;
		break;
	case MESH_TP:
		m->tp_comm = split(m, rank / s, rank);
		m->dp_comm = split(m, rank % s, rank);
		m->tp_size = s;
		m->tp_rank = rank % s;
		m->dp_size = world / s;
		m->dp_rank = rank / s;
		break;
	case MESH_PP:
		m->dp_size = 1;
		m->dp_rank = 0;
		if (world > 1)
			m->embed_comm = split(m, rank == 0 || rank == world - 1 ? 0 : NCCL_SPLIT_NOCOLOR,
					      rank);
		break;
	default:
		break;
	}
}

void mesh_destroy(struct model *m)
{
	ncclComm_t split_comms[] = { m->repl_comm, m->tp_comm, m->dp_comm, m->embed_comm,
				     m->shard_comm != m->comm ? m->shard_comm : NULL };

	for (size_t i = 0; i < sizeof(split_comms) / sizeof(split_comms[0]); i++)
		if (split_comms[i])
			NCCL(split_comms[i], ncclCommDestroy, split_comms[i]);
	if (scratch)
		CUDA(cudaFree, scratch);
	NCCL(m->comm, ncclCommDestroy, m->comm);
}

void mesh_replicate_grad(struct model *m, float *grad_shard, size_t n, cudaStream_t stream)
{
	NCCL(m->repl_comm, ncclAllReduce, grad_shard, grad_shard, n, ncclFloat32, ncclSum,
	     m->repl_comm, stream);
	watchdog_enqueued("ALLREDUCE", n, n, stream);
}

void host_allreduce(struct model *m, ncclComm_t comm, double *v, size_t n)
{
	double *d = scratch_of(n);

	(void)m;
	CUDA(cudaMemcpy, d, v, n * sizeof(double), cudaMemcpyHostToDevice);
	NCCL(comm, ncclAllReduce, d, d, n, ncclFloat64, ncclSum, comm, NULL);
	watchdog_enqueued("ALLREDUCE", n, n, NULL);
	CUDA(cudaMemcpy, v, d, n * sizeof(double), cudaMemcpyDeviceToHost);
}

void host_allgather(struct model *m, ncclComm_t comm, const double *in, double *out, size_t n)
{
	int size = 1;
	double *d;

	(void)m;
	if (ncclCommCount(comm, &size) != ncclSuccess)
		nccl_failed("ncclCommCount", ncclInvalidArgument, comm);
	d = scratch_of(n * (size_t)(size + 1));
	CUDA(cudaMemcpy, d, in, n * sizeof(double), cudaMemcpyHostToDevice);
	NCCL(comm, ncclAllGather, d, d + n, n, ncclFloat64, comm, NULL);
	watchdog_enqueued("_ALLGATHER_BASE", n, n * (size_t)size, NULL);
	CUDA(cudaMemcpy, out, d + n, n * (size_t)size * sizeof(double), cudaMemcpyDeviceToHost);
}
