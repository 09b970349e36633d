/* SPDX-License-Identifier: MIT */
/* cudart_mem.c - simulated CUDA runtime memory calls: device, managed, pinned
 * host and pool allocations, frees, pointer attributes, copies and memsets.
 * Split out of cudart.c. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "queue.h"
#include "simgpu.h"
#include "cudart_int.h"

static cudaError_t device_malloc(void **p, size_t size, int device)
{
	void *r;

	if (!p)
		return fail(cudaErrorInvalidValue);
	if (size == 0) {
		*p = NULL;
		return cudaSuccess;
	}
	if (!valid_device(device))
		return fail(cudaErrorInvalidDevice);
	pthread_mutex_lock(&lock);
	r = heap_alloc(&heaps[device], size);
	pthread_mutex_unlock(&lock);
	if (!r)
		return fail(cudaErrorMemoryAllocation);
	*p = r;
	return cudaSuccess;
}

static cudaError_t device_free(void *p, bool wait)
{
	struct heap *h;
	bool ok = false;

	config();
	if (!p)
		return cudaSuccess;
	if (wait) { /* cudaFree synchronises the device first, as CUDA's does */
		int d = simgpu_range_device(p, 1);

		sq_device_sync(d >= 0 ? d : current_device);
	}
	pthread_mutex_lock(&lock);
	h = heap_of(p);
	if (h)
		ok = heap_free(h, p);
	pthread_mutex_unlock(&lock);
	return ok ? cudaSuccess : fail(cudaErrorInvalidValue);
}

int sq_free_now(void *p)
{
	return device_free(p, false) == cudaSuccess ? 0 : -1;
}

/* Is p the base of a live device or managed allocation? */
static bool heap_known(const void *p)
{
	struct heap *h;
	struct block *b = NULL;

	config();
	pthread_mutex_lock(&lock);
	h = heap_of(p);
	if (h)
		b = find_block(h->blocks, (uintptr_t)p);
	pthread_mutex_unlock(&lock);
	return b && b->addr == (uintptr_t)p;
}

bool sq_host_pinned(const void *p)
{
	bool pinned;

	pthread_mutex_lock(&lock);
	pinned = find_block(host_blocks, (uintptr_t)p) != NULL;
	pthread_mutex_unlock(&lock);
	return pinned;
}

EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	SQ_FORK_CHECK();
	if (sq_capture_unsafe() != cudaSuccess) /* unsafe during a capture (capture.c) */
		return cudaErrorStreamCaptureUnsupported;
	config();
	return device_malloc(devPtr, size, current_device);
}

EXPORT cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
	size_t p = (width + 511) & ~(size_t)511;

	SQ_FORK_CHECK();
	if (!pitch)
		return fail(cudaErrorInvalidValue);
	*pitch = p;
	config();
	return device_malloc(devPtr, p * height, current_device);
}

EXPORT cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t stream)
{
	SQ_FORK_CHECK();
	(void)stream;
	config();
	return device_malloc(devPtr, size, current_device);
}

EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int device)
{
	SQ_FORK_CHECK();
	if (!pool)
		return fail(cudaErrorInvalidValue);
	if (!valid_device(device))
		return fail(cudaErrorInvalidDevice);
	*pool = (cudaMemPool_t)&pools[device];
	return cudaSuccess;
}

EXPORT cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t pool,
					   cudaStream_t stream)
{
	int dev = simgpu_pool_device(pool);

	SQ_FORK_CHECK();
	(void)stream;
	if (dev < 0)
		return fail(cudaErrorInvalidValue);
	return device_malloc(ptr, size, dev);
}

EXPORT cudaError_t cudaFree(void *devPtr)
{
	SQ_FORK_CHECK();
	if (sq_capture_unsafe() != cudaSuccess) /* unsafe during a capture (capture.c) */
		return cudaErrorStreamCaptureUnsupported;
	return device_free(devPtr, true);
}

EXPORT int simgpu_free(const void *p)
{
	return p && device_free((void *)p, true) == cudaSuccess ? 0 : -1;
}

EXPORT cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t stream)
{
	SQ_FORK_CHECK();
	if (!devPtr)
		return cudaSuccess;
	if (!heap_known(devPtr))
		return fail(cudaErrorInvalidValue);
	return sq_free_async(stream, devPtr);
}

EXPORT cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
	void *r;

	SQ_FORK_CHECK();
	(void)flags;
	config();
	if (!devPtr || size == 0)
		return fail(cudaErrorInvalidValue);
	pthread_mutex_lock(&lock);
	r = heap_alloc(&managed_heap, size);
	pthread_mutex_unlock(&lock);
	if (!r)
		return fail(cudaErrorMemoryAllocation);
	*devPtr = r;
	return cudaSuccess;
}

EXPORT void *simgpu_host_alloc(size_t size)
{
	struct block *b = malloc(sizeof(*b));
	void *r;

	if (!b || posix_memalign(&r, 4096, size) != 0) {
		free(b);
		return NULL;
	}
	b->addr = (uintptr_t)r;
	b->size = size;
	pthread_mutex_lock(&lock);
	b->next = host_blocks;
	host_blocks = b;
	pthread_mutex_unlock(&lock);
	return r;
}

EXPORT cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	void *r;

	SQ_FORK_CHECK();
	(void)flags;
	if (!pHost)
		return fail(cudaErrorInvalidValue);
	if (size == 0) {
		*pHost = NULL;
		return cudaSuccess;
	}
	r = simgpu_host_alloc(size);
	if (!r)
		return fail(cudaErrorMemoryAllocation);
	*pHost = r;
	return cudaSuccess;
}

EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	SQ_FORK_CHECK();
	return cudaHostAlloc(ptr, size, cudaHostAllocDefault);
}

EXPORT int simgpu_host_free(void *ptr)
{
	struct block *found = NULL;

	pthread_mutex_lock(&lock);
	for (struct block **link = &host_blocks; *link; link = &(*link)->next) {
		if ((*link)->addr == (uintptr_t)ptr) {
			found = *link;
			*link = found->next;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	if (!found)
		return -1;
	free((void *)found->addr);
	free(found);
	return 0;
}

EXPORT cudaError_t cudaFreeHost(void *ptr)
{
	SQ_FORK_CHECK();
	if (!ptr)
		return cudaSuccess;
	return simgpu_host_free(ptr) == 0 ? cudaSuccess : fail(cudaErrorInvalidValue);
}

EXPORT cudaError_t cudaMemGetInfo(size_t *freeb, size_t *total)
{
	struct heap *h;

	SQ_FORK_CHECK();
	config();
	if (!freeb || !total)
		return fail(cudaErrorInvalidValue);
	h = &heaps[current_device];
	pthread_mutex_lock(&lock);
	*total = device_mem;
	*freeb = device_mem - h->used;
	pthread_mutex_unlock(&lock);
	return cudaSuccess;
}

EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attr, const void *ptr)
{
	int dev = -1;
	enum mem_kind k;
	bool pinned = false;

	SQ_FORK_CHECK();
	config();
	if (!attr)
		return fail(cudaErrorInvalidValue);
	k = classify(ptr, 1, &dev);
	if (k == MEM_HOST) {
		pthread_mutex_lock(&lock);
		pinned = find_block(host_blocks, (uintptr_t)ptr) != NULL;
		pthread_mutex_unlock(&lock);
	}
	memset(attr, 0, sizeof(*attr));
	switch (k) {
	case MEM_DEVICE:
		attr->type = cudaMemoryTypeDevice;
		attr->device = dev;
		attr->devicePointer = (void *)ptr;
		break;
	case MEM_MANAGED:
		attr->type = cudaMemoryTypeManaged;
		attr->device = dev;
		attr->devicePointer = attr->hostPointer = (void *)ptr;
		break;
	case MEM_HOST:
		attr->type = pinned ? cudaMemoryTypeHost : cudaMemoryTypeUnregistered;
		attr->device = pinned ? current_device : -2;
		if (pinned)
			attr->devicePointer = attr->hostPointer = (void *)ptr;
		break;
	case MEM_UNKNOWN:
		/* inside a device range but not allocated: as CUDA, an error */
		return fail(cudaErrorInvalidValue);
	}
	return cudaSuccess;
}

/* Check both ends of a copy against its kind; device ends must lie inside
 * one live allocation. */
static cudaError_t check_copy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	int ddev, sdev;
	enum mem_kind dk = classify(dst, count ? count : 1, &ddev);
	enum mem_kind sk = classify(src, count ? count : 1, &sdev);
	bool d_dev = dk == MEM_DEVICE || dk == MEM_MANAGED;
	bool s_dev = sk == MEM_DEVICE || sk == MEM_MANAGED;

	if (dk == MEM_UNKNOWN || sk == MEM_UNKNOWN)
		return cudaErrorInvalidValue;
	switch (kind) {
	case cudaMemcpyHostToHost: return (!d_dev || dk == MEM_MANAGED) && (!s_dev || sk == MEM_MANAGED) ? cudaSuccess : cudaErrorInvalidValue;
	case cudaMemcpyHostToDevice: return d_dev && (!s_dev || sk == MEM_MANAGED) ? cudaSuccess : cudaErrorInvalidValue;
	case cudaMemcpyDeviceToHost: return s_dev && (!d_dev || dk == MEM_MANAGED) ? cudaSuccess : cudaErrorInvalidValue;
	case cudaMemcpyDeviceToDevice: return d_dev && s_dev ? cudaSuccess : cudaErrorInvalidValue;
	case cudaMemcpyDefault: return cudaSuccess;
	default: return cudaErrorInvalidMemcpyDirection;
	}
}

/* Check a copy; stream-ordered on `stream`, returning once done when wait. */
static cudaError_t copy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
			cudaStream_t stream, bool wait)
{
	cudaError_t e;

	if (count == 0)
		return cudaSuccess;
	if (!dst || !src)
		return fail(cudaErrorInvalidValue);
	e = check_copy(dst, src, count, kind);
	if (e != cudaSuccess)
		return fail(e);
	return sq_copy(stream, dst, src, count, 0, false, wait);
}

/* Synchronous: on the legacy stream, after the work before it there. */
EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	SQ_FORK_CHECK();
	if (sq_capture_unsafe() != cudaSuccess) /* unsafe during a capture (capture.c) */
		return cudaErrorStreamCaptureUnsupported;
	return copy(dst, src, count, kind, NULL, true);
}

EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
				   enum cudaMemcpyKind kind, cudaStream_t stream)
{
	SQ_FORK_CHECK();
	return copy(dst, src, count, kind, stream, false);
}

EXPORT cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice,
				  size_t count)
{
	SQ_FORK_CHECK();
	if (!valid_device(dstDevice) || !valid_device(srcDevice))
		return fail(cudaErrorInvalidDevice);
	if (count && (simgpu_range_device(dst, count) != dstDevice ||
		      simgpu_range_device(src, count) != srcDevice))
		return fail(cudaErrorInvalidValue);
	return copy(dst, src, count, cudaMemcpyDeviceToDevice, NULL, true);
}

EXPORT cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
				       size_t count, cudaStream_t stream)
{
	SQ_FORK_CHECK();
	if (!valid_device(dstDevice) || !valid_device(srcDevice))
		return fail(cudaErrorInvalidDevice);
	if (count && (simgpu_range_device(dst, count) != dstDevice ||
		      simgpu_range_device(src, count) != srcDevice))
		return fail(cudaErrorInvalidValue);
	return copy(dst, src, count, cudaMemcpyDeviceToDevice, stream, false);
}

/* cudaMemset may return before the device is done; this one waits (safer
 * for programs that read device memory through the host pointer). */
EXPORT cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
	SQ_FORK_CHECK();
	if (sq_capture_unsafe() != cudaSuccess) /* unsafe during a capture (capture.c) */
		return cudaErrorStreamCaptureUnsupported;
	if (count == 0)
		return cudaSuccess;
	if (simgpu_range_device(devPtr, count) < 0)
		return fail(cudaErrorInvalidValue);
	return sq_copy(NULL, devPtr, NULL, count, value, true, true);
}

EXPORT cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	SQ_FORK_CHECK();
	if (count == 0)
		return cudaSuccess;
	if (simgpu_range_device(devPtr, count) < 0)
		return fail(cudaErrorInvalidValue);
	return sq_copy(stream, devPtr, NULL, count, value, true, false);
}
