/* SPDX-License-Identifier: MIT */
/* fsdp_args.c - fsdp_mini's command line and the transformers releases it
 * models (--trainer-version). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp_mini.h"

/* The transformers releases fsdp_mini models, and which module their
 * Trainer._inner_training_loop trains, as the real releases do (issue 18:
 * measured with transformers' own Trainer, FSDP v1): 4.53.0 alone trains the
 * unwrapped module; 4.53.1 has the fix (PR 39177). */
static const struct {
	const char *version;
	bool wrapped;
} releases[] = {
	{ "4.51.3", true }, { "4.52.4", true }, { "4.53.0", false }, { "4.53.1", true },
	{ "4.53.2", true },
};
#define NRELEASES (sizeof(releases) / sizeof(releases[0]))

/* The release's row, or -1 when fsdp_mini does not know it. */
static int release_index(const char *version)
{
	for (size_t i = 0; i < NRELEASES; i++)
		if (!strcmp(releases[i].version, version))
			return (int)i;
	return -1;
}

bool trainer_uses_wrapped(const char *version)
{
	int i = release_index(version);

	return i < 0 || releases[i].wrapped;
}

/* fsdp | hsdp:S | tp:T | pp */
static bool parse_mesh(const char *v, struct config *c)
{
	char kind[8];
	int n = 0;

	if (!strcmp(v, "fsdp") || !strcmp(v, "pp")) {
		c->mesh = v[0] == 'f' ? MESH_FSDP : MESH_PP;
		return true;
	}
	if (sscanf(v, "%4[a-z]:%d", kind, &n) == 2 && n >= 1 &&
	    (!strcmp(kind, "hsdp") || !strcmp(kind, "tp"))) {
		c->mesh = kind[0] == 'h' ? MESH_HSDP : MESH_TP;
		c->mesh_size = n;
		return true;
	}
	fprintf(stderr, "fsdp_mini: --mesh is fsdp, hsdp:S, tp:T or pp (got %s)\n", v);
	return false;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fsdp_mini [--trainer-version V] [--steps N] [--layers L] [--hidden D]\n"
		"                 [--vocab V] [--seq T] [--batch B] [--lr X] [--call-counts PATH]\n"
		"\n"
		"An FSDP v1 training job (embedding + L blocks, one FSDP unit each) on the\n"
		"CUDA runtime and NCCL, one process per rank (start it with rt-launch or\n"
		"torchrun: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).\n"
		"\n"
		"  --trainer-version V  transformers behaviour to model (default 4.52.4):\n"
		"                       4.51.3, 4.52.4, 4.53.1, 4.53.2: the Trainer runs the\n"
		"                       FSDP-wrapped model; 4.53.0: it runs the unwrapped module\n"
		"                       and every rank fails at the embedding, as transformers\n"
		"                       4.53.0 did (4.53.1 has the fix)\n"
		"  --steps N            training steps (default 3)\n"
		"  --batch B            global batch in sequences, divisible by the world size\n"
		"                       (default 24); losses do not depend on the world size\n"
		"  --call-counts PATH   write this rank's CUDA/NCCL call counts to PATH.rankN\n"
		"  --time               rank 0 prints the mean step time, wall and CPU\n"
		"                       (ms_per_step=... cpu_ms_per_step=...)\n"
		"  --device D           every rank binds device D instead of LOCAL_RANK (the\n"
		"                       \"device not properly set\" bug)\n"
		"  --skip-collective R:N  rank R skips its N-th collective call\n"
		"  --mesh M             how the ranks share the model (default fsdp):\n"
		"                       fsdp    FULL_SHARD over all ranks\n"
		"                       hsdp:S  HYBRID_SHARD: shard within groups of S ranks\n"
		"                               ({0,1},{2,3} for S=2), all-reduce the gradient\n"
		"                               shards across them ({0,2},{1,3}); ncclCommSplit\n"
		"                       tp:T    tensor parallel within groups of T ranks (each\n"
		"                               computes D/T of a block's outputs, all-gathers\n"
		"                               them, all-reduces the input gradient), data\n"
		"                               parallel across them; ncclCommSplit\n"
		"                       pp      pipeline parallel: rank s is stage s (the blocks\n"
		"                               split in order), activations and gradients go\n"
		"                               by ncclSend/ncclRecv per microbatch, the tied\n"
		"                               embedding's gradient all-reduced between the\n"
		"                               first and the last stage\n"
		"                       every mode prints the same losses\n"
		"  --microbatches M     pipeline microbatches per step (pp; default 4)\n"
		"  --stall-send R:N     stage R stops before it sends its N-th microbatch\n"
		"                       forward (pp; counted over the run), as a stage stuck\n"
		"                       elsewhere would: the next stage waits in ncclRecv for it\n"
		"                       (stage R waits 10 minutes, then exits 1)\n"
		"  --short-send R:N     stage R sends its N-th microbatch forward one element\n"
		"                       short of what the next stage receives (pp; a count\n"
		"                       mismatch between a Send and its Recv: NCCL's Recv\n"
		"                       fails, or worse; a test of ranktrace's pairing)\n"
		"  --nonblocking-init   non-blocking communicators (ncclCommInitRankConfig\n"
		"                       blocking=0, splits too), polled with\n"
		"                       ncclCommGetAsyncError until made, as PyTorch's\n"
		"                       TORCH_NCCL_USE_COMM_NONBLOCKING\n"
		"\n"
		"Rank 0 prints \"step <n> loss <value>\" per step.\n");
}

static bool config_ok(const struct config *c);

/* --OPTION RANK:N (N >= 1) into *r, *nth: false after saying what it expects. */
static bool rank_nth(const char *arg, const char *option, int *r, int *nth)
{
	if (sscanf(arg, "%d:%d", r, nth) != 2 || *nth < 1) {
		fprintf(stderr, "fsdp_mini: --%s expects RANK:N (N >= 1)\n", option);
		return false;
	}
	return true;
}

bool parse_args(int argc, char **argv, struct config *c)
{
	static const struct option opts[] = {
		{ "trainer-version", required_argument, NULL, 'v' },
		{ "steps", required_argument, NULL, 's' },
		{ "layers", required_argument, NULL, 'l' },
		{ "hidden", required_argument, NULL, 'd' },
		{ "vocab", required_argument, NULL, 'V' },
		{ "seq", required_argument, NULL, 'T' },
		{ "batch", required_argument, NULL, 'b' },
		{ "lr", required_argument, NULL, 'r' },
		{ "call-counts", required_argument, NULL, 'c' },
		{ "time", no_argument, NULL, 't' },
		{ "device", required_argument, NULL, 'D' },
		{ "skip-collective", required_argument, NULL, 'S' },
		{ "mesh", required_argument, NULL, 'm' },
		{ "microbatches", required_argument, NULL, 'M' },
		{ "stall-send", required_argument, NULL, 'P' },
		{ "short-send", required_argument, NULL, 'Q' },
		{ "nonblocking-init", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int o;

	*c = (struct config){ "4.52.4", 3, 2, 16, 32, 8, 24, 0.5, NULL, false, -1, -1, 0,
			      .microbatches = 4, .stall_send_rank = -1, .short_send_rank = -1 };
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'v': c->version = optarg; break;
		case 's': c->steps = atoi(optarg); break;
		case 'l': c->layers = atoi(optarg); break;
		case 'd': c->hidden = atoi(optarg); break;
		case 'V': c->vocab = atoi(optarg); break;
		case 'T': c->seq = atoi(optarg); break;
		case 'b': c->batch = atoi(optarg); break;
		case 'r': c->lr = atof(optarg); break;
		case 'c': c->counts_path = optarg; break;
		case 't': c->time = true; break;
		case 'D': c->device = atoi(optarg); break;
		case 'S':
			if (!rank_nth(optarg, "skip-collective", &c->skip_rank, &c->skip_nth))
				return false;
			break;
		case 'm':
			if (!parse_mesh(optarg, c))
				return false;
			break;
		case 'M': c->microbatches = atoi(optarg); break;
		case 'P':
			if (!rank_nth(optarg, "stall-send", &c->stall_send_rank, &c->stall_send_nth))
				return false;
			break;
		case 'Q':
			if (!rank_nth(optarg, "short-send", &c->short_send_rank, &c->short_send_nth))
				return false;
			break;
		case 'N': c->nonblocking = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return false;
		}
	}
	return config_ok(c);
}

/* The options together: false after saying what does not fit. */
static bool config_ok(const struct config *c)
{
	if (release_index(c->version) < 0) {
		fprintf(stderr, "fsdp_mini: unknown --trainer-version %s (known:", c->version);
		for (size_t i = 0; i < NRELEASES; i++)
			fprintf(stderr, " %s", releases[i].version);
		fprintf(stderr, ")\n");
		return false;
	}
	if (c->steps < 0 || c->layers < 0 || c->hidden < 1 || c->vocab < 2 || c->seq < 2 ||
	    c->batch < 1 || c->microbatches < 1) {
		fprintf(stderr, "fsdp_mini: sizes must be positive\n");
		return false;
	}
	if (!trainer_uses_wrapped(c->version) && (c->mesh == MESH_TP || c->mesh == MESH_PP)) {
		fprintf(stderr, "fsdp_mini: --trainer-version %s models FSDP's unwrapped module: "
			"use it with --mesh fsdp or hsdp\n", c->version);
		return false;
	}
	if (c->mesh == MESH_TP && c->hidden % c->mesh_size) {
		fprintf(stderr, "fsdp_mini: --mesh tp:%d needs --hidden divisible by %d\n",
			c->mesh_size, c->mesh_size);
		return false;
	}
	if (c->mesh == MESH_PP && c->batch % c->microbatches) {
		fprintf(stderr, "fsdp_mini: --batch %d is not divisible by --microbatches %d\n",
			c->batch, c->microbatches);
		return false;
	}
	return true;
}
