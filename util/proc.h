/* SPDX-License-Identifier: MIT */
/*
 * proc.h - one process runner (util/proc.c). Serves bisect/ (pip, git, a
 * candidate's set-up and traced runs) and lttng/ (the `lttng` client):
 * every command either starts runs in a process group of its own, bounded by
 * a timeout or a stop flag that kills the whole group, its output to a file
 * descriptor or captured.
 */
#ifndef RT_UTIL_PROC_H
#define RT_UTIL_PROC_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* What to run and how. Zeroed fields mean: no cwd change, output inherited,
 * stdin inherited, no timeout, SIGKILL at once, no stop flag, no hook. */
struct rt_proc {
	char *const *argv;  /* argv[0] looked up in PATH */
	const char *cwd;    /* the child enters it first (exit 126 when it cannot) */
	int out_fd;         /* stdout and stderr to this descriptor; 0 or -1: inherited */
	bool capture;       /* stdout into rt_proc_result.out (out_fd then takes stderr) */
	bool capture_err;   /* with capture: stderr into .out too */
	bool quiet;         /* stderr to /dev/null (unless captured or out_fd) */
	bool null_stdin;    /* stdin from /dev/null */
	size_t max_out;     /* keep at most max_out - 1 captured bytes (0: all) */
	double timeout;     /* seconds from the start; 0: none */
	double grace;       /* seconds between SIGTERM to the group and SIGKILL */
	volatile sig_atomic_t *stop; /* when it becomes non-zero: killed as at a timeout */
	void (*child)(void *arg); /* in the child before cwd and exec (environment) */
	void *arg;
	const char *who;    /* prefix of the child's "cannot run"/"cannot enter" line */
};

struct rt_proc_result {
	int status;     /* wait status; -1 when the command could not start */
	bool timed_out; /* killed for running over .timeout (not for .stop) */
	char *out;      /* with .capture: the output, NUL-terminated, malloc'd */
	size_t len;
};

/* Run p->argv to its end (or its kill): fork, the child in its own process
 * group, wait polling every 20 ms. At the timeout or the stop flag: SIGTERM
 * to the group, SIGKILL after p->grace; once the command is reaped, SIGKILL
 * to what is left of its group (stray children). Returns r->status. r->out
 * is set (maybe empty) with p->capture, the caller frees it. Not
 * thread-safe (fork, fflush(NULL)); allocates only for the capture. */
int rt_proc_run(const struct rt_proc *p, struct rt_proc_result *r);

/* In a forked child about to _exit or exec: under `make coverage`
 * (RT_COVERAGE) write its gcov counters, which neither would; else nothing. */
void rt_proc_coverage_dump(void);

/* A wait status as a shell would say it: the exit code, 128 + the signal,
 * or -1 (no status). */
int rt_proc_exit_code(int status);

#endif
