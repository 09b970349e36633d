/* SPDX-License-Identifier: MIT */
/* cuda.c - simulated CUDA driver (sim/libcuda.so.1) with NVIDIA's ABI.
 *
 * Compiled against NVIDIA's cuda.h, so every function here has the exact
 * prototype (and, through cuda.h's macros, the exported _v2 name) that the
 * real driver has. It shares the simulated devices with sim/libcudart.so.13:
 * the same address ranges, the same per-device memory budget, the same
 * current device (the primary context is the runtime's device), through the
 * simgpu_* entry points, never through public cuda* symbols (a tracer must
 * not see the driver calling the runtime). cuMemCreate/cuMemMap live in
 * vmm.c inside libcudart, so runtime copies see mapped memory too.
 *
 * cuGetProcAddress (both versions) hands out these functions by base name,
 * version and per-thread-stream flag, as NVIDIA's driver does; the runtime's
 * cudaGetDriverEntryPoint* go through it. Everything else the real driver
 * exports (cuda_exports.txt) is a weak stub that fails loudly. Nothing works
 * before cuInit (CUDA_ERROR_NOT_INITIALIZED), as with NVIDIA's driver.
 * Thread-safe: state is the runtime's (locked there) or per thread. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "simgpu.h"
#include "cuda_int.h"

#define SIM_DRIVER_VERSION 13000

struct sim_ctx {
	int device;
	int retained;
};

int initialized;
static struct sim_ctx primary[64];
/* The thread's context: NULL after cuCtxSetCurrent(NULL); otherwise the
 * primary context of the runtime's current device. */
static __thread bool no_ctx;

bool valid_dev(CUdevice d)
{
	return d >= 0 && d < simgpu_device_count() && d < 64;
}

/* The calling thread's device, or -1 without a current context. */
static int ctx_device(void)
{
	return no_ctx ? -1 : simgpu_current_device();
}

/* As NVIDIA's driver does at the first cuInit: CUDA_INJECTION64_PATH names a
 * library whose InitializeInjection() is called (CUPTI-based tools). */
static void load_injection(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	void *h = path && *path ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : NULL;
	int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;

	if (path && *path && !init)
		fprintf(stderr, "simgpu: CUDA_INJECTION64_PATH=%s: no InitializeInjection\n", path);
	if (init)
		init();
}

EXPORT CUresult cuInit(unsigned int Flags)
{
	if (Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (simgpu_device_count() == 0)
		return CUDA_ERROR_NO_DEVICE;
	for (int d = 0; d < 64; d++)
		primary[d].device = d;
	if (!__atomic_exchange_n(&initialized, 1, __ATOMIC_ACQ_REL))
		load_injection();
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = SIM_DRIVER_VERSION;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr)
{
	static const struct { CUresult c; const char *n; } names[] = {
		{ CUDA_SUCCESS, "CUDA_SUCCESS" },
		{ CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE" },
		{ CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY" },
		{ CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED" },
		{ CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE" },
		{ CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE" },
		{ CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT" },
		{ CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND" },
		{ CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED" },
	};

	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].c == error) {
			*pStr = names[i].n;
			return CUDA_SUCCESS;
		}
	*pStr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

/* ---- devices and primary contexts ---- */

EXPORT CUresult cuDeviceGetCount(int *count)
{
	CHECK_INIT();
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = simgpu_device_count();
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	CHECK_INIT();
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(ordinal))
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	CHECK_INIT();
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, (size_t)len, "SimGPU %d (simulated by ranktrace)", dev);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
	size_t freeb;

	CHECK_INIT();
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	simgpu_mem_info(dev, &freeb, bytes);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	CHECK_INIT();
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	switch (attrib) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = 132; break;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *pi = 0x18 + dev; break;
	case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *pi = 0; break;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *pi = 1; break;
	case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *pi = 1; break;
	case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *pi = 1; break;
	default:
		fprintf(stderr, "simgpu: cuDeviceGetAttribute(%d) is not simulated\n", (int)attrib);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CHECK_INIT();
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	__atomic_add_fetch(&primary[dev].retained, 1, __ATOMIC_RELAXED);
	*pctx = (CUcontext)&primary[dev];
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	CHECK_INIT();
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	if (__atomic_load_n(&primary[dev].retained, __ATOMIC_RELAXED) <= 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	__atomic_sub_fetch(&primary[dev].retained, 1, __ATOMIC_RELAXED);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	CHECK_INIT();
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*flags = 0;
	*active = __atomic_load_n(&primary[dev].retained, __ATOMIC_RELAXED) > 0;
	return CUDA_SUCCESS;
}

static struct sim_ctx *ctx_of(CUcontext ctx)
{
	struct sim_ctx *c = (struct sim_ctx *)ctx;

	return c >= primary && c < primary + 64 && valid_dev(c->device) ? c : NULL;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
	struct sim_ctx *c;

	CHECK_INIT();
	if (!ctx) {
		no_ctx = true;
		return CUDA_SUCCESS;
	}
	c = ctx_of(ctx);
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	simgpu_set_current_device(c->device);
	no_ctx = false;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	int d = ctx_device();

	CHECK_INIT();
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = d < 0 ? NULL : (CUcontext)&primary[d];
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
	int d = ctx_device();

	CHECK_INIT();
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (d < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	*device = d;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void)
{
	CHECK_INIT();
	if (ctx_device() < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	simgpu_device_sync(ctx_device());
	return CUDA_SUCCESS;
}

/* ---- memory ---- */

static CUresult dev_alloc(CUdeviceptr *dptr, size_t bytesize, int dev)
{
	void *p;

	CHECK_INIT();
	if (!dptr || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	p = simgpu_alloc(dev, bytesize);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*dptr = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

static CUresult dev_free(CUdeviceptr dptr)
{
	CHECK_INIT();
	if (ctx_device() < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	return simgpu_free((void *)(uintptr_t)dptr) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
	return dev_alloc(dptr, bytesize, ctx_device());
}

EXPORT CUresult cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
				size_t Height, unsigned int ElementSizeBytes)
{
	size_t pitch = (WidthInBytes + 511) & ~(size_t)511;

	if (!pPitch || (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
		return CUDA_ERROR_INVALID_VALUE;
	*pPitch = pitch;
	return dev_alloc(dptr, pitch * Height, ctx_device());
}

EXPORT CUresult cuMemFree(CUdeviceptr dptr)
{
	return dev_free(dptr);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return dev_alloc(dptr, bytesize, ctx_device());
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return dev_alloc(dptr, bytesize, ctx_device());
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	return dev_free(dptr);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	return dev_free(dptr);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
					CUstream hStream)
{
	int dev = simgpu_pool_device(pool);

	CHECK_INIT();
	return dev < 0 ? CUDA_ERROR_INVALID_VALUE : dev_alloc(dptr, bytesize, dev);
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
					     CUmemoryPool pool, CUstream hStream)
{
	return cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream);
}

EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	CHECK_INIT();
	if (!pool_out)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*pool_out = (CUmemoryPool)simgpu_default_pool(dev);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
	void *p;

	CHECK_INIT();
	if (!pool || !poolProps || poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(poolProps->location.id))
		return CUDA_ERROR_INVALID_DEVICE;
	p = simgpu_pool_create(poolProps->location.id);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*pool = (CUmemoryPool)p;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	CHECK_INIT();
	return simgpu_pool_destroy(pool) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	void *p;

	CHECK_INIT();
	if (!dptr || bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		return CUDA_ERROR_INVALID_VALUE;
	p = simgpu_managed_alloc(bytesize);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*dptr = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	CHECK_INIT();
	if (!pp || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	*pp = simgpu_host_alloc(bytesize);
	return *pp ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuMemAllocHost(void **pp, size_t bytesize)
{
	return cuMemHostAlloc(pp, bytesize, 0);
}

EXPORT CUresult cuMemFreeHost(void *p)
{
	CHECK_INIT();
	return simgpu_host_free(p) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemGetInfo(size_t *free, size_t *total)
{
	int d = ctx_device();

	CHECK_INIT();
	if (!free || !total)
		return CUDA_ERROR_INVALID_VALUE;
	if (d < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	simgpu_mem_info(d, free, total);
	return CUDA_SUCCESS;
}

/* ---- entry points ---- */

CUresult cuGetProcAddress_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
	__asm__("cuGetProcAddress");

/* What cuGetProcAddress hands out: base name, the first CUDA version with
 * this ABI, the function, and its per-thread-default-stream variant. */
static const struct proc {
	const char *name;
	int since;
	void *fn, *ptsz;
} procs[] = {
#define P(n, v, f) { n, v, (void *)f, (void *)f },
#define PS(n, v, f) { n, v, (void *)f, (void *)f##_ptsz },
	P("cuInit", 2000, cuInit) P("cuDriverGetVersion", 2020, cuDriverGetVersion)
	P("cuGetErrorName", 6000, cuGetErrorName)
	P("cuDeviceGetCount", 2000, cuDeviceGetCount) P("cuDeviceGet", 2000, cuDeviceGet)
	P("cuDeviceGetName", 2000, cuDeviceGetName) P("cuDeviceTotalMem", 3020, cuDeviceTotalMem)
	P("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute)
	P("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain)
	P("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease)
	P("cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState)
	P("cuCtxSetCurrent", 4000, cuCtxSetCurrent) P("cuCtxGetCurrent", 4000, cuCtxGetCurrent)
	P("cuCtxGetDevice", 2000, cuCtxGetDevice) P("cuCtxSynchronize", 2000, cuCtxSynchronize)
	P("cuMemAlloc", 3020, cuMemAlloc) P("cuMemAllocPitch", 3020, cuMemAllocPitch)
	P("cuMemFree", 3020, cuMemFree)
	PS("cuMemAllocAsync", 11020, cuMemAllocAsync) PS("cuMemFreeAsync", 11020, cuMemFreeAsync)
	PS("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync)
	P("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool)
	P("cuMemPoolCreate", 11020, cuMemPoolCreate) P("cuMemPoolDestroy", 11020, cuMemPoolDestroy)
	P("cuMemAllocManaged", 6000, cuMemAllocManaged) P("cuMemHostAlloc", 2020, cuMemHostAlloc)
	P("cuMemAllocHost", 3020, cuMemAllocHost) P("cuMemFreeHost", 2000, cuMemFreeHost)
	P("cuMemGetInfo", 3020, cuMemGetInfo)
	P("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity)
	P("cuMemCreate", 10020, cuMemCreate) P("cuMemRelease", 10020, cuMemRelease)
	P("cuMemGetAllocationPropertiesFromHandle", 10020, cuMemGetAllocationPropertiesFromHandle)
	P("cuMemRetainAllocationHandle", 11000, cuMemRetainAllocationHandle)
	P("cuMemAddressReserve", 10020, cuMemAddressReserve)
	P("cuMemAddressFree", 10020, cuMemAddressFree)
	P("cuMemMap", 10020, cuMemMap) P("cuMemUnmap", 10020, cuMemUnmap)
	P("cuMemSetAccess", 10020, cuMemSetAccess)
	P("cuGetProcAddress", 12000, cuGetProcAddress_v2) /* newest ABI first */
	P("cuGetProcAddress", 11030, cuGetProcAddress_v1)
#undef P
#undef PS
};

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
				    cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
	bool found = false;

	if (symbolStatus)
		*symbolStatus = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		if (strcmp(procs[i].name, symbol))
			continue;
		found = true;
		if (cudaVersion < procs[i].since)
			continue;
		*pfn = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ? procs[i].ptsz
									       : procs[i].fn;
		if (symbolStatus)
			*symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
		return CUDA_SUCCESS;
	}
	if (found && symbolStatus)
		*symbolStatus = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
	return CUDA_ERROR_NOT_FOUND;
}

/* The CUDA 11.3 ABI, exported as "cuGetProcAddress". */
EXPORT CUresult cuGetProcAddress_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
