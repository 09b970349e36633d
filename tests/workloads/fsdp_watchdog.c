/* SPDX-License-Identifier: MIT */
/* fsdp_watchdog.c - fsdp_mini's NCCL watchdog, as PyTorch's ProcessGroupNCCL
 * has one: each collective (a WorkNCCL) is followed by an end event recorded
 * on its stream; a thread queries the events every 100 ms; a collective that
 * has not completed on the device FSDP_MINI_NCCL_TIMEOUT_S seconds after it
 * was enqueued is a timeout: the thread prints PyTorch's message, aborts the
 * communicator (ncclCommAbort) and takes the process down (SIGABRT).
 *
 * Its event calls are not counted by --call-counts (the tracer does not
 * record event calls). Asynchronous NCCL errors are left to the main
 * thread's next NCCL call. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fsdp_mini.h"

#define RING 256

struct work {
	uint64_t seq;
	const char *optype;
	uint64_t numel_in, numel_out;
	double enqueued_s;
	cudaEvent_t end;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct work ring[RING];
static cudaEvent_t pool[RING];
static size_t head, tail; /* in flight: ring[head..tail) */
static uint64_t seq;
static ncclComm_t comm;
static double timeout_s = 600;
static bool running, stopping;
static pthread_t thread;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((noreturn)) static void timed_out(const struct work *w, double ran_s)
{
	long long ms = (long long)(timeout_s * 1000);

	fprintf(stderr, "[Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%llu, OpType=%s, NumelIn=%llu, NumelOut=%llu, Timeout(ms)=%lld) ran for %lld milliseconds before timing out.\n",
		rank, (unsigned long long)w->seq, w->optype, (unsigned long long)w->numel_in,
		(unsigned long long)w->numel_out, ms, (long long)(ran_s * 1000));
	fprintf(stderr, "[Rank %d] To avoid data inconsistency, we are taking the entire process down.\n",
		rank);
	fflush(stderr);
	ncclCommAbort(comm);
	abort();
}

/* Retire the completed works, oldest first; time out the oldest pending. */
static void poll_works(void)
{
	pthread_mutex_lock(&lock);
	while (head != tail) {
		struct work *w = &ring[head % RING];
		double ran = now_s() - w->enqueued_s;

		if (cudaEventQuery(w->end) == cudaSuccess) {
			head++;
			continue;
		}
		if (ran > timeout_s)
			timed_out(w, ran);
		break;
	}
	pthread_mutex_unlock(&lock);
}

static void *watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		bool stop;

		pthread_mutex_lock(&lock);
		stop = stopping;
		pthread_mutex_unlock(&lock);
		if (stop)
			return NULL;
		poll_works();
		usleep(100 * 1000);
	}
}

void watchdog_start(ncclComm_t c)
{
	const char *s = getenv("FSDP_MINI_NCCL_TIMEOUT_S");

	if (s && atof(s) > 0)
		timeout_s = atof(s);
	for (int i = 0; i < RING; i++)
		if (cudaEventCreateWithFlags(&pool[i], cudaEventDisableTiming) != cudaSuccess)
			return; /* no watchdog without its events */
	comm = c;
	running = pthread_create(&thread, NULL, watchdog, NULL) == 0;
}

void watchdog_enqueued(const char *optype, uint64_t numel_in, uint64_t numel_out,
		       cudaStream_t stream)
{
	struct work *w;

	if (!running)
		return;
	for (;;) { /* a full ring: wait for the oldest to complete */
		pthread_mutex_lock(&lock);
		if (tail - head < RING)
			break;
		pthread_mutex_unlock(&lock);
		usleep(1000);
	}
	w = &ring[tail % RING];
	*w = (struct work){ ++seq, optype, numel_in, numel_out, now_s(), pool[tail % RING] };
	if (cudaEventRecord(w->end, stream) == cudaSuccess)
		tail++;
	pthread_mutex_unlock(&lock);
}

void watchdog_stop(void)
{
	if (!running)
		return;
	pthread_mutex_lock(&lock);
	stopping = true;
	pthread_mutex_unlock(&lock);
	pthread_join(thread, NULL);
	running = false;
}
