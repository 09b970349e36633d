/* SPDX-License-Identifier: MIT */
/* identity.h - who this process is in the job and where its trace goes: the
 * rank (rank.c), its communicators and their sequence numbers (comms.c), the
 * device of a driver context or memory pool (devmap.c).
 *
 * Uses base/ only. Not on the hot path, except the lock-free lookups the
 * call tables' fields use (rt_tr_comm_id, rt_tr_comm_device, sequence
 * numbers, rt_tr_drv_*_device). */
#ifndef RT_TR_IDENTITY_H
#define RT_TR_IDENTITY_H

#include <stdbool.h>
#include <stdint.h>

#include "schema.h"

struct rt_tr_rank_info {
	int rank, local_rank, world_size; /* -1 when unknown */
	const char *source;               /* "env:RANK", "env:SLURM_PROCID", ..., "nccl", "pid" */
	char dir[4096];                   /* DIR/rank-NNNNN or DIR/rank-pPID; attempt N > 0:
					   * DIR/attempt-N/rank-... */
	int attempt;                      /* the launcher's restart count
					   * (TORCHELASTIC_RESTART_COUNT), 0 when none */
	int probe;                        /* the PyTorch probe here: enum rt_probe_state
					   * (format/schema.h), or RT_TR_PROBE_WAITING */
	char probe_detail[120];           /* why it is off, failed or missing */
};

/* interpose/pyboot.c: Python is here and the probe loads at its first
 * cpython.run_* event (store/metadata.c records it as missing if Python is
 * already running the program without it) */
#define RT_TR_PROBE_WAITING (-1)

/* Per rank process, when RANKTRACE_MAX_SIZE is unset (0: no cap). */
#define RT_TR_DEFAULT_MAX_BYTES ((uint64_t)2 << 30)

struct rt_tr_config {
	char dir[4096];      /* RANKTRACE_DIR */
	uint64_t max_bytes;  /* RANKTRACE_MAX_SIZE per rank process, 0: no cap */
	uint64_t ring_bytes; /* RANKTRACE_RING per thread (flight recorder), 0: off */
	int64_t min_free;    /* RANKTRACE_MIN_FREE bytes kept free, -1: the default */
	bool no_helper;      /* RANKTRACE_HELPER=0: chunks made on the traced thread */
	uint64_t fail_alloc_at; /* RANKTRACE_TEST_ALLOC_FAIL=N:ERRNO, tests only */
	int fail_alloc_errno;
	char run_id[64];     /* RANKTRACE_RUN_ID */
};

extern struct rt_tr_rank_info rt_tr_rank;
extern struct rt_tr_config rt_tr_config;

/* ---- rank.c ---- */

/* Rank identity from the launcher's environment (torchrun/accelerate, Slurm,
 * Open MPI, PMI); rank -1 and source "pid" when there is none. */
void rt_tr_rank_init(void);

/* Parse an environment into rank info (testable without a process). */
void rt_tr_rank_parse(const char *(*get)(const char *), struct rt_tr_rank_info *r);

/* Once, from the constructor, before the fault plan is read: the rank the
 * launcher's environment gives, for the injector until the trace has one. */
void rt_tr_rank_env_init(void);

/* mkdir the rank directory; derive the trace uuid from run id and rank. */
int rt_tr_rank_dir_create(uint8_t uuid[16]);

/* The rank learned from NCCL (the launcher gave none): rename the pid-named
 * directory to DIR/rank-NNNNN. True when it did (the caller rewrites the
 * metadata and records rt_rank); false when the rank was known already or
 * that name is taken (the pid-named directory stays). */
bool rt_tr_rank_learn(int rank, int nranks);

/* ---- comms.c: communicator identities, per-communicator sequence numbers ---- */

/* What this process knows of a communicator (format/events.def's rt_comm). */
enum { RT_TR_COMM_BEING_MADE, RT_TR_COMM_MADE, RT_TR_COMM_FAILED };
struct rt_tr_comm_info {
	const void *comm;     /* the ncclComm_t */
	uint64_t id, parent;  /* comm_id, parent's (split, shrink) */
	int nranks, rank;     /* -1 when not known */
	int device, how;      /* enum rt_comm_how */
	int ordinal;          /* the process's N-th call of its kind */
	int color, key;       /* split */
	int state;            /* RT_TR_COMM_* */
	char excluded[64];    /* shrink: "1,3" */
};

uint64_t rt_tr_id_hash(const void *unique_id);
/* Track a communicator (info->comm), its sequence numbers from 0. */
bool rt_tr_comm_register(const struct rt_tr_comm_info *info);
/* The process's next ordinal of a way of making communicators (how). */
int rt_tr_comm_ordinal(int how);
/* The identity of ncclCommInitAll's communicators of its ordinal-th call. */
uint64_t rt_tr_comm_init_all_id(int ordinal);
/* The identity of the next split (how RT_COMM_SPLIT, color) or shrink
 * (RT_COMM_SHRINK, the sorted excluded ranks) of parent, counting it on
 * the parent; *parent_id its identity. 0: the parent is not tracked. */
uint64_t rt_tr_comm_child_id(const void *parent, int how, int color, const int *excl, int nexcl,
			     uint64_t *parent_id);
/* A communicator being made is made (or failed): true, with its info, the
 * first time; false when it was not being made or is not tracked. */
bool rt_tr_comm_set_state(const void *comm, int state, struct rt_tr_comm_info *out);
bool rt_tr_comm_info(const void *comm, struct rt_tr_comm_info *out);
void rt_tr_comm_forget(const void *comm);
uint64_t rt_tr_comm_id(const void *comm);
/* NCCL's ncclCommCount (0 when it cannot say) and ncclCommUserRank (-1). */
int rt_tr_comm_count(const void *comm);
int rt_tr_comm_user_rank(const void *comm);
/* The next collective sequence number of comm, with the communicator's id
 * and device; false (seq 0) when comm is untracked. */
bool rt_tr_comm_next_coll(const void *comm, uint64_t *id, uint32_t *seq, int *dev);
/* The next Send (send) or Recv sequence number of comm with peer; seq 0
 * for a peer outside it; false when comm is untracked. */
bool rt_tr_comm_next_p2p(const void *comm, int peer, bool send, uint64_t *id, uint32_t *seq,
			 int *dev);
int rt_tr_comm_device(const void *comm);
/* A split or shrink whose handle NCCL writes at *where later: kept until
 * rt_tr_comm_pending_ready finds it written (then with its handle). */
bool rt_tr_comm_pend(const void *const *where, const struct rt_tr_comm_info *info);
bool rt_tr_comm_pending_ready(struct rt_tr_comm_info *out);

/* ---- devmap.c: the device of a driver context or pool (driver_api.def) ---- */

int rt_tr_drv_learn_ctx(const void *ctx, int dev);
int rt_tr_drv_ctx_device(const void *ctx);
int rt_tr_drv_learn_pool(const void *pool, int dev);
int rt_tr_drv_pool_device(const void *pool);

#endif
