/* SPDX-License-Identifier: MIT */
/* test_sim_comms.c - the simulated NCCL makes and ends communicators as
 * NCCL 2.28 does: splits (blocking, non-blocking, in a group of one
 * process), inits gathered in a group from one thread, ncclCommInitRankScalable,
 * ncclCommShrink (NCCL_SHRINK_ABORT after a peer died), ncclCommRevoke,
 * ncclCommFinalize, NCCL_COMM_BLOCKING; a group on more than 64 streams
 * joins them all; NCCL's calls fail in a child forked after CUDA was used.
 *
 * Multi-rank tests fork one process per rank (device = rank); a rank
 * reports failure through its exit status, with the reason on stderr. */
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdatomic.h>
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

typedef int (*rank_fn)(int rank, int n, const ncclUniqueId *ids);

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Fork n ranks (device = rank) running fn with two fresh unique ids;
 * status[r]: each one's exit status. */
static void fork_ranks(int n, rank_fn fn, int status[])
{
	ncclUniqueId ids[2];
	pid_t pids[8];

	cr_assert_eq(ncclGetUniqueId(&ids[0]), ncclSuccess);
	cr_assert_eq(ncclGetUniqueId(&ids[1]), ncclSuccess);
	for (int r = 0; r < n; r++) {
		pids[r] = fork();
		cr_assert_geq(pids[r], 0);
		if (pids[r] == 0) {
			alarm(60);
			cudaSetDevice(r);
			_exit(fn(r, n, ids));
		}
	}
	for (int r = 0; r < n; r++) {
		int st;

		cr_assert_eq(waitpid(pids[r], &st, 0), pids[r]);
		status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
}

static void run_ranks(int n, rank_fn fn)
{
	int status[8];

	fork_ranks(n, fn, status);
	for (int r = 0; r < n; r++)
		cr_assert_eq(status[r], 0, "rank %d of %d exited %d", r, n, status[r]);
}

static float *dev_floats(float v, size_t n)
{
	float *d, h[256];

	if (n > 256)
		return NULL;
	for (size_t i = 0; i < n; i++)
		h[i] = v;
	if (cudaMalloc((void **)&d, n * sizeof(float)) != cudaSuccess ||
	    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
		return NULL;
	return d;
}

/* An all-reduce of `value` on c: the sum every rank reads. */
static float sum_of(ncclComm_t c, float value)
{
	float *d = dev_floats(value, 16), h = -1.0f;

	if (!d || ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, c, NULL) != ncclSuccess ||
	    cudaMemcpy(&h, d, sizeof(h), cudaMemcpyDeviceToHost) != cudaSuccess)
		h = -1.0f;
	cudaFree(d);
	return h;
}

/* Poll c's asynchronous state while it reads ncclInProgress (10 s at most). */
static ncclResult_t settle(ncclComm_t c)
{
	ncclResult_t a = ncclInProgress;
	double t0 = now_s();

	while (a == ncclInProgress && now_s() - t0 < 10) {
		if (ncclCommGetAsyncError(c, &a) != ncclSuccess)
			return ncclInternalError;
		if (a == ncclInProgress)
			usleep(2000);
	}
	return a;
}

static int init(ncclComm_t *c, int rank, int n, const ncclUniqueId *id)
{
	return ncclCommInitRank(c, n, *id, rank) == ncclSuccess ? 0 : 1;
}

/* ---- split ---- */

/* A non-blocking split returns at once with NULL for the new handle; the
 * parent reads ncclInProgress until it is made (NCCL's contract). */
static int split_nonblocking(int rank, int n, const ncclUniqueId *ids)
{
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclComm_t world, half = (ncclComm_t)1;
	ncclResult_t r;
	int cnt, me;

	CHECK(init(&world, rank, n, &ids[0]) == 0, "init");
	cfg.blocking = 0;
	if (rank == 3)
		usleep(300 * 1000); /* the others wait for it in the background */
	r = ncclCommSplit(world, rank % 2, rank, &half, &cfg);
	CHECK(r == ncclInProgress, "split returned %d", r);
	if (rank == 1)
		CHECK(half == NULL, "the new handle before the split was done");
	CHECK(settle(world) == ncclSuccess, "split ended badly");
	CHECK(half != NULL, "no handle after the split");
	CHECK(ncclCommCount(half, &cnt) == ncclSuccess && cnt == 2, "count %d", cnt);
	CHECK(ncclCommUserRank(half, &me) == ncclSuccess && me == rank / 2, "rank %d", me);
	CHECK(settle(half) == ncclSuccess, "the child is not ready");
	/* {0,2}: 1 + 3; {1,3}: 2 + 4 */
	CHECK(sum_of(half, (float)(rank + 1)) == (rank % 2 ? 6.0f : 4.0f), "sum");
	CHECK(sum_of(world, 1.0f) == 4.0f, "the parent still works");
	return ncclCommDestroy(half) == ncclSuccess && ncclCommDestroy(world) == ncclSuccess ? 0 : 1;
}

Test(sim_comms, a_nonblocking_split_completes_in_the_background) { run_ranks(4, split_nonblocking); }

/* Ranks of one process (ncclCommInitAll) split in one group from one
 * thread: the group end runs the splits together (they deadlocked one
 * after the other until SIMGPU_TIMEOUT). */
Test(sim_comms, splits_of_one_process_in_a_group_meet_at_its_end)
{
	ncclComm_t comms[4], halves[4];
	int devs[4] = { 0, 1, 2, 3 };
	double t0 = now_s();

	cr_assert_eq(ncclCommInitAll(comms, 4, devs), ncclSuccess);
	cr_assert_eq(ncclGroupStart(), ncclSuccess);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(ncclCommSplit(comms[i], i / 2, -i, &halves[i], NULL), ncclSuccess);
	cr_assert_eq(ncclGroupEnd(), ncclSuccess);
	cr_assert_lt(now_s() - t0, 5.0, "the splits waited for each other");
	for (int i = 0; i < 4; i++) {
		int cnt = 0, me = -1;

		cr_assert_eq(ncclCommCount(halves[i], &cnt), ncclSuccess);
		cr_assert_eq(ncclCommUserRank(halves[i], &me), ncclSuccess);
		cr_assert_eq(cnt, 2);
		cr_assert_eq(me, i % 2 ? 0 : 1, "key -%d ranks it first among its color", i);
	}
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(ncclCommDestroy(halves[i]), ncclSuccess);
		cr_assert_eq(ncclCommDestroy(comms[i]), ncclSuccess);
	}
}

/* ncclCommInitRank of two devices from one thread in a group: the group
 * end joins both (one after the other, each waited for the other). */
Test(sim_comms, inits_of_one_thread_in_a_group_meet_at_its_end)
{
	ncclUniqueId id;
	ncclComm_t c[2];
	float *d[2];
	float h[2] = { 0, 0 };

	cr_assert_eq(ncclGetUniqueId(&id), ncclSuccess);
	cr_assert_eq(ncclGroupStart(), ncclSuccess);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(cudaSetDevice(i), cudaSuccess);
		cr_assert_eq(ncclCommInitRank(&c[i], 2, id, i), ncclSuccess);
		cr_assert_not_null(c[i], "the handle is given out at the call");
	}
	cr_assert_eq(ncclGroupEnd(), ncclSuccess);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(cudaSetDevice(i), cudaSuccess);
		d[i] = dev_floats((float)(i + 1), 16);
		cr_assert_not_null(d[i]);
	}
	cr_assert_eq(ncclGroupStart(), ncclSuccess);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(ncclAllReduce(d[i], d[i], 16, ncclFloat32, ncclSum, c[i], NULL), ncclSuccess);
	cr_assert_eq(ncclGroupEnd(), ncclSuccess);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(cudaSetDevice(i), cudaSuccess);
		cr_assert_eq(cudaMemcpy(&h[i], d[i], sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
		cr_assert_eq(h[i], 3.0f);
		cr_assert_eq(ncclCommDestroy(c[i]), ncclSuccess);
	}
}

/* ---- other ways to make one ---- */

static int scalable(int rank, int n, const ncclUniqueId *ids)
{
	ncclUniqueId both[2] = { ids[0], ids[1] };
	ncclComm_t c;

	CHECK(ncclCommInitRankScalable(&c, n, rank, 3, both, NULL) == ncclInvalidArgument,
	      "more ids than ranks");
	CHECK(ncclCommInitRankScalable(&c, n, rank, 2, both, NULL) == ncclSuccess, "init");
	CHECK(sum_of(c, 1.0f) == (float)n, "sum");
	return ncclCommDestroy(c) == ncclSuccess ? 0 : 1;
}

Test(sim_comms, init_rank_scalable_makes_one_communicator) { run_ranks(2, scalable); }

/* NCCL_COMM_BLOCKING=0 makes communicators non-blocking by default. */
static int env_nonblocking(int rank, int n, const ncclUniqueId *ids)
{
	ncclComm_t c;
	float *d = dev_floats(1.0f, 16);

	if (rank == 1)
		usleep(300 * 1000); /* rank 0's init is still in progress meanwhile */
	CHECK(ncclCommInitRank(&c, n, ids[0], rank) == ncclInProgress, "init did not say in progress");
	if (rank == 0)
		CHECK(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, c, NULL) == ncclInvalidArgument,
		      "a collective before the init was done");
	CHECK(settle(c) == ncclSuccess, "init");
	CHECK(sum_of(c, 2.0f) == 4.0f, "sum");
	return ncclCommDestroy(c) == ncclSuccess ? 0 : 1;
}

Test(sim_comms, nccl_comm_blocking_0_makes_nonblocking_communicators)
{
	setenv("NCCL_COMM_BLOCKING", "0", 1);
	run_ranks(2, env_nonblocking);
}

/* ---- shrink ---- */

static int shrink_one(int rank, int n, const ncclUniqueId *ids)
{
	ncclComm_t world, rest = NULL;
	int out[1] = { 1 }, self[1] = { rank }, cnt = 0, me = -1;

	CHECK(init(&world, rank, n, &ids[0]) == 0, "init");
	if (rank == 1) /* the excluded rank does not call it */
		return ncclCommDestroy(world) == ncclSuccess ? 0 : 1;
	CHECK(ncclCommShrink(world, self, 1, &rest, NULL, NCCL_SHRINK_DEFAULT) ==
		      ncclInvalidArgument, "a rank excluded itself");
	CHECK(ncclCommShrink(world, out, 1, &rest, NULL, NCCL_SHRINK_DEFAULT) == ncclSuccess,
	      "shrink");
	CHECK(ncclCommCount(rest, &cnt) == ncclSuccess && cnt == 3, "count %d", cnt);
	CHECK(ncclCommUserRank(rest, &me) == ncclSuccess && me == (rank ? rank - 1 : 0),
	      "rank %d renumbered %d", rank, me);
	CHECK(sum_of(rest, (float)rank) == 5.0f, "sum of 0 + 2 + 3");
	return ncclCommDestroy(rest) == ncclSuccess && ncclCommDestroy(world) == ncclSuccess ? 0 : 1;
}

Test(sim_comms, shrink_renumbers_the_ranks_that_stay) { run_ranks(4, shrink_one); }

/* Rank 2 dies; the collective the others issued fails on the device; a
 * shrink with NCCL_SHRINK_ABORT ends it and makes a working communicator. */
static int shrink_after_death(int rank, int n, const ncclUniqueId *ids)
{
	ncclComm_t world, rest = NULL;
	int dead[1] = { 2 };
	float *d = dev_floats(1.0f, 16);

	CHECK(init(&world, rank, n, &ids[0]) == 0, "init");
	if (rank == 2)
		_exit(0);
	CHECK(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, world, NULL) == ncclSuccess, "enqueue");
	CHECK(ncclCommShrink(world, dead, 1, &rest, NULL, NCCL_SHRINK_ABORT) == ncclSuccess,
	      "shrink");
	CHECK(sum_of(rest, 2.0f) == 4.0f, "sum");
	ncclCommAbort(world);
	return ncclCommDestroy(rest) == ncclSuccess ? 0 : 1;
}

Test(sim_comms, shrink_abort_excludes_a_dead_rank) { run_ranks(3, shrink_after_death); }

/* ---- the end of a communicator ---- */

/* Rank 1 never joins rank 0's collective: revoke ends it at once (not
 * after SIMGPU_TIMEOUT); later operations are refused; split still works. */
static int revoking(int rank, int n, const ncclUniqueId *ids)
{
	ncclComm_t world, again = NULL;
	float *d = dev_floats(1.0f, 16);
	double t0;

	CHECK(init(&world, rank, n, &ids[0]) == 0, "init");
	if (rank == 0)
		CHECK(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, world, NULL) == ncclSuccess, "enqueue");
	t0 = now_s();
	CHECK(ncclCommRevoke(world, 1) == ncclInvalidArgument, "revoke flags must be 0");
	CHECK(ncclCommRevoke(world, NCCL_REVOKE_DEFAULT) == ncclSuccess, "revoke");
	CHECK(now_s() - t0 < 2.0, "revoke waited %.1f s", now_s() - t0);
	CHECK(ncclCommRevoke(world, NCCL_REVOKE_DEFAULT) == ncclInvalidArgument, "revoked twice");
	CHECK(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, world, NULL) == ncclInvalidUsage,
	      "an operation on a revoked communicator");
	CHECK(ncclCommFinalize(world) == ncclInvalidArgument, "finalize after revoke");
	CHECK(ncclCommSplit(world, 0, rank, &again, NULL) == ncclSuccess, "split after revoke");
	CHECK(sum_of(again, 3.0f) == 6.0f, "sum");
	return ncclCommDestroy(again) == ncclSuccess && ncclCommDestroy(world) == ncclSuccess ? 0 : 1;
}

Test(sim_comms, revoke_stops_what_is_in_flight_and_refuses_more) { run_ranks(2, revoking); }

static int finalizing(int rank, int n, const ncclUniqueId *ids)
{
	ncclComm_t c;

	CHECK(init(&c, rank, n, &ids[0]) == 0, "init");
	CHECK(sum_of(c, 1.0f) == 2.0f, "sum");
	CHECK(ncclCommFinalize(c) == ncclSuccess, "finalize");
	CHECK(ncclCommFinalize(c) == ncclInvalidArgument, "finalized twice");
	return ncclCommDestroy(c) == ncclSuccess ? 0 : 1;
}

Test(sim_comms, finalize_once_then_destroy) { run_ranks(2, finalizing); }

/* NCCL refuses a group of blocking and non-blocking communicators. */
Test(sim_comms, a_group_of_blocking_and_nonblocking_inits_is_refused)
{
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclUniqueId a, b;
	ncclComm_t ca, cb;

	cfg.blocking = 0;
	cr_assert_eq(ncclGetUniqueId(&a), ncclSuccess);
	cr_assert_eq(ncclGetUniqueId(&b), ncclSuccess);
	cr_assert_eq(ncclGroupStart(), ncclSuccess);
	cr_assert_eq(ncclCommInitRank(&ca, 1, a, 0), ncclSuccess);
	cr_assert_eq(ncclCommInitRankConfig(&cb, 1, b, 0, &cfg), ncclSuccess);
	cr_assert_eq(ncclGroupEnd(), ncclInvalidArgument);
}

/* ---- streams and fork ---- */

static void CUDART_CB sleep_400ms(void *arg)
{
	(void)arg;
	usleep(400 * 1000);
}

static _Atomic double ran_at;

static void CUDART_CB note_time(void *arg)
{
	(void)arg;
	atomic_store(&ran_at, now_s());
}

/* A group of 100 collectives on 100 streams: it waits for the work before
 * it on each stream (the 81st's 400 ms), and each stream's later work
 * waits for it (the 91st's); streams beyond the 64th were not joined. */
Test(sim_comms, a_group_on_a_hundred_streams_joins_them_all)
{
	ncclUniqueId id;
	ncclComm_t c;
	cudaStream_t s[100];
	float *d;
	double t0;

	cr_assert_eq(ncclGetUniqueId(&id), ncclSuccess);
	cr_assert_eq(ncclCommInitRank(&c, 1, id, 0), ncclSuccess);
	d = dev_floats(1.0f, 100);
	cr_assert_not_null(d);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking), cudaSuccess);
	t0 = now_s();
	cr_assert_eq(cudaLaunchHostFunc(s[80], sleep_400ms, NULL), cudaSuccess);
	cr_assert_eq(ncclGroupStart(), ncclSuccess);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(ncclAllReduce(d + i, d + i, 1, ncclFloat32, ncclSum, c, s[i]), ncclSuccess);
	cr_assert_eq(ncclGroupEnd(), ncclSuccess);
	cr_assert_eq(cudaLaunchHostFunc(s[90], note_time, NULL), cudaSuccess);
	cr_assert_eq(cudaStreamSynchronize(s[0]), cudaSuccess);
	cr_assert_geq(now_s() - t0, 0.35, "the group did not wait for stream 81's work");
	cr_assert_eq(cudaStreamSynchronize(s[90]), cudaSuccess);
	cr_assert_geq(atomic_load(&ran_at) - t0, 0.35, "stream 91's later work did not wait");
	cr_assert_eq(ncclCommDestroy(c), ncclSuccess);
}

/* NCCL reaches the device through CUDA: in a child forked after CUDA was
 * used its calls fail (ncclUnhandledCudaError) and leave the parent's
 * communicator alone; the queries of the handle still answer. */
Test(sim_comms, nccl_fails_in_a_forked_child)
{
	ncclUniqueId id;
	ncclComm_t c;
	float *d;
	int st;
	pid_t pid;

	cr_assert_eq(ncclGetUniqueId(&id), ncclSuccess);
	cr_assert_eq(ncclCommInitRank(&c, 1, id, 0), ncclSuccess);
	d = dev_floats(1.0f, 16);
	cr_assert_eq(sum_of(c, 1.0f), 1.0f);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int n = 0;

		alarm(10);
		if (ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, c, NULL) != ncclUnhandledCudaError)
			_exit(1);
		if (!strstr(ncclGetLastError(NULL), "initialization error"))
			_exit(2);
		if (ncclCommCount(c, &n) != ncclSuccess || n != 1)
			_exit(3);
		if (ncclCommDestroy(c) != ncclUnhandledCudaError)
			_exit(4);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	cr_assert_eq(sum_of(c, 2.0f), 2.0f, "the parent's communicator still works");
	cr_assert_eq(ncclCommDestroy(c), ncclSuccess);
}
