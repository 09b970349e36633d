/* SPDX-License-Identifier: MIT */
/* cupti_probe.c - drives libranktrace.so's CUPTI path with synthesized data:
 * loads a fake libcupti (argv[1], tests/fakes/fake_cupti.c), calls
 * InitializeInjection() as the CUDA driver does at cuInit, fires synthesized
 * driver callbacks (cuMemAlloc_v2 1 MiB in device 2's context, as NCCL's
 * threads make them, cuMemCreate 2 MiB on device 1, cuMemMap of it), queues activity
 * records (MEMORY2 allocation + release of 1 MiB, one pool creation), calls
 * cuMemAlloc_v2 (4 MiB) by symbol: the tracer's wrapper, whose real function
 * (the fake's) fires the callback again inside the recorded call, and
 * exits: the tracer flushes CUPTI at exit. Prints "enabled N kinds K".
 * Run under `ranktrace run` with RANKTRACE_CUPTI_LIB=argv[1]. */
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) : NULL;
	int (*init)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "InitializeInjection");
	void (*fire)(CUpti_CallbackId, const char *, const void *, CUresult, int);
	void (*mem)(int, int, uint64_t, uint64_t), (*pool)(int, int, uint64_t, uint64_t);
	int (*enabled)(int *);
	CUdeviceptr p = 0x7e0000000000ull, va = 0x7f0000000000ull;
	CUmemGenericAllocationHandle hd = 0x4242;
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { CU_MEM_LOCATION_TYPE_DEVICE, 1 } };
	int kinds = 0, n;

	if (!h || !init) {
		printf("cupti_probe: no fake libcupti (%s) or no InitializeInjection (not traced?)\n",
		       dlerror());
		return 2;
	}
	fire = (void (*)(CUpti_CallbackId, const char *, const void *, CUresult, int))dlsym(h, "fake_cupti_fire");
	mem = (void (*)(int, int, uint64_t, uint64_t))dlsym(h, "fake_cupti_queue_memory");
	pool = (void (*)(int, int, uint64_t, uint64_t))dlsym(h, "fake_cupti_queue_pool");
	enabled = (int (*)(int *))dlsym(h, "fake_cupti_enabled");
	if (init() != 1)
		return 3;
	n = enabled(&kinds);
	printf("enabled %d kinds %d\n", n, kinds);
	{
		cuMemAlloc_v2_params a = { .dptr = &p, .bytesize = 1 << 20 };
		cuMemCreate_params c = { .handle = &hd, .size = 2 << 20, .prop = &prop, .flags = 0 };
		cuMemMap_params m = { .ptr = va, .size = 2 << 20, .offset = 0, .handle = hd, .flags = 0 };
		cuMemAlloc_v2_params failed = { .dptr = &p, .bytesize = 1ull << 40 };

		fire(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2", &a, CUDA_SUCCESS, 2);
		fire(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, "cuMemCreate", &c, CUDA_SUCCESS, -1);
		fire(CUPTI_DRIVER_TRACE_CBID_cuMemMap, "cuMemMap", &m, CUDA_SUCCESS, -1);
		fire(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2", &failed,
		     CUDA_ERROR_OUT_OF_MEMORY, -1);
		fire(CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice, "cuCtxGetDevice", &a, CUDA_SUCCESS, -1);
	}
	{
		CUresult (*alloc)(CUdeviceptr *, size_t) =
			(CUresult (*)(CUdeviceptr *, size_t))dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
		CUdeviceptr q;

		if (!alloc || alloc(&q, 4 << 20) != CUDA_SUCCESS)
			return 4;
	}
	mem(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0, p, 1 << 20);
	mem(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0, p, 1 << 20);
	pool(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED, 0, 0x7d0000000000ull, 32 << 20);
	return 0;
}
