/* SPDX-License-Identifier: MIT */
/* bench_common.h - what every benchmark in bench/ times with: the clocks,
 * the median of rounds, and the cudaMalloc(256)/cudaFree pair loop (ns per
 * call). One copy, so two benchmarks' figures are measured the same way.
 * Header-only, bench use only. */
#ifndef RT_BENCH_COMMON_H
#define RT_BENCH_COMMON_H

#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <time.h>

typedef cudaError_t (*malloc_fn)(void **, size_t);
typedef cudaError_t (*free_fn)(void *);
typedef cudaError_t (*getdev_fn)(int *);

static inline double clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline double now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts v. */
static inline double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* ns per call of `pairs` cudaMalloc/cudaFree pairs */
static inline double alloc_free(malloc_fn m, free_fn f, long pairs)
{
	double t0 = now_ns();
	void *p;

	for (long i = 0; i < pairs; i++) {
		m(&p, 256);
		f(p);
	}
	return (now_ns() - t0) / (2.0 * (double)pairs);
}

#endif
