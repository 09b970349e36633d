/* SPDX-License-Identifier: MIT */
/* dump_errors.c - regenerates include/nvidia_errors.def from NVIDIA's own libraries.
 *
 * Build and run against the real libcudart/libnccl (they answer these
 * queries without a driver):
 *   cc -I/usr/local/cuda/include sim/dump_errors.c -L/usr/local/cuda/lib64 \
 *      -lcudart -lnccl -o /tmp/dump && /tmp/dump > include/nvidia_errors.def.body
 * Not part of the build. */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

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
		printf("RT_NCCL_ERR(%d, \"%s\")\n", i, ncclGetErrorString((ncclResult_t)i));
	return 0;
}
