/* SPDX-License-Identifier: MIT */
/* test_sim_nccl_async.c - the simulated NCCL is asynchronous, as NCCL is:
 * a collective returns once enqueued on its stream and completes on the
 * device when every rank got there; its failure surfaces through
 * ncclCommGetAsyncError; ncclCommAbort ends pending work and the peers see
 * it; non-blocking communicators answer ncclInProgress until their init is
 * done; one communicator's operations run in issue order across streams.
 *
 * Each test forks one process per rank (device = rank); a rank reports
 * failure through its exit status, with the reason on stderr. */
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(cond, ...)                                                                \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "rank check failed at %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                                   \
			fprintf(stderr, "\n");                                          \
			return 1;                                                       \
		}                                                                       \
	} while (0)

typedef int (*rank_fn)(int rank, const ncclUniqueId *id);

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Fork two ranks running fn (which owns its communicator); assert both exit 0. */
static void run2(rank_fn fn)
{
	ncclUniqueId id;
	pid_t pids[2];

	cr_assert_eq(ncclGetUniqueId(&id), ncclSuccess);
	for (int r = 0; r < 2; r++) {
		pids[r] = fork();
		cr_assert_geq(pids[r], 0);
		if (pids[r] == 0) {
			alarm(60);
			cudaSetDevice(r);
			_exit(fn(r, &id));
		}
	}
	for (int r = 0; r < 2; r++) {
		int st;

		cr_assert_eq(waitpid(pids[r], &st, 0), pids[r]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank %d: status %#x", r, st);
	}
}

static float *dev_floats(float v, size_t n)
{
	float *d, h[64];

	for (size_t i = 0; i < n; i++)
		h[i] = v;
	if (cudaMalloc((void **)&d, n * sizeof(float)) != cudaSuccess ||
	    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
		return NULL;
	return d;
}

static int late_peer(int rank, const ncclUniqueId *id)
{
	ncclComm_t c;
	float *d = dev_floats((float)(rank + 1), 16), h[16];
	double t0;

	CHECK(d && ncclCommInitRank(&c, 2, *id, rank) == ncclSuccess, "init");
	if (rank == 1)
		usleep(500 * 1000);
	t0 = now_s();
	CHECK(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, c, NULL) == ncclSuccess, "enqueue");
	if (rank == 0) {
		CHECK(now_s() - t0 < 0.3, "ncclAllReduce waited for the peer (%.3f s)", now_s() - t0);
		CHECK(cudaStreamQuery(NULL) == cudaErrorNotReady, "complete before the peer came");
	}
	CHECK(cudaStreamSynchronize(NULL) == cudaSuccess, "sync");
	if (rank == 0)
		CHECK(now_s() - t0 >= 0.35, "completed before the peer came (%.3f s)", now_s() - t0);
	CHECK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost) == cudaSuccess, "copy");
	CHECK(h[0] == 3.0f && h[15] == 3.0f, "sum %f", h[0]);
	return ncclCommDestroy(c) == ncclSuccess ? 0 : 1;
}

Test(sim_nccl_async, a_collective_returns_before_its_peers_arrive) { run2(late_peer); }

static int missing_peer(int rank, const ncclUniqueId *id)
{
	ncclComm_t c;
	float *d = dev_floats(1.0f, 16);
	ncclResult_t a = ncclSuccess;
	double t0;

	CHECK(d && ncclCommInitRank(&c, 2, *id, rank) == ncclSuccess, "init");
	if (rank == 1) {
		sleep(4); /* alive, never calls the collective */
		return 0;
	}
	t0 = now_s();
	CHECK(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, c, NULL) == ncclSuccess, "enqueue");
	CHECK(ncclCommGetAsyncError(c, &a) == ncclSuccess && a == ncclSuccess, "early error %d", a);
	while (a == ncclSuccess && now_s() - t0 < 10) {
		usleep(20 * 1000);
		ncclCommGetAsyncError(c, &a);
	}
	CHECK(a == ncclSystemError, "async error %d", a);
	CHECK(now_s() - t0 >= 1.5, "timed out after %.2f s, SIMGPU_TIMEOUT is 2", now_s() - t0);
	CHECK(cudaStreamSynchronize(NULL) == cudaSuccess, "the failed collective completed");
	return ncclCommAbort(c) == ncclSuccess ? 0 : 1;
}

Test(sim_nccl_async, a_failure_surfaces_through_get_async_error)
{
	setenv("SIMGPU_TIMEOUT", "2", 1);
	run2(missing_peer);
}

static int aborting(int rank, const ncclUniqueId *id)
{
	ncclComm_t c;
	float *d = dev_floats(1.0f, 16);
	ncclResult_t a = ncclSuccess;
	double t0;

	CHECK(d && ncclCommInitRank(&c, 2, *id, rank) == ncclSuccess, "init");
	if (rank == 0) {
		CHECK(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, c, NULL) == ncclSuccess, "enqueue");
		usleep(200 * 1000);
		t0 = now_s();
		CHECK(ncclCommAbort(c) == ncclSuccess, "abort");
		CHECK(cudaStreamSynchronize(NULL) == cudaSuccess, "sync");
		CHECK(now_s() - t0 < 2, "abort waited %.2f s for the pending collective", now_s() - t0);
		return 0;
	}
	usleep(600 * 1000); /* after rank 0's abort */
	CHECK(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, c, NULL) == ncclSuccess, "enqueue");
	CHECK(cudaStreamSynchronize(NULL) == cudaSuccess, "sync");
	ncclCommGetAsyncError(c, &a);
	CHECK(a == ncclRemoteError, "async error %d", a);
	CHECK(strstr(ncclGetLastError(c), "aborted") != NULL, "%s", ncclGetLastError(c));
	CHECK(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, c, NULL) == ncclRemoteError,
	      "a failed communicator takes new work");
	return ncclCommAbort(c) == ncclSuccess ? 0 : 1;
}

Test(sim_nccl_async, abort_ends_pending_work_and_the_peer_sees_it)
{
	setenv("SIMGPU_TIMEOUT", "20", 1);
	run2(aborting);
}

static int nonblocking(int rank, const ncclUniqueId *id)
{
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclComm_t c;
	ncclResult_t a = ncclInProgress;
	float *d = dev_floats(2.0f, 16), h[16];
	double t0 = now_s();

	cfg.blocking = 0;
	if (rank == 1)
		usleep(300 * 1000);
	CHECK(ncclCommInitRankConfig(&c, 2, *id, rank, &cfg) == ncclInProgress, "init returned");
	if (rank == 0) {
		CHECK(ncclCommGetAsyncError(c, &a) == ncclSuccess && a == ncclInProgress,
		      "in progress while the peer is missing: %d", a);
		/* NCCL 2.28's ncclCommEnsureReady: "Attempt to use communicator
		 * before the previous operation returned ncclSuccess" */
		CHECK(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, c, NULL) == ncclInvalidArgument,
		      "a collective before init completed");
	}
	while (a == ncclInProgress && now_s() - t0 < 10) {
		usleep(10 * 1000);
		ncclCommGetAsyncError(c, &a);
	}
	CHECK(a == ncclSuccess, "init ended with %d", a);
	CHECK(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, c, NULL) == ncclSuccess, "enqueue");
	CHECK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost) == cudaSuccess, "copy");
	CHECK(h[3] == 4.0f, "sum %f", h[3]);
	return ncclCommDestroy(c) == ncclSuccess ? 0 : 1;
}

Test(sim_nccl_async, nonblocking_init_answers_in_progress_then_success) { run2(nonblocking); }

Test(sim_nccl_async, nonblocking_init_of_a_missing_peer_fails_asynchronously)
{
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclUniqueId id;
	ncclComm_t c;
	ncclResult_t a = ncclInProgress;
	double t0 = now_s();

	setenv("SIMGPU_TIMEOUT", "1", 1);
	cfg.blocking = 0;
	cr_assert_eq(ncclGetUniqueId(&id), ncclSuccess);
	cr_assert_eq(ncclCommInitRankConfig(&c, 2, id, 0, &cfg), ncclInProgress);
	cr_assert_lt(now_s() - t0, 0.5, "a non-blocking init blocked");
	while (a == ncclInProgress && now_s() - t0 < 10) {
		usleep(10 * 1000);
		ncclCommGetAsyncError(c, &a);
	}
	cr_assert_eq(a, ncclSystemError);
	cr_assert_eq(ncclCommAbort(c), ncclSuccess);
}

static void CUDART_CB hold_300ms(void *arg)
{
	(void)arg;
	usleep(300 * 1000);
}

/* Rank 0's all-gather is held back on its stream; its all-reduce on another
 * stream must still wait for it (NCCL's per-communicator order), or the two
 * ranks would pair different collectives. */
static int two_streams(int rank, const ncclUniqueId *id)
{
	ncclComm_t c;
	cudaStream_t s1, s2;
	float *d = dev_floats((float)(rank + 1), 16), *g = dev_floats(0.0f, 32), h[32];
	ncclResult_t a;

	CHECK(d && g && ncclCommInitRank(&c, 2, *id, rank) == ncclSuccess, "init");
	cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
	cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
	if (rank == 0)
		cudaLaunchHostFunc(s1, hold_300ms, NULL);
	CHECK(ncclAllGather(d, g, 16, ncclFloat32, c, s1) == ncclSuccess, "all-gather");
	CHECK(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, c, s2) == ncclSuccess, "all-reduce");
	CHECK(cudaDeviceSynchronize() == cudaSuccess, "sync");
	ncclCommGetAsyncError(c, &a);
	CHECK(a == ncclSuccess, "async error %d: %s", a, ncclGetLastError(c));
	CHECK(cudaMemcpy(h, g, sizeof(h), cudaMemcpyDeviceToHost) == cudaSuccess, "copy");
	CHECK(h[0] == 1.0f && h[31] == 2.0f, "gathered %f %f", h[0], h[31]);
	CHECK(cudaMemcpy(h, d, 16 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess, "copy");
	CHECK(h[0] == 3.0f, "reduced %f", h[0]);
	return ncclCommDestroy(c) == ncclSuccess ? 0 : 1;
}

Test(sim_nccl_async, a_communicators_ops_run_in_issue_order_across_streams) { run2(two_streams); }

/* A group over two devices' streams (ncclCommInitAll, one thread), as NCCL
 * launches it: the group waits for work already on either stream (held: 300
 * ms), and later work on either stream waits for the group. */
static void joined(int held)
{
	ncclComm_t c[2];
	cudaStream_t s[2];
	cudaEvent_t ev;
	float *d[2];

	cr_assert_eq(ncclCommInitAll(c, 2, NULL), ncclSuccess);
	for (int r = 0; r < 2; r++) {
		cudaSetDevice(r);
		cr_assert_not_null(d[r] = dev_floats((float)(r + 1), 16));
		cr_assert_eq(cudaStreamCreateWithFlags(&s[r], cudaStreamNonBlocking), cudaSuccess);
	}
	cudaSetDevice(held);
	cudaLaunchHostFunc(s[held], hold_300ms, NULL);
	cr_assert_eq(ncclGroupStart(), ncclSuccess);
	for (int r = 0; r < 2; r++)
		cr_assert_eq(ncclAllReduce(d[r], d[r], 16, ncclFloat32, ncclSum, c[r], s[r]), ncclSuccess);
	cr_assert_eq(ncclGroupEnd(), ncclSuccess);
	cudaSetDevice(1 - held);
	cr_assert_eq(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), cudaSuccess);
	cr_assert_eq(cudaEventRecord(ev, s[1 - held]), cudaSuccess);
	usleep(100 * 1000);
	cr_assert_eq(cudaEventQuery(ev), cudaErrorNotReady,
		     "work after the group on the other stream ran before the group (held stream %d)", held);
	cr_assert_eq(cudaEventSynchronize(ev), cudaSuccess);
	for (int r = 0; r < 2; r++) {
		float h[16];

		cudaSetDevice(r);
		cr_assert_eq(cudaStreamSynchronize(s[r]), cudaSuccess);
		cr_assert_eq(cudaMemcpy(h, d[r], sizeof(h), cudaMemcpyDeviceToHost), cudaSuccess);
		cr_assert_eq(h[0], 3.0f);
		ncclCommDestroy(c[r]);
	}
}

Test(sim_nccl_async, a_group_on_two_streams_waits_for_both_and_both_wait_for_it)
{
	joined(0);
	joined(1);
}
