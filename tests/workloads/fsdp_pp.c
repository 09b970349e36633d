/* SPDX-License-Identifier: MIT */
/* fsdp_pp.c - fsdp_mini's pipeline parallel mode (--mesh pp): rank s is
 * stage s of WORLD_SIZE and holds blocks [first, last] (the L blocks split
 * in order; a stage may hold none and pass its input on). A step is GPipe's
 * schedule: every microbatch forward (stage 0 embeds the tokens; each stage
 * ncclRecv's its input from the stage before and ncclSend's its output to
 * the next; the last stage computes the head's loss), then every
 * microbatch backward (gradients the other way). The head is tied to the
 * embedding, which the first and last stage both hold: their embedding
 * gradients are all-reduced between them (embed_comm), as Megatron does.
 * Same model, data and SGD as FSDP: the same losses.
 *
 * --short-send R:N: stage R sends its N-th microbatch forward one element
 * short (a count mismatch with the next stage's Recv, for ranktrace's
 * pairing; the simulated NCCL fails the Recv as ncclInvalidUsage).
 *
 * --stall-send R:N: stage R stops before it sends its N-th microbatch forward
 * (counted over the run), as a stage stuck elsewhere would: the next stage
 * waits in ncclRecv for it (NCCL matches a pair's Sends and Recvs in order:
 * a stage that skipped one and went on would feed the next its later
 * microbatches instead). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsdp_mini.h"
#include "ranktrace.h" /* weak: no-ops without libranktrace.so */

static double *p2p_dev;
static size_t p2p_n;
static int sends_forward;

static double *p2p_buf(size_t n)
{
	if (n > p2p_n) {
		if (p2p_dev)
			CUDA(cudaFree, p2p_dev);
		CUDA(cudaMalloc, (void **)&p2p_dev, n * sizeof(double));
		p2p_n = n;
	}
	return p2p_dev;
}

/* n doubles to or from peer, through the device (the legacy stream orders
 * the copies with the transfer). */
static void send_host(struct model *m, const double *v, size_t n, int peer)
{
	double *d = p2p_buf(n);

	CUDA(cudaMemcpy, d, v, n * sizeof(double), cudaMemcpyHostToDevice);
	NCCL(m->comm, ncclSend, d, n, ncclFloat64, peer, m->comm, NULL);
}

static void recv_host(struct model *m, double *v, size_t n, int peer)
{
	double *d = p2p_buf(n);

	NCCL(m->comm, ncclRecv, d, n, ncclFloat64, peer, m->comm, NULL);
	CUDA(cudaMemcpy, v, d, n * sizeof(double), cudaMemcpyDeviceToHost);
}

/* --stall-send: this stage stops here (10 minutes, then gives up). */
static void stall(void)
{
	struct timespec ten_min = { 600, 0 };

	fprintf(stderr, "fsdp_mini: rank %d: stalls before sending microbatch %d (--stall-send)\n",
		rank, sends_forward);
	fflush(stderr);
	while (nanosleep(&ten_min, &ten_min) != 0)
		;
	die(1);
}

struct stage {
	int first, last;      /* blocks held: [first, last], none when last < first */
	int spm, nmb;         /* sequences and tokens per microbatch */
};

static struct stage stage_of(const struct model *m, const struct batch *b)
{
	int L = m->nunits - 1;

	return (struct stage){ 1 + rank * L / world, (rank + 1) * L / world,
			       b->n / m->cfg.microbatches, b->n / m->cfg.microbatches * b->T };
}

static void forward(struct model *m, struct batch *b, const struct stage *st, int mb, double *dh)
{
	int D = m->cfg.hidden, N = b->n * b->T, r0 = mb * st->nmb, r1 = r0 + st->nmb;
	double *tmp = malloc(sizeof(double) * (size_t)st->nmb * D);

	if (!tmp)
		die(1);
	if (rank == 0) {
		const float *E = m->units[0].host_full;

		for (int i = r0; i < r1; i++)
			for (int d = 0; d < D; d++)
				b->h[(size_t)i * D + d] = E[(size_t)b->tok[i] * D + d];
	} else {
		recv_host(m, b->h + ((size_t)(st->first - 1) * N + r0) * D, (size_t)st->nmb * D, rank - 1);
	}
	for (int l = st->first; l <= st->last; l++) {
		double *hin = b->h + ((size_t)(l - 1) * N + r0) * D, *hout = b->h + ((size_t)l * N + r0) * D;

		block_forward_rows(m, b, l, r0, r1, 0, D, tmp);
		for (size_t k = 0; k < (size_t)st->nmb * D; k++)
			hout[k] = hin[k] + tmp[k];
	}
	if (rank < world - 1) {
		int out = st->last < st->first ? st->first - 1 : st->last; /* none: passed on */
		size_t n = (size_t)st->nmb * D;

		sends_forward++;
		if (rank == m->cfg.stall_send_rank && sends_forward == m->cfg.stall_send_nth)
			stall();
		if (rank == m->cfg.short_send_rank && sends_forward == m->cfg.short_send_nth)
			n--;
		send_host(m, b->h + ((size_t)out * N + r0) * D, n, rank + 1);
	} else {
		head_loss_rows(m, b, dh, mb * st->spm, (mb + 1) * st->spm);
	}
	free(tmp);
}

static void backward(struct model *m, struct batch *b, const struct stage *st, int mb, double *dh)
{
	int D = m->cfg.hidden, r0 = mb * st->nmb, r1 = r0 + st->nmb;
	double *rows = dh + (size_t)r0 * D, *dh_in = calloc((size_t)st->nmb * D, sizeof(double));

	if (!dh_in)
		die(1);
	if (rank < world - 1)
		recv_host(m, rows, (size_t)st->nmb * D, rank + 1);
	for (int l = st->last; l >= st->first; l--) {
		memset(dh_in, 0, sizeof(double) * (size_t)st->nmb * D);
		block_backward_rows(m, b, l, dh, r0, r1, 0, D, dh_in);
		for (size_t k = 0; k < (size_t)st->nmb * D; k++)
			rows[k] += dh_in[k];
	}
	if (rank > 0)
		send_host(m, rows, (size_t)st->nmb * D, rank - 1);
	else /* the embedding's input-side gradient */
		for (int i = r0; i < r1; i++)
			for (int d = 0; d < D; d++)
				m->units[0].grad[(size_t)b->tok[i] * D + d] += dh[(size_t)i * D + d];
	free(dh_in);
}

void pp_train_step(struct model *m, int step, struct batch *b)
{
	int D = m->cfg.hidden, N = b->n * b->T;
	struct stage st;
	double *dh = calloc((size_t)N * D, sizeof(double)), loss;

	if (!dh)
		die(1);
	make_batch(m, step, b);
	st = stage_of(m, b);
	rt_marker_if_traced("step", step);
	b->loss_sum = 0;
	for (int mb = 0; mb < m->cfg.microbatches; mb++)
		forward(m, b, &st, mb, dh);
	for (int mb = m->cfg.microbatches - 1; mb >= 0; mb--)
		backward(m, b, &st, mb, dh);
	if (m->embed_comm) /* the tied embedding: first and last stage */
		host_allreduce(m, m->embed_comm, m->units[0].grad, m->units[0].numel);
	if (rank == 0 || rank == world - 1)
		sgd_rows(m, 0, 0, m->units[0].numel);
	for (int l = st.first; l <= st.last; l++)
		sgd_rows(m, l, 0, m->units[l].numel);
	loss = rank == world - 1 ? b->loss_sum : 0;
	host_allreduce(m, m->comm, &loss, 1);
	if (rank == 0)
		printf("step %d loss %.4f\n", step, loss / (double)b->predictions);
	fflush(stdout);
	free(dh);
}
