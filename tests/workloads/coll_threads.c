/* SPDX-License-Identifier: MIT */
/* coll_threads.c - collectives from short-lived threads, one after another,
 * on a communicator of one rank (device 0): thread t issues 10 all-reduces;
 * odd threads first a group of 2; every fifth thread exits with a group of 1
 * left open (never launched). Exercises the CUDA-event source's queues
 * being taken over from threads that exited (test_devevents.sh):
 * 50 threads enqueue 560 collectives, 550 of which launch.
 * Usage: coll_threads [THREADS]. Any failed call: message, exit 1. */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static ncclComm_t comm;
static float *buf;
static int failed;

static void ar(void)
{
	if (ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, comm, NULL) != ncclSuccess)
		failed = 1;
}

static void *work(void *arg)
{
	long t = (long)arg;

	cudaSetDevice(0);
	if (t % 2) {
		ncclGroupStart();
		ar();
		ar();
		if (ncclGroupEnd() != ncclSuccess)
			failed = 1;
	}
	for (int i = 0; i < 10; i++)
		ar();
	if (cudaStreamSynchronize(NULL) != cudaSuccess)
		failed = 1;
	if (t % 5 == 0) { /* left open at exit: never launched */
		ncclGroupStart();
		ar();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 50;
	ncclUniqueId id;

	if (cudaSetDevice(0) != cudaSuccess || cudaMalloc((void **)&buf, sizeof(float)) != cudaSuccess ||
	    ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) {
		fprintf(stderr, "coll_threads: no device or NCCL\n");
		return 1;
	}
	for (long t = 0; t < n && !failed; t++) {
		pthread_t th;

		if (pthread_create(&th, NULL, work, (void *)t) != 0 || pthread_join(th, NULL) != 0)
			failed = 1;
	}
	if (failed) {
		fprintf(stderr, "coll_threads: a call failed\n");
		return 1;
	}
	printf("coll_threads: %ld threads done\n", n);
	return 0;
}
