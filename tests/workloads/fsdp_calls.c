/* SPDX-License-Identifier: MIT */
/* fsdp_calls.c - fsdp_mini's call accounting: every CUDA and NCCL call goes
 * through fsdp_mini.h's CUDA()/NCCL(), which count it (--call-counts), check
 * it, skip a collective (--skip-collective) and wait out a non-blocking
 * communicator's ncclInProgress; die() writes the counts and exits. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsdp_mini.h"

static int skip_rank = -1, skip_nth, collectives_issued;
static const char *counts_path;

void calls_configure(const struct config *c)
{
	skip_rank = c->skip_rank;
	skip_nth = c->skip_nth;
	counts_path = c->counts_path;
}

/* --skip-collective R:N: rank R does not make its N-th collective call, as a
 * rank whose code took another branch would. */
static bool skip_this_collective(void)
{
	return rank == skip_rank && ++collectives_issued == skip_nth;
}

#define MAX_COUNTED 64
static struct {
	const char *name;
	long calls;
} counted[MAX_COUNTED];

/* Count one call of `name` (a string literal: compared by address first). */
void count_call(const char *name)
{
	for (int i = 0; i < MAX_COUNTED; i++) {
		if (!counted[i].name)
			counted[i].name = name;
		if (counted[i].name == name || strcmp(counted[i].name, name) == 0) {
			counted[i].calls++;
			return;
		}
	}
}

static void write_counts(const char *path)
{
	char file[4096];
	FILE *f;

	if (!path)
		return;
	snprintf(file, sizeof(file), "%s.rank%d", path, rank);
	f = fopen(file, "w");
	if (!f) {
		fprintf(stderr, "fsdp_mini: cannot write %s: %s\n", file, strerror(errno));
		return;
	}
	for (int i = 0; i < MAX_COUNTED && counted[i].name; i++)
		fprintf(f, "%s %ld\n", counted[i].name, counted[i].calls);
	fclose(f);
}

void die(int code)
{
	watchdog_stop();
	write_counts(counts_path);
	exit(code);
}

void cuda_failed(const char *call, cudaError_t e)
{
	fprintf(stderr, "fsdp_mini: rank %d: %s failed: %s (%s)\n", rank, call, cudaGetErrorName(e),
		cudaGetErrorString(e));
	die(1);
}

void nccl_failed(const char *call, ncclResult_t r, ncclComm_t comm)
{
	fprintf(stderr, "fsdp_mini: rank %d: %s failed: %s (%s)\n", rank, call,
		ncclGetErrorString(r), ncclGetLastError(comm));
	die(1);
}

static bool is_collective(const char *fn)
{
	return !strcmp(fn, "ncclAllGather") || !strcmp(fn, "ncclReduceScatter") ||
	       !strcmp(fn, "ncclAllReduce") || !strcmp(fn, "ncclBroadcast");
}

bool nccl_skip(const char *fn)
{
	return is_collective(fn) && skip_this_collective();
}

/* A non-blocking communicator's call returned ncclInProgress: poll it (as
 * PyTorch's NCCLComm does) until it is done, 10 minutes at most. */
ncclResult_t nccl_settle(ncclComm_t comm, ncclResult_t r)
{
	ncclResult_t state = ncclInProgress;
	struct timespec ms = { 0, 1000 * 1000 };

	if (r != ncclInProgress || !comm)
		return r;
	for (long i = 0; state == ncclInProgress && i < 600000; i++) {
		count_call("ncclCommGetAsyncError");
		if (ncclCommGetAsyncError(comm, &state) != ncclSuccess)
			return ncclInvalidArgument;
		if (state == ncclInProgress)
			nanosleep(&ms, NULL);
	}
	return state;
}
