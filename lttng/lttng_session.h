/* SPDX-License-Identifier: MIT */
/* lttng_session.h - the LTTng session of `ranktrace run --backend lttng`
 * (lttng/, library rtlttng). Serves cli/cmd_run.c: begin before the job,
 * end after it; may print warnings and allocate; one thread. */
#ifndef RT_LTTNG_SESSION_H
#define RT_LTTNG_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RT_LTTNG_CHANNEL "ranktrace"

struct rt_lttng {
	char name[64];   /* session name: ranktrace-PID */
	pid_t sessiond;  /* the daemon we started, or 0 (one was running) */
	pid_t stopped;   /* the daemon we started and stopped */
	bool created;
	bool left_running; /* ours, left for another session using it */
	int lock;        /* shared lock of this user's runs (lttng/session.c) */
};

/* Start a session daemon if none runs for this user, create a session
 * writing to dir (absolute; `run` has written its run id to
 * dir/ranktrace-run, see viewer/read/read_bt2.h), enable the ranktrace events (and kernel events
 * when asked and allowed), start it. 0, or -1 with err set (nothing left
 * behind: session destroyed, our daemon stopped). */
int rt_lttng_begin(struct rt_lttng *l, const char *dir, bool kernel, char *err, size_t n);

/* Stop the session (waits until its data is written), read the events
 * discarded and packets lost, destroy it, stop the daemon if we started it
 * and no other session uses it.
 * 0, or -1 when a step failed (warned). */
int rt_lttng_end(struct rt_lttng *l, uint64_t *discarded, uint64_t *lost_packets);

/* LTTng-UST's fork() helper (liblttng-ust-fork.so.1, from the same package
 * as liblttng-ust): a process that forks and does not exec keeps tracing in
 * the child, with the child's vpid. Passes its path to preload(), or warns
 * once when it is not installed. */
void rt_lttng_fork_helper(void (*preload)(const char *path));

/* 0 when the LTTng provider was built next to lib (libranktrace.so). */
int rt_lttng_provider(const char *lib);

#endif
