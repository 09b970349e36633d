/* SPDX-License-Identifier: MIT */
/* driver_probe.c - memory through every driver path a CUDA 12+ program uses,
 * with known sizes per device, for the tracer's driver tests.
 *
 *   device 1: cudaMalloc 1 MiB (runtime) + cuMemAlloc 3 MiB through a
 *             pointer from cuGetProcAddress
 *   device 2: cuMemAlloc 5 MiB through cudaGetDriverEntryPointByVersion
 *   device 0: cuMemAlloc_v2 7 MiB called by symbol (linked against libcuda)
 *   device 3: VMM as PyTorch's expandable segments do it, through
 *             cudaGetDriverEntryPointByVersion: two 2 MiB cuMemCreate
 *             handles mapped side by side into one 8 MiB reservation, access
 *             granted, a copy into the middle, a parameter reported inside
 *             the second mapping (as cuda:PARAM_DEV, argv[2], default 3)
 * argv[1] "keep": exit with everything live; "free": free it all first.
 * Built twice: driver_probe links libcuda.so.1; driver_probe_rt
 * (RT_RUNTIME_ONLY) links only the runtime and asks it for every driver
 * function first, so it runs against NVIDIA's libcudart on a machine
 * without a driver (where it must fail exactly as it does untraced).
 * Prints "driver_probe: ok" or the first failing call and its result, and
 * exits with that result (NVIDIA's, unchanged by the tracer). */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ranktrace.h"

#define MiB (1ull << 20)

#define CHECK(call)                                                                    \
	do {                                                                           \
		int rc_ = (int)(call);                                                 \
		if (rc_ != 0) {                                                        \
			printf("driver_probe: %s -> %d\n", #call, rc_);                \
			return rc_;                                                    \
		}                                                                      \
	} while (0)

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
			      unsigned long long);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*reserve_fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*addrfree_fn)(CUdeviceptr, size_t);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
			   unsigned long long);
typedef CUresult (*unmap_fn)(CUdeviceptr, size_t);
typedef CUresult (*access_fn)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);

/* The driver function `name` through the runtime, as PyTorch does. */
static int rt_entry(const char *name, void **fn)
{
	enum cudaDriverEntryPointQueryResult q;
	cudaError_t e = cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &q);

	if (e == cudaSuccess && q != cudaDriverEntryPointSuccess)
		return 500;
	return (int)e;
}

struct vmm {
	create_fn create;
	release_fn release;
	reserve_fn reserve;
	addrfree_fn addrfree;
	map_fn map;
	unmap_fn unmap;
	access_fn access;
};

static int vmm_fns(struct vmm *v)
{
	CHECK(rt_entry("cuMemCreate", (void **)&v->create));
	CHECK(rt_entry("cuMemRelease", (void **)&v->release));
	CHECK(rt_entry("cuMemAddressReserve", (void **)&v->reserve));
	CHECK(rt_entry("cuMemAddressFree", (void **)&v->addrfree));
	CHECK(rt_entry("cuMemMap", (void **)&v->map));
	CHECK(rt_entry("cuMemUnmap", (void **)&v->unmap));
	CHECK(rt_entry("cuMemSetAccess", (void **)&v->access));
	return 0;
}

int main(int argc, char **argv)
{
	bool keep = argc < 2 || strcmp(argv[1], "free") != 0;
	int param_dev = argc > 2 ? atoi(argv[2]) : 3;
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { CU_MEM_LOCATION_TYPE_DEVICE, 3 } };
	CUmemAccessDesc acc = { .location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	CUdriverProcAddressQueryResult st;
	CUmemGenericAllocationHandle h[2];
	CUdeviceptr b, c, d, va;
	alloc_fn alloc1, alloc2;
	free_fn dfree;
	struct vmm v;
	void *a;
	char buf[256] = { 1 };

#ifdef RT_RUNTIME_ONLY
	{ /* the driver's lookup itself, through the runtime (as cuda-python does) */
		CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

		CHECK(rt_entry("cuGetProcAddress", (void **)&gpa));
		CHECK(gpa("cuMemAlloc", (void **)&alloc1, 12000, 0, &st));
		CHECK(gpa("cuMemFree", (void **)&dfree, 12000, 0, &st));
	}
	CHECK(vmm_fns(&v));
	(void)st;
#endif
	CHECK(cudaSetDevice(1));
	CHECK(cudaMalloc(&a, 1 * MiB));
#ifndef RT_RUNTIME_ONLY
	CHECK(cuInit(0));
	CHECK(cuGetProcAddress("cuMemAlloc", (void **)&alloc1, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
	CHECK(cuGetProcAddress("cuMemFree", (void **)&dfree, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
#endif
	CHECK(alloc1(&b, 3 * MiB));
	CHECK(cudaSetDevice(2));
	CHECK(rt_entry("cuMemAlloc", (void **)&alloc2));
	CHECK(alloc2(&c, 5 * MiB));
	CHECK(cudaSetDevice(0));
#ifdef RT_RUNTIME_ONLY
	CHECK(alloc1(&d, 7 * MiB));
#else
	CHECK(cuMemAlloc(&d, 7 * MiB));
	CHECK(vmm_fns(&v));
#endif
	CHECK(v.create(&h[0], 2 * MiB, &prop, 0));
	CHECK(v.create(&h[1], 2 * MiB, &prop, 0));
	CHECK(v.reserve(&va, 8 * MiB, 0, 0, 0));
	CHECK(v.map(va, 2 * MiB, 0, h[0], 0));
	CHECK(v.map(va + 2 * MiB, 2 * MiB, 0, h[1], 0));
	CHECK(v.access(va, 4 * MiB, &acc, 1));
	CHECK(cudaMemcpy((void *)(uintptr_t)(va + 2 * MiB - 128), buf, sizeof(buf),
			 cudaMemcpyHostToDevice));
	rt_param_if_traced("layer.weight", RT_DEV_CUDA, param_dev, 0, 1024, 4096,
			   (void *)(uintptr_t)(va + 2 * MiB + 4096));
	if (!keep) {
		CHECK(v.unmap(va, 4 * MiB));
		CHECK(v.release(h[0]));
		CHECK(v.release(h[1]));
		CHECK(v.addrfree(va, 8 * MiB));
		CHECK(dfree(d));
		CHECK(dfree(c));
		CHECK(dfree(b));
		CHECK(cudaFree(a));
	}
	printf("driver_probe: ok\n");
	return 0;
}
