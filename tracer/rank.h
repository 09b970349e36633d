/* SPDX-License-Identifier: MIT */
/* rank.h - who this process is in the job, and where its trace goes. */
#ifndef RT_RANK_H
#define RT_RANK_H

#include <stdbool.h>
#include <stdint.h>

struct rt_tr_rank_info {
	int rank, local_rank, world_size; /* -1 when unknown */
	const char *source;               /* "env:RANK", "env:SLURM_PROCID", ..., "nccl", "pid" */
	char dir[4096];                   /* DIR/rank-NNNNN or DIR/rank-pPID */
};

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

/* Rank identity from the launcher's environment (torchrun/accelerate, Slurm,
 * Open MPI, PMI); rank -1 and source "pid" when there is none. */
void rt_tr_rank_init(void);

/* Parse an environment into rank info (testable without a process). */
void rt_tr_rank_parse(const char *(*get)(const char *), struct rt_tr_rank_info *r);

/* mkdir the rank directory; derive the trace uuid from run id and rank. */
int rt_tr_rank_dir_create(uint8_t uuid[16]);

/* The rank learned from NCCL (the launcher gave none): rename the pid-named
 * directory to DIR/rank-NNNNN. True when it did (the caller rewrites the
 * metadata and records rt_rank); false when the rank was known already or
 * that name is taken (the pid-named directory stays). */
bool rt_tr_rank_learn(int rank, int nranks);

#endif
