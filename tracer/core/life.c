/* SPDX-License-Identifier: MIT */
/* life.c - the life of a traced process: its first event (set-up), how it
 * ended (exit status, fatal signal), fork.
 *
 * Files appear at a process's first event, so launcher processes that never
 * touch CUDA or NCCL leave nothing behind: the first event of the process
 * makes its rank directory and metadata, calibrates the clock, installs the
 * fatal-signal handlers and starts the store's helper, under the store's
 * lock (rt_tr_lock, which fork() also holds: a child never inherits a
 * half-done set-up). How the process ended is recorded once: by exit(),
 * _exit(), a return from main or the library's unload (interpose/init.c), or
 * by a fatal signal's handler here.
 *
 * Device timing (device/) and the injector sit above this room and register
 * what they must do when the process ends (rt_tr_on_end_*): core never calls
 * up. Never exits
 * or aborts: failures warn once and pass through. */
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "identity.h"

static int exit_recorded;
static void (*end_flush)(bool from_signal); /* CUPTI's activity buffers */
static void (*end_drain)(void);             /* CUDA events in flight */
static void (*end_record)(bool);            /* the fault plan's rules */

void rt_tr_on_end_flush(void (*flush)(bool from_signal))
{
	__atomic_store_n(&end_flush, flush, __ATOMIC_RELEASE);
}

void rt_tr_on_end_drain(void (*drain)(void))
{
	__atomic_store_n(&end_drain, drain, __ATOMIC_RELEASE);
}

void rt_tr_on_end_record(void (*record)(bool from_signal))
{
	__atomic_store_n(&end_record, record, __ATOMIC_RELEASE);
}

static void record_at_end(bool from_signal)
{
	void (*r)(bool) = __atomic_load_n(&end_record, __ATOMIC_ACQUIRE);

	if (r)
		r(from_signal);
}

static void flush_at_end(bool from_signal)
{
	void (*f)(bool) = __atomic_load_n(&end_flush, __ATOMIC_ACQUIRE);

	if (f)
		f(from_signal);
}

/* ---- process end ---- */

void rt_tr_record_exit(int status)
{
	void (*drain)(void) = __atomic_load_n(&end_drain, __ATOMIC_ACQUIRE);
	/* exit() from a signal handler that interrupted this thread while its
	 * stream switched packets or files (holding its next file, BUSY):
	 * recording now would wait on itself for ever. The end goes unrecorded
	 * on this thread; a hang is worse. */
	bool record = !(rt_tr_depth == 1 && rt_tr_stream_switching(rt_tr_stream_tls));

	if (rt_tr_off || __atomic_exchange_n(&exit_recorded, 1, __ATOMIC_RELAXED))
		return;
	if (record)
		flush_at_end(false);
	/* only a process that has a trace records how it ended */
	if (!rt_tr_process_traced())
		return;
	if (record) {
		if (drain)
			drain();
		record_at_end(false);
		rt_tr_ev_rt_exit(status);
		rt_tr_stream_note_stop(rt_tr_stream_tls);
	}
	rt_tr_prep_at_exit();
}

/* ---- fatal signals: record, then the default action as before ---- */

/* Faults, and the signals that stop a job from outside (a launcher passes
 * SIGINT, SIGTERM or SIGHUP to its ranks as torchrun does): the viewer tells
 * an interrupted job from a crash by them. */
static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
				     SIGTERM, SIGINT, SIGHUP };

/* A signal that stops the job from outside: a scheduler's SIGTERM to every
 * process of the job and the launcher's forward of it reach a rank
 * microseconds apart. */
static bool is_stop_signal(int signo)
{
	return signo == SIGTERM || signo == SIGINT || signo == SIGHUP;
}

/* Set by the first stop signal's handler: the process is ending (since
 * stop_began, CLOCK_MONOTONIC ns). */
static int stopping;
static int64_t stop_began;

#define RT_STOP_GRACE_NS 1000000000LL /* then a stop signal kills at once */

static int64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe */
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The default action of stop signal signo, now. */
static void stop_default(int signo)
{
	struct sigaction dfl = { 0 };

	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(signo, &dfl, NULL);
}

static void on_fatal(int signo, siginfo_t *info, void *uc)
{
	int saved = errno;

	(void)uc;
	/* A stop signal while the first is being recorded (this thread's, or
	 * another's): the first handler ends the process once its record is
	 * written. Taking the default action here (what SA_RESETHAND would do)
	 * killed the process before that record, and the rank read "died inside
	 * a call" among ranks killed by SIGTERM (test_run_signals in CI). */
	if (is_stop_signal(signo) && __atomic_exchange_n(&stopping, 1, __ATOMIC_ACQ_REL)) {
		/* ...unless the record has taken a second already (a handler
		 * stuck in a flush): a user's second Ctrl-C still kills */
		int64_t began = __atomic_load_n(&stop_began, __ATOMIC_ACQUIRE);

		if (began && monotonic_ns() - began > RT_STOP_GRACE_NS) {
			stop_default(signo);
			raise(signo);
		}
		errno = saved;
		return;
	}
	if (is_stop_signal(signo))
		__atomic_store_n(&stop_began, monotonic_ns(), __ATOMIC_RELEASE);
	/* depth 1: we are inside tracer code, whose state may be half-written.
	 * A thread without a stream takes the spare one allocated ahead: opening
	 * a stream the usual way would allocate, which a signal handler must not
	 * (a deadlock is worse than a missing record). */
	if (rt_tr_depth != 1 && !rt_tr_off && rt_tr_process_traced() &&
	    ((rt_tr_stream_tls && rt_tr_stream_tls->pid == rt_tr_pid) || rt_tr_stream_for_signal())) {
		__atomic_store_n(&exit_recorded, 1, __ATOMIC_RELAXED);
		/* a launcher's SIGTERM outside CUDA: CUPTI's buffers can still be
		 * flushed; after a fault, flushing (which allocates) could deadlock */
		if (is_stop_signal(signo))
			flush_at_end(true);
		record_at_end(true);
		rt_tr_ev_rt_signal(signo);
	}
	errno = saved;
	if (is_stop_signal(signo)) /* no SA_RESETHAND: the default now */
		stop_default(signo);
	/* SA_RESETHAND (faults) or the line above restored the default: a fault
	 * the kernel raised (si_code > 0) re-executes and dies with the same
	 * signal; any other signal (sent, or a terminal's SIGINT/SIGHUP,
	 * SI_KERNEL) is raised again. */
	if (!info || info->si_code <= 0 || (signo != SIGSEGV && signo != SIGBUS &&
					    signo != SIGFPE && signo != SIGILL))
		raise(signo);
}

/* At a process's first event, and only where the program left the default:
 * never replace its handlers. */
static void install_signal_handlers(void)
{
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
		struct sigaction old, sa = { 0 };

		if (sigaction(fatal_signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
		    (old.sa_flags & SA_SIGINFO))
			continue;
		sa.sa_sigaction = on_fatal;
		/* a fault resets at once (a second fault dies as untraced); a
		 * stop signal keeps the handler while its record is written,
		 * and blocks the stop signals on its thread meanwhile: a flood
		 * of them (a launcher forwarding in a loop) would otherwise nest
		 * handler on handler, the record would take past the grace, and
		 * the next one kill the rank before it (CI, test_run_signals).
		 * Its own raise() is then taken as the handler returns. Not for
		 * faults: a SIGTERM pending at their return would end the
		 * process before the fault re-executes, by the wrong signal. */
		sa.sa_flags = (int)(SA_SIGINFO | SA_NODEFER |
				    (is_stop_signal(fatal_signals[i]) ? 0 : SA_RESETHAND));
		sigemptyset(&sa.sa_mask);
		if (is_stop_signal(fatal_signals[i])) {
			sigaddset(&sa.sa_mask, SIGTERM);
			sigaddset(&sa.sa_mask, SIGINT);
			sigaddset(&sa.sa_mask, SIGHUP);
		}
		sigaction(fatal_signals[i], &sa, NULL);
	}
}

/* ---- the first event ---- */

/* Once per process: rank identity, DIR/rank-NNNNN, metadata, clock, signal
 * handlers, the helper thread. Under rt_tr_lock. 0 or -errno. */
static int process_setup(void)
{
	int err;

	if (rt_tr_process_traced())
		return 0;
	if (!rt_tr_rank.dir[0]) { /* a forked child keeps its parent's identity */
		rt_tr_rank_init();
		rt_tr_test_host_init(rt_tr_rank.rank); /* before the clock is calibrated */
	}
	/* All processes of one rank share its trace, so the uuid is derived from
	 * the run and the rank, not drawn at random. */
	if (rt_tr_lttng_wanted) { /* identity as an event, no files (store/lttng_sink.c) */
		err = rt_tr_lttng_setup();
	} else {
		struct rt_tr_quiet q;

		rt_tr_quiet_begin(&q); /* rank.c writes the run id: no SIGXFSZ (base/own.c) */
		err = rt_tr_rank_dir_create(rt_tr_trace_uuid);
		rt_tr_quiet_end(&q, -err);
		if (!err)
			err = rt_tr_write_metadata(rt_tr_rank.dir, false);
	}
	if (err)
		return err;
	rt_tr_calibrate_clock();
	install_signal_handlers();
	rt_tr_store_ready();
	if (!rt_tr_lttng_wanted)
		rt_tr_prep_start();
	return 0;
}

struct rt_tr_stream *rt_tr_thread_open(void)
{
	int saved = errno, err;

	pthread_mutex_lock(&rt_tr_lock);
	err = process_setup();
	pthread_mutex_unlock(&rt_tr_lock);
	errno = saved;
	return rt_tr_stream_open(err);
}

/* ---- fork ---- */

void rt_tr_after_fork_child(void)
{
	rt_tr_pid = getpid();
	exit_recorded = 0;
	stopping = 0;
	stop_began = 0;
	rt_tr_stream_forget_inherited();
}
