/* SPDX-License-Identifier: MIT */
/* test_proc.c - the process runner (util/proc.c) that bisect and the LTTng
 * session use: output captured (bounded) or sent to a descriptor, exit
 * codes as a shell says them, a timeout or a stop flag kills the whole
 * process group (a child that ignores SIGTERM too, after the grace), a
 * command that cannot run or cannot enter its directory says so. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"
#include "proc_alive.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* sh -c SCRIPT, captured; returns the exit code. */
static int sh(const char *script, struct rt_proc *p, struct rt_proc_result *r)
{
	char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };

	p->argv = argv;
	rt_proc_run(p, r);
	return rt_proc_exit_code(r->status);
}

Test(proc, captures_stdout_and_the_exit_code)
{
	struct rt_proc p = { .capture = true, .timeout = 30 };
	struct rt_proc_result r;

	cr_assert_eq(sh("echo hello; echo oops >&2; exit 3", &p, &r), 3);
	cr_assert_str_eq(r.out, "hello\n");
	cr_assert_eq(r.len, 6);
	cr_assert_not(r.timed_out);
	free(r.out);
	p.capture_err = true;
	cr_assert_eq(sh("echo a; echo b >&2", &p, &r), 0);
	cr_assert_str_eq(r.out, "a\nb\n");
	free(r.out);
}

Test(proc, capture_keeps_at_most_max_out_minus_one_bytes)
{
	struct rt_proc p = { .capture = true, .max_out = 11, .timeout = 30 };
	struct rt_proc_result r;

	cr_assert_eq(sh("i=0; while [ $i -lt 20000 ]; do echo 0123456789; i=$((i+1)); done", &p, &r), 0);
	cr_assert_str_eq(r.out, "0123456789");
	p.max_out = 0;
	free(r.out);
	cr_assert_eq(sh("i=0; while [ $i -lt 20000 ]; do echo 0123456789; i=$((i+1)); done", &p, &r), 0);
	cr_assert_eq(r.len, 220000, "all of it without max_out (%zu)", r.len);
	free(r.out);
}

Test(proc, output_goes_to_out_fd)
{
	char path[] = "/tmp/rt-test-proc-XXXXXX", buf[64] = "";
	int fd = mkstemp(path);
	struct rt_proc p = { .out_fd = fd, .timeout = 30 };
	struct rt_proc_result r;

	cr_assert(fd >= 0);
	cr_assert_eq(sh("echo out; echo err >&2", &p, &r), 0);
	cr_assert_null(r.out);
	cr_assert_eq(pread(fd, buf, sizeof(buf) - 1, 0), 8);
	cr_assert_str_eq(buf, "out\nerr\n");
	close(fd);
	unlink(path);
}

Test(proc, a_timeout_kills_the_whole_group)
{
	struct rt_proc p = { .capture = true, .timeout = 0.3, .grace = 2 };
	struct rt_proc_result r;
	double t0 = now();
	int code = sh("sleep 30 & echo $!; wait", &p, &r);

	cr_assert(r.timed_out);
	cr_assert_eq(code, 128 + SIGTERM);
	cr_assert_lt(now() - t0, 5, "the capture ended with the group, not with sleep");
	cr_assert(atoi(r.out) > 0, "%s", r.out);
	/* signalled, it dies when next scheduled: on a loaded host that may be
	 * a moment after the runner returns (seen in CI) */
	for (int i = 0; i < 300 && alive(atoi(r.out)); i++)
		usleep(10000);
	cr_assert_not(alive(atoi(r.out)), "sleep %d outlived its group by 3 s", atoi(r.out));
	free(r.out);
}

Test(proc, sigterm_ignored_means_sigkill_after_the_grace)
{
	struct rt_proc p = { .timeout = 0.2, .grace = 0.5 };
	struct rt_proc_result r;
	double t0 = now();
	int code = sh("trap '' TERM; sleep 30", &p, &r);

	cr_assert(r.timed_out);
	cr_assert_eq(code, 128 + SIGKILL);
	cr_assert_geq(now() - t0, 0.7);
	cr_assert_lt(now() - t0, 10);
}

static volatile sig_atomic_t stop;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

Test(proc, the_stop_flag_kills_like_a_timeout_but_is_no_timeout)
{
	struct rt_proc p = { .stop = &stop, .grace = 2, .timeout = 30 };
	struct rt_proc_result r;
	struct itimerval it = { .it_value = { 0, 200 * 1000 } };
	struct sigaction sa = { .sa_handler = on_alarm };

	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	cr_assert_eq(sh("sleep 30", &p, &r), 128 + SIGTERM);
	cr_assert_not(r.timed_out);
}

static void set_var(void *arg)
{
	setenv("RT_TEST_VAR", arg, 1);
}

Test(proc, the_hook_cwd_and_stdin_reach_the_child)
{
	struct rt_proc p = { .capture = true, .cwd = "/", .null_stdin = true, .timeout = 30,
			     .child = set_var, .arg = "from the hook" };
	struct rt_proc_result r;

	cr_assert_eq(sh("printf '%s|%s|' \"$RT_TEST_VAR\" \"$(pwd)\"; cat; echo end", &p, &r), 0);
	cr_assert_str_eq(r.out, "from the hook|/|end\n");
	free(r.out);
}

Test(proc, what_cannot_run_or_cannot_enter_says_so)
{
	char *argv[] = { "/nonexistent/rt-no-such-program", NULL };
	struct rt_proc p = { .argv = argv, .capture = true, .capture_err = true,
			     .timeout = 30, .who = "tester" };
	struct rt_proc_result r;

	cr_assert_eq(rt_proc_exit_code(rt_proc_run(&p, &r)), 127);
	cr_assert_str_eq(r.out, "tester: cannot run /nonexistent/rt-no-such-program: No such file or "
			 "directory\n");
	free(r.out);
	p.who = NULL;
	p.cwd = "/nonexistent";
	cr_assert_eq(rt_proc_exit_code(rt_proc_run(&p, &r)), 126);
	cr_assert_str_eq(r.out, "cannot enter /nonexistent: No such file or directory\n");
	free(r.out);
	cr_assert_eq(rt_proc_exit_code(-1), -1);
}
