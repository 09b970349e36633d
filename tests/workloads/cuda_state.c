/* SPDX-License-Identifier: MIT */
/* cuda_state.c - bin/cuda_state MODE: programs that look at the CUDA state
 * a tracer must leave alone across NCCL collectives (issue 28 item 4), on
 * communicators of one rank. Each prints what it saw; test_cuda_state.sh
 * runs them untraced and traced (every device source) and compares.
 *
 *   pending [N]  N collectives (default 200), each after a call that failed
 *                with cudaErrorInvalidValue and left it pending; then
 *                cudaGetLastError: it must still be there. The stream is
 *                held busy (a host function that waits) so the collectives
 *                stay in flight; every 10th from a new thread, every other
 *                25th (25, 75, ...) a group of two.
 *   device       the communicator on device 1, the current device 0; a
 *                collective on it; the current device after.
 *   capture      a collective in flight on one stream (held busy) while a
 *                global-mode capture on another records a memset and a
 *                collective; cudaStreamEndCapture's result.
 *   sync         a collective on a stream held busy by a host function: the
 *                call returns while the stream is still busy (nobody
 *                synchronised it); 20 s alarm otherwise.
 *   inflight [N] N collectives (default 6000) on a stream held busy, then
 *                released: more in flight at once than a device source keeps
 *                (its drops are said in the trace).
 *   group [N]    one group of N collectives (default 300): more than a
 *                source ties to their calls or keeps.
 *   skiplast [N [R]] on a communicator of WORLD_SIZE ranks (rt-launch), N
 *                AllReduces (default 20000) in flight on a stream held busy,
 *                rank R (default 1) never calls the last: the others then
 *                wait in cudaStreamSynchronize, rank R idles (a hang whose
 *                cause only the host trace shows past the dropped records).
 * Any unexpected failure: a message, exit 1. */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wl_boot.h"

static ncclComm_t comm;
static float *buf;
static atomic_int release_flag;

#define CHECK(x)                                                                   \
	do {                                                                       \
		if (!(x)) {                                                        \
			fprintf(stderr, "cuda_state: %s failed (line %d)\n", #x, __LINE__); \
			exit(1);                                                   \
		}                                                                  \
	} while (0)

/* A host function that holds its stream until release() */
static void CUDART_CB hold(void *arg)
{
	(void)arg;
	while (!atomic_load(&release_flag))
		usleep(1000);
}

static void release(void)
{
	atomic_store(&release_flag, 1);
}

static void comm_on(int dev)
{
	ncclUniqueId id;

	CHECK(cudaSetDevice(dev) == cudaSuccess);
	CHECK(cudaMalloc((void **)&buf, 64 * sizeof(float)) == cudaSuccess);
	CHECK(ncclGetUniqueId(&id) == ncclSuccess);
	CHECK(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess);
}

/* One collective after a failed call; was its error still pending? */
static int one_pending(cudaStream_t s, int grouped)
{
	CHECK(cudaEventCreate(NULL) == cudaErrorInvalidValue); /* pending now */
	if (grouped)
		CHECK(ncclGroupStart() == ncclSuccess);
	CHECK(ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
	if (grouped) {
		CHECK(ncclAllReduce(buf + 1, buf + 1, 1, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
		CHECK(ncclGroupEnd() == ncclSuccess);
	}
	return cudaGetLastError() == cudaErrorInvalidValue;
}

struct job {
	cudaStream_t s;
	int kept;
};

static void *pending_thread(void *arg)
{
	struct job *j = arg;

	CHECK(cudaSetDevice(0) == cudaSuccess);
	j->kept = one_pending(j->s, 0);
	return NULL;
}

static void pending(int n)
{
	cudaStream_t s;
	int kept = 0;

	comm_on(0);
	CHECK(cudaStreamCreate(&s) == cudaSuccess);
	CHECK(cudaLaunchHostFunc(s, hold, NULL) == cudaSuccess);
	for (int i = 1; i <= n; i++) {
		if (i % 10 == 0) {
			struct job j = { s, 0 };
			pthread_t th;

			CHECK(pthread_create(&th, NULL, pending_thread, &j) == 0);
			pthread_join(th, NULL);
			kept += j.kept;
		} else {
			kept += one_pending(s, i % 25 == 0);
		}
	}
	release();
	CHECK(cudaStreamSynchronize(s) == cudaSuccess);
	printf("pending: %d collectives, %d kept their error, %d lost it\n", n, kept, n - kept);
}

static void device(void)
{
	cudaStream_t s1;
	int cur = -1;

	comm_on(1);
	CHECK(cudaStreamCreate(&s1) == cudaSuccess);
	CHECK(cudaSetDevice(0) == cudaSuccess);
	for (int i = 0; i < 20; i++)
		CHECK(ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, comm, s1) == ncclSuccess);
	CHECK(cudaGetDevice(&cur) == cudaSuccess);
	CHECK(cudaStreamSynchronize(s1) == cudaSuccess);
	printf("device: current device %d after 20 collectives on device 1's communicator\n", cur);
}

static void capture(void)
{
	cudaStream_t busy, s;
	cudaGraph_t g = NULL;
	cudaError_t e;
	enum cudaStreamCaptureStatus st;

	comm_on(0);
	CHECK(cudaStreamCreate(&busy) == cudaSuccess && cudaStreamCreate(&s) == cudaSuccess);
	CHECK(cudaLaunchHostFunc(busy, hold, NULL) == cudaSuccess);
	CHECK(ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, comm, busy) == ncclSuccess);
	usleep(20000);
	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
	CHECK(cudaMemsetAsync(buf + 8, 0, sizeof(float), s) == cudaSuccess);
	CHECK(ncclAllReduce(buf + 2, buf + 2, 1, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
	CHECK(cudaStreamIsCapturing(s, &st) == cudaSuccess);
	usleep(50000); /* a tracer's thread has looked at the busy stream's work meanwhile */
	e = cudaStreamEndCapture(s, &g);
	printf("capture: while capturing %s; cudaStreamEndCapture: %s; pending after: %s\n",
	       st == cudaStreamCaptureStatusActive ? "active" : "NOT active", cudaGetErrorName(e),
	       cudaGetErrorName(cudaGetLastError()));
	if (g)
		cudaGraphDestroy(g);
	release();
	CHECK(cudaStreamSynchronize(busy) == cudaSuccess);
}

static void blocked(int sig)
{
	(void)sig;
	static const char m[] = "sync: the collective's call blocked (its stream was synchronised)\n";

	if (write(1, m, sizeof(m) - 1) < 0)
		_exit(4);
	_exit(3);
}

static void sync_mode(void)
{
	cudaStream_t s;

	comm_on(0);
	CHECK(cudaStreamCreate(&s) == cudaSuccess);
	CHECK(cudaLaunchHostFunc(s, hold, NULL) == cudaSuccess);
	signal(SIGALRM, blocked);
	alarm(20);
	for (int i = 0; i < 5; i++)
		CHECK(ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
	alarm(0);
	printf("sync: 5 collectives returned; their stream %s\n",
	       cudaStreamQuery(s) == cudaErrorNotReady ? "still busy" : "NOT busy");
	release();
	CHECK(cudaStreamSynchronize(s) == cudaSuccess);
}

static void inflight(int n)
{
	cudaStream_t s;

	comm_on(0);
	CHECK(cudaStreamCreate(&s) == cudaSuccess);
	CHECK(cudaLaunchHostFunc(s, hold, NULL) == cudaSuccess);
	for (int i = 0; i < n; i++)
		CHECK(ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
	release();
	CHECK(cudaStreamSynchronize(s) == cudaSuccess);
	printf("inflight: %d collectives\n", n);
}

static void group(int n)
{
	comm_on(0);
	CHECK(ncclGroupStart() == ncclSuccess);
	for (int i = 0; i < n; i++)
		CHECK(ncclAllReduce(buf + i % 64, buf + i % 64, 1, ncclFloat32, ncclSum, comm, NULL) ==
		      ncclSuccess);
	CHECK(ncclGroupEnd() == ncclSuccess);
	CHECK(cudaStreamSynchronize(NULL) == cudaSuccess);
	printf("group: %d collectives in one group\n", n);
}

static void skiplast(int n, int skipper)
{
	int rank = wl_env_int("RANK", 0), world = wl_env_int("WORLD_SIZE", 1);
	ncclUniqueId id;
	cudaStream_t s;

	CHECK(cudaSetDevice(wl_env_int("LOCAL_RANK", 0)) == cudaSuccess);
	CHECK(cudaMalloc((void **)&buf, 64 * sizeof(float)) == cudaSuccess);
	if (rank == 0)
		CHECK(ncclGetUniqueId(&id) == ncclSuccess);
	CHECK(wl_share_ids(&id, 1, rank, world, "cuda_state") == 0);
	CHECK(ncclCommInitRank(&comm, world, id, rank) == ncclSuccess);
	CHECK(cudaStreamCreate(&s) == cudaSuccess);
	CHECK(cudaLaunchHostFunc(s, hold, NULL) == cudaSuccess);
	for (int i = 0; i < n - (rank == skipper); i++)
		CHECK(ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
	printf("skiplast: rank %d called %d collectives\n", rank, n - (rank == skipper));
	release();
	if (rank == skipper)
		for (;;)
			pause(); /* idle, as a rank waiting for what never comes */
	CHECK(cudaStreamSynchronize(s) == cudaSuccess);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(mode, "pending"))
		pending(argc > 2 ? atoi(argv[2]) : 200);
	else if (!strcmp(mode, "device"))
		device();
	else if (!strcmp(mode, "capture"))
		capture();
	else if (!strcmp(mode, "sync"))
		sync_mode();
	else if (!strcmp(mode, "inflight"))
		inflight(argc > 2 ? atoi(argv[2]) : 6000);
	else if (!strcmp(mode, "group"))
		group(argc > 2 ? atoi(argv[2]) : 300);
	else if (!strcmp(mode, "skiplast"))
		skiplast(argc > 2 ? atoi(argv[2]) : 20000, argc > 3 ? atoi(argv[3]) : 1);
	else {
		fprintf(stderr, "usage: cuda_state pending [N] | device | capture | sync | inflight [N] | group [N] | skiplast [N [R]]\n");
		return 2;
	}
	ncclCommDestroy(comm);
	return 0;
}
