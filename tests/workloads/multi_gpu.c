/* SPDX-License-Identifier: MIT */
/* multi_gpu.c - one process driving several GPUs, as nccl-tests `-g N` does:
 * ncclCommInitAll on N devices (every rank of the communicator lives in this
 * process), then per step a grouped all-reduce and all-gather over all of
 * them from one thread, results checked, everything freed, exit 0.
 *
 * No launcher, no RANK: the trace holds one rank directory for the process,
 * which holds every rank of its communicator (tests/integration/
 * test_damage2.sh: view complete, verdict healthy).
 * Usage: multi_gpu [--devices N] [--steps S]. Any failed call or wrong
 * result: message, exit 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#define MAX_DEV 8
#define COUNT 64

#define CHECK(call)                                                              \
	do {                                                                     \
		int rc_ = (int)(call);                                           \
		if (rc_ != 0) {                                                  \
			fprintf(stderr, "multi_gpu: %s failed: %d\n", #call, rc_); \
			exit(1);                                                 \
		}                                                                \
	} while (0)

static void step(ncclComm_t *comms, float **buf, float **all, cudaStream_t *st, int n)
{
	CHECK(ncclGroupStart());
	for (int d = 0; d < n; d++)
		CHECK(ncclAllReduce(buf[d], buf[d], COUNT, ncclFloat, ncclSum, comms[d], st[d]));
	CHECK(ncclGroupEnd());
	CHECK(ncclGroupStart());
	for (int d = 0; d < n; d++)
		CHECK(ncclAllGather(buf[d], all[d], COUNT, ncclFloat, comms[d], st[d]));
	CHECK(ncclGroupEnd());
	for (int d = 0; d < n; d++) {
		CHECK(cudaSetDevice(d));
		CHECK(cudaStreamSynchronize(st[d]));
	}
}

int main(int argc, char **argv)
{
	int n = 2, steps = 2;
	ncclComm_t comms[MAX_DEV];
	cudaStream_t st[MAX_DEV];
	float *buf[MAX_DEV], *all[MAX_DEV], h[COUNT];

	for (int i = 1; i + 1 < argc; i += 2)
		if (!strcmp(argv[i], "--devices"))
			n = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--steps"))
			steps = atoi(argv[i + 1]);
	if (n < 1 || n > MAX_DEV || steps < 0) {
		fprintf(stderr, "usage: multi_gpu [--devices 1..%d] [--steps S]\n", MAX_DEV);
		return 2;
	}
	CHECK(ncclCommInitAll(comms, n, NULL));
	for (int d = 0; d < n; d++) {
		for (int k = 0; k < COUNT; k++)
			h[k] = (float)d;
		CHECK(cudaSetDevice(d));
		CHECK(cudaStreamCreate(&st[d]));
		CHECK(cudaMalloc((void **)&buf[d], sizeof(h)));
		CHECK(cudaMalloc((void **)&all[d], sizeof(h) * (size_t)n));
		CHECK(cudaMemcpy(buf[d], h, sizeof(h), cudaMemcpyHostToDevice));
	}
	for (int s = 0; s < steps; s++)
		step(comms, buf, all, st, n);
	for (int d = 0; d < n; d++) {
		/* each step sums over the devices: d becomes sum(0..n-1) * n^(steps-1) */
		float want = (float)(n * (n - 1) / 2);

		for (int s = 1; s < steps; s++)
			want *= (float)n;
		CHECK(cudaSetDevice(d));
		CHECK(cudaMemcpy(h, buf[d], sizeof(h), cudaMemcpyDeviceToHost));
		if (steps > 0 && h[COUNT - 1] != want) {
			fprintf(stderr, "multi_gpu: device %d holds %g, not %g\n", d, h[COUNT - 1], want);
			return 1;
		}
		CHECK(cudaFree(all[d]));
		CHECK(cudaFree(buf[d]));
		CHECK(cudaStreamDestroy(st[d]));
		CHECK(ncclCommDestroy(comms[d]));
	}
	printf("multi_gpu: %d devices, %d steps, done\n", n, steps);
	return 0;
}
