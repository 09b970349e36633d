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

uint64_t rt_tr_id_hash(const void *unique_id);
/* comm (on device dev) is communicator id, rank `rank` of nranks */
void rt_tr_comm_add(const void *comm, uint64_t id, int dev, int nranks, int rank);
void rt_tr_comm_init_all(const void *comms, int ndev, const int *devlist);
void rt_tr_comm_split(const void *parent, int color, const void *newcomm);
void rt_tr_comm_forget(const void *comm);
uint64_t rt_tr_comm_id(const void *comm);
int rt_tr_comm_count(const void *comm);
/* The next collective sequence number of comm, with the communicator's id
 * and device; false (seq 0) when comm is untracked. */
bool rt_tr_comm_next_coll(const void *comm, uint64_t *id, uint32_t *seq, int *dev);
uint32_t rt_tr_p2p_seq(const void *comm);
int rt_tr_comm_device(const void *comm);

/* ---- devmap.c: the device of a driver context or pool (driver_api.def) ---- */

int rt_tr_drv_learn_ctx(const void *ctx, int dev);
int rt_tr_drv_ctx_device(const void *ctx);
int rt_tr_drv_learn_pool(const void *pool, int dev);
int rt_tr_drv_pool_device(const void *pool);

#endif
