/* SPDX-License-Identifier: MIT */
/* split_job.c - a small job on a split communicator, for the outputs'
 * agreement test: each rank binds LOCAL_RANK, allocates (cudaMalloc and
 * cudaMallocPitch), joins the world communicator, splits it by rank parity
 * (ncclCommSplit), runs all-reduces on its half and an all-gather on the
 * world, frees, exits 0.
 *
 * Environment as torchrun/rt-launch set it: RANK, WORLD_SIZE, LOCAL_RANK,
 * MASTER_ADDR, MASTER_PORT (rank 0 hands the NCCL id to the others over TCP).
 * Usage: split_job [--steps N]. Any failed call: message, exit 1. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

static int rank, world;

#define CHECK(call)                                                                    \
	do {                                                                           \
		int rc_ = (int)(call);                                                 \
		if (rc_ != 0) {                                                        \
			fprintf(stderr, "split_job: rank %d: %s failed: %d\n", rank, #call, rc_); \
			exit(1);                                                       \
		}                                                                      \
	} while (0)

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : dflt;
}

static int full_io(int fd, void *buf, size_t n, int writing)
{
	char *p = buf;

	while (n) {
		ssize_t k = writing ? write(fd, p, n) : read(fd, p, n);

		if (k <= 0) {
			if (k < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Rank 0 listens on MASTER_PORT and sends the id to each other rank. */
static void share_id(ncclUniqueId *id)
{
	int port = env_int("MASTER_PORT", 29500), fd = -1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	if (rank == 0) {
		int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);

		a.sin_addr.s_addr = htonl(INADDR_ANY);
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		CHECK(ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, world) != 0);
		for (int i = 1; i < world; i++) {
			fd = accept(ls, NULL, NULL);
			CHECK(fd < 0 || full_io(fd, id, sizeof(*id), 1) != 0);
			close(fd);
		}
		close(ls);
		return;
	}
	inet_pton(AF_INET, getenv("MASTER_ADDR") ? getenv("MASTER_ADDR") : "127.0.0.1", &a.sin_addr);
	for (int tries = 0; tries < 600; tries++) {
		struct timespec ts = { 0, 100000000 };

		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			break;
		close(fd);
		fd = -1;
		nanosleep(&ts, NULL);
	}
	CHECK(fd < 0 || full_io(fd, id, sizeof(*id), 0) != 0);
	close(fd);
}

int main(int argc, char **argv)
{
	int steps = argc == 3 && !strcmp(argv[1], "--steps") ? atoi(argv[2]) : 3;
	ncclUniqueId id;
	ncclComm_t comm, half;
	float *buf, *gathered;
	void *pitched;
	size_t pitch;

	rank = env_int("RANK", 0);
	world = env_int("WORLD_SIZE", 1);
	CHECK(cudaSetDevice(env_int("LOCAL_RANK", rank)));
	CHECK(cudaMalloc((void **)&buf, 256 * sizeof(float)));
	CHECK(cudaMalloc((void **)&gathered, 256 * sizeof(float) * (size_t)world));
	CHECK(cudaMallocPitch(&pitched, &pitch, 100, 8));
	CHECK(cudaMemset(buf, 0, 256 * sizeof(float)));
	if (rank == 0)
		CHECK(ncclGetUniqueId(&id));
	share_id(&id);
	CHECK(ncclCommInitRank(&comm, world, id, rank));
	CHECK(ncclCommSplit(comm, rank % 2, rank, &half, NULL));
	for (int s = 0; s < steps; s++)
		CHECK(ncclAllReduce(buf, buf, 256, ncclFloat, ncclSum, half, NULL));
	CHECK(ncclAllGather(buf, gathered, 256, ncclFloat, comm, NULL));
	CHECK(cudaFree(pitched));
	CHECK(cudaFree(gathered));
	CHECK(ncclCommDestroy(half));
	CHECK(ncclCommDestroy(comm));
	CHECK(cudaFree(buf));
	if (rank == 0)
		printf("split_job: %d ranks, %d all-reduces on each half, done\n", world, steps);
	return 0;
}
