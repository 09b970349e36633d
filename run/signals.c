/* SPDX-License-Identifier: MIT */
/* signals.c - `ranktrace run`'s command and the signals sent to run:
 * each reaches the command once.
 *
 * A signal sent to run's process group (Ctrl-C or a hangup on the terminal,
 * `kill -TERM -PGID`, timeout(1)) already reaches the command, which shares
 * the group: forwarding it again delivered it twice, and programs that take
 * a second SIGINT or SIGTERM as "force quit" behaved differently traced. A
 * signal sent to run alone (kill PID, a container's stop) must be forwarded.
 * siginfo cannot tell `kill -TERM PID` from `kill -TERM -PGID` (both
 * SI_USER), so a sentinel does: a process of run's group that keeps the
 * forwarded signals blocked and does nothing. A group delivery queues the
 * signal to every member within the sender's kill(), before run can look, so
 * when run takes a signal that the sentinel also holds pending (its
 * /proc/PID/status), the command got it too: not forwarded, and the sentinel
 * is replaced by a fresh one. A signal the sentinel does not hold was sent to
 * run alone: forwarded. A command that left run's group gets every signal
 * forwarded. Without a sentinel (fork failed) a terminal's signal (SI_KERNEL)
 * is taken for a group delivery and a kill()'s is forwarded.
 *
 * run blocks the signals and takes them with sigwaitinfo, in one loop with
 * the command's exit: no handler. The command (started by the keeper,
 * keeper.c, which stops the job if run dies) and the sentinel start with
 * run's own mask; the sentinel dies with run (PR_SET_PDEATHSIG). One
 * thread; allocates nothing. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run.h"

static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP };

/* The sentinel: no descriptors, the signals blocked, waiting to be killed. */
static pid_t sentinel_start(void)
{
	pid_t parent = getpid(), pid = fork();

	if (pid != 0)
		return pid; /* -1: none, run judges by si_code */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 0u, ~0u, 0u) != 0)
#endif
		for (int fd = 0; fd < 1024; fd++)
			close(fd);
	for (;;)
		pause(); /* the forwarded signals stay pending: run reads them */
}

static void sentinel_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* Does process pid hold signal sig pending (ShdPnd or SigPnd)? */
static bool holds_pending(pid_t pid, int sig)
{
	char path[64], buf[2048], *p;
	unsigned long long mask = 0;
	int fd;
	ssize_t k;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	k = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[k > 0 ? k : 0] = '\0';
	for (const char *key = "SigPnd:"; key; key = strcmp(key, "SigPnd:") ? NULL : "ShdPnd:") {
		p = strstr(buf, key);
		if (p)
			mask |= strtoull(p + 7, NULL, 16);
	}
	return mask & (1ull << (sig - 1));
}

/* Did the command get sig from the same delivery as run? */
static bool child_got_it(pid_t child, pid_t *sentinel, int sig, const siginfo_t *si)
{
	bool group;

	if (getpgid(child) != getpgrp())
		return false; /* it left run's group: only run was reached */
	if (*sentinel <= 0)
		return si->si_code == SI_KERNEL; /* the terminal signals a group */
	group = holds_pending(*sentinel, sig);
	if (!group) { /* a sender still between members of a group: look again */
		usleep(5000);
		group = holds_pending(*sentinel, sig);
	}
	if (group) { /* consumed: a fresh sentinel for the next signal */
		sentinel_stop(*sentinel);
		*sentinel = sentinel_start();
	}
	return group;
}

int rt_run_child(char **argv)
{
	struct rt_run_keeper k;
	sigset_t set, old;
	pid_t sentinel;
	int status = 0, kstatus = 0;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&set, forwarded[i]);
	sigaddset(&set, SIGCHLD);
	fflush(NULL);
	sigprocmask(SIG_BLOCK, &set, &old);
	sentinel = sentinel_start();
	if (rt_run_keeper_start(argv, &old, &k) != 0 || k.cmd < 0) {
		perror("ranktrace run: fork");
		if (k.keeper > 0)
			while (waitpid(k.keeper, NULL, 0) < 0 && errno == EINTR)
				;
		sentinel_stop(sentinel);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return -1;
	}
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);

		if (sig == SIGCHLD || sig < 0) {
			if (waitpid(k.keeper, &kstatus, WNOHANG) == k.keeper)
				break;
			continue;
		}
		if (!child_got_it(k.cmd, &sentinel, sig, &si))
			kill(k.cmd, sig);
	}
	status = rt_run_keeper_status(&k, kstatus);
	sentinel_stop(sentinel);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return status;
}
