/* SPDX-License-Identifier: MIT */
/* cudart.c - simulated CUDA runtime (sim/libcudart.so.13) with NVIDIA's ABI.
 *
 * Compiled against NVIDIA's cuda_runtime_api.h so the ABI cannot drift. Each
 * of SIMGPU_DEVICES devices owns a private address range of SIMGPU_MEM bytes,
 * reserved lazily with mmap(MAP_NORESERVE), so pointers say which device they
 * live on, out-of-memory happens where a GPU's would, and a device pointer is
 * never a host pointer. Work is stream-ordered and asynchronous, as on a GPU:
 * streams, events and copies are in stream.c on the engine of queue.c (one
 * worker thread per device); SIMGPU_SYNC=1 runs it on the calling thread.
 *
 * Thread-safe: one mutex guards the allocation maps (this is a test bench,
 * not a hot path). The last error is per thread, as in CUDA. Functions that
 * NVIDIA's library exports but this one does not implement fail loudly
 * (unimplemented.c). */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
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

pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static int ndevices = 8;
size_t device_mem = 80ull << 30;
static double timeout_s = 60.0;
struct heap heaps[SIM_MAX_DEVICES];
struct heap managed_heap = { .managed = true, .device = 0 };
struct block *host_blocks; /* pinned host allocations */
struct sim_pool pools[SIM_MAX_DEVICES]; /* default pools */
static struct sim_pool *created_pools;

__thread int current_device;
static __thread cudaError_t last_error;

static const struct {
	int code;
	const char *name;
	const char *text;
} cuda_errors[] = {
#define RT_CUDA_ERR(c, n, t) { c, n, t },
#include "errors.def"
#undef RT_CUDA_ERR
};

/* Parse "80G", "512MiB", "1048576" into bytes; 0 on error. */
static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s)
		return 0;
	switch (*end) {
	case 'k': case 'K': v <<= 10; break;
	case 'm': case 'M': v <<= 20; break;
	case 'g': case 'G': v <<= 30; break;
	case 't': case 'T': v <<= 40; break;
	case '\0': break;
	default: return 0;
	}
	return (size_t)v;
}

static void load_config(void)
{
	const char *s;

	s = getenv("SIMGPU_DEVICES");
	if (s) {
		int n = atoi(s);

		if (n >= 0 && n <= SIM_MAX_DEVICES)
			ndevices = n;
		else
			fprintf(stderr, "simgpu: SIMGPU_DEVICES=%s out of range 0..%d, using %d\n",
				s, SIM_MAX_DEVICES, ndevices);
	}
	s = getenv("SIMGPU_MEM");
	if (s) {
		size_t m = parse_size(s);

		if (m >= (1u << 20))
			device_mem = m;
		else
			fprintf(stderr, "simgpu: SIMGPU_MEM=%s not understood (e.g. 80G), using default\n", s);
	}
	s = getenv("SIMGPU_TIMEOUT");
	if (s && atof(s) > 0)
		timeout_s = atof(s);
	for (int d = 0; d < SIM_MAX_DEVICES; d++) {
		heaps[d].device = d;
		pools[d].device = d;
	}
	managed_heap.cap = device_mem;
}

void config(void)
{
	pthread_once(&config_once, load_config);
}

/* ---- CUDA's fork rule (simgpu.h) ---- */

static _Atomic bool cuda_used;   /* a runtime call initialised CUDA here */
static bool forked_after_init;  /* this process is such a process's child */

static void fork_child(void)
{
	if (atomic_load(&cuda_used))
		forked_after_init = true;
}

__attribute__((constructor)) static void fork_rule(void)
{
	pthread_atfork(NULL, NULL, fork_child);
}

EXPORT bool simgpu_forked(void)
{
	if (__builtin_expect(forked_after_init, 0))
		return true;
	if (!atomic_load_explicit(&cuda_used, memory_order_relaxed))
		atomic_store(&cuda_used, true);
	return false;
}

cudaError_t fail(cudaError_t e)
{
	if (e != cudaSuccess)
		last_error = e;
	return e;
}

cudaError_t sq_fail(cudaError_t e)
{
	return fail(e);
}

bool valid_device(int d)
{
	config();
	return d >= 0 && d < ndevices;
}

/* Reserve the heap's range on first use. Called with lock held. */
static bool heap_ready(struct heap *h)
{
	void *p;

	if (h->base)
		return true;
	h->cap = device_mem;
	p = mmap(NULL, h->cap, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return false;
	h->base = p;
	return true;
}

/* First-fit allocation. Called with lock held. Returns NULL when full. */
void *heap_alloc(struct heap *h, size_t size)
{
	struct block **link, *b, *nb;
	uintptr_t start;

	if (!heap_ready(h))
		return NULL;
	size = (size + DEVICE_ALIGN - 1) & ~(size_t)(DEVICE_ALIGN - 1);
	if (size == 0 || size > h->cap - h->used)
		return NULL;
	start = (uintptr_t)h->base;
	for (link = &h->blocks; ; link = &(*link)->next) {
		uintptr_t limit = *link ? (*link)->addr : (uintptr_t)h->base + h->cap;

		if (limit - start >= size)
			break;
		if (!*link)
			return NULL;
		start = (*link)->addr + (((*link)->size + DEVICE_ALIGN - 1) &
					 ~(size_t)(DEVICE_ALIGN - 1));
	}
	nb = malloc(sizeof(*nb));
	if (!nb)
		return NULL;
	b = *link;
	nb->addr = start;
	nb->size = size;
	nb->next = b;
	*link = nb;
	h->used += size;
	return (void *)start;
}

/* Remove the block starting exactly at p. Called with lock held. */
bool heap_free(struct heap *h, const void *p)
{
	for (struct block **link = &h->blocks; *link; link = &(*link)->next) {
		struct block *b = *link;

		if (b->addr != (uintptr_t)p)
			continue;
		*link = b->next;
		h->used -= b->size;
		if (b->size >= (1u << 20))
			madvise((void *)b->addr, b->size, MADV_DONTNEED);
		free(b);
		return true;
	}
	return false;
}

struct block *find_block(struct block *list, uintptr_t p)
{
	for (struct block *b = list; b; b = b->next)
		if (p >= b->addr && p < b->addr + b->size)
			return b;
	return NULL;
}

/* Heap whose range holds p, or NULL. Called with lock held. */
struct heap *heap_of(const void *p)
{
	uintptr_t a = (uintptr_t)p;

	for (int d = 0; d < ndevices; d++)
		if (heaps[d].base && a >= (uintptr_t)heaps[d].base &&
		    a < (uintptr_t)heaps[d].base + heaps[d].cap)
			return &heaps[d];
	if (managed_heap.base && a >= (uintptr_t)managed_heap.base &&
	    a < (uintptr_t)managed_heap.base + managed_heap.cap)
		return &managed_heap;
	return NULL;
}


/* Classify [p, p+len): device memory must lie inside one live allocation.
 * *dev receives the device. */
enum mem_kind classify(const void *p, size_t len, int *dev)
{
	enum mem_kind k = MEM_UNKNOWN;
	struct heap *h;
	struct block *b;
	int vmm = simgpu_vmm_lookup((uintptr_t)p, len, dev);

	if (vmm >= 0) /* cuMemMap'ed (and accessible) or merely reserved */
		return vmm == 1 ? MEM_DEVICE : MEM_UNKNOWN;
	pthread_mutex_lock(&lock);
	h = heap_of(p);
	if (h) {
		b = find_block(h->blocks, (uintptr_t)p);
		if (b && (uintptr_t)p + len <= b->addr + b->size) {
			k = h->managed ? MEM_MANAGED : MEM_DEVICE;
			*dev = h->managed ? current_device : h->device;
		}
	} else {
		k = MEM_HOST;
		*dev = -1;
	}
	pthread_mutex_unlock(&lock);
	return k;
}

/* ---- private interface for the simulated NCCL ---- */

EXPORT int simgpu_current_device(void)
{
	return current_device;
}

EXPORT int simgpu_device_count(void)
{
	config();
	return ndevices;
}

EXPORT int simgpu_range_device(const void *ptr, size_t len)
{
	int dev = -1;
	enum mem_kind k = classify(ptr, len ? len : 1, &dev);

	return (k == MEM_DEVICE || k == MEM_MANAGED) ? dev : -1;
}

EXPORT void simgpu_set_current_device(int device)
{
	if (valid_device(device))
		current_device = device;
}

EXPORT bool simgpu_charge(int device, long long delta)
{
	bool ok = false;

	if (!valid_device(device))
		return false;
	pthread_mutex_lock(&lock);
	if (delta < 0 || (size_t)delta <= device_mem - heaps[device].used) {
		heaps[device].used += (size_t)delta;
		ok = true;
	}
	pthread_mutex_unlock(&lock);
	return ok;
}

EXPORT void *simgpu_alloc(int device, size_t size)
{
	void *r = NULL;

	if (!valid_device(device) || size == 0)
		return NULL;
	pthread_mutex_lock(&lock);
	r = heap_alloc(&heaps[device], size);
	pthread_mutex_unlock(&lock);
	return r;
}

EXPORT void *simgpu_managed_alloc(size_t size)
{
	void *r;

	config();
	pthread_mutex_lock(&lock);
	r = size ? heap_alloc(&managed_heap, size) : NULL;
	pthread_mutex_unlock(&lock);
	return r;
}

EXPORT void simgpu_mem_info(int device, size_t *freeb, size_t *total)
{
	config();
	pthread_mutex_lock(&lock);
	*total = device_mem;
	*freeb = valid_device(device) ? device_mem - heaps[device].used : 0;
	pthread_mutex_unlock(&lock);
}

EXPORT void *simgpu_default_pool(int device)
{
	return valid_device(device) ? &pools[device] : NULL;
}

EXPORT void *simgpu_pool_create(int device)
{
	struct sim_pool *p;

	if (!valid_device(device) || !(p = calloc(1, sizeof(*p))))
		return NULL;
	p->device = device;
	pthread_mutex_lock(&lock);
	p->next = created_pools;
	created_pools = p;
	pthread_mutex_unlock(&lock);
	return p;
}

EXPORT int simgpu_pool_destroy(void *pool)
{
	struct sim_pool *found = NULL;

	pthread_mutex_lock(&lock);
	for (struct sim_pool **l = &created_pools; *l; l = &(*l)->next)
		if (*l == pool) {
			found = *l;
			*l = found->next;
			break;
		}
	pthread_mutex_unlock(&lock);
	free(found);
	return found ? 0 : -1;
}

EXPORT int simgpu_pool_device(const void *pool)
{
	int dev = -1;

	config();
	if ((const struct sim_pool *)pool >= pools && (const struct sim_pool *)pool < pools + SIM_MAX_DEVICES)
		return ((const struct sim_pool *)pool)->device;
	pthread_mutex_lock(&lock);
	for (struct sim_pool *p = created_pools; p; p = p->next)
		if (p == pool)
			dev = p->device;
	pthread_mutex_unlock(&lock);
	return dev;
}

EXPORT double simgpu_timeout_s(void)
{
	config();
	return timeout_s;
}

/* ---- errors ---- */

EXPORT const char *cudaGetErrorName(cudaError_t e)
{
	for (size_t i = 0; i < sizeof(cuda_errors) / sizeof(cuda_errors[0]); i++)
		if (cuda_errors[i].code == (int)e)
			return cuda_errors[i].name;
	return "unrecognized error code";
}

EXPORT const char *cudaGetErrorString(cudaError_t e)
{
	for (size_t i = 0; i < sizeof(cuda_errors) / sizeof(cuda_errors[0]); i++)
		if (cuda_errors[i].code == (int)e)
			return cuda_errors[i].text;
	return "unrecognized error code";
}

EXPORT cudaError_t cudaGetLastError(void)
{
	cudaError_t e = last_error;

	last_error = cudaSuccess;
	return e;
}

EXPORT cudaError_t cudaPeekAtLastError(void)
{
	return last_error;
}

/* ---- versions and devices ---- */

EXPORT cudaError_t cudaDriverGetVersion(int *v)
{
	if (!v)
		return fail(cudaErrorInvalidValue);
	*v = CUDART_VERSION;
	return cudaSuccess;
}

EXPORT cudaError_t cudaRuntimeGetVersion(int *v)
{
	if (!v)
		return fail(cudaErrorInvalidValue);
	*v = CUDART_VERSION;
	return cudaSuccess;
}

EXPORT cudaError_t cudaGetDeviceCount(int *count)
{
	SQ_FORK_CHECK();
	config();
	if (!count)
		return fail(cudaErrorInvalidValue);
	*count = ndevices;
	if (ndevices == 0)
		return fail(cudaErrorNoDevice);
	return cudaSuccess;
}

EXPORT cudaError_t cudaSetDevice(int device)
{
	SQ_FORK_CHECK();
	if (!valid_device(device))
		return fail(cudaErrorInvalidDevice);
	current_device = device;
	return cudaSuccess;
}

EXPORT cudaError_t cudaGetDevice(int *device)
{
	SQ_FORK_CHECK();
	config();
	if (!device)
		return fail(cudaErrorInvalidValue);
	if (ndevices == 0)
		return fail(cudaErrorNoDevice);
	*device = current_device;
	return cudaSuccess;
}

EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
	SQ_FORK_CHECK();
	if (!prop)
		return fail(cudaErrorInvalidValue);
	if (!valid_device(device))
		return fail(cudaErrorInvalidDevice);
	memset(prop, 0, sizeof(*prop));
	snprintf(prop->name, sizeof(prop->name), "SimGPU %d (simulated by ranktrace)", device);
	for (int i = 0; i < 16; i++)
		prop->uuid.bytes[i] = (char)(0x51 + i + device * 16);
	prop->totalGlobalMem = device_mem;
	prop->sharedMemPerBlock = 48 << 10;
	prop->regsPerBlock = 65536;
	prop->warpSize = 32;
	prop->maxThreadsPerBlock = 1024;
	prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
	prop->maxThreadsDim[2] = 64;
	prop->maxGridSize[0] = 0x7fffffff;
	prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
	prop->totalConstMem = 64 << 10;
	prop->major = 9;
	prop->minor = 0;
	prop->multiProcessorCount = 132;
	prop->pciBusID = 0x18 + device;
	prop->unifiedAddressing = 1;
	prop->managedMemory = 1;
	prop->concurrentManagedAccess = 1;
	prop->l2CacheSize = 50 << 20;
	return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
	struct cudaDeviceProp p;

	SQ_FORK_CHECK();
	if (!value)
		return fail(cudaErrorInvalidValue);
	if (cudaGetDeviceProperties(&p, device) != cudaSuccess)
		return last_error;
	switch (attr) {
	case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
	case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
	case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
	case cudaDevAttrWarpSize: *value = p.warpSize; break;
	case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
	case cudaDevAttrPciBusId: *value = p.pciBusID; break;
	case cudaDevAttrUnifiedAddressing: *value = 1; break;
	case cudaDevAttrManagedMemory: *value = 1; break;
	case cudaDevAttrConcurrentManagedAccess: *value = 1; break;
	default:
		fprintf(stderr, "simgpu: cudaDeviceGetAttribute(%d) is not simulated\n", (int)attr);
		return fail(cudaErrorNotSupported);
	}
	return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
	SQ_FORK_CHECK();
	if (least)
		*least = 0;
	if (greatest)
		*greatest = -5;
	return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceSynchronize(void)
{
	SQ_FORK_CHECK();
	if (sq_capture_unsafe() != cudaSuccess) /* unsafe during a capture (capture.c) */
		return cudaErrorStreamCaptureUnsupported;
	config();
	sq_device_sync(current_device);
	return cudaSuccess;
}

/* Frees every allocation of the current device, as a context reset does. */
EXPORT cudaError_t cudaDeviceReset(void)
{
	struct heap *h;

	SQ_FORK_CHECK();
	config();
	sq_device_sync(current_device);
	pthread_mutex_lock(&lock);
	h = &heaps[current_device];
	while (h->blocks)
		heap_free(h, (void *)h->blocks->addr);
	pthread_mutex_unlock(&lock);
	return cudaSuccess;
}
