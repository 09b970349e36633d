/* SPDX-License-Identifier: MIT */
/* comm_shapes.c - bin/comm_shapes: the communicator shapes of 3-D parallel
 * jobs, one per SHAPE, each rank a process (rt-launch -n 4, torchrun's
 * environment), for the tests of issue 27:
 *
 *   split        the world split {0,2},{1,3} (ncclCommSplit, color rank % 2);
 *                --colls all-reduces (count 1024) on the half
 *   subsets      two 2-rank communicators made by ncclCommInitRank from two
 *                unique ids ({0,2} and {1,3}); --colls all-reduces on each
 *   nonblocking  ncclCommInitRankConfig with blocking = 0, polled with
 *                ncclCommGetAsyncError until made; --colls all-reduces
 *   group        --steps groups (ncclGroupStart/End) of --group all-reduces
 *                on the world (--rest N: N in each group but the late one);
 *                --late R:S:MS: rank R enters group S MS ms late (S 0: every
 *                group)
 *   fork         --colls all-reduces; after the first a forked child calls
 *                cudaMalloc and ncclAllReduce on the parent's communicator
 *                (both fail, as CUDA's: cudaErrorInitializationError, CUDA
 *                cannot be used in a child forked after CUDA was; NCCL's
 *                error) and exits 0 (3 when either succeeded)
 *   shrink       rank 3 leaves; 0-2 make ncclCommShrink({3}), --colls on it
 *   scalable     ncclCommInitRankScalable with two ids; --colls all-reduces
 *
 * --skip R:N: rank R does not make its N-th all-reduce of the shape's
 * communicator (a rank whose code took another branch). Every result is
 * checked (a sum of ranks) unless a rank skips; any failed call: message,
 * exit 1; success: one line from rank 0 naming the shape. */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wl_boot.h"

#define COUNT 1024

static int rank, world, colls = 5, steps = 3, group = 20;
static int skip_rank = -1, skip_nth, late_rank = -1, late_step, late_ms, group_rest = -1;
static float *buf;

#define CHECK(call)                                                                         \
	do {                                                                                \
		int rc_ = (int)(call);                                                      \
		if (rc_ != 0) {                                                             \
			fprintf(stderr, "comm_shapes: rank %d: %s failed: %d\n", rank, #call, rc_); \
			exit(1);                                                            \
		}                                                                           \
	} while (0)

static void usage(void)
{
	fprintf(stderr, "usage: comm_shapes split|subsets|nonblocking|group|fork|shrink|scalable\n"
			"       [--colls N] [--steps S] [--group G] [--rest N] [--skip R:N] [--late R:S:MS]\n");
	exit(2);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Wait (bounded) until a non-blocking communicator's operation is done. */
static void settle(ncclComm_t c)
{
	ncclResult_t a = ncclInProgress;

	for (int i = 0; a == ncclInProgress && i < 60000; i++) {
		CHECK(ncclCommGetAsyncError(c, &a));
		if (a == ncclInProgress)
			sleep_ms(1);
	}
	CHECK(a);
}

/* n all-reduces of `value` on c (members: the ranks that share it); the
 * skipping rank leaves one out; the others' results are checked. */
static void allreduces(ncclComm_t c, int n, float value, float want)
{
	float h[COUNT];

	for (int k = 0; k < COUNT; k++)
		h[k] = value;
	for (int i = 1; i <= n; i++) {
		if (rank == skip_rank && i == skip_nth)
			continue;
		CHECK(cudaMemcpy(buf, h, sizeof(h), cudaMemcpyHostToDevice));
		CHECK(ncclAllReduce(buf, buf, COUNT, ncclFloat32, ncclSum, c, NULL));
		CHECK(cudaMemcpy(h + 0, buf, sizeof(float), cudaMemcpyDeviceToHost));
		if (skip_rank < 0 && h[0] != want) {
			fprintf(stderr, "comm_shapes: rank %d: all-reduce %d gave %g, not %g\n", rank, i,
				h[0], want);
			exit(1);
		}
		h[0] = value;
	}
}

static void shape_split(ncclComm_t world_comm)
{
	ncclComm_t half;

	CHECK(ncclCommSplit(world_comm, rank % 2, rank, &half, NULL));
	/* {0,2}: 0 + 2 ... the sum of the ranks of my parity */
	allreduces(half, colls, (float)rank, (float)(rank % 2 ? 1 + 3 : 0 + 2));
	CHECK(ncclCommDestroy(half));
}

static void shape_subsets(const ncclUniqueId *ids)
{
	ncclComm_t c;

	CHECK(ncclCommInitRank(&c, 2, ids[1 + rank % 2], rank / 2));
	allreduces(c, colls, (float)rank, (float)(rank % 2 ? 1 + 3 : 0 + 2));
	CHECK(ncclCommDestroy(c));
}

static void shape_nonblocking(const ncclUniqueId *ids)
{
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclComm_t c;
	ncclResult_t r;

	cfg.blocking = 0;
	r = ncclCommInitRankConfig(&c, world, ids[0], rank, &cfg);
	if (r != ncclInProgress)
		CHECK(r);
	settle(c);
	allreduces(c, colls, 1.0f, (float)world);
	CHECK(ncclCommDestroy(c));
}

static void shape_group(ncclComm_t c)
{
	float want = (float)world;

	for (int s = 1; s <= steps; s++) {
		float h = -1;
		int n = group_rest >= 1 && s != late_step ? group_rest : group;

		CHECK(cudaMemcpy(buf, &(float){ 1.0f }, sizeof(float), cudaMemcpyHostToDevice));
		if (rank == late_rank && (s == late_step || !late_step))
			sleep_ms(late_ms);
		CHECK(ncclGroupStart());
		for (int i = 0; i < n; i++) /* each on its own element: all of them sum */
			CHECK(ncclAllReduce(buf + i % COUNT, buf + i % COUNT, 1, ncclFloat32, ncclSum, c, NULL));
		CHECK(ncclGroupEnd());
		CHECK(cudaMemcpy(&h, buf, sizeof(h), cudaMemcpyDeviceToHost));
		if (n < COUNT && h != want) {
			fprintf(stderr, "comm_shapes: rank %d: group %d gave %g, not %g\n", rank, s, h, want);
			exit(1);
		}
	}
}

/* The child forked after CUDA was used calls NCCL on the parent's
 * communicator: the call fails (it never joins the parent's collective). */
static void shape_fork(ncclComm_t c)
{
	pid_t pid;
	int st;

	allreduces(c, 1, 1.0f, (float)world);
	pid = fork();
	if (pid == 0) {
		void *p = NULL;
		cudaError_t ce = cudaMalloc(&p, 64);
		ncclResult_t r = ncclAllReduce(buf, buf, COUNT, ncclFloat32, ncclSum, c, NULL);

		fprintf(stderr, "comm_shapes: rank %d: forked child: cudaMalloc: %s, ncclAllReduce: %s\n",
			rank, cudaGetErrorName(ce), ncclGetErrorString(r));
		_exit(ce == cudaErrorInitializationError && r != ncclSuccess ? 0 : 3);
	}
	CHECK(pid < 0);
	CHECK(waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0);
	allreduces(c, colls - 1, 1.0f, (float)world);
}

static void shape_shrink(ncclComm_t c)
{
	int leaving[1] = { world - 1 };
	ncclComm_t rest;

	if (rank == world - 1)
		return; /* it leaves: it does not call ncclCommShrink */
	CHECK(ncclCommShrink(c, leaving, 1, &rest, NULL, NCCL_SHRINK_DEFAULT));
	allreduces(rest, colls, 1.0f, (float)(world - 1));
	CHECK(ncclCommDestroy(rest));
}

static void shape_scalable(ncclUniqueId *ids)
{
	ncclComm_t c;

	CHECK(ncclCommInitRankScalable(&c, world, rank, 2, ids, NULL));
	allreduces(c, colls, 1.0f, (float)world);
	CHECK(ncclCommDestroy(c));
}

static void parse(int argc, char **argv)
{
	for (int i = 2; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		if (!strcmp(argv[i], "--colls"))
			colls = atoi(v);
		else if (!strcmp(argv[i], "--steps"))
			steps = atoi(v);
		else if (!strcmp(argv[i], "--group"))
			group = atoi(v);
		else if (!strcmp(argv[i], "--rest"))
			group_rest = atoi(v);
		else if (!strcmp(argv[i], "--skip") && sscanf(v, "%d:%d", &skip_rank, &skip_nth) == 2)
			;
		else if (!strcmp(argv[i], "--late") &&
			 sscanf(v, "%d:%d:%d", &late_rank, &late_step, &late_ms) == 3)
			;
		else
			usage();
		i++;
	}
	if (colls < 1 || steps < 1 || group < 1)
		usage();
}

int main(int argc, char **argv)
{
	ncclUniqueId ids[3];
	ncclComm_t c = NULL;
	const char *shape = argc > 1 ? argv[1] : "";
	int world_comm = strcmp(shape, "subsets") && strcmp(shape, "nonblocking") &&
			 strcmp(shape, "scalable");

	parse(argc, argv);
	rank = wl_env_int("RANK", 0);
	world = wl_env_int("WORLD_SIZE", 1);
	if (world != 4 && strcmp(shape, "group") && strcmp(shape, "nonblocking"))
		fprintf(stderr, "comm_shapes: %s is made for 4 ranks (WORLD_SIZE=%d)\n", shape, world);
	CHECK(cudaSetDevice(wl_env_int("LOCAL_RANK", rank)));
	CHECK(cudaMalloc((void **)&buf, COUNT * sizeof(float)));
	if (rank == 0)
		for (int i = 0; i < 3; i++)
			CHECK(ncclGetUniqueId(&ids[i]));
	CHECK(wl_share_ids(ids, 3, rank, world, "comm_shapes"));
	if (world_comm)
		CHECK(ncclCommInitRank(&c, world, ids[0], rank));
	if (!strcmp(shape, "split"))
		shape_split(c);
	else if (!strcmp(shape, "subsets"))
		shape_subsets(ids);
	else if (!strcmp(shape, "nonblocking"))
		shape_nonblocking(ids);
	else if (!strcmp(shape, "group"))
		shape_group(c);
	else if (!strcmp(shape, "fork"))
		shape_fork(c);
	else if (!strcmp(shape, "shrink"))
		shape_shrink(c);
	else if (!strcmp(shape, "scalable"))
		shape_scalable(ids);
	else
		usage();
	if (c)
		CHECK(ncclCommDestroy(c));
	CHECK(cudaFree(buf));
	if (rank == 0)
		printf("comm_shapes: %s: %d ranks, done\n", shape, world);
	return 0;
}
