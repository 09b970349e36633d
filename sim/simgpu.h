/* SPDX-License-Identifier: MIT */
/* simgpu.h - private interface between the simulated libcudart and libnccl.
 *
 * The simulated NCCL must not call the public CUDA runtime for its own needs:
 * real NCCL links cudart statically, so its internal calls are invisible to an
 * LD_PRELOAD tracer, and ours must be too. These entry points are exported by
 * sim/libcudart.so.13 under a name no tracer interposes. */
#ifndef SIMGPU_H
#define SIMGPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Device of the calling thread (cudaGetDevice without the API call). */
int simgpu_current_device(void);

/* Number of simulated devices (SIMGPU_DEVICES). */
int simgpu_device_count(void);

/* Which device memory holds [ptr, ptr+len): the device index, or -1 when the
 * range is not inside one live device (or managed) allocation. */
int simgpu_range_device(const void *ptr, size_t len);

/* ---- shared with the simulated driver (sim/cuda.c, libcuda.so.1) ---- */

/* VMM granularity (cuMemGetAllocationGranularity): 2 MiB, as on H100/H200. */
#define SIMGPU_VMM_GRANULARITY (2u << 20)

/* Make `device` the calling thread's current device (cuCtxSetCurrent). */
void simgpu_set_current_device(int device);
/* Add (delta > 0) or return bytes to a device's budget; false when it would
 * exceed SIMGPU_MEM. */
bool simgpu_charge(int device, long long delta);
/* Device memory from the device's heap (cudaMalloc's), or NULL. */
void *simgpu_alloc(int device, size_t size);
/* Free a device or managed allocation by its base: 0, or -1 if unknown. */
int simgpu_free(const void *p);
void *simgpu_managed_alloc(size_t size);
void *simgpu_host_alloc(size_t size);
int simgpu_host_free(void *p);
/* Bytes free and total on a device. */
void simgpu_mem_info(int device, size_t *freeb, size_t *total);
/* Memory pools (cudaDeviceGetDefaultMemPool's and cuMemPoolCreate's):
 * device of a pool or -1 if it is not one. */
void *simgpu_pool_create(int device);
int simgpu_pool_destroy(void *pool);
int simgpu_pool_device(const void *pool);
void *simgpu_default_pool(int device);
/* VMM (vmm.c); CUresult codes. */
int simgpu_vmm_create(uint64_t *handle, size_t size, int device);
int simgpu_vmm_release(uint64_t handle);
int simgpu_vmm_handle_info(uint64_t handle, int *device, size_t *size);
int simgpu_vmm_reserve(uint64_t *ptr, size_t size, size_t align, uint64_t hint);
int simgpu_vmm_free(uint64_t ptr, size_t size);
int simgpu_vmm_map(uint64_t ptr, size_t size, size_t offset, uint64_t handle);
int simgpu_vmm_unmap(uint64_t ptr, size_t size);
int simgpu_vmm_access(uint64_t ptr, size_t size, int prot);
int simgpu_vmm_retain(uint64_t *handle, uint64_t addr);
/* Inside libcudart only: 1 accessible mapped range (device set), 0 reserved
 * but not accessible, -1 not VMM. */
int simgpu_vmm_lookup(uintptr_t p, size_t len, int *device);

/* CUDA's fork rule: a child forked after its parent initialised CUDA
 * cannot use it (its calls fail with cudaErrorInitializationError; NCCL's
 * with ncclUnhandledCudaError). True in such a child; otherwise marks this
 * process as one that initialised CUDA and returns false. Every runtime
 * call but the error and version queries asks it first. */
bool simgpu_forked(void);

/* Seconds a collective or init waits for missing ranks (SIMGPU_TIMEOUT). */
double simgpu_timeout_s(void);

/* ---- the devices' execution engine (queue.c) ----
 *
 * Asynchronous by default, as CUDA is: each device has a worker thread that
 * runs the work enqueued on its streams in stream order; the API call that
 * enqueues returns at once. SIMGPU_SYNC=1 runs every item to completion
 * inside the call instead (the simulator before issue 20). Work is a step
 * function the worker calls until it says SIMGPU_DONE; it must never block
 * (it returns SIMGPU_WAIT, optionally naming a futex word and the value it saw,
 * and the worker calls it again later), so one worker runs several streams
 * and a collective waiting for its peers does not hold up other streams. */
enum { SIMGPU_DONE, SIMGPU_WAIT, SIMGPU_PROGRESS };

struct simgpu_work {
	int (*step)(struct simgpu_work *w);    /* on the device worker */
	void (*release)(struct simgpu_work *w); /* after SIMGPU_DONE; may free w */
	_Atomic uint32_t *wake;                  /* set by step on SIMGPU_WAIT, or NULL */
	uint32_t seen;
};

/* false under SIMGPU_SYNC=1. */
bool simgpu_async(void);
/* Enqueue w on a stream (NULL: the current device's legacy stream): a
 * cudaError_t; on failure w was neither run nor released. */
int simgpu_enqueue(void *stream, struct simgpu_work *w);
/* The same for work that uses n streams (a group of NCCL collectives on
 * several streams): it runs on streams[0] once the work already enqueued on
 * every one of them is done, and later work on each of them waits for it,
 * as NCCL joins a group's streams with events. */
int simgpu_enqueue_joined(void *const *streams, int n, struct simgpu_work *w);
/* A handle for device's legacy default stream, whatever the current device
 * (the NULL stream of a communicator's operation is its device's). */
void *simgpu_legacy_stream(int device);
/* Wait until every stream of the device has drained (cuCtxSynchronize). */
void simgpu_device_sync(int device);

#endif
