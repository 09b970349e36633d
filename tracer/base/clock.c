/* SPDX-License-Identifier: MIT */
/* clock.c - the trace clock: CLOCK_MONOTONIC in ns, read through the TSC
 * when it is constant and non-stop (calibrated once per process, 5 ms).
 *
 * rt_tr_calibrate_clock runs under the store's lock at process set-up (core/life.c); the hot
 * path reads the result (base.h rt_tr_now) without a lock. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base.h"
#include "env.h"

int rt_tr_clock_tsc;
uint64_t rt_tr_tsc0, rt_tr_mono0, rt_tr_tsc_mult;
char rt_tr_test_host[64];
int64_t rt_tr_clock_shift;

/* CLOCK_MONOTONIC, shifted for RANKTRACE_TEST_HOST (the TSC's base is read
 * through here: shifted alike). */
uint64_t rt_tr_clock_slow(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec +
	       (uint64_t)rt_tr_clock_shift;
}

void rt_tr_test_host_init(int rank)
{
	static int warned;
	struct rt_env_val v;

	if (rt_tr_env(RT_ENV_TEST_HOST, &v) < 0) /* said, naming it: off */
		return;
	if (v.s && rank >= 0 &&
	    rt_env_host_at(v.s, rank, rt_tr_test_host, sizeof(rt_tr_test_host), &rt_tr_clock_shift) == 1)
		rt_tr_warn_once(&warned, "test knob %s: rank %d records itself on host %s, its clock "
				"shifted by %lld ns", RT_ENV_NAME(TEST_HOST), rank, rt_tr_test_host,
				(long long)rt_tr_clock_shift);
}

static bool tsc_usable(void)
{
#if defined(__x86_64__)
	char line[4096];
	bool constant = false, nonstop = false;
	struct rt_env_val clock;
	FILE *f;

	rt_tr_env(RT_ENV_CLOCK, &clock);
	if (rt_env_is(&clock, "monotonic"))
		return false;
	f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return constant && nonstop;
#else
	return false;
#endif
}

#if defined(__x86_64__)
static uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* A (tsc, monotonic ns) pair read as close together as we can. */
static void clock_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t a = rdtsc(), m = rt_tr_clock_slow(), b = rdtsc();

		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = m;
		}
	}
}
#endif

/* Once per process (under process_lock): TSC-to-ns over a 5 ms window. */
void rt_tr_calibrate_clock(void)
{
#if defined(__x86_64__)
	uint64_t t1, n1, t2, n2;

	if (rt_tr_clock_tsc || !tsc_usable())
		return;
	clock_pair(&t1, &n1);
	do
		clock_pair(&t2, &n2);
	while (n2 - n1 < 5000000);
	rt_tr_tsc_mult = (uint64_t)((((unsigned __int128)(n2 - n1)) << 32) / (t2 - t1));
	rt_tr_tsc0 = t1;
	rt_tr_mono0 = n1;
	__atomic_store_n(&rt_tr_clock_tsc, 1, __ATOMIC_RELEASE);
#endif
}
