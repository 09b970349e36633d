/* SPDX-License-Identifier: MIT */
/* fsdp_mini.h - shared by fsdp_mini.c, fsdp_args.c, fsdp_math.c, fsdp_boot.c,
 * fsdp_watchdog.c, fsdp_calls.c and the device meshes: fsdp_mesh.c (the communicators),
 * fsdp_tp.c (tensor + data parallel), fsdp_pp.c (pipeline parallel). */
#ifndef FSDP_MINI_H
#define FSDP_MINI_H

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern int rank, world;

/* --mesh: how the ranks share the model (fsdp_mesh.c). */
enum mesh_kind {
	MESH_FSDP, /* FULL_SHARD over the world (the default) */
	MESH_HSDP, /* HYBRID_SHARD: shard within groups of mesh_size, replicate across */
	MESH_TP,   /* tensor parallel within groups of mesh_size, data parallel across */
	MESH_PP,   /* pipeline parallel: one stage per rank, Send/Recv microbatches */
};

struct config {
	const char *version;
	int steps, layers, hidden, vocab, seq, batch;
	double lr;
	const char *counts_path;
	bool time;
	int device;              /* --device: every rank binds this device (-1: LOCAL_RANK) */
	int skip_rank, skip_nth; /* --skip-collective R:N */
	enum mesh_kind mesh;     /* --mesh */
	int mesh_size;           /* hsdp:S, tp:T */
	int microbatches;        /* --microbatches (pp) */
	int stall_send_rank, stall_send_nth; /* --stall-send R:N (pp) */
	int short_send_rank, short_send_nth; /* --short-send R:N (pp) */
	bool nonblocking;        /* --nonblocking-init */
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
	ncclComm_t comm;         /* the world */
	/* the mesh (fsdp_mesh.c): FSDP shards over shard_comm (the world, or
	 * HSDP's group) and HSDP all-reduces gradients over repl_comm; tensor
	 * parallel works within tp_comm and reduces gradients over dp_comm;
	 * pipeline parallel all-reduces the tied embedding over embed_comm
	 * (first and last stage). Those a mode has not: NULL. */
	ncclComm_t shard_comm, repl_comm, tp_comm, dp_comm, embed_comm;
	int shard_size, shard_rank; /* FSDP's shards: world, rank for FULL_SHARD */
	int dp_size, dp_rank;       /* which slice of the batch this rank trains */
	int tp_size, tp_rank;
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

/* Calls of the workload go through these (fsdp_mini.c), so the test suite
 * can compare what a tracer recorded with what was really called: counted,
 * checked (a failure: message, exit 1); NCCL's collectives may be skipped
 * (--skip-collective), and a non-blocking communicator's ncclInProgress is
 * waited out as PyTorch does. */
void calls_configure(const struct config *c);
void count_call(const char *name);
void cuda_failed(const char *call, cudaError_t e);
void nccl_failed(const char *call, ncclResult_t r, ncclComm_t comm);
bool nccl_skip(const char *fn);
ncclResult_t nccl_settle(ncclComm_t comm, ncclResult_t r);
#define CUDA(fn, ...)                                                                  \
	do {                                                                           \
		cudaError_t e_;                                                        \
		count_call(#fn);                                                       \
		e_ = fn(__VA_ARGS__);                                                  \
		if (e_ != cudaSuccess)                                                 \
			cuda_failed(#fn, e_);                                          \
	} while (0)
/* Event and synchronisation calls: checked, not counted (the tracer does not
 * record them: format/events.def). */
#define CUDA_SYNC(fn, ...)                                                             \
	do {                                                                           \
		cudaError_t e_ = fn(__VA_ARGS__);                                      \
		if (e_ != cudaSuccess)                                                 \
			cuda_failed(#fn, e_);                                          \
	} while (0)
#define NCCL(comm, fn, ...)                                                            \
	do {                                                                           \
		ncclResult_t r_;                                                       \
		if (nccl_skip(#fn))                                                    \
			break;                                                         \
		count_call(#fn);                                                       \
		r_ = nccl_settle(comm, fn(__VA_ARGS__));                               \
		if (r_ != ncclSuccess)                                                 \
			nccl_failed(#fn, r_, comm);                                    \
	} while (0)

/* The command line (fsdp_args.c): false on a bad one, after saying why. */
bool parse_args(int argc, char **argv, struct config *c);
/* Whether the --trainer-version's Trainer runs the FSDP-wrapped model. */
bool trainer_uses_wrapped(const char *version);

/* Host arithmetic (fsdp_math.c). Rows [r0, r1) of the batch's tokens:
 * a microbatch (pipeline parallel), or all of them; W and bias are the
 * block's output rows [o0, o1) (tensor parallel), or all D. */
void make_batch(const struct model *m, int step, struct batch *b);
void head_loss_backward(struct model *m, struct batch *b, double *dh);
void head_loss_rows(struct model *m, struct batch *b, double *dh, int s0, int s1);
void block_backward(struct model *m, struct batch *b, int l, double *dh);
void block_forward_rows(struct model *m, struct batch *b, int l, int r0, int r1, int o0, int o1,
			double *out);
void block_backward_rows(struct model *m, struct batch *b, int l, double *dh, int r0, int r1,
			 int o0, int o1, double *dh_in);


/* Write the call counts and exit (fsdp_mini.c). */
__attribute__((noreturn)) void die(int code);

/* The device mesh (fsdp_mesh.c): the world communicator (blocking or not)
 * and the mode's split communicators; their end. */
void mesh_init(struct model *m, const ncclUniqueId *id);
void mesh_destroy(struct model *m);
/* HSDP: the gradient shard, reduce-scattered within the shard group, is
 * all-reduced across the replicas (on stream). */
void mesh_replicate_grad(struct model *m, float *grad_shard, size_t n, cudaStream_t stream);
/* A collective of n doubles on the host through a device scratch buffer:
 * all-reduce (sum) or all-gather (out: comm size * n) on comm. */
void host_allreduce(struct model *m, ncclComm_t comm, double *v, size_t n);
void host_allgather(struct model *m, ncclComm_t comm, const double *in, double *out, size_t n);
/* The modes' training step: tensor + data parallel (fsdp_tp.c), pipeline
 * parallel (fsdp_pp.c); the model's parameters replicated on each rank
 * after replicate_wrap (fsdp_tp.c). */
void replicate_wrap(struct model *m);
void tp_train_step(struct model *m, int step, struct batch *b);
void pp_train_step(struct model *m, int step, struct batch *b);
void sgd_rows(struct model *m, int unit, size_t k0, size_t k1);

/* Rank 0 serves its n ncclUniqueIds to the others (fsdp_boot.c). */
void share_unique_ids(ncclUniqueId *ids, int n);

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
