/* SPDX-License-Identifier: MIT */
/* nccl_int.h - private to the simulated NCCL: the shared segment, the
 * communicator and the operation state machine (nccl.c) shared with the
 * communicators (nccl_comm.c), reductions (nccl_reduce.c), entry points
 * (nccl_coll.c) and the device side (nccl_device.c: ops enqueued on streams,
 * non-blocking init). */
#ifndef SIM_NCCL_INT_H
#define SIM_NCCL_INT_H

#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nccl_profiler.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_RANKS 64
#define SLOT_BYTES ((size_t)4 << 20)
#define P2P_BYTES ((size_t)256 << 10)
#define ID_MAGIC 0x53494d4e43434c31ull /* "SIMNCCL1" */
#define COMM_MAGIC 0x434f4d4du

struct shm_rank {
	_Atomic int joined;
	int device;
	int pid;
	char host[64];
	/* signature of the collective this rank posted in the current round */
	int sig_type, sig_dtype, sig_op, sig_root;
	size_t sig_count;
};

struct mailbox {
	_Atomic uint64_t posted;
	_Atomic uint64_t consumed;
	size_t bytes;
};

struct shm_hdr {
	uint64_t magic;
	int nranks;
	_Atomic uint64_t arrived; /* barrier arrivals, monotonic */
	_Atomic uint32_t wake;    /* futex word, bumped on every change */
	_Atomic int aborted;      /* rank+1 of a rank that called ncclCommAbort */
	struct shm_rank ranks[MAX_RANKS];
	struct mailbox mbox[MAX_RANKS][MAX_RANKS];
	/* followed by nranks staging slots and nranks*nranks p2p buffers */
};

struct ncclComm {
	unsigned magic;
	int rank, nranks, device;
	struct shm_hdr *shm;
	size_t shm_size;
	char shm_name[128];
	uint64_t barriers;         /* barriers this rank has arrived at */
	uint64_t colls;            /* collectives issued (sequence number) */
	unsigned splits;           /* ncclCommSplit calls on this communicator */
	ncclResult_t async_error;  /* atomic: device workers set it (get/set_async_error) */
	_Atomic int inflight;      /* ops enqueued on a device and not yet released */
	_Atomic int aborted_local; /* ncclCommAbort: queued ops end at once */
	uint64_t tickets;          /* device work items enqueued (host side) */
	_Atomic uint64_t dev_done; /* ... and completed on the device, in order */
	bool blocking;             /* config.blocking (default: NCCL_COMM_BLOCKING, else 1) */
	_Atomic int jobs;          /* jobs (nccl_jobs.c) still running on this communicator */
	_Atomic int revoked;       /* ncclCommRevoke: no new operation */
	bool finalized;            /* ncclCommFinalize or ncclCommRevoke was called */
	unsigned shrinks;          /* ncclCommShrink calls on this communicator */
	struct sim_prof_comm prof; /* a profiler plugin's context (nccl_profiler.c) */
};

/* Making a communicator (nccl_jobs.c): ncclCommInitRank* (INIT), Split,
 * Shrink. As in NCCL, a job runs at the end of its group (every call is
 * its own group outside ncclGroupStart/End): a blocking group's jobs run
 * together (several ranks of one process must meet) and the group end
 * returns when they are done; a non-blocking group's jobs go on in the
 * background and the group end returns ncclInProgress. */
enum job_kind { JOB_INIT, JOB_SPLIT, JOB_SHRINK };

struct comm_job {
	enum job_kind kind;
	struct ncclComm *comm;   /* INIT: the handle given out at the call */
	struct ncclComm *parent; /* SPLIT, SHRINK */
	ncclComm_t *out;         /* SPLIT, SHRINK: set once the communicator is made */
	int nranks, rank, device;
	int color, key;          /* SPLIT */
	int flags, nexcl;        /* SHRINK: NCCL_SHRINK_*, excluded parent ranks */
	int excl[MAX_RANKS];
	unsigned ordinal;        /* SPLIT, SHRINK: the parent's count of them */
	bool blocking;
	char name[128];          /* INIT: the segment */
	ncclResult_t result;
	pthread_t thread;
	bool threaded;
	struct comm_job *next;   /* the group's list */
};

enum op_type { OP_ALLREDUCE, OP_BROADCAST, OP_REDUCE, OP_ALLGATHER, OP_REDUCESCATTER,
	       OP_SEND, OP_RECV };

extern const char *const op_names[];

struct op {
	enum op_type type;
	struct ncclComm *comm;
	const char *send;
	char *recv;
	size_t count;     /* elements: per rank for AllGather/ReduceScatter */
	ncclDataType_t dtype;
	ncclRedOp_t redop;
	int root;         /* root, or peer for Send/Recv */
	size_t done;      /* elements finished */
	size_t round;     /* elements in the current round */
	int phase;
	uint64_t wait_for;
	ncclResult_t result;
	uint64_t seq;     /* the communicator's collective sequence number */
	void *stream;     /* cudaStream_t it was enqueued on */
	uint64_t ticket;  /* the communicator's device order (launch) */
	struct sim_prof_op prof; /* its profiler plugin events (nccl_profiler.c) */
};

struct run_state {
	double last_progress, last_check;
	size_t left;
	bool begun;
};

/* nccl.c */
void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double now_s(void);
/* A futex word shared by processes: bump it and wake its waiters; wait
 * (at most ns) while it still reads seen. */
void word_bump(_Atomic uint32_t *w);
void word_wait(_Atomic uint32_t *w, uint32_t seen, long ns);
void bump(struct shm_hdr *h);
void wait_change(struct shm_hdr *h, uint32_t seen, long ns);
size_t shm_bytes(int nranks);
bool is_collective(enum op_type t);
int run_pass(struct op *ops, size_t n, struct run_state *st, ncclResult_t *err,
	     _Atomic uint32_t **wake, uint32_t *seen);
ncclResult_t run_ops(struct op *ops, size_t n);

/* nccl_comm.c */
void id_name(const ncclUniqueId *id, const char *suffix, char *out, size_t n);
bool id_ok(const ncclUniqueId *id);
bool comm_ok(struct ncclComm *c);
/* A communicator not yet joined: magic set, blocking as config says. */
struct ncclComm *comm_new(const ncclConfig_t *config);
void comm_release(struct ncclComm *c, bool unlink_name);
/* Join segment `name` as rank of nranks on device; wait (bounded, until c or
 * stop is aborted) for the others; NCCL's duplicate-device rule. On failure
 * c holds no segment. */
ncclResult_t init_rank_into(struct ncclComm *c, int nranks, const char *name, int rank,
			    int device, struct ncclComm *stop);
/* The config's blocking (NULL: the default). */
bool config_blocking(const ncclConfig_t *config);
ncclResult_t config_check(const ncclConfig_t *config);
/* CUDA's fork rule for NCCL's calls that use the device (simgpu.h). */
bool forked_child(const char *what);

/* nccl_jobs.c */
ncclResult_t job_submit(struct comm_job *j);
ncclResult_t jobs_run(struct comm_job *list);
/* Wait for c's jobs to end (destroy, abort). */
void jobs_wait(struct ncclComm *c);

/* nccl_group.c */
bool group_open(void);
ncclResult_t group_add_op(const struct op *o);
void group_add_job(struct comm_job *j);
/* A call inside the group failed: ncclGroupEnd reports it. */
void group_note_error(ncclResult_t r);

/* nccl_reduce.c */
size_t dtype_size(ncclDataType_t t);
void reduce(void *out, const char *const *src, int nr, size_t n, ncclDataType_t t,
	    ncclRedOp_t op);

/* nccl_device.c */
ncclResult_t launch(struct op *ops, size_t n);
void drain(struct ncclComm *c);

/* A failure of the ops' communicator: recorded for ncclCommGetAsyncError. */
static inline void set_async_error(struct ncclComm *c, ncclResult_t r)
{
	__atomic_store_n(&c->async_error, r, __ATOMIC_RELEASE);
}

static inline ncclResult_t get_async_error(struct ncclComm *c)
{
	return __atomic_load_n(&c->async_error, __ATOMIC_ACQUIRE);
}

#endif
