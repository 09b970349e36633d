/* SPDX-License-Identifier: MIT */
/* unimplemented.c - the loud failure behind every stub in the generated
 * sim/stubs_*.c files.
 *
 * CMake generates one weak stub for each name NVIDIA's library exports
 * (cudart_exports.txt, nccl_exports.txt, taken from `objdump -T`). A real
 * implementation in cudart.c/nccl.c overrides its stub at link time, so what
 * a program calls and we do not simulate prints a message and returns an
 * error instead of succeeding silently or failing to load. */
#include <stdio.h>

#define EXPORT __attribute__((visibility("default")))

/* Returns the CUDA error code (801, cudaErrorNotSupported) or NCCL's
 * ncclInvalidUsage (5), chosen by the caller's library. */
EXPORT int simgpu_unimplemented(const char *name, int code)
{
	fprintf(stderr, "simgpu: %s is not implemented by the simulated cluster "
		"(see sim/README.md); returning error %d\n", name, code);
	return code;
}
