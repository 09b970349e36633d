/* SPDX-License-Identifier: MIT */
/* writer_drift.c - bench/writer_drift: ns the native writer adds per
 * cudaMalloc/cudaFree in a fresh process, then again after BYTES of trace
 * have been written by the same process (issue 13: the figure must not
 * drift when the kernel has page cache to reclaim).
 *
 * Run under the tracer with no size cap (bench/run.sh does: LD_PRELOAD,
 * RANKTRACE_DIR, RANKTRACE_MAX_SIZE=0) on the simulated cluster. Each phase
 * is 9 rounds; a round times the same pairs through the real functions
 * (dlsym: the baseline) and through the interposed symbols, back to back.
 * Two clocks: wall time, and the calling thread's CPU time (what the traced
 * thread itself pays; on a shared machine it is the steadier of the two).
 * Prints the medians of the per-round differences and the drift between
 * the phases. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_common.h"

#define ROUNDS 9

/* ns per call (wall, thread CPU) of `pairs` cudaMalloc/cudaFree pairs */
static void pairs_ns(malloc_fn m, free_fn f, long pairs, double *wall, double *cpu)
{
	double w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	void *p;

	for (long i = 0; i < pairs; i++) {
		m(&p, 256);
		f(p);
	}
	*wall = (clock_ns(CLOCK_MONOTONIC) - w0) / (2.0 * (double)pairs);
	*cpu = (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (2.0 * (double)pairs);
}

/* One phase: medians of added wall and CPU ns per call. */
static void phase(malloc_fn rm, free_fn rf, long pairs, double *wall, double *cpu)
{
	double aw[ROUNDS], ac[ROUNDS];

	for (int r = 0; r < ROUNDS; r++) {
		double bw, bc, tw, tc;

		pairs_ns(rm, rf, pairs, &bw, &bc);
		pairs_ns(cudaMalloc, cudaFree, pairs, &tw, &tc);
		aw[r] = tw - bw;
		ac[r] = tc - bc;
	}
	*wall = median(aw, ROUNDS);
	*cpu = median(ac, ROUNDS);
}

int main(int argc, char **argv)
{
	long pairs = argc > 1 ? atol(argv[1]) : 200000;
	double gib = argc > 2 ? atof(argv[2]) : 2.0;
	void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
	malloc_fn rm = h ? (malloc_fn)dlsym(h, "cudaMalloc") : NULL;
	free_fn rf = h ? (free_fn)dlsym(h, "cudaFree") : NULL;
	/* cudaGetDevice events are 18 bytes (6 header + 8 common + 4 field) */
	long fill = (long)(gib * (double)(1ull << 30) / 18.0);
	double w0, c0, w1, c1, t0;
	int d;

	if (!rm || !rf || rm == cudaMalloc) {
		fprintf(stderr, "writer_drift: run me under the tracer (bench/run.sh)\n");
		return 1;
	}
	cudaSetDevice(0);
	phase(rm, rf, pairs, &w0, &c0);
	t0 = clock_ns(CLOCK_MONOTONIC);
	for (long i = 0; i < fill; i++)
		cudaGetDevice(&d);
	t0 = (clock_ns(CLOCK_MONOTONIC) - t0) / 1e9;
	phase(rm, rf, pairs, &w1, &c1);
	printf("added ns per cudaMalloc/cudaFree, median of %d interleaved rounds of %ld pairs\n",
	       ROUNDS, pairs);
	printf("%-40s %10s %12s\n", "", "wall ns", "thread CPU ns");
	printf("%-40s %10.1f %12.1f\n", "fresh process", w0, c0);
	printf("after %.1f GiB of trace (%.1f s to write) %10.1f %12.1f\n", gib, t0, w1, c1);
	printf("%-40s %+9.0f%% %+11.0f%%\n", "drift", (w1 - w0) / w0 * 100, (c1 - c0) / c0 * 100);
	return 0;
}
