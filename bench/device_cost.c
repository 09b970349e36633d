/* SPDX-License-Identifier: MIT */
/* device_cost.c - host time per collective with each device-side source:
 * N ncclAllReduce calls of one element on a communicator of one rank, timed
 * on the calling thread (CPU time and wall time), run by bench/device.sh
 * without the tracer, with it and no plugin (NCCL_PROFILER_PLUGIN=none), and
 * with ranktrace's plugin, and with CUDA events (RANKTRACE_DEVICE_SOURCE=
 * events). The calls are timed in batches (256, or argv[2]) with the stream
 * drained between batches (not timed); a batch of all N is a tight loop
 * (test_devevents: no event record is dropped). An argument "byhand": what the
 * CUDA-event source does, done by the program without a tracer (an event
 * recorded before and one after each call): the runtime's own share.
 * An argument "hold": the stream is held (a host function that waits) while
 * each batch is enqueued, so a batch of N is N collectives in flight at
 * once (asynchronous simulator only: a synchronous one would run the wait
 * inside the first call). Under SIMGPU_SYNC=1 the device runs the
 * collective inside the call, so the plugin's device-side callbacks and
 * records land on this thread too: an upper bound of what it adds. */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static atomic_int held;

/* A host function that holds its stream while held is set. */
static void CUDART_CB hold(void *arg)
{
	struct timespec nap = { 0, 100000 };

	(void)arg;
	while (atomic_load(&held))
		nanosleep(&nap, NULL);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000, batch = argc > 2 ? atoi(argv[2]) : 256;
	ncclUniqueId id;
	ncclComm_t comm;
	float *buf;
	double w0, c0, w = 0, c = 0;
	cudaEvent_t *ev = NULL;
	int holding = 0, byhand = 0;

	if (cudaSetDevice(0) != cudaSuccess || cudaMalloc((void **)&buf, sizeof(float)) != cudaSuccess ||
	    ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) {
		fprintf(stderr, "device_cost: no device or NCCL\n");
		return 1;
	}
	for (int i = 0; i < 1000; i++) /* warm up */
		ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, comm, NULL);
	cudaStreamSynchronize(NULL);
	if (batch < 1)
		batch = 256;
	for (int i = 3; i < argc; i++) {
		holding |= !strcmp(argv[i], "hold");
		byhand |= !strcmp(argv[i], "byhand");
	}
	if (byhand) { /* two events per call, no tracer */
		ev = calloc(2 * (size_t)batch, sizeof(*ev));
		for (int i = 0; ev && i < 2 * batch; i++)
			cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming);
	}
	for (int done = 0; done < n; done += batch) {
		struct timespec nap = { 0, 2000000 }; /* the tracer's poller frees the slots */

		if (holding) {
			atomic_store(&held, 1);
			cudaLaunchHostFunc(NULL, hold, NULL);
		}
		w0 = now(CLOCK_MONOTONIC);
		c0 = now(CLOCK_THREAD_CPUTIME_ID);
		for (int i = done; i < n && i < done + batch; i++) {
			if (ev)
				cudaEventRecord(ev[2 * (i % batch)], NULL);
			ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, comm, NULL);
			if (ev)
				cudaEventRecord(ev[2 * (i % batch) + 1], NULL);
		}
		c += now(CLOCK_THREAD_CPUTIME_ID) - c0;
		w += now(CLOCK_MONOTONIC) - w0;
		atomic_store(&held, 0);
		cudaStreamSynchronize(NULL);
		nanosleep(&nap, NULL);
	}
	printf("%d collectives: %.0f ns CPU, %.0f ns wall per call on the calling thread\n", n,
	       c / n * 1e9, w / n * 1e9);
	ncclCommDestroy(comm);
	return 0;
}
