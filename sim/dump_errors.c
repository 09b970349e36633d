/* SPDX-License-Identifier: MIT */
/* dump_errors.c - regenerates format/errors.def (its generated rows) from NVIDIA's own libraries.
 *
 * Build and run against the real libcudart/libnccl (they answer these
 * queries without a driver):
 *   cc -I/usr/local/cuda/include sim/dump_errors.c -L/usr/local/cuda/lib64 \
 *      -lcudart -lnccl -o /tmp/dump && /tmp/dump > format/errors.def.body
 * Not part of the build. */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

/* nccl.h's enumerator names (libnccl has no ncclGetErrorName) */
static const char *nccl_name(int r)
{
	switch (r) {
#define N(x) case x: return #x;
	N(ncclSuccess) N(ncclUnhandledCudaError) N(ncclSystemError) N(ncclInternalError)
	N(ncclInvalidArgument) N(ncclInvalidUsage) N(ncclRemoteError) N(ncclInProgress)
#undef N
	default: return "";
	}
}

int main(void)
{
	const char *unknown = cudaGetErrorName((cudaError_t)99999);

	for (int i = 0; i < 1100; i++) {
		const char *name = cudaGetErrorName((cudaError_t)i);

		if (strcmp(name, unknown) == 0)
			continue;
		printf("RT_CUDA_ERR(%d, \"%s\", \"%s\")\n", i, name,
		       cudaGetErrorString((cudaError_t)i));
	}
	for (int i = 0; i < 9; i++)
		printf("RT_NCCL_ERR(%d, \"%s\", \"%s\")\n", i, nccl_name(i),
		       ncclGetErrorString((ncclResult_t)i));
	return 0;
}
