/* SPDX-License-Identifier: MIT */
/* device.h - device timing: when each collective started and completed on
 * its device, from ranktrace's NCCL profiler plugin (device.c, the plugin
 * itself in nccl_profiler.c) or from CUDA events polled by the tracer
 * (devevents.c, devqueue.c); CUPTI's driver callbacks and activity (cupti.c).
 *
 * What the wrappers call (interpose/): the hooks of format/nccl_api.def and
 * the number a collective took. Uses core/ (its records are the tracer's own
 * events), store/, identity/, base/; registers with core what it must do
 * when the process ends. */
#ifndef RT_TR_DEVICE_H
#define RT_TR_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

/* device.c: a collective took its number (comm_id, seq) on this thread, on
 * its communicator's device dev: for the plugin to tie NCCL's event to it,
 * and for the CUDA-event source's start event */
void rt_tr_dev_enqueued(uint64_t comm_id, uint32_t seq, int dev, const void *send,
			const void *recv, uint64_t count, bool in_group);
/* device.c: the same for a point-to-point call (its number for peer, send:
 * 1 a Send, 0 a Recv; its buffer) */
void rt_tr_dev_p2p_enqueued(uint64_t comm_id, int peer, uint32_t seq, int send, int dev,
			    const void *buff, uint64_t count, bool in_group);

/* devevents.c: the hooks of format/nccl_api.def. A collective's stream field
 * (before the call; returns the stream), its after-hook; the group calls'
 * device column (+1 start, -1 end; returns the current device) and
 * ncclGroupEnd's after-hook. */
const void *rt_tr_devev_before(const void *stream);
void rt_tr_devev_after(const void *comm, const void *stream);
int rt_tr_devev_group(int step);
void rt_tr_devev_group_done(void);

#endif
