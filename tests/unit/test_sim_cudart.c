/* SPDX-License-Identifier: MIT */
/* test_sim_cudart.c - the simulated CUDA runtime behaves like NVIDIA's where
 * ranktrace depends on it: devices, address ranges, OOM, frees, copies,
 * pointer attributes, streams, error texts, loud unimplemented calls. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "simgpu.h"

#define OK(call) cr_assert_eq((call), cudaSuccess, "%s", #call)

Test(sim_device, default_count_is_eight_and_set_device_is_per_thread)
{
	int n = 0, d = -1;

	OK(cudaGetDeviceCount(&n));
	cr_assert_eq(n, 8);
	OK(cudaGetDevice(&d));
	cr_assert_eq(d, 0);
	OK(cudaSetDevice(5));
	OK(cudaGetDevice(&d));
	cr_assert_eq(d, 5);
}

Test(sim_device, invalid_device_is_rejected_with_nvidia_code)
{
	cr_assert_eq(cudaSetDevice(8), cudaErrorInvalidDevice);
	cr_assert_eq(cudaSetDevice(-1), cudaErrorInvalidDevice);
	cr_assert_str_eq(cudaGetErrorString(cudaErrorInvalidDevice), "invalid device ordinal");
	cr_assert_eq(cudaGetLastError(), cudaErrorInvalidDevice);
	cr_assert_eq(cudaGetLastError(), cudaSuccess, "GetLastError resets");
}

Test(sim_device, properties_report_memory_and_name)
{
	struct cudaDeviceProp p;

	OK(cudaGetDeviceProperties(&p, 3));
	cr_assert_eq(p.totalGlobalMem, 80ull << 30);
	cr_assert(strstr(p.name, "SimGPU 3") != NULL);
	cr_assert_eq(cudaGetDeviceProperties(&p, 99), cudaErrorInvalidDevice);
}

Test(sim_memory, devices_have_disjoint_address_ranges)
{
	void *a, *b;
	struct cudaPointerAttributes at;

	OK(cudaSetDevice(1));
	OK(cudaMalloc(&a, 1 << 20));
	OK(cudaSetDevice(2));
	OK(cudaMalloc(&b, 1 << 20));
	cr_assert_neq(a, b);
	OK(cudaPointerGetAttributes(&at, a));
	cr_assert_eq(at.type, cudaMemoryTypeDevice);
	cr_assert_eq(at.device, 1);
	OK(cudaPointerGetAttributes(&at, (char *)b + 4096));
	cr_assert_eq(at.type, cudaMemoryTypeDevice);
	cr_assert_eq(at.device, 2);
	cr_assert_eq(simgpu_range_device(b, 1 << 20), 2);
	cr_assert_eq(simgpu_range_device(b, (1 << 20) + 1), -1, "range past the allocation");
	OK(cudaFree(a));
	OK(cudaFree(b));
}

Test(sim_memory, pointer_attributes_tell_host_pinned_managed_and_unregistered)
{
	void *h, *m;
	int stack = 0;
	struct cudaPointerAttributes at;

	OK(cudaMallocHost(&h, 4096));
	OK(cudaMallocManaged(&m, 4096, cudaMemAttachGlobal));
	OK(cudaPointerGetAttributes(&at, h));
	cr_assert_eq(at.type, cudaMemoryTypeHost);
	OK(cudaPointerGetAttributes(&at, m));
	cr_assert_eq(at.type, cudaMemoryTypeManaged);
	OK(cudaPointerGetAttributes(&at, &stack));
	cr_assert_eq(at.type, cudaMemoryTypeUnregistered);
	OK(cudaFreeHost(h));
	OK(cudaFree(m));
}

Test(sim_memory, out_of_memory_when_device_is_full)
{
	void *a, *b, *c;
	size_t freeb, total;

	OK(cudaSetDevice(4));
	OK(cudaMalloc(&a, 60ull << 30));
	OK(cudaMemGetInfo(&freeb, &total));
	cr_assert_eq(total, 80ull << 30);
	cr_assert_eq(freeb, 20ull << 30);
	cr_assert_eq(cudaMalloc(&b, 30ull << 30), cudaErrorMemoryAllocation);
	cr_assert_str_eq(cudaGetErrorString(cudaGetLastError()), "out of memory");
	OK(cudaSetDevice(5));
	OK(cudaMalloc(&c, 30ull << 30)); /* another device still has room */
	OK(cudaFree(c));
	OK(cudaSetDevice(4));
	OK(cudaFree(a));
	OK(cudaMalloc(&b, 30ull << 30));
	OK(cudaFree(b));
}

Test(sim_memory, invalid_and_double_frees_fail)
{
	void *a;
	int x;

	OK(cudaMalloc(&a, 256));
	OK(cudaFree(a));
	cr_assert_eq(cudaFree(a), cudaErrorInvalidValue, "double free");
	cr_assert_eq(cudaFree(&x), cudaErrorInvalidValue, "host pointer");
	cr_assert_eq(cudaFreeHost(&x), cudaErrorInvalidValue);
	OK(cudaFree(NULL));
}

Test(sim_memory, memcpy_moves_data_and_checks_kinds)
{
	float host[64], back[64];
	void *d0, *d1;

	for (int i = 0; i < 64; i++)
		host[i] = (float)i * 0.5f;
	OK(cudaSetDevice(0));
	OK(cudaMalloc(&d0, sizeof(host)));
	OK(cudaSetDevice(1));
	OK(cudaMalloc(&d1, sizeof(host)));
	OK(cudaMemcpy(d0, host, sizeof(host), cudaMemcpyHostToDevice));
	OK(cudaMemcpyPeer(d1, 1, d0, 0, sizeof(host)));
	OK(cudaMemcpyAsync(back, d1, sizeof(back), cudaMemcpyDefault, NULL));
	cr_assert_arr_eq(back, host, sizeof(host));
	cr_assert_eq(cudaMemcpy(back, host, sizeof(host), cudaMemcpyHostToDevice),
		     cudaErrorInvalidValue, "host destination for HostToDevice");
	cr_assert_eq(cudaMemcpy(d0, host, sizeof(host) + 256, cudaMemcpyHostToDevice),
		     cudaErrorInvalidValue, "copy past the end of the allocation");
	cr_assert_eq(cudaMemcpyPeer(d1, 0, d0, 0, 16), cudaErrorInvalidValue, "wrong peer device");
	OK(cudaMemset(d0, 0, sizeof(host)));
	OK(cudaMemcpy(back, d0, sizeof(back), cudaMemcpyDeviceToHost));
	cr_assert_eq(back[63], 0.0f);
	cr_assert_eq(cudaMemset(back, 0, 4), cudaErrorInvalidValue, "memset of host memory");
	OK(cudaFree(d0));
	OK(cudaFree(d1));
}

Test(sim_memory, async_and_pool_allocations_land_on_the_right_device)
{
	void *a, *b;
	cudaMemPool_t pool;
	struct cudaPointerAttributes at;

	OK(cudaSetDevice(6));
	OK(cudaMallocAsync(&a, 1000, NULL));
	OK(cudaDeviceGetDefaultMemPool(&pool, 7));
	OK(cudaMallocFromPoolAsync(&b, 1000, pool, NULL));
	OK(cudaPointerGetAttributes(&at, b));
	cr_assert_eq(at.device, 7);
	OK(cudaFreeAsync(a, NULL));
	OK(cudaFreeAsync(b, NULL));
}

Test(sim_stream, priorities_are_clamped_and_unknown_handles_rejected)
{
	cudaStream_t s;
	int least, greatest, p;

	OK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
	OK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest - 10));
	OK(cudaStreamGetPriority(s, &p));
	cr_assert_eq(p, greatest);
	OK(cudaStreamSynchronize(s));
	OK(cudaStreamDestroy(s));
	cr_assert_eq(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
}

Test(sim_stream, events_measure_elapsed_time)
{
	cudaEvent_t a, b;
	float ms = -1;

	OK(cudaEventCreate(&a));
	OK(cudaEventCreateWithFlags(&b, cudaEventDefault));
	OK(cudaEventRecord(a, NULL));
	OK(cudaEventRecord(b, NULL));
	OK(cudaEventSynchronize(b));
	OK(cudaEventElapsedTime(&ms, a, b));
	cr_assert_geq(ms, 0.0f);
	OK(cudaEventDestroy(a));
	OK(cudaEventDestroy(b));
}

Test(sim_errors, names_and_texts_are_nvidias)
{
	cr_assert_str_eq(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
	cr_assert_str_eq(cudaGetErrorString(cudaErrorInsufficientDriver),
			 "CUDA driver version is insufficient for CUDA runtime version");
	cr_assert_str_eq(cudaGetErrorName((cudaError_t)12345), "unrecognized error code");
}

Test(sim_errors, unimplemented_entry_point_fails_loudly, .init = cr_redirect_stderr)
{
	cudaGraph_t g;

	cr_assert_eq(cudaGraphCreate(&g, 0), cudaErrorNotSupported);
	fflush(stderr);
	cr_assert_stderr_eq_str("simgpu: cudaGraphCreate is not implemented by the simulated cluster "
				"(see sim/README.md); returning error 801\n");
}

Test(sim_device, reset_frees_the_current_devices_allocations)
{
	void *a;
	size_t freeb, total;

	OK(cudaSetDevice(2));
	OK(cudaMalloc(&a, 1 << 30));
	OK(cudaDeviceReset());
	OK(cudaMemGetInfo(&freeb, &total));
	cr_assert_eq(freeb, total);
	cr_assert_eq(cudaFree(a), cudaErrorInvalidValue);
}
