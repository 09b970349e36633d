/* SPDX-License-Identifier: MIT */
/* fsdp_mini.h - shared by fsdp_mini.c, fsdp_args.c, fsdp_math.c, fsdp_boot.c
 * and fsdp_watchdog.c. */
#ifndef FSDP_MINI_H
#define FSDP_MINI_H

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern int rank, world;

struct config {
	const char *version;
	int steps, layers, hidden, vocab, seq, batch;
	double lr;
	const char *counts_path;
	bool time;
	int device;              /* --device: every rank binds this device (-1: LOCAL_RANK) */
	int skip_rank, skip_nth; /* --skip-collective R:N */
};

/* A parameter of the original (unwrapped) module: a view into its unit's
 * flat parameter. After sharding, the storage is freed (storage_bytes 0). */
struct param {
	char name[64];
	size_t offset, numel;
	int ndim;
	int64_t shape[2];
};

struct unit {
	struct param params[2];
	int nparams;
	size_t numel, padded, shard;
	float *host_init;     /* rank 0 after from_pretrained, pinned */
	bool on_meta;         /* ranks != 0 after from_pretrained */
	float *storage;       /* device storage of the original parameters */
	size_t storage_bytes; /* 0 once FSDP freed it */
	float *shard_dev, *grad_shard_dev;
	float *host_full;     /* host copy of the gathered parameter */
	float *gathering;     /* all-gather enqueued, not yet waited for */
	cudaEvent_t gathered; /* recorded on the unshard stream after the all-gather */
	double *grad;         /* host gradient of the full parameter */
};

struct model {
	struct config cfg;
	int nunits;
	struct unit *units;
	ncclComm_t comm;
	cudaStream_t unshard_stream, post_backward_stream;
	cudaEvent_t compute_ready, reduced; /* between the compute and NCCL streams */
	bool lazy_init_done;
	float *scalar_dev;
	long root_forwards;
};

struct batch {
	int n, T;            /* sequences on this rank, tokens per sequence */
	int *tok;            /* n*T */
	double *h;           /* (L+1) * n*T * D activations */
	double loss_sum;
	long predictions;    /* global number of predicted tokens */
};

/* The command line (fsdp_args.c): false on a bad one, after saying why. */
bool parse_args(int argc, char **argv, struct config *c);
/* Whether the --trainer-version's Trainer runs the FSDP-wrapped model. */
bool trainer_uses_wrapped(const char *version);

/* Host arithmetic (fsdp_math.c). */
void make_batch(const struct model *m, int step, struct batch *b);
void head_loss_backward(struct model *m, struct batch *b, double *dh);
void block_backward(struct model *m, struct batch *b, int l, double *dh);


/* Write the call counts and exit (fsdp_mini.c). */
__attribute__((noreturn)) void die(int code);

/* Rank 0 serves the ncclUniqueId to the others (fsdp_boot.c). */
void share_unique_id(ncclUniqueId *id);

/* PyTorch's NCCL watchdog (fsdp_watchdog.c): every collective is followed by
 * an event on its stream; a thread polls the events and, when one has not
 * completed FSDP_MINI_NCCL_TIMEOUT_S seconds (default 600, as PyTorch's
 * 10 minutes) after it was enqueued, says so as PyTorch does, aborts the
 * communicator and takes the process down with SIGABRT. */
void watchdog_start(ncclComm_t comm);
void watchdog_enqueued(const char *optype, uint64_t numel_in, uint64_t numel_out,
		       cudaStream_t stream);
void watchdog_stop(void);

#endif
