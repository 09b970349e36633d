/* SPDX-License-Identifier: MIT */
/* fsdp_math.c - fsdp_mini's arithmetic on the host: the batch, the tied
 * output head's loss and gradients, and a block's backward. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp_mini.h"

void make_batch(const struct model *m, int step, struct batch *b)
{
	int V = m->cfg.vocab, per = m->cfg.batch / world;

	b->n = per;
	b->T = m->cfg.seq;
	for (int s = 0; s < per; s++) {
		int gs = rank * per + s;
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
	int D = m->cfg.hidden, V = m->cfg.vocab, N = b->n * b->T, L = m->nunits - 1;
	const float *E = m->units[0].host_full;
	double *gE = m->units[0].grad, *hL = b->h + (size_t)L * N * D;
	double *p = malloc(sizeof(double) * (size_t)V);

	if (!p)
		die(1);
	b->loss_sum = 0;
	memset(dh, 0, sizeof(double) * (size_t)N * D);
	for (int s = 0; s < b->n; s++)
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
