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
	bool init_thread_live;     /* non-blocking init: join init_thread */
	pthread_t init_thread;
	struct sim_prof_comm prof; /* a profiler plugin's context (nccl_profiler.c) */
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
ncclResult_t init_rank(ncclComm_t *out, int nranks, const char *name, int rank);

/* nccl_reduce.c */
size_t dtype_size(ncclDataType_t t);
void reduce(void *out, const char *const *src, int nr, size_t n, ncclDataType_t t,
	    ncclRedOp_t op);

/* nccl_device.c */
ncclResult_t launch(struct op *ops, size_t n);
void drain(struct ncclComm *c);
void init_join(struct ncclComm *c);

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
