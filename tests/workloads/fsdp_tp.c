/* SPDX-License-Identifier: MIT */
/* fsdp_tp.c - fsdp_mini's tensor + data parallel mode (--mesh tp:T), and
 * the replicated model it and the pipeline mode start from.
 *
 * Each block's D outputs are split across the T ranks of a tensor group
 * (Megatron's column-parallel layer): a rank computes its D/T outputs for
 * every token, the group all-gathers them (ncclAllGather on tp_comm); in
 * backward each rank's outputs give part of the input gradient, summed over
 * the group (ncclAllReduce on tp_comm). The tensor groups train different
 * slices of the batch (data parallel): the gradients of the embedding and of
 * each rank's rows are all-reduced over the data group (dp_comm). Same
 * model, data and SGD as FSDP: the same losses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp_mini.h"
#include "ranktrace.h" /* weak: no-ops without libranktrace.so */

/* sync_module_states without sharding: every rank holds the whole model
 * (on the device, and on the host where its arithmetic runs). */
void replicate_wrap(struct model *m)
{
	for (int i = 0; i < m->nunits; i++) {
		struct unit *u = &m->units[i];

		CUDA(cudaMalloc, (void **)&u->storage, u->numel * sizeof(float));
		u->storage_bytes = u->numel * sizeof(float);
		if (u->on_meta)
			CUDA(cudaMemset, u->storage, 0, u->numel * sizeof(float));
		else
			CUDA(cudaMemcpy, u->storage, u->host_init, u->numel * sizeof(float),
			     cudaMemcpyHostToDevice);
		NCCL(m->comm, ncclBroadcast, u->storage, u->storage, u->numel, ncclFloat32, 0,
		     m->comm, NULL);
		watchdog_enqueued("BROADCAST", u->numel, u->numel, NULL);
		CUDA(cudaMemcpy, u->host_full, u->storage, u->numel * sizeof(float),
		     cudaMemcpyDeviceToHost);
		u->on_meta = false;
		if (u->host_init) {
			CUDA(cudaFreeHost, u->host_init);
			u->host_init = NULL;
		}
	}
	CUDA(cudaMalloc, (void **)&m->scalar_dev, sizeof(double));
}

/* SGD on elements [k0, k1) of a unit's parameters; their gradient zeroed. */
void sgd_rows(struct model *m, int unit, size_t k0, size_t k1)
{
	struct unit *u = &m->units[unit];

	for (size_t k = k0; k < k1; k++) {
		u->host_full[k] -= (float)(m->cfg.lr * u->grad[k]);
		u->grad[k] = 0;
	}
}

static void embed(struct model *m, struct batch *b)
{
	int D = m->cfg.hidden, N = b->n * b->T;
	const float *E = m->units[0].host_full;

	for (int i = 0; i < N; i++)
		for (int d = 0; d < D; d++)
			b->h[(size_t)i * D + d] = E[(size_t)b->tok[i] * D + d];
}

/* Block l: this rank's outputs, all-gathered; the residual added. */
static void tp_block_forward(struct model *m, struct batch *b, int l, double *part, double *all)
{
	int D = m->cfg.hidden, N = b->n * b->T, w = D / m->tp_size, o0 = m->tp_rank * w;
	double *hin = b->h + (size_t)(l - 1) * N * D, *hout = b->h + (size_t)l * N * D;

	block_forward_rows(m, b, l, 0, N, o0, o0 + w, part);
	host_allgather(m, m->tp_comm, part, all, (size_t)N * w);
	for (int t = 0; t < m->tp_size; t++)
		for (int i = 0; i < N; i++)
			for (int o = 0; o < w; o++)
				hout[(size_t)i * D + t * w + o] = hin[(size_t)i * D + t * w + o] +
								  all[((size_t)t * N + i) * w + o];
}

/* The gradients of this rank's rows and of the embedding, over the data group. */
static void tp_reduce_and_step(struct model *m, int w)
{
	int D = m->cfg.hidden, o0 = m->tp_rank * w;
	size_t E = m->units[0].numel;

	host_allreduce(m, m->dp_comm, m->units[0].grad, E);
	sgd_rows(m, 0, 0, E);
	for (int l = 1; l < m->nunits; l++) {
		double *g = m->units[l].grad;

		host_allreduce(m, m->dp_comm, g + (size_t)o0 * D, (size_t)w * D);
		host_allreduce(m, m->dp_comm, g + (size_t)D * D + o0, (size_t)w);
		sgd_rows(m, l, (size_t)o0 * D, (size_t)(o0 + w) * D);
		sgd_rows(m, l, (size_t)D * D + o0, (size_t)D * D + o0 + w);
	}
}

void tp_train_step(struct model *m, int step, struct batch *b)
{
	int D = m->cfg.hidden, N = b->n * b->T, w = D / m->tp_size;
	double *dh = malloc(sizeof(double) * (size_t)N * D), *dh_in = malloc(sizeof(double) * (size_t)N * D);
	double *part = malloc(sizeof(double) * (size_t)N * w), *all = malloc(sizeof(double) * (size_t)N * D);
	double loss;

	if (!dh || !dh_in || !part || !all)
		die(1);
	make_batch(m, step, b);
	rt_marker_if_traced("step", step);
	embed(m, b);
	for (int l = 1; l < m->nunits; l++)
		tp_block_forward(m, b, l, part, all);
	head_loss_backward(m, b, dh);
	loss = b->loss_sum;
	host_allreduce(m, m->dp_comm, &loss, 1);
	for (int l = m->nunits - 1; l >= 1; l--) {
		memset(dh_in, 0, sizeof(double) * (size_t)N * D);
		block_backward_rows(m, b, l, dh, 0, N, m->tp_rank * w, m->tp_rank * w + w, dh_in);
		host_allreduce(m, m->tp_comm, dh_in, (size_t)N * D);
		for (size_t k = 0; k < (size_t)N * D; k++)
			dh[k] += dh_in[k];
	}
	for (int i = 0; i < N; i++) /* the embedding's input-side gradient */
		for (int d = 0; d < D; d++)
			m->units[0].grad[(size_t)b->tok[i] * D + d] += dh[(size_t)i * D + d];
	tp_reduce_and_step(m, w);
	if (rank == 0)
		printf("step %d loss %.4f\n", step, loss / (double)b->predictions);
	fflush(stdout);
	free(dh);
	free(dh_in);
	free(part);
	free(all);
}
