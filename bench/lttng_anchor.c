/* SPDX-License-Identifier: MIT */
/* lttng_anchor.c - bench/lttng_anchor: what a bare LTTng-UST tracepoint adds
 * to a cudaMalloc/cudaFree call: the real functions (past any interposer),
 * untraced, alternated with the same calls each followed by one tracepoint of
 * the same payload as ranktrace's event (lttng_anchor_tp.h). No wrapper, no
 * clock read of ours: the floor of any LTTng backend. It never calls an interposed symbol, so
 * libranktrace.so (preloaded by `ranktrace run`) records nothing. Prints
 * "untraced_ns traced_ns" like bench/backends. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_anchor_tp.h"

#include "backends_common.h"

static double anchored(malloc_fn m, free_fn f, long pairs)
{
	double t0 = now_ns();
	void *p;

	for (long i = 0; i < pairs; i++) {
		int r = m(&p, 256);

		lttng_ust_tracepoint(ranktrace, bench_anchor_malloc, 0, r, 0, p, 256);
		r = f(p);
		lttng_ust_tracepoint(ranktrace, bench_anchor_free, 0, r, 0, p);
	}
	return (now_ns() - t0) / (2.0 * (double)pairs);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	malloc_fn real_malloc = (malloc_fn)real_sym("cudaMalloc");
	free_fn real_free = (free_fn)real_sym("cudaFree");
	double base[INNER], traced[INNER];

	for (int r = 0; r < INNER; r++) {
		base[r] = alloc_free(real_malloc, real_free, n);
		traced[r] = anchored(real_malloc, real_free, n);
	}
	printf("%.2f %.2f\n", median(base, INNER), median(traced, INNER));
	return 0;
}
