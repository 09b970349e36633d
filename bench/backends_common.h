/* SPDX-License-Identifier: MIT */
/* backends_common.h - the workload and clock shared by bench/backends.c and
 * bench/lttng_anchor.c: cudaMalloc(256)/cudaFree pairs, ns per call, the real
 * functions looked up past any interposer. Header-only, bench use only. */
#ifndef RT_BENCH_BACKENDS_COMMON_H
#define RT_BENCH_BACKENDS_COMMON_H

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define INNER 5 /* alternations of untraced and traced loops in one process */

typedef cudaError_t (*malloc_fn)(void **, size_t);
typedef cudaError_t (*free_fn)(void *);

static inline double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static inline double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* The real function in libcudart, not the one LD_PRELOAD put first. */
static inline void *real_sym(const char *name)
{
	void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
	void *p;

	if (!h)
		h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
	p = h ? dlsym(h, name) : NULL;

	if (!p) {
		fprintf(stderr, "bench: cannot find the real %s in libcudart.so.13\n", name);
		exit(1);
	}
	return p;
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
