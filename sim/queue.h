/* SPDX-License-Identifier: MIT */
/* queue.h - the simulated devices' execution engine, private to libcudart
 * (queue.c: marks, work items, device workers; stream.c: the CUDA stream,
 * event and asynchronous copy API on top of it). The simulated NCCL reaches
 * the engine through simgpu.h (simgpu_enqueue). */
#ifndef SIM_QUEUE_H
#define SIM_QUEUE_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "simgpu.h"

#define STREAM_MAGIC 0x5354524du
#define EVENT_MAGIC 0x4556454eu

/* Completion of one enqueued item: done (and when) once the device worker
 * ran it. Reference counted under the engine's lock: a stream's last item, an
 * event's last record and every waiter hold one. */
struct mark {
	int refs;
	bool done;
	uint64_t t_ns;
};

struct item;

struct sim_stream {
	unsigned magic;
	int device;
	int priority;
	unsigned flags;       /* cudaStreamNonBlocking: no legacy-stream ordering */
	bool legacy;          /* the device's legacy default stream (NULL handle) */
	bool dead;            /* destroyed with work pending: freed once drained */
	struct item *head, *tail;
	struct mark *last;    /* last item enqueued, NULL when none yet */
	struct sim_stream *next;
	/* stream capture (capture.c), under its lock: a capture's status
	 * (enum cudaStreamCaptureStatus), mode, thread, sequence and nodes */
	int cap_status, cap_mode;
	pid_t cap_tid;
	unsigned long long cap_id;
	unsigned cap_nodes;
};

struct sim_event {
	unsigned magic;
	unsigned flags;
	int device;           /* the current device at its creation */
	unsigned long long cap_id; /* last recorded in this capture (0: none) */
	struct mark *mark;    /* the last cudaEventRecord's, NULL if never recorded */
	struct sim_event *next;
};

/* queue.c */
bool sq_async(void);
/* The stream a handle names (NULL, cudaStreamLegacy and cudaStreamPerThread:
 * the current device's legacy stream), or NULL when the handle is invalid. */
struct sim_stream *sq_stream(cudaStream_t s);
struct sim_stream *sq_stream_create(int device, unsigned flags, int priority);
bool sq_stream_destroy(cudaStream_t s);
/* Enqueue w on st; its mark (a reference for the caller when out != NULL). */
cudaError_t sq_enqueue(struct sim_stream *st, struct simgpu_work *w, struct mark *wait_on,
		       struct mark **out);
/* Block until m is done; m NULL: at once. Drops the caller's reference. */
void sq_wait(struct mark *m);
void sq_mark_put(struct mark *m);
/* Reference to st's last item (NULL when drained), or the event's last record. */
struct mark *sq_stream_last(struct sim_stream *st);
struct mark *sq_event_last(struct sim_event *e);
void sq_event_set(struct sim_event *e, struct mark *m);
/* Wait for every stream of a device, or of the stream's legacy ordering. */
void sq_device_sync(int device);
void sq_stream_sync(struct sim_stream *st);
bool sq_stream_idle(struct sim_stream *st);
bool sq_mark_done(struct mark *m);
uint64_t sq_now_ns(void);

/* capture.c: is st being captured? Then w is a node of its capture, not
 * run (released here): true. sq_capture_unsafe: a potentially unsafe call
 * (it waits on the device, allocates, queries) made now: cudaSuccess, or
 * cudaErrorStreamCaptureUnsupported after invalidating the captures that
 * prohibit it (CUDA's cudaStreamCaptureModeGlobal/ThreadLocal rules). */
bool sq_capture_node(struct sim_stream *st, struct simgpu_work *w);
cudaError_t sq_capture_unsafe(void);
/* The capture st is in (0: none); st joins capture id (a wait on an event
 * recorded in it). */
unsigned long long sq_capture_id(struct sim_stream *st);
void sq_capture_join(struct sim_stream *st, unsigned long long id);

/* stream.c: a copy (set: memset of value) on stream s, checked by the
 * caller; wait: return once done. A free on s (cudaFreeAsync). */
cudaError_t sq_copy(cudaStream_t s, void *dst, const void *src, size_t n, int value, bool set,
		    bool wait);
cudaError_t sq_free_async(cudaStream_t s, void *p);

/* cudart.c */
cudaError_t sq_fail(cudaError_t e);
/* First in every runtime entry point (but the error and version queries):
 * in a child forked after CUDA was initialised, the call fails as CUDA's. */
#define SQ_FORK_CHECK()                                                  \
	do {                                                             \
		if (__builtin_expect(simgpu_forked(), 0))                \
			return sq_fail(cudaErrorInitializationError);    \
	} while (0)
bool sq_host_pinned(const void *p);
int sq_free_now(void *p); /* free without waiting for the device: 0 or -1 */

#endif
