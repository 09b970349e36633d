/* SPDX-License-Identifier: MIT */
/* devqueue.h - the queues of CUDA events behind devevents.c (devqueue.c).
 *
 * One queue per (thread, device), single producer (the thread that owns it)
 * and single consumer (the poller). Entries are reserved in record order,
 * filled, and handed over (published) together; the poller only reads
 * published entries and only queries those not completed. A queue is a list
 * of chunks of RT_DQ_CHUNK entries (two events each, made with the chunk);
 * the poller gives consumed chunks back for reuse. */
#ifndef RT_DEVQUEUE_H
#define RT_DEVQUEUE_H

#include <cuda_runtime_api.h>

#include "device_int.h"

#define RT_DQ_NDEV 16  /* devices with queues */
#define RT_DQ_CHUNK 64 /* entries per chunk */

struct rt_dq_entry {
	cudaEvent_t start, end;
	const void *stream; /* both recorded on it (the poller: stream order) */
	uint64_t comm_id;
	uint32_t seq;
	int32_t peer;  /* a point-to-point call's */
	uint8_t p2p;   /* 0 a collective, 1 a Send, 2 a Recv: rt_dev_p2p */
	uint8_t dead;  /* producer: nothing more to report (its call or group failed) */
	uint8_t armed; /* producer: the completion event is recorded */
	uint8_t seen;  /* poller: 1 started reported, 2 completed or given up */
};

struct rt_dq_chunk {
	struct rt_dq_chunk *next;
	struct rt_dq_entry e[RT_DQ_CHUNK];
};

struct rt_dq {
	struct rt_dq *next_q;          /* every queue (pushed once, never removed) */
	int dev;
	int owner;                     /* 1 while a thread records into it (atomic) */
	/* the producer's */
	struct rt_dq_chunk *wc, *spare;
	unsigned wi, nchunks;
	struct rt_dq_chunk *pc;        /* where the entries not yet published begin */
	unsigned pi;
	uint64_t made;                 /* entries reserved */
	/* shared */
	uint64_t head;                 /* entries published (release / acquire) */
	struct rt_dq_chunk *freed;     /* consumed chunks, for the producer (atomic) */
	/* the poller's */
	struct rt_dq_chunk *rc;
	unsigned ri;
	uint64_t tail;                 /* entries fully reported */
};

/* The CUDA runtime functions, resolved by devevents.c. */
struct rt_dq_cuda {
	cudaError_t (*create)(cudaEvent_t *, unsigned);
	cudaError_t (*record)(cudaEvent_t, cudaStream_t);
	cudaError_t (*query)(cudaEvent_t);
	cudaError_t (*capturing)(cudaStream_t, enum cudaStreamCaptureStatus *);
	cudaError_t (*peek)(void);
	cudaError_t (*get)(void);
	cudaError_t (*getdev)(int *);
	cudaError_t (*setdev)(int);
	cudaError_t (*capture_mode)(enum cudaStreamCaptureMode *); /* may be absent */
};
extern struct rt_dq_cuda rt_dq_cu;
extern int rt_dq_disabled, rt_dq_warned;
void rt_dq_fail_once(const char *what, int err);

/* A queue for dev for the calling thread (an abandoned one, or new); NULL
 * when none can be had (the caller says the record dropped). */
struct rt_dq *rt_dq_claim(int dev);
/* The calling thread's queues (an array of RT_DQ_NDEV) go back at its exit,
 * after settle(mine) voided what its last calls left. */
void rt_dq_thread_started(struct rt_dq **mine, void (*settle)(void *));
/* Grow: the next chunk (cold). */
struct rt_dq_entry *rt_dq_reserve_slow(struct rt_dq *q);

/* The next entry in record order (not yet visible to the poller); NULL
 * when the queue is at its cap. */
static inline struct rt_dq_entry *rt_dq_reserve(struct rt_dq *q)
{
	struct rt_dq_entry *e;

	if (rt_unlikely(q->wi == RT_DQ_CHUNK))
		return rt_dq_reserve_slow(q);
	e = &q->wc->e[q->wi++];
	e->dead = 0;
	e->armed = 0;
	e->seen = 0;
	q->made++;
	return e;
}

static inline void rt_dq_set(uint8_t *flag)
{
	__atomic_store_n(flag, 1, __ATOMIC_RELEASE);
}

/* Hand every reserved entry to the poller. */
static inline void rt_dq_publish(struct rt_dq *q)
{
	q->pc = q->wc;
	q->pi = q->wi;
	__atomic_store_n(&q->head, q->made, __ATOMIC_RELEASE);
}

#endif
