/* SPDX-License-Identifier: MIT */
/* base.h - the ground every room of libranktrace.so stands on: process and
 * thread state, the trace clock, warnings, symbol resolution, and staying out
 * of the program's way (descriptors, signals).
 *
 * The tracer's rooms, each with its header, each using only the rooms below
 * it (tests/integration/test_tracer_rooms.sh checks includes and symbols):
 *
 *   interpose/  the program's entry points: generated wrappers, driver entry
 *               points, exit and main, the probe API, start-up
 *   device/     device timing: the NCCL profiler plugin's hooks, CUDA events,
 *               CUPTI
 *   core/       the hot path: a record begun, filled and committed; the
 *               tracer's own events; the process's first event, end, signals
 *   store/      where records go: per-thread streams of mmap'd CTF files
 *               (writer, chunk, prep) or the LTTng sink; the metadata file
 *   identity/   who this process is: rank, rank directory, communicators
 *   base/       this header (state, clock, warnings, resolution, own.c)
 *
 * (The injector, inject/, sits between device/ and interpose/: the wrappers
 * call it, it records through core/ and asks its host questions that base/,
 * identity/ and device/ answer.)
 *
 * Nothing here takes a lock or allocates; the clock and the thread block are
 * read on the hot path. */
#ifndef RT_TR_BASE_H
#define RT_TR_BASE_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "env.h"
#include "schema.h"

#define RT_EXPORT __attribute__((visibility("default")))
#define RT_TLS __thread __attribute__((tls_model("initial-exec")))
#define rt_unlikely(x) __builtin_expect(!!(x), 0)
/* The hot path, inlined into every wrapper whatever the compiler's size
 * heuristics say: a call it makes costs more than the work it does. */
#define RT_TR_HOT static inline __attribute__((always_inline))

struct rt_tr_stream; /* store/store.h */

/* Process-wide, read-mostly. */
extern int rt_tr_off;          /* 1: pass everything through untouched */
extern pid_t rt_tr_pid;        /* our pid, updated after fork */
extern int rt_tr_clock_tsc;    /* 1: timestamps from the TSC */
extern uint64_t rt_tr_tsc0, rt_tr_mono0, rt_tr_tsc_mult; /* ns = mono0 + (tsc-tsc0)*mult>>32 */

/* Per thread, the hot path's state in one block: one address (the GOT's
 * offset of the block from the thread pointer) reaches all of it, where
 * separate variables cost a GOT load each. Named by the macros below. */
struct rt_tr_thread {
	int depth;    /* 0 outside, 1 in tracer code, 2 in the real function */
	int cur_dev;
	unsigned cur_id; /* the event rt_tr_begin last started (cupti.c) */
	struct rt_tr_stream *stream;
	/* This thread's errno (what __errno_location() returns, which is a
	 * call): set with stream, so valid wherever a record is being written. */
	int *errno_p;
};
extern RT_TLS struct rt_tr_thread rt_tr_th;
#define rt_tr_depth (rt_tr_th.depth)
#define rt_tr_cur_dev (rt_tr_th.cur_dev)
#define rt_tr_cur_id (rt_tr_th.cur_id)
#define rt_tr_stream_tls (rt_tr_th.stream)
#define rt_tr_errno_p (rt_tr_th.errno_p)

/* The device this thread now works on (cudaSetDevice, cuCtxSetCurrent...),
 * for the rows' DEV_CUR (the call tables of format/). */
static inline void rt_tr_saw_device(int device)
{
	rt_tr_cur_dev = device;
}

/* base.c: once, from the constructor (pid, fd 2, our load address) */
void rt_tr_base_init(void);
/* One warning on the program's stderr per flag, while fd 2 is still the
 * file it was at start; never raises SIGPIPE. */
void rt_tr_warn_once(int *flag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* RANKTRACE_<id> checked against format/env.def (rt_env_get, *v): a bad
 * value is said once per variable, naming it, and its fallback used (the
 * tracer cannot refuse; `ranktrace run` already has). rt_env_check's code. */
int rt_tr_env(enum rt_env id, struct rt_env_val *v);
/* The real `name` of lib, or NULL (one warning); never one of our wrappers. */
void *rt_tr_resolve(const char *name, enum rt_lib lib);

/* clock.c: the trace clock (CLOCK_MONOTONIC ns, through the TSC when it is
 * constant and non-stop), calibrated once per process at its first event */
uint64_t rt_tr_clock_slow(void);
void rt_tr_calibrate_clock(void);
/* RANKTRACE_TEST_HOST (format/env.def, tests only): when it names this
 * rank, the host the trace says it ran on and the shift of its trace clock
 * (ns, in every timestamp); "" and 0 otherwise. Set once, at process set-up
 * (core/life.c), before the clock is calibrated. */
extern char rt_tr_test_host[64];
extern int64_t rt_tr_clock_shift;
void rt_tr_test_host_init(int rank);

static inline uint64_t rt_tr_now(void)
{
#if defined(__x86_64__)
	if (rt_tr_clock_tsc) {
		uint32_t lo, hi;

		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		return rt_tr_mono0 +
		       (uint64_t)(((unsigned __int128)((((uint64_t)hi << 32) | lo) - rt_tr_tsc0) *
				   rt_tr_tsc_mult) >> 32);
	}
#endif
	return rt_tr_clock_slow();
}

/* own.c: the program's descriptors and signals stay its own */
struct rt_tr_quiet {
	sigset_t old, before;
	bool on;
};
void rt_tr_quiet_begin(struct rt_tr_quiet *q);
void rt_tr_quiet_end(struct rt_tr_quiet *q, int err);
int rt_tr_fd_lift(int fd);
bool rt_tr_fd_is(int fd, uint64_t dev, uint64_t ino);
extern RT_TLS bool rt_tr_fds_private; /* this thread has its own descriptor table */

#endif
