/* SPDX-License-Identifier: MIT */
/* io_pressure.c - bench/io_pressure: the traced call's wall-clock cost, as
 * the program sees it, against the floor of two timestamp reads measured in
 * the same run (bench/io_pressure.sh runs it quiet and while another process
 * writes gigabytes to the trace's filesystem).
 *
 * Run under `ranktrace run` (the process is traced) on the simulated
 * cluster. In rounds whose order rotates, it times by wall clock: the floor
 * (two timestamp reads in a loop, as the tracer reads its clock: rdtsc, or
 * clock_gettime where the tracer cannot use the TSC), PAIRS cudaMalloc/
 * cudaFree pairs through the real functions (looked up with dlsym, bypassing
 * the wrapper: untraced) and through the interposed symbols (traced). Wall
 * clock, not thread CPU time: a traced thread that sleeps in a page fault
 * (the kernel throttling a writer of dirty pages, a journal) pays for it in
 * wall time only. Per call: a pair is two calls. Prints the added cost per
 * call (the median over rounds of traced less untraced in the same round)
 * and its ratio to the median floor, the same on the thread's CPU clock, the
 * worst traced round, and the page faults and voluntary sleeps the traced
 * rounds took on the calling thread (getrusage RUSAGE_THREAD). IOP_PIN=CPU
 * pins the calling thread (below). */
#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench_common.h"

#define ROUNDS_MAX 101

/* What the calling thread went through: page faults, and the times it gave
 * up the CPU to wait (a sleep in a fault: the kernel throttling a writer of
 * dirty pages, a journal, a read). */
struct waits {
	long faults, sleeps;
};

static struct waits thread_waits(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru) != 0)
		return (struct waits){ 0, 0 };
	return (struct waits){ ru.ru_minflt + ru.ru_majflt, ru.ru_nvcsw };
}

/* One timed loop: wall ns per call (the figure) and the thread's CPU ns per
 * call beside it (what a loaded machine's preemptions do not inflate). */
struct timed {
	double wall, cpu;
};

static struct timed pairs_timed(malloc_fn m, free_fn f, long pairs)
{
	double c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w = alloc_free(m, f, pairs);

	return (struct timed){ w, (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (2.0 * (double)pairs) };
}

static struct timed floor_timed(bool tsc, long n)
{
	double c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w = bench_floor_ns(tsc, n, CLOCK_MONOTONIC);

	return (struct timed){ w, (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (double)n };
}

/* IOP_PIN=CPU: this thread on that CPU, every other thread of the process
 * (the tracer's helper) on the other CPUs, as on a host where the training
 * thread has a core of its own. Without it, on a machine whose other cores
 * are busy, the helper (woken by this thread) often runs on this thread's
 * core, and its work (making, faulting in, unmapping files) shows in this
 * thread's wall clock. Returns the CPU, or -1 when not pinned. */
static int pin_apart(void)
{
	const char *want = getenv("IOP_PIN");
	int cpu = want && *want ? atoi(want) : -1, n = 0;
	cpu_set_t mine, rest;
	struct dirent *d;
	DIR *dir;

	if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof(rest), &rest) != 0 ||
	    !CPU_ISSET(cpu, &rest) || CPU_COUNT(&rest) < 2)
		return -1;
	CPU_ZERO(&mine);
	CPU_SET(cpu, &mine);
	CPU_CLR(cpu, &rest);
	if (sched_setaffinity(0, sizeof(mine), &mine) != 0 || !(dir = opendir("/proc/self/task")))
		return -1;
	while ((d = readdir(dir))) {
		pid_t tid = (pid_t)atoi(d->d_name);

		if (tid > 0 && tid != gettid() && sched_setaffinity(tid, sizeof(rest), &rest) == 0)
			n++;
	}
	closedir(dir);
	return n ? cpu : -1;
}

static void *real(const char *name)
{
	const char *libs[] = { "libcudart.so.13", "libcudart.so.12", "libcudart.so" };

	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		void *h = dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD);
		void *p = h ? dlsym(h, name) : NULL;

		if (p)
			return p;
	}
	fprintf(stderr, "io_pressure: cannot find the real %s\n", name);
	exit(1);
}

struct series {
	double fl[ROUNDS_MAX], un[ROUNDS_MAX], tr[ROUNDS_MAX];    /* wall */
	double cfl[ROUNDS_MAX], cun[ROUNDS_MAX], ctr[ROUNDS_MAX]; /* thread CPU */
	double worst;
	struct waits traced; /* in the traced loops, summed */
};

/* Round r: the three loops in an order that rotates with the round. */
static void round_of(struct series *v, int r, bool tsc, long pairs, malloc_fn rm, free_fn rf)
{
	for (int k = 0; k < 3; k++) {
		struct timed t;

		switch ((k + r) % 3) {
		case 0:
			t = floor_timed(tsc, 2 * pairs);
			v->fl[r] = t.wall;
			v->cfl[r] = t.cpu;
			break;
		case 1:
			t = pairs_timed(rm, rf, pairs);
			v->un[r] = t.wall;
			v->cun[r] = t.cpu;
			break;
		default: {
			struct waits w0 = thread_waits(), w1;

			t = pairs_timed(cudaMalloc, cudaFree, pairs);
			w1 = thread_waits();
			v->traced.faults += w1.faults - w0.faults;
			v->traced.sleeps += w1.sleeps - w0.sleeps;
			v->tr[r] = t.wall;
			v->ctr[r] = t.cpu;
			v->worst = t.wall > v->worst ? t.wall : v->worst;
			break;
		}
		}
	}
}

/* The added cost: the median over rounds of traced less untraced in the
 * same round (paired: a round's loops see the same moment of dd's cycle),
 * against the median floor. (median() sorts: the differences first.) */
static void report(struct series *v, int rounds, long pairs, int pinned)
{
	double d[ROUNDS_MAX], cd[ROUNDS_MAX], a, ca, f, cf;

	for (int r = 0; r < rounds; r++) {
		d[r] = v->tr[r] - v->un[r];
		cd[r] = v->ctr[r] - v->cun[r];
	}
	a = median(d, rounds);
	ca = median(cd, rounds);
	f = median(v->fl, rounds);
	cf = median(v->cfl, rounds);

	printf("floor %.2f ns  untraced %.2f ns/call  traced %.2f ns/call  added %.2f ns/call  "
	       "ratio %.2fx  | thread CPU: floor %.2f ns added %.2f ns/call cpu_ratio %.2fx  | "
	       "worst traced round %.2f ns/call  on the calling thread, in %d traced rounds of "
	       "%ld pairs: faults %ld sleeps %ld (%s, %s)\n", f, median(v->un, rounds),
	       median(v->tr, rounds), a, a / f, cf, ca, ca / cf, v->worst, rounds, pairs,
	       v->traced.faults, v->traced.sleeps, getenv("RANKTRACE_DIR") ? "traced" : "NOT TRACED",
	       pinned >= 0 ? "pinned apart from the helper" : "not pinned");
}

int main(int argc, char **argv)
{
	long pairs = argc > 1 ? atol(argv[1]) : 200000;
	int rounds = argc > 2 ? atoi(argv[2]) : 9;
	static struct series v;
	bool tsc = bench_tracer_uses_tsc();
	malloc_fn rm;
	free_fn rf;
	int pinned;
	void *p;

	if (pairs < 1 || rounds < 1 || rounds > ROUNDS_MAX) {
		fprintf(stderr, "usage: io_pressure [PAIRS [ROUNDS <= %d]]\n", ROUNDS_MAX);
		return 2;
	}
	cudaMalloc(&p, 256); /* the runtime loaded, the real functions resolved */
	cudaFree(p);
	rm = (malloc_fn)real("cudaMalloc");
	rf = (free_fn)real("cudaFree");
	pinned = pin_apart();
	for (int r = 0; r < rounds; r++)
		round_of(&v, r, tsc, pairs, rm, rf);
	report(&v, rounds, pairs, pinned);
	return 0;
}
