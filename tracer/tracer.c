/* SPDX-License-Identifier: MIT */
/* tracer.c - libranktrace.so set-up: configuration, symbol resolution, fork,
 * process exit and fatal signals.
 *
 * The constructor only reads the environment (RANKTRACE_DIR,
 * RANKTRACE_RUN_ID, and the limits RANKTRACE_MAX_SIZE, RANKTRACE_RING,
 * RANKTRACE_MIN_FREE); files appear at a process's first
 * event (writer.c), so launcher processes that never touch CUDA or NCCL
 * leave nothing behind. Without RANKTRACE_DIR the library passes every call
 * through untouched.
 *
 * Real symbols are resolved at first call (Python loads libcudart long after
 * this constructor) and cached by the caller: RTLD_NEXT first, then the
 * already-loaded library by soname, which finds a libcudart that was loaded
 * into a local scope (dlopen(RTLD_LOCAL), as torch's extension modules do).
 *
 * Never exits or aborts: failures warn once and pass through. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rank.h"
#include "tracer.h"
#include "env.h"
#include "rt_util.h"

int rt_tr_off = 1;
pid_t rt_tr_pid;
int rt_tr_clock_tsc;
uint64_t rt_tr_tsc0, rt_tr_mono0, rt_tr_tsc_mult;
RT_TLS struct rt_tr_thread rt_tr_th = { .cur_id = ~0u };

static int exit_recorded;
static int warned_config;
static uint64_t stderr_dev, stderr_ino; /* what fd 2 was at start */
static bool stderr_known;

/* Warnings go to the program's stderr only while fd 2 is still the file it
 * was at start (a daemon may have closed it and opened its own data file on
 * the number), and never raise SIGPIPE (own.c). */
void rt_tr_warn_once(int *flag, const char *fmt, ...)
{
	struct rt_tr_quiet q;
	char msg[512];
	va_list ap;
	int n;

	if (__atomic_exchange_n(flag, 1, __ATOMIC_RELAXED) || !stderr_known ||
	    !rt_tr_fd_is(STDERR_FILENO, stderr_dev, stderr_ino))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rt_tr_quiet_begin(&q);
	n = dprintf(STDERR_FILENO, "ranktrace: warning: %s\n", msg);
	rt_tr_quiet_end(&q, n < 0 ? errno : 0);
}

void rt_tr_saw_device(int device)
{
	rt_tr_cur_dev = device;
}

static const char *const sonames[][3] = {
	[RT_LIB_CUDA] = { "libcudart.so.13", "libcudart.so.12", "libcudart.so" },
	[RT_LIB_NCCL] = { "libnccl.so.2", "libnccl.so", NULL },
	[RT_LIB_TRACER] = { NULL, NULL, NULL },
	[RT_LIB_DRIVER] = { "libcuda.so.1", "libcuda.so", NULL },
};

static void *self_base; /* load address of libranktrace.so */

/* The real `name`, or NULL. Never returns one of our own wrappers. */
void *rt_tr_resolve(const char *name, enum rt_lib lib)
{
	static int warned;
	void *p = dlsym(RTLD_NEXT, name);
	Dl_info info;

	for (int i = 0; !p && i < 3 && sonames[lib][i]; i++) {
		void *h = dlopen(sonames[lib][i], RTLD_NOW | RTLD_NOLOAD);

		if (h) {
			p = dlsym(h, name);
			dlclose(h);
		}
	}
	if (p && dladdr(p, &info) && info.dli_fbase == self_base)
		p = NULL;
	if (!p)
		rt_tr_warn_once(&warned, "cannot find the real %s (is its library loaded?): "
				"returning an error", name);
	return p;
}

/* ---- process end ---- */

typedef void (*exit_fn)(int);

static void record_exit(int status)
{
	if (rt_tr_off || __atomic_exchange_n(&exit_recorded, 1, __ATOMIC_RELAXED))
		return;
	/* only a process that has a trace records how it ended */
	rt_tr_cupti_flush(false);
	if (rt_tr_process_traced()) {
		rt_tr_devev_drain();
		rt_tr_ev_rt_exit(status);
		rt_tr_stream_note_stop(rt_tr_stream_tls);
		rt_tr_prep_at_exit();
	}
}

/* Record, then leave through the real `name` (exit, _exit or _Exit). */
__attribute__((noreturn)) static void exit_through(const char *name, int status)
{
	exit_fn real = (exit_fn)dlsym(RTLD_NEXT, name);

	record_exit(status);
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

	record_exit(status);
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
	record_exit(-1);
}

/* ---- fatal signals: record, then the default action as before ---- */

/* Faults, and the signals that stop a job from outside (a launcher passes
 * SIGINT, SIGTERM or SIGHUP to its ranks as torchrun does): the viewer tells
 * an interrupted job from a crash by them. */
static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
				     SIGTERM, SIGINT, SIGHUP };

static void on_fatal(int signo, siginfo_t *info, void *uc)
{
	int saved = errno;

	(void)uc;
	/* depth 1: we are inside tracer code, whose state may be half-written.
	 * A thread without a stream takes the spare one allocated ahead: opening
	 * a stream the usual way would allocate, which a signal handler must not
	 * (a deadlock is worse than a missing record). */
	if (rt_tr_depth != 1 && !rt_tr_off && rt_tr_process_traced() &&
	    ((rt_tr_stream_tls && rt_tr_stream_tls->pid == rt_tr_pid) || rt_tr_stream_for_signal())) {
		__atomic_store_n(&exit_recorded, 1, __ATOMIC_RELAXED);
		/* a launcher's SIGTERM outside CUDA: CUPTI's buffers can still be
		 * flushed; after a fault, flushing (which allocates) could deadlock */
		if (signo == SIGTERM || signo == SIGINT || signo == SIGHUP)
			rt_tr_cupti_flush(true);
		rt_tr_ev_rt_signal(signo);
	}
	errno = saved;
	/* SA_RESETHAND restored the default: a fault the kernel raised (si_code
	 * > 0) re-executes and dies with the same signal; any other signal (sent,
	 * or a terminal's SIGINT/SIGHUP, SI_KERNEL) is raised again. */
	if (!info || info->si_code <= 0 || (signo != SIGSEGV && signo != SIGBUS &&
					    signo != SIGFPE && signo != SIGILL))
		raise(signo);
}

/* At a process's first event (writer.c), and only where the program left the
 * default: never replace its handlers. */
void rt_tr_install_signal_handlers(void)
{
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
		struct sigaction old, sa = { 0 };

		if (sigaction(fatal_signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
		    (old.sa_flags & SA_SIGINFO))
			continue;
		sa.sa_sigaction = on_fatal;
		sa.sa_flags = (int)(SA_SIGINFO | SA_RESETHAND | SA_NODEFER);
		sigemptyset(&sa.sa_mask);
		sigaction(fatal_signals[i], &sa, NULL);
	}
}

/* ---- fork and configuration ---- */

static void after_fork_child(void)
{
	rt_tr_pid = getpid();
	exit_recorded = 0;
	rt_tr_stream_forget_inherited();
}

/* A size from the environment, `dflt` when unset or not understood. */
static uint64_t env_bytes(const char *name, uint64_t dflt)
{
	const char *s = getenv(name);
	uint64_t v;

	if (!s || !*s)
		return dflt;
	if (rt_parse_size(s, &v) == 0)
		return v;
	rt_tr_warn_once(&warned_config, "%s=%s not understood (e.g. 64M): using %llu", name, s,
			(unsigned long long)dflt);
	return dflt;
}

/* Size limits (chunk.c applies them) and writer switches. */
static void read_limits(void)
{
	const char *s = getenv(RT_ENV_NAME(TEST_ALLOC_FAIL)), *colon;

	rt_tr_config.max_bytes = env_bytes(RT_ENV_NAME(MAX_SIZE), RT_TR_DEFAULT_MAX_BYTES);
	rt_tr_config.ring_bytes = env_bytes(RT_ENV_NAME(RING), 0);
	rt_tr_config.min_free = getenv(RT_ENV_NAME(MIN_FREE)) && *getenv(RT_ENV_NAME(MIN_FREE))
				? (int64_t)env_bytes(RT_ENV_NAME(MIN_FREE), 0) : -1;
	s = getenv(RT_ENV_NAME(HELPER));
	rt_tr_config.no_helper = s && strcmp(s, "0") == 0;
	/* tests: chunk file number N and later fail with errno E ("N:E") */
	s = getenv(RT_ENV_NAME(TEST_ALLOC_FAIL));
	colon = s ? strchr(s, ':') : NULL;
	if (colon) {
		rt_tr_config.fail_alloc_at = strtoull(s, NULL, 10);
		rt_tr_config.fail_alloc_errno = atoi(colon + 1);
	}
}

__attribute__((constructor)) static void rt_tr_init(void)
{
	const char *dir = getenv(RT_ENV_NAME(DIR)), *s;
	struct stat st;
	Dl_info info;

	if (dladdr((void *)rt_tr_resolve, &info))
		self_base = info.dli_fbase;
	if (fstat(STDERR_FILENO, &st) == 0) {
		stderr_dev = (uint64_t)st.st_dev;
		stderr_ino = (uint64_t)st.st_ino;
		stderr_known = true;
	}
	rt_tr_pid = getpid();
	pthread_atfork(rt_tr_prep_fork_prepare, rt_tr_prep_fork_parent, after_fork_child);
	rt_tr_host_init();
	rt_inj_init(); /* a fault plan applies even when no trace can be written */
	if (!dir || !*dir)
		return; /* loaded without `ranktrace run`: inert */
	rt_tr_lttng_configure();
	if (dir[0] != '/' || strlen(dir) >= sizeof(rt_tr_config.dir) - 64) {
		rt_tr_warn_once(&warned_config, "RANKTRACE_DIR must be an absolute path shorter "
				"than 4000 bytes: tracing is off");
		return;
	}
	snprintf(rt_tr_config.dir, sizeof(rt_tr_config.dir), "%s", dir);
	s = getenv(RT_ENV_NAME(RUN_ID));
	snprintf(rt_tr_config.run_id, sizeof(rt_tr_config.run_id), "%s", s ? s : "");
	read_limits();
	rt_tr_off = 0;
}
