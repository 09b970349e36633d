/* SPDX-License-Identifier: MIT */
/* tracer_overhead.c - bench/tracer_overhead: what libranktrace.so adds per call.
 *
 * Run under the tracer (bench/run.sh does: LD_PRELOAD + RANKTRACE_DIR) on the
 * simulated cluster. In one process it alternates two loops over the same
 * calls: through the real functions (looked up with dlsym, bypassing the
 * wrapper: the baseline) and through the interposed symbols (traced). It
 * prints the median over rounds of the added nanoseconds per call, then the
 * bytes per event of the trace it wrote (read back with the viewer's reader).
 * Then the hot path against its floor (issue 20): in many short rounds,
 * each timing back to back and in rotating order the floor (the two
 * timestamp reads a traced call needs, in a loop: rdtsc, or clock_gettime
 * where the tracer cannot use the TSC), the untraced and the traced call,
 * on the calling thread's CPU clock (a preempted round costs nothing), it
 * prints medians and spread (10th-90th percentile) of each, of the added
 * cost and of its ratio to the floor, the ratio taken per round.
 * Per call: cudaMalloc+cudaFree loops time pairs and divide by the two
 * calls, so each figure is one call's against one call's two reads.
 * A second floor, "in place": the same two reads around the untraced
 * call (what the tracer itself does with the clock, nothing else), less
 * the untraced call. Around a call that takes a lock (the simulated
 * cudaMalloc and cudaFree do) the reads cost more than back to back: a
 * locked instruction and rdtsc wait for each other. Both ratios are
 * printed; the goal is stated against the first.
 * Ratios within one run: these machines are noisy. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"
#include "reader.h"

#define ROUNDS 9
#define FLOOR_ROUNDS_MAX 401

typedef ncclResult_t (*allreduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
				     ncclComm_t, cudaStream_t);

static void *real_sym(const char *lib, const char *name)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
	void *p = h ? dlsym(h, name) : NULL;

	if (!p) {
		fprintf(stderr, "tracer_overhead: cannot find the real %s in %s\n", name, lib);
		exit(1);
	}
	return p;
}

static double get_device(getdev_fn g, long calls)
{
	double t0 = now_ns();
	int d;

	for (long i = 0; i < calls; i++)
		g(&d);
	return (now_ns() - t0) / (double)calls;
}

static double allreduce(allreduce_fn a, void *buf, ncclComm_t comm, long calls)
{
	double t0 = now_ns();

	for (long i = 0; i < calls; i++)
		a(buf, buf, 16, ncclFloat32, ncclSum, comm, NULL);
	return (now_ns() - t0) / (double)calls;
}

struct sizes {
	unsigned long long bytes, events, getdev, discarded;
};

static int count_bytes(const struct rt_vw_event *e, void *arg)
{
	struct sizes *s = arg;

	s->events++;
	s->getdev += e->id == RT_ID_cudaGetDevice;
	s->bytes += RT_COMMON_BYTES + rt_events[e->id].size;
	return 0;
}


/* ---- the hot path against its floor ---- */

static double thread_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* One timestamp read, as the tracer makes it (no conversion: the floor
 * is the read) */
static inline uint64_t stamp(bool tsc)
{
#if defined(__x86_64__)
	if (tsc)
		return bench_rdtsc();
#endif
	return (uint64_t)clock_ns(CLOCK_MONOTONIC);
}

static double floor_ns(bool tsc, long n)
{
	return bench_floor_ns(tsc, n, CLOCK_THREAD_CPUTIME_ID);
}

static double getdev_ns(getdev_fn g, long n)
{
	double t0 = thread_ns();
	int d;

	for (long i = 0; i < n; i++)
		g(&d);
	return (thread_ns() - t0) / (double)n;
}

/* per call: each pair is two calls */
static double pairs_ns(malloc_fn m, free_fn f, long pairs)
{
	double t0 = thread_ns();
	void *p;

	for (long i = 0; i < pairs; i++) {
		m(&p, 256);
		f(p);
	}
	return (thread_ns() - t0) / (2.0 * (double)pairs);
}

/* The untraced calls between the two reads a traced call makes */
static double getdev_read_ns(getdev_fn g, bool tsc, long n)
{
	volatile uint64_t sink = 0;
	double t0 = thread_ns();
	int d;

	for (long i = 0; i < n; i++) {
		uint64_t a = stamp(tsc);

		g(&d);
		sink += stamp(tsc) - a;
	}
	(void)sink;
	return (thread_ns() - t0) / (double)n;
}

static double pairs_read_ns(malloc_fn m, free_fn f, bool tsc, long pairs)
{
	volatile uint64_t sink = 0;
	double t0 = thread_ns();
	void *p;

	for (long i = 0; i < pairs; i++) {
		uint64_t a = stamp(tsc);

		m(&p, 256);
		sink += stamp(tsc) - a;
		a = stamp(tsc);
		f(p);
		sink += stamp(tsc) - a;
	}
	(void)sink;
	return (thread_ns() - t0) / (2.0 * (double)pairs);
}

/* One series per figure, one value per round. */
enum { FLOOR, GD_BASE, GD_TRACED, GD_ADDED, GD_RATIO, MF_BASE, MF_TRACED, MF_ADDED, MF_RATIO,
       GD_READ, GD_PLACE, GD_PRATIO, MF_READ, MF_PLACE, MF_PRATIO, NSERIES };
#define NLOOPS 7

struct floor_run {
	bool tsc;
	long n;     /* calls per loop */
	int rounds;
	getdev_fn real_getdev;
	malloc_fn real_malloc;
	free_fn real_free;
	double v[NSERIES][FLOOR_ROUNDS_MAX];
};

/* One round: the loops in an order that rotates with the round, so no
 * loop always runs first (or always right after the traced one). */
static void floor_round(struct floor_run *fr, int r)
{
	double (*v)[FLOOR_ROUNDS_MAX] = fr->v;
	long n = fr->n;

	for (int k = 0; k < NLOOPS; k++) {
		switch ((k + r) % NLOOPS) {
		case 0: v[FLOOR][r] = floor_ns(fr->tsc, n); break;
		case 1: v[GD_BASE][r] = getdev_ns(fr->real_getdev, n); break;
		case 2: v[GD_TRACED][r] = getdev_ns(cudaGetDevice, n); break;
		case 3: v[MF_BASE][r] = pairs_ns(fr->real_malloc, fr->real_free, n / 2); break;
		case 4: v[MF_TRACED][r] = pairs_ns(cudaMalloc, cudaFree, n / 2); break;
		case 5: v[GD_READ][r] = getdev_read_ns(fr->real_getdev, fr->tsc, n); break;
		default:
			v[MF_READ][r] = pairs_read_ns(fr->real_malloc, fr->real_free, fr->tsc, n / 2);
			break;
		}
	}
	v[GD_ADDED][r] = v[GD_TRACED][r] - v[GD_BASE][r];
	v[GD_RATIO][r] = v[GD_ADDED][r] / v[FLOOR][r];
	v[MF_ADDED][r] = v[MF_TRACED][r] - v[MF_BASE][r];
	v[MF_RATIO][r] = v[MF_ADDED][r] / v[FLOOR][r];
	v[GD_PLACE][r] = v[GD_READ][r] - v[GD_BASE][r];
	v[GD_PRATIO][r] = v[GD_ADDED][r] / v[GD_PLACE][r];
	v[MF_PLACE][r] = v[MF_READ][r] - v[MF_BASE][r];
	v[MF_PRATIO][r] = v[MF_ADDED][r] / v[MF_PLACE][r];
}

/* median [10th percentile .. 90th percentile]; sorts v */
static void print_spread(const char *what, double *v, int n, const char *unit)
{
	double med = median(v, n);

	printf("  %-44s %8.2f%s  [%.2f .. %.2f]\n", what, med, unit, v[n / 10],
	       v[n - 1 - n / 10]);
}

static void floor_report(struct floor_run *fr)
{
	static const char *const what[NSERIES] = {
		[FLOOR] = "floor: two timestamp reads", [GD_BASE] = "cudaGetDevice untraced",
		[GD_TRACED] = "cudaGetDevice traced", [GD_ADDED] = "cudaGetDevice added",
		[GD_RATIO] = "cudaGetDevice added / floor", [MF_BASE] = "cudaMalloc+cudaFree untraced",
		[MF_TRACED] = "cudaMalloc+cudaFree traced", [MF_ADDED] = "cudaMalloc+cudaFree added",
		[MF_RATIO] = "cudaMalloc+cudaFree added / floor",
		[GD_READ] = "cudaGetDevice untraced between two reads",
		[GD_PLACE] = "cudaGetDevice floor in place",
		[GD_PRATIO] = "cudaGetDevice added / floor in place",
		[MF_READ] = "cudaMalloc+cudaFree untraced between reads",
		[MF_PLACE] = "cudaMalloc+cudaFree floor in place",
		[MF_PRATIO] = "cudaMalloc+cudaFree added / floor in place",
	};

	printf("== the hot path against its floor: %d rounds of %ld calls each, interleaved;\n"
	       "   thread CPU time, ns per call; median [10th .. 90th percentile] over rounds;\n"
	       "   floor = two %s in a loop; ratio per round (goal: added <= 1.5 x floor)\n",
	       fr->rounds, fr->n, fr->tsc ? "rdtsc" : "clock_gettime(CLOCK_MONOTONIC)");
	for (int k = 0; k < NSERIES; k++) {
		if (k == GD_READ)
			printf("   floor in place = the untraced call between the same two reads, less the\n"
			       "   untraced call (the reads where the tracer makes them; not the goal's floor)\n");
		print_spread(what[k], fr->v[k], fr->rounds,
			     k == GD_RATIO || k == MF_RATIO || k == GD_PRATIO || k == MF_PRATIO ? "x "
												 : "ns");
	}
}

static void floor_section(struct floor_run *fr)
{
	fr->tsc = bench_tracer_uses_tsc();
	for (int r = 0; r < fr->rounds; r++)
		floor_round(fr, r);
	floor_report(fr);
}

/* The first table: each call untraced and traced, median of ROUNDS. */
static void call_table(const struct floor_run *fr, allreduce_fn real_allreduce, void *buf,
		       ncclComm_t comm, long n)
{
	double base[3][ROUNDS], traced[3][ROUNDS], added[3][ROUNDS];
	const char *names[3] = { "cudaMalloc+cudaFree (per call)", "cudaGetDevice",
				 "ncclAllReduce 16 floats, 1 rank" };

	for (int r = 0; r < ROUNDS; r++) {
		base[0][r] = alloc_free(fr->real_malloc, fr->real_free, n);
		traced[0][r] = alloc_free(cudaMalloc, cudaFree, n);
		base[1][r] = get_device(fr->real_getdev, 2 * n);
		traced[1][r] = get_device(cudaGetDevice, 2 * n);
		base[2][r] = allreduce(real_allreduce, buf, comm, n / 20);
		traced[2][r] = allreduce(ncclAllReduce, buf, comm, n / 20);
		for (int k = 0; k < 3; k++)
			added[k][r] = traced[k][r] - base[k][r];
	}
	printf("%-34s %12s %12s %12s\n", "call (median of 9 rounds, wall)", "untraced ns",
	       "traced ns", "added ns");
	for (int k = 0; k < 3; k++)
		printf("%-34s %12.1f %12.1f %12.1f\n", names[k], median(base[k], ROUNDS),
		       median(traced[k], ROUNDS), median(added[k], ROUNDS));
}

/* Bytes per event, from the trace this process wrote: every file of every
 * stream (a thread's stream spans several files), summed; and whether every
 * traced cudaGetDevice is in it (a tracer that stopped would look cheap). */
static void trace_summary(unsigned long long getdev_calls)
{
	const char *dir = getenv("RANKTRACE_DIR");
	char **ranks, **streams, path[8192], err[512];
	int nr = dir ? rt_vw_list_ranks(dir, &ranks) : 0;
	struct sizes s = { 0, 0, 0, 0 };

	for (int i = 0; i < nr; i++) {
		char rd[4200];
		int ns;

		snprintf(rd, sizeof(rd), "%s/%s", dir, ranks[i]);
		ns = rt_vw_list_streams(rd, &streams);
		for (int k = 0; k < ns; k++) {
			struct rt_vw_stream_info info = { 0 };

			snprintf(path, sizeof(path), "%s/%s", rd, streams[k]);
			rt_vw_read_stream(path, count_bytes, &s, &info, err, sizeof(err));
			s.discarded += info.discarded;
		}
		rt_vw_free_names(streams, ns > 0 ? ns : 0);
	}
	rt_vw_free_names(ranks, nr > 0 ? nr : 0);
	/* headers: compact (6 B) except after a long pause (14 B) */
	printf("trace: %llu events, %.1f bytes per event on average (payload + 6 B header); "
	       "%llu of %llu traced cudaGetDevice calls recorded, %llu events discarded\n",
	       s.events, (double)(s.bytes + 6 * s.events) / (double)(s.events ? s.events : 1),
	       s.getdev, getdev_calls, s.discarded);
	printf("       cudaMalloc %d B, cudaFree %d B, cudaGetDevice %d B, "
	       "ncclAllReduce %d B per event\n",
	       RT_HEADER_COMPACT_BYTES + RT_COMMON_BYTES + RT_SIZE_cudaMalloc,
	       RT_HEADER_COMPACT_BYTES + RT_COMMON_BYTES + RT_SIZE_cudaFree,
	       RT_HEADER_COMPACT_BYTES + RT_COMMON_BYTES + RT_SIZE_cudaGetDevice,
	       RT_HEADER_COMPACT_BYTES + RT_COMMON_BYTES + RT_SIZE_ncclAllReduce);
}

/* tracer_overhead [CALLS [FLOOR_ROUNDS [FLOOR_CALLS]]] */
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	static struct floor_run fr;
	allreduce_fn real_allreduce = (allreduce_fn)real_sym("libnccl.so.2", "ncclAllReduce");
	ncclUniqueId id;
	ncclComm_t comm;
	void *buf;

	fr.rounds = argc > 2 ? atoi(argv[2]) : 51;
	fr.n = argc > 3 ? atol(argv[3]) : 20000;
	if (n < 20 || fr.rounds < 1 || fr.rounds > FLOOR_ROUNDS_MAX || fr.n < 2) {
		fprintf(stderr, "usage: tracer_overhead [CALLS>=20 [ROUNDS 1-%d [CALLS>=2]]]\n",
			FLOOR_ROUNDS_MAX);
		return 2;
	}
	fr.real_malloc = (malloc_fn)real_sym("libcudart.so.13", "cudaMalloc");
	fr.real_free = (free_fn)real_sym("libcudart.so.13", "cudaFree");
	fr.real_getdev = (getdev_fn)real_sym("libcudart.so.13", "cudaGetDevice");
	if (fr.real_malloc == cudaMalloc) {
		fprintf(stderr, "tracer_overhead: run me under the tracer (bench/run.sh)\n");
		return 1;
	}
	cudaSetDevice(0);
	ncclGetUniqueId(&id);
	if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess || cudaMalloc(&buf, 64) != cudaSuccess)
		return 1;
	call_table(&fr, real_allreduce, buf, comm, n);
	ncclCommDestroy(comm);
	cudaFree(buf);
	floor_section(&fr);
	trace_summary((unsigned long long)ROUNDS * 2 * (unsigned long long)n +
		      (unsigned long long)fr.rounds * (unsigned long long)fr.n);
	return 0;
}
