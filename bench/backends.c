/* SPDX-License-Identifier: MIT */
/* backends.c - bench/backends: ns per cudaMalloc/cudaFree call, untraced
 * (the real functions) and through libranktrace.so's wrappers, alternated
 * INNER times in one process. Run by bench/backends.sh under `ranktrace run`
 * with either backend (native CTF or LTTng-UST); prints
 * "untraced_ns traced_ns" (medians of the alternations). */
#include "backends_common.h"

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	malloc_fn real_malloc = (malloc_fn)real_sym("cudaMalloc");
	free_fn real_free = (free_fn)real_sym("cudaFree");
	double base[INNER], traced[INNER];
	void *p;

	if (real_malloc == cudaMalloc) {
		fprintf(stderr, "bench/backends: run me under ranktrace (bench/backends.sh)\n");
		return 1;
	}
	cudaSetDevice(0);
	cudaMalloc(&p, 256); /* first event: stream (native) or provider (LTTng) set up */
	cudaFree(p);
	for (int r = 0; r < INNER; r++) {
		base[r] = alloc_free(real_malloc, real_free, n);
		traced[r] = alloc_free(cudaMalloc, cudaFree, n);
	}
	printf("%.2f %.2f\n", median(base, INNER), median(traced, INNER));
	return 0;
}
