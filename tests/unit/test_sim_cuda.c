/* SPDX-License-Identifier: MIT */
/* test_sim_cuda.c - the simulated driver (sim/libcuda.so.1) behaves like
 * NVIDIA's where ranktrace depends on it, and shares the simulated devices
 * with the runtime: entry points by name and version, driver allocations in
 * the runtime's address ranges and budget, VMM mappings backed by a device,
 * the runtime's cudaGetDriverEntryPoint* handing out the same functions. */
#include <criterion/criterion.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <string.h>

#include "simgpu.h"

#define DOK(call) cr_assert_eq((call), CUDA_SUCCESS, "%s", #call)
#define ROK(call) cr_assert_eq((call), cudaSuccess, "%s", #call)
#define MiB (1ull << 20)

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);

static void init(void)
{
	DOK(cuInit(0));
}

Test(sim_driver, nothing_works_before_cuInit)
{
	CUdeviceptr p;

	cr_assert_eq(cuMemAlloc(&p, 4096), CUDA_ERROR_NOT_INITIALIZED);
}

Test(sim_driver, proc_address_follows_name_version_and_stream_flag, .init = init)
{
	void *fn = NULL, *ptsz = NULL;
	CUdriverProcAddressQueryResult st;

	DOK(cuGetProcAddress("cuMemAlloc", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
	cr_assert_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);
	cr_assert_eq(fn, (void *)cuMemAlloc_v2);
	cr_assert_eq(cuGetProcAddress("cuMemAlloc", &fn, 3000, 0, &st), CUDA_ERROR_NOT_FOUND);
	cr_assert_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	cr_assert_eq(cuGetProcAddress("cuNoSuchThing", &fn, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
	cr_assert_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	DOK(cuGetProcAddress("cuMemAllocAsync", &fn, 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st));
	DOK(cuGetProcAddress("cuMemAllocAsync", &ptsz, 13000,
			     CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
	cr_assert_neq(fn, ptsz, "the per-thread-stream variant is a different function");
}

Test(sim_driver, allocation_through_proc_address_lives_on_the_current_device, .init = init)
{
	alloc_fn alloc;
	free_fn dfree;
	CUdeviceptr p;
	struct cudaPointerAttributes a;
	size_t free0, free1, total;
	CUdriverProcAddressQueryResult st;

	DOK(cuGetProcAddress("cuMemAlloc", (void **)&alloc, 13000, 0, &st));
	DOK(cuGetProcAddress("cuMemFree", (void **)&dfree, 13000, 0, &st));
	ROK(cudaSetDevice(3));
	ROK(cudaMemGetInfo(&free0, &total));
	DOK(alloc(&p, 64 * MiB));
	ROK(cudaPointerGetAttributes(&a, (void *)(uintptr_t)p));
	cr_assert_eq(a.type, cudaMemoryTypeDevice);
	cr_assert_eq(a.device, 3);
	ROK(cudaMemGetInfo(&free1, &total));
	cr_assert_eq(free0 - free1, 64 * MiB, "driver and runtime share one budget");
	ROK(cudaMemset((void *)(uintptr_t)p, 7, 4096));
	DOK(dfree(p));
	cr_assert_eq(dfree(p), CUDA_ERROR_INVALID_VALUE, "double free");
}

Test(sim_driver, runtime_entry_points_are_the_driver_functions, .init = init)
{
	void *viaDriver = NULL, *viaRuntime = NULL;
	enum cudaDriverEntryPointQueryResult q;
	CUdriverProcAddressQueryResult st;

	DOK(cuGetProcAddress("cuMemCreate", &viaDriver, 12000, 0, &st));
	ROK(cudaGetDriverEntryPointByVersion("cuMemCreate", &viaRuntime, 12000, cudaEnableDefault, &q));
	cr_assert_eq(q, cudaDriverEntryPointSuccess);
	cr_assert_eq(viaRuntime, viaDriver);
	cr_assert_eq(viaRuntime, (void *)cuMemCreate);
}

Test(sim_driver, vmm_mapping_is_backed_by_its_device_and_charged_once, .init = init)
{
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { CU_MEM_LOCATION_TYPE_DEVICE, 2 } };
	CUmemAccessDesc acc = { .location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	CUmemGenericAllocationHandle h1, h2;
	CUdeviceptr va;
	size_t g, free0, free1, total;
	struct cudaPointerAttributes a;
	char buf[64] = "spans two physical allocations";

	DOK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
	cr_assert_eq(g, 2 * MiB);
	simgpu_mem_info(2, &free0, &total);
	DOK(cuMemCreate(&h1, g, &prop, 0));
	DOK(cuMemCreate(&h2, g, &prop, 0));
	simgpu_mem_info(2, &free1, &total);
	cr_assert_eq(free0 - free1, 2 * g, "physical bytes charged to device 2 at cuMemCreate");
	DOK(cuMemAddressReserve(&va, 4 * g, 0, 0, 0));
	DOK(cuMemMap(va, g, 0, h1, 0));
	DOK(cuMemMap(va + g, g, 0, h2, 0));
	cr_assert_eq(cuMemMap(va, g, 0, h2, 0), CUDA_ERROR_INVALID_VALUE, "overlapping map");
	cr_assert_eq(cudaMemcpy((void *)(uintptr_t)va, buf, 8, cudaMemcpyHostToDevice),
		     cudaErrorInvalidValue, "no access before cuMemSetAccess");
	DOK(cuMemSetAccess(va, 2 * g, &acc, 1));
	ROK(cudaMemcpy((void *)(uintptr_t)(va + g - 10), buf, sizeof(buf), cudaMemcpyHostToDevice));
	ROK(cudaPointerGetAttributes(&a, (void *)(uintptr_t)(va + g + 100)));
	cr_assert_eq(a.type, cudaMemoryTypeDevice);
	cr_assert_eq(a.device, 2);
	cr_assert_eq(simgpu_range_device((void *)(uintptr_t)(va + 5), 100), 2);
	DOK(cuMemRelease(h1)); /* still mapped: bytes stay charged */
	simgpu_mem_info(2, &free1, &total);
	cr_assert_eq(free0 - free1, 2 * g);
	cr_assert_eq(cuMemUnmap(va, g / 2), CUDA_ERROR_INVALID_VALUE, "cannot split a mapping");
	DOK(cuMemUnmap(va, 2 * g));
	DOK(cuMemRelease(h2));
	simgpu_mem_info(2, &free1, &total);
	cr_assert_eq(free1, free0, "all returned after unmap + release");
	cr_assert_eq(cudaPointerGetAttributes(&a, (void *)(uintptr_t)va), cudaErrorInvalidValue);
	DOK(cuMemAddressFree(va, 4 * g));
}

Test(sim_driver, vmm_out_of_memory_is_the_devices_budget, .init = init)
{
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { CU_MEM_LOCATION_TYPE_DEVICE, 4 } };
	CUmemGenericAllocationHandle h;
	size_t freeb, total;

	simgpu_mem_info(4, &freeb, &total);
	cr_assert_eq(cuMemCreate(&h, (freeb / (2 * MiB) + 1) * 2 * MiB, &prop, 0),
		     CUDA_ERROR_OUT_OF_MEMORY);
	cr_assert_eq(cuMemCreate(&h, 3 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE,
		     "size must be a multiple of the granularity");
}

Test(sim_driver, primary_context_sets_the_runtime_device, .init = init)
{
	CUcontext ctx;
	CUdevice d;
	int rd;
	CUdeviceptr p;

	DOK(cuDevicePrimaryCtxRetain(&ctx, 6));
	DOK(cuCtxSetCurrent(ctx));
	ROK(cudaGetDevice(&rd));
	cr_assert_eq(rd, 6);
	DOK(cuCtxGetDevice(&d));
	cr_assert_eq(d, 6);
	DOK(cuCtxSetCurrent(NULL));
	cr_assert_eq(cuMemAlloc(&p, 4096), CUDA_ERROR_INVALID_CONTEXT);
	DOK(cuDevicePrimaryCtxRelease(6));
}

Test(sim_driver, pools_from_the_driver_allocate_on_their_device, .init = init)
{
	CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
				 .location = { CU_MEM_LOCATION_TYPE_DEVICE, 5 } };
	CUmemoryPool pool;
	CUdeviceptr p;
	struct cudaPointerAttributes a;

	DOK(cuMemPoolCreate(&pool, &props));
	DOK(cuMemAllocFromPoolAsync(&p, 1 * MiB, pool, NULL));
	ROK(cudaPointerGetAttributes(&a, (void *)(uintptr_t)p));
	cr_assert_eq(a.device, 5);
	DOK(cuMemFreeAsync(p, NULL));
	DOK(cuMemPoolDestroy(pool));
	cr_assert_eq(cuMemPoolDestroy(pool), CUDA_ERROR_INVALID_VALUE);
}
