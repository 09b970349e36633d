/* SPDX-License-Identifier: MIT */
/* fsdp_math.c - fsdp_mini's arithmetic on the host: the batch, the tied
 * output head's loss and gradients, and a block's backward. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp_mini.h"

/* This rank's slice of the global batch: the same sequences whatever the
 * mesh (data parallel: dp_size slices; pipeline parallel: all of them). */
void make_batch(const struct model *m, int step, struct batch *b)
{
	int V = m->cfg.vocab, per = m->cfg.batch / m->dp_size;

	b->n = per;
	b->T = m->cfg.seq;
	for (int s = 0; s < per; s++) {
		int gs = m->dp_rank * per + s;
		uint64_t x = (uint64_t)(step * 7919 + gs * 104729) * 2654435761u;
		int t0 = (int)(x % (uint64_t)V);

		/* a learnable sequence: each token follows from the previous one */
		for (int t = 0; t < b->T; t++)
			b->tok[s * b->T + t] = (t0 + t * 3 + (t * t0) % 5) % V;
	}
	b->predictions = (long)m->cfg.batch * (b->T - 1);
}

/* Tied output head: loss and its gradient into the embedding's and hL's. */
void head_loss_backward(struct model *m, struct batch *b, double *dh)
{
	b->loss_sum = 0;
	memset(dh, 0, sizeof(double) * (size_t)b->n * b->T * m->cfg.hidden);
	head_loss_rows(m, b, dh, 0, b->n);
}

/* The head for sequences [s0, s1): adds to the loss and the gradients. */
void head_loss_rows(struct model *m, struct batch *b, double *dh, int s0, int s1)
{
	int D = m->cfg.hidden, V = m->cfg.vocab, N = b->n * b->T, L = m->nunits - 1;
	const float *E = m->units[0].host_full;
	double *gE = m->units[0].grad, *hL = b->h + (size_t)L * N * D;
	double *p = malloc(sizeof(double) * (size_t)V);

	if (!p)
		die(1);
	for (int s = s0; s < s1; s++)
		for (int t = 0; t + 1 < b->T; t++) {
			int i = s * b->T + t, target = b->tok[i + 1];
			double mx = -1e300, z = 0;

			for (int v = 0; v < V; v++) {
				double a = 0;

				for (int d = 0; d < D; d++)
					a += (double)E[(size_t)v * D + d] * hL[(size_t)i * D + d];
				p[v] = a;
				mx = a > mx ? a : mx;
			}
			for (int v = 0; v < V; v++)
				z += (p[v] = exp(p[v] - mx));
			b->loss_sum += -log(p[target] / z);
			for (int v = 0; v < V; v++) {
				double g = (p[v] / z - (v == target)) / (double)b->predictions;

				for (int d = 0; d < D; d++) {
					gE[(size_t)v * D + d] += g * hL[(size_t)i * D + d];
					dh[(size_t)i * D + d] += g * E[(size_t)v * D + d];
				}
			}
		}
	free(p);
}

/* Block l's outputs [o0, o1) for tokens [r0, r1): tanh(W h + bias) into
 * out (row i, column o at out[(i - r0) * (o1 - o0) + o - o0]). */
void block_forward_rows(struct model *m, struct batch *b, int l, int r0, int r1, int o0, int o1,
			double *out)
{
	int D = m->cfg.hidden, N = b->n * b->T, w = o1 - o0;
	const float *W = m->units[l].host_full, *bias = W + (size_t)D * D;
	const double *hin = b->h + (size_t)(l - 1) * N * D;

	for (int i = r0; i < r1; i++)
		for (int o = o0; o < o1; o++) {
			double z = bias[o];

			for (int k = 0; k < D; k++)
				z += (double)W[(size_t)o * D + k] * hin[(size_t)i * D + k];
			out[(size_t)(i - r0) * w + (o - o0)] = tanh(z);
		}
}

/* Block l's gradient from its outputs [o0, o1) for tokens [r0, r1), given
 * dh at its output; dh_in (D per token, from r0) gets W^T dz of those
 * outputs added: the input gradient is dh + the sum over all outputs. */
void block_backward_rows(struct model *m, struct batch *b, int l, double *dh, int r0, int r1,
			 int o0, int o1, double *dh_in)
{
	int D = m->cfg.hidden, N = b->n * b->T;
	struct unit *u = &m->units[l];
	const float *W = u->host_full, *bias = W + (size_t)D * D;
	double *hin = b->h + (size_t)(l - 1) * N * D, *gW = u->grad, *gb = u->grad + (size_t)D * D;

	for (int i = r0; i < r1; i++)
		for (int o = o0; o < o1; o++) {
			double z = bias[o], a, dz;

			for (int k = 0; k < D; k++)
				z += (double)W[(size_t)o * D + k] * hin[(size_t)i * D + k];
			a = tanh(z);
			dz = dh[(size_t)i * D + o] * (1 - a * a);
			gb[o] += dz;
			for (int k = 0; k < D; k++) {
				gW[(size_t)o * D + k] += dz * hin[(size_t)i * D + k];
				dh_in[(size_t)(i - r0) * D + k] += (double)W[(size_t)o * D + k] * dz;
			}
		}
}

/* Gradient of one block given dh at its output; dh becomes dh at its input. */
void block_backward(struct model *m, struct batch *b, int l, double *dh)
{
	int D = m->cfg.hidden, N = b->n * b->T;
	struct unit *u = &m->units[l];
	const float *W = u->host_full, *bias = W + (size_t)D * D;
	double *hin = b->h + (size_t)(l - 1) * N * D, *gW = u->grad, *gb = u->grad + (size_t)D * D;
	double *dz = malloc(sizeof(double) * (size_t)D);

	if (!dz)
		die(1);
	for (int i = 0; i < N; i++) {
		for (int o = 0; o < D; o++) {
			double z = bias[o];

			for (int k = 0; k < D; k++)
				z += (double)W[(size_t)o * D + k] * hin[(size_t)i * D + k];
			double a = tanh(z);

			dz[o] = dh[(size_t)i * D + o] * (1 - a * a);
			gb[o] += dz[o];
			for (int k = 0; k < D; k++)
				gW[(size_t)o * D + k] += dz[o] * hin[(size_t)i * D + k];
		}
		for (int k = 0; k < D; k++) {
			double s = 0;

			for (int o = 0; o < D; o++)
				s += (double)W[(size_t)o * D + k] * dz[o];
			dh[(size_t)i * D + k] += s;
		}
	}
	free(dz);
}
