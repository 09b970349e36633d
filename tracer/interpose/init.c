/* SPDX-License-Identifier: MIT */
/* init.c - libranktrace.so's start-up and the ways out of a process: the
 * constructor, exit(), _exit(), _Exit(), a return from main, the unload.
 *
 * The constructor only reads the environment (RANKTRACE_DIR,
 * RANKTRACE_RUN_ID, and the limits RANKTRACE_MAX_SIZE, RANKTRACE_RING,
 * RANKTRACE_MIN_FREE), the fault plan and the sink; files appear at a
 * process's first event (core/life.c), so launcher processes that never
 * touch CUDA or NCCL leave nothing behind. Without RANKTRACE_DIR the library
 * passes every call through untouched.
 *
 * Never exits or aborts of its own: the exit wrappers record, then leave
 * through the real function. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"
#include "env.h"
#include "identity.h"
#include "inject.h"
#include "interpose.h"

uint8_t rt_tr_route[RT_ID_COUNT];

/* ---- process end ---- */

typedef void (*exit_fn)(int);

/* Record, then leave through the real `name` (exit, _exit or _Exit). */
__attribute__((noreturn)) static void exit_through(const char *name, int status)
{
	exit_fn real = (exit_fn)dlsym(RTLD_NEXT, name);

	rt_tr_record_exit(status);
	if (real)
		real(status);
	syscall(SYS_exit_group, status); /* not reached */
	__builtin_unreachable();
}

RT_EXPORT void exit(int status)
{
	exit_through("exit", status);
}

RT_EXPORT void _exit(int status)
{
	exit_through("_exit", status);
}

RT_EXPORT void _Exit(int status)
{
	exit_through("_Exit", status);
}

/* Returning from main reaches exit() inside libc, not through our symbol:
 * wrap main itself to see its status (Python's uncaught exception is a
 * return of 1 from main). */
typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void),
			     void (*)(void), void *);
static main_fn real_main;

static int traced_main(int argc, char **argv, char **envp)
{
	int status = real_main(argc, argv, envp);

	rt_tr_record_exit(status);
	return status;
}

RT_EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
				void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
	start_main_fn real = (start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");

	real_main = main;
	return real(traced_main, argc, argv, init, fini, rtld_fini, stack_end);
}

/* Anything else (a library's exit path we did not see): status unknown. */
__attribute__((destructor)) static void at_unload(void)
{
	rt_tr_record_exit(-1);
}

/* ---- configuration ---- */

/* Size limits (store/chunk.c applies them) and writer switches, each
 * value checked (rt_tr_env: a bad one is said, its fallback used). */
static void read_limits(void)
{
	struct rt_env_val v;

	rt_tr_env(RT_ENV_MAX_SIZE, &v);
	rt_tr_config.max_bytes = (uint64_t)v.n;
	rt_tr_env(RT_ENV_RING, &v);
	rt_tr_config.ring_bytes = (uint64_t)v.n;
	/* unset or bad: the store's default reserve (5 %, at least 2G or half) */
	rt_tr_config.min_free = rt_tr_env(RT_ENV_MIN_FREE, &v) == 0 ? v.n : -1;
	rt_tr_env(RT_ENV_HELPER, &v);
	rt_tr_config.no_helper = rt_env_is(&v, "0");
	/* tests: chunk file number N and later fail with errno E ("N:E") */
	if (rt_tr_env(RT_ENV_TEST_ALLOC_FAIL, &v) == 0) {
		rt_tr_config.fail_alloc_at = (uint64_t)v.n;
		rt_tr_config.fail_alloc_errno = (int)v.n2;
	}
}

/* Where the trace goes (RANKTRACE_DIR), how (the sink), the limits. */
static void configure_trace(const char *dir)
{
	struct rt_env_val v;

	if (!dir || !*dir)
		return; /* loaded without `ranktrace run`: inert */
	rt_tr_lttng_configure(); /* the sink, chosen once */
	if (rt_tr_env(RT_ENV_DIR, &v) != 0)
		return; /* not absolute, or too long for its rank directories: untraced */
	snprintf(rt_tr_config.dir, sizeof(rt_tr_config.dir), "%s", dir);
	if (rt_tr_env(RT_ENV_RUN_ID, &v) == 0) /* else: no claim to check */
		snprintf(rt_tr_config.run_id, sizeof(rt_tr_config.run_id), "%s", v.s);
	read_limits();
	rt_tr_off = 0;
}

__attribute__((constructor)) static void rt_tr_init(void)
{
	rt_tr_base_init();
	pthread_atfork(rt_tr_prep_fork_prepare, rt_tr_prep_fork_parent, rt_tr_after_fork_child);
	rt_tr_rank_env_init();
	rt_inj_init(); /* a fault plan applies even when no trace can be written */
	if (rt_inj_active) /* each rule and how often it fired, in the trace at the end */
		rt_tr_on_end_record(rt_inj_at_end);
	rt_tr_pyboot_init(); /* the probe, for the trace and for the plan's failure points */
	configure_trace(getenv(RT_ENV_NAME(DIR)));
	/* the fast path is for calls without fault rules into the native store */
	for (unsigned id = 0; id < RT_ID_COUNT; id++)
		rt_tr_route[id] = rt_id_is_api(id) &&
				  ((rt_inj_active && rt_inj_api[id]) || rt_tr_lttng_wanted);
}
