/* SPDX-License-Identifier: MIT */
/* test_sim_async.c - the simulated devices are asynchronous, as CUDA's:
 * work enqueued on a stream runs later on the device, in stream order;
 * queries answer cudaErrorNotReady until it is done; synchronous calls block
 * until it is; events order streams; the legacy default stream waits for
 * blocking streams; CUDA's fork rule; SIMGPU_SYNC=1 keeps the synchronous
 * simulator.
 *
 * A host function (cudaLaunchHostFunc) that sleeps stands for a long kernel. */
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void CUDART_CB sleep_300ms(void *arg)
{
	(void)arg;
	usleep(300 * 1000);
}

static _Atomic int flag;

static void CUDART_CB sleep_then_set(void *arg)
{
	usleep(200 * 1000);
	atomic_store(&flag, (int)(intptr_t)arg);
}

static void CUDART_CB read_flag(void *arg)
{
	*(int *)arg = atomic_load(&flag);
}

Test(sim_async, query_answers_not_ready_until_the_work_is_done)
{
	cudaStream_t s;
	cudaEvent_t e;
	double t0 = now_s();

	cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
	cr_assert_eq(cudaEventCreate(&e), cudaSuccess);
	cr_assert_eq(cudaEventQuery(e), cudaSuccess, "a never-recorded event is complete");
	cr_assert_eq(cudaLaunchHostFunc(s, sleep_300ms, NULL), cudaSuccess);
	cr_assert_eq(cudaEventRecord(e, s), cudaSuccess);
	cr_assert_lt(now_s() - t0, 0.1, "enqueueing returned at once");
	cr_assert_eq(cudaStreamQuery(s), cudaErrorNotReady);
	cr_assert_eq(cudaEventQuery(e), cudaErrorNotReady);
	cr_assert_eq(cudaGetLastError(), cudaSuccess, "not ready is not an error");
	cr_assert_eq(cudaEventSynchronize(e), cudaSuccess);
	cr_assert_geq(now_s() - t0, 0.29, "cudaEventSynchronize blocked until done");
	cr_assert_eq(cudaEventQuery(e), cudaSuccess);
	cr_assert_eq(cudaStreamQuery(s), cudaSuccess);
}

Test(sim_async, synchronize_blocks_until_the_stream_is_done)
{
	cudaStream_t s;
	double t0 = now_s(), t1;

	cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
	cr_assert_eq(cudaLaunchHostFunc(s, sleep_300ms, NULL), cudaSuccess);
	t1 = now_s();
	cr_assert_lt(t1 - t0, 0.1);
	cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
	cr_assert_geq(now_s() - t0, 0.29, "cudaStreamSynchronize returned early");
	cr_assert_eq(cudaLaunchHostFunc(s, sleep_300ms, NULL), cudaSuccess);
	t0 = now_s();
	cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
	cr_assert_geq(now_s() - t0, 0.25, "cudaDeviceSynchronize returned early");
}

/* A copy enqueued after a slow host function sees what the function wrote. */
Test(sim_async, work_on_one_stream_runs_in_order)
{
	cudaStream_t s;
	int *pinned, *dev, out = 0;

	cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
	cr_assert_eq(cudaMallocHost((void **)&pinned, sizeof(int)), cudaSuccess);
	cr_assert_eq(cudaMalloc((void **)&dev, sizeof(int)), cudaSuccess);
	*pinned = 0;
	atomic_store(&flag, 0);
	cr_assert_eq(cudaMemsetAsync(dev, 0, sizeof(int), s), cudaSuccess);
	cr_assert_eq(cudaLaunchHostFunc(s, sleep_then_set, (void *)(intptr_t)7), cudaSuccess);
	cr_assert_eq(cudaLaunchHostFunc(s, read_flag, pinned), cudaSuccess);
	cr_assert_eq(cudaMemcpyAsync(dev, pinned, sizeof(int), cudaMemcpyHostToDevice, s),
		     cudaSuccess);
	cr_assert_eq(cudaMemcpyAsync(&out, dev, sizeof(int), cudaMemcpyDeviceToHost, s),
		     cudaSuccess);
	cr_assert_eq(out, 7, "the copy ran before the work enqueued before it");
}

/* Stream B waits for an event recorded on stream A after slow work. */
Test(sim_async, event_wait_orders_two_streams)
{
	cudaStream_t a, b;
	cudaEvent_t e;
	int seen = -1;

	cr_assert_eq(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
	cr_assert_eq(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
	cr_assert_eq(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
	atomic_store(&flag, 0);
	cr_assert_eq(cudaLaunchHostFunc(a, sleep_then_set, (void *)(intptr_t)5), cudaSuccess);
	cr_assert_eq(cudaEventRecord(e, a), cudaSuccess);
	cr_assert_eq(cudaStreamWaitEvent(b, e, 0), cudaSuccess);
	cr_assert_eq(cudaLaunchHostFunc(b, read_flag, &seen), cudaSuccess);
	cr_assert_eq(cudaEventDestroy(e), cudaSuccess, "a destroyed event's wait still holds");
	cr_assert_eq(cudaStreamSynchronize(b), cudaSuccess);
	cr_assert_eq(seen, 5, "stream b ran before the event it waits for");
}

/* Without the wait the streams are independent: b does not wait for a. */
Test(sim_async, streams_without_a_wait_are_concurrent)
{
	cudaStream_t a, b;
	int seen = -1;

	cr_assert_eq(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
	cr_assert_eq(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
	atomic_store(&flag, 0);
	cr_assert_eq(cudaLaunchHostFunc(a, sleep_then_set, (void *)(intptr_t)5), cudaSuccess);
	cr_assert_eq(cudaLaunchHostFunc(b, read_flag, &seen), cudaSuccess);
	cr_assert_eq(cudaStreamSynchronize(b), cudaSuccess);
	cr_assert_eq(seen, 0, "stream b waited for stream a");
	cr_assert_eq(cudaStreamQuery(a), cudaErrorNotReady);
}

/* The legacy default stream waits for blocking streams, not for
 * non-blocking ones (CUDA's legacy default stream). */
Test(sim_async, legacy_stream_waits_for_blocking_streams_only)
{
	cudaStream_t blocking, nonblocking;
	int *dev, v = 1;
	double t0;

	cr_assert_eq(cudaStreamCreate(&blocking), cudaSuccess);
	cr_assert_eq(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking), cudaSuccess);
	cr_assert_eq(cudaMalloc((void **)&dev, sizeof(int)), cudaSuccess);
	cr_assert_eq(cudaLaunchHostFunc(nonblocking, sleep_300ms, NULL), cudaSuccess);
	t0 = now_s();
	cr_assert_eq(cudaMemcpy(dev, &v, sizeof(v), cudaMemcpyHostToDevice), cudaSuccess);
	cr_assert_lt(now_s() - t0, 0.2, "cudaMemcpy waited for a non-blocking stream");
	cr_assert_eq(cudaLaunchHostFunc(blocking, sleep_300ms, NULL), cudaSuccess);
	t0 = now_s();
	cr_assert_eq(cudaMemcpy(&v, dev, sizeof(v), cudaMemcpyDeviceToHost), cudaSuccess);
	cr_assert_geq(now_s() - t0, 0.25, "cudaMemcpy did not wait for the blocking stream");
}

/* A copy from pageable memory is staged: the source may change at once. */
Test(sim_async, async_copy_from_pageable_memory_is_staged)
{
	cudaStream_t s;
	int *dev, src = 11, out = 0;

	cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
	cr_assert_eq(cudaMalloc((void **)&dev, sizeof(int)), cudaSuccess);
	cr_assert_eq(cudaLaunchHostFunc(s, sleep_300ms, NULL), cudaSuccess);
	cr_assert_eq(cudaMemcpyAsync(dev, &src, sizeof(int), cudaMemcpyHostToDevice, s), cudaSuccess);
	src = 22;
	cr_assert_eq(cudaMemcpy(&out, dev, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
	cr_assert_eq(out, 11);
}

Test(sim_async, elapsed_time_is_not_ready_before_completion)
{
	cudaStream_t s;
	cudaEvent_t a, b;
	float ms = 0;

	cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
	cr_assert_eq(cudaEventCreate(&a), cudaSuccess);
	cr_assert_eq(cudaEventCreate(&b), cudaSuccess);
	cr_assert_eq(cudaEventRecord(a, s), cudaSuccess);
	cr_assert_eq(cudaLaunchHostFunc(s, sleep_300ms, NULL), cudaSuccess);
	cr_assert_eq(cudaEventRecord(b, s), cudaSuccess);
	cr_assert_eq(cudaEventElapsedTime(&ms, a, b), cudaErrorNotReady);
	cr_assert_eq(cudaEventSynchronize(b), cudaSuccess);
	cr_assert_eq(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
	cr_assert_geq(ms, 290.0f, "%f ms", ms);
}

/* CUDA's fork rule: a child forked after its parent initialised CUDA
 * cannot use it; every call fails with cudaErrorInitializationError
 * (CUDA's "initialization error"), the error queries still answer. */
Test(sim_async, a_child_forked_after_cuda_was_used_cannot_use_it)
{
	int *dev, v = 3, st;
	pid_t pid;

	cr_assert_eq(cudaMalloc((void **)&dev, sizeof(int)), cudaSuccess);
	cr_assert_eq(cudaMemsetAsync(dev, 0, sizeof(int), NULL), cudaSuccess);
	cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int n = -1;

		alarm(5);
		if (cudaMemcpy(dev, &v, sizeof(v), cudaMemcpyHostToDevice) != cudaErrorInitializationError)
			_exit(1);
		if (cudaGetLastError() != cudaErrorInitializationError)
			_exit(2);
		if (cudaGetDeviceCount(&n) != cudaErrorInitializationError || n != -1)
			_exit(3);
		if (cudaSetDevice(0) != cudaErrorInitializationError)
			_exit(4);
		if (strcmp(cudaGetErrorString(cudaErrorInitializationError), "initialization error"))
			_exit(5);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	cr_assert_eq(cudaMemcpy(dev, &v, sizeof(v), cudaMemcpyHostToDevice), cudaSuccess,
		     "the parent's CUDA is untouched");
}

/* ... but a child of a process that never used CUDA may. */
Test(sim_async, a_child_forked_before_cuda_was_used_can_use_it)
{
	int st;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int *dev, v = 3;

		alarm(5);
		if (cudaMalloc((void **)&dev, sizeof(int)) != cudaSuccess ||
		    cudaMemcpy(dev, &v, sizeof(v), cudaMemcpyHostToDevice) != cudaSuccess)
			_exit(1);
		v = 0;
		if (cudaMemcpy(&v, dev, sizeof(v), cudaMemcpyDeviceToHost) != cudaSuccess)
			_exit(2);
		_exit(v == 3 ? 0 : 3);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
}

static void CUDART_CB sleep_600ms(void *arg)
{
	(void)arg;
	usleep(600 * 1000);
}

/* The legacy stream waits for every busy blocking stream, however many (it
 * waited for the newest 66 only: with 100 busy streams, the oldest one's
 * work was not waited for). */
Test(sim_async, legacy_stream_waits_for_a_hundred_blocking_streams)
{
	cudaStream_t s[100];
	int *dev, v = 1;
	double t0;

	cr_assert_eq(cudaMalloc((void **)&dev, sizeof(int)), cudaSuccess);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(cudaStreamCreate(&s[i]), cudaSuccess);
	t0 = now_s();
	cr_assert_eq(cudaLaunchHostFunc(s[0], sleep_600ms, NULL), cudaSuccess);
	for (int i = 1; i < 100; i++)
		cr_assert_eq(cudaLaunchHostFunc(s[i], sleep_300ms, NULL), cudaSuccess);
	cr_assert_eq(cudaMemcpy(dev, &v, sizeof(v), cudaMemcpyHostToDevice), cudaSuccess);
	cr_assert_geq(now_s() - t0, 0.55, "the legacy stream did not wait for the first stream (%.3f s)",
		      now_s() - t0);
	cr_assert_eq(cudaStreamQuery(s[0]), cudaSuccess);
}

/* CUDA: an event created with cudaEventDisableTiming has no time to give. */
Test(sim_async, elapsed_time_of_an_event_without_timing_fails)
{
	cudaEvent_t timed, untimed;
	float ms = -1.0f;

	cr_assert_eq(cudaEventCreate(&timed), cudaSuccess);
	cr_assert_eq(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming), cudaSuccess);
	cr_assert_eq(cudaEventRecord(timed, NULL), cudaSuccess);
	cr_assert_eq(cudaEventRecord(untimed, NULL), cudaSuccess);
	cr_assert_eq(cudaEventSynchronize(untimed), cudaSuccess);
	cr_assert_eq(cudaEventElapsedTime(&ms, timed, untimed), cudaErrorInvalidResourceHandle);
	cr_assert_eq(cudaEventElapsedTime(&ms, untimed, timed), cudaErrorInvalidResourceHandle);
	cr_assert_eq(ms, -1.0f, "a time was written");
	cr_assert_eq(cudaGetLastError(), cudaErrorInvalidResourceHandle);
	cr_assert_eq(cudaEventElapsedTime(&ms, timed, timed), cudaSuccess);
}

/* SIMGPU_SYNC=1: the work runs inside the call, as before issue 20. */
Test(sim_async, simgpu_sync_runs_work_inside_the_call)
{
	cudaStream_t s;
	double t0;

	setenv("SIMGPU_SYNC", "1", 1);
	cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
	t0 = now_s();
	cr_assert_eq(cudaLaunchHostFunc(s, sleep_300ms, NULL), cudaSuccess);
	cr_assert_geq(now_s() - t0, 0.29);
	cr_assert_eq(cudaStreamQuery(s), cudaSuccess);
}
