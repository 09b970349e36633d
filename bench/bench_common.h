/* SPDX-License-Identifier: MIT */
/* bench_common.h - what every benchmark in bench/ times with: the clocks,
 * the median of rounds, and the cudaMalloc(256)/cudaFree pair loop (ns per
 * call). One copy, so two benchmarks' figures are measured the same way.
 * Header-only, bench use only. */
#ifndef RT_BENCH_COMMON_H
#define RT_BENCH_COMMON_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The clock the tracer reads (tracer/base/clock.c decides the same way): the
 * TSC when constant and non-stop, unless RANKTRACE_CLOCK=monotonic. */
static inline bool bench_tracer_uses_tsc(void)
{
#if defined(__x86_64__)
	const char *force = getenv("RANKTRACE_CLOCK");
	char line[4096];
	bool tsc = false;
	FILE *f;

	if (force && strcmp(force, "monotonic") == 0)
		return false;
	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5) == 0) {
			tsc = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
			break;
		}
	}
	if (f)
		fclose(f);
	return tsc;
#else
	return false;
#endif
}

#if defined(__x86_64__)
static inline uint64_t bench_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
#endif

/* The floor: ns (on clock `by`: the thread's CPU time, or the wall) per
 * iteration of a loop that reads the tracer's clock twice, as a traced call
 * does (its begin and its end). */
static inline double bench_floor_ns(bool tsc, long n, clockid_t by)
{
	volatile uint64_t sink = 0;
	double t0 = clock_ns(by);

	for (long i = 0; i < n; i++) {
#if defined(__x86_64__)
		if (tsc) {
			uint64_t a = bench_rdtsc();

			sink += bench_rdtsc() - a;
			continue;
		}
#endif
		sink += (uint64_t)clock_ns(CLOCK_MONOTONIC);
		sink += (uint64_t)clock_ns(CLOCK_MONOTONIC);
	}
	(void)sink;
	return (clock_ns(by) - t0) / (double)n;
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
