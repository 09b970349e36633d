/* SPDX-License-Identifier: MIT */
/* keeper.c - the keeper: the process between `ranktrace run` and its
 * command, so that the job dies with run, however run dies.
 *
 * run -> keeper -> the command (a launcher) -> the ranks. The keeper is a
 * child subreaper (PR_SET_CHILD_SUBREAPER): every process of the job stays
 * below it, even a rank whose launcher died or one that left its session
 * (torchrun starts each worker in a session of its own, out of reach of a
 * process group's signal). It is told of run's death by PR_SET_PDEATHSIG,
 * SIGKILL included: it then stops the job as a scheduler does, SIGTERM to
 * every process below it (each rank records the signal: the trace reads "job
 * interrupted"), and after RT_KEEPER_GRACE_MS SIGKILL to what is left. While
 * run lives the keeper only reaps: it tells run the command's pid, then its
 * wait status (a pipe), and exits; whatever the command left running goes
 * on as it would untraced.
 *
 * What the job can see: its launcher's parent is the keeper, not run, and
 * an orphan is reaped by the keeper rather than by init while the command
 * runs. The keeper holds no descriptor of the job's (stdin, stdout, a pipe
 * a caller reads to its end), keeps the signals run forwards blocked (a
 * group's Ctrl-C is the command's to act on), allocates only when it stops
 * a job. */
#include <dirent.h>
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
#include <time.h>
#include <unistd.h>

#include "run.h"

#define RT_KEEPER_GRACE_MS 3000
/* run's death, as the keeper is told of it (a signal nobody else sends) */
#define KEEPER_DEATH_SIG (SIGRTMAX - 1)

/* The pids below pid `top` (its descendants), from /proc: a pid whose
 * parent is top or a descendant. malloc'd, *n of them; NULL when none. */
static pid_t *descendants(pid_t top, int *n)
{
	pid_t *pid = NULL, *ppid = NULL, *out = NULL;
	int count = 0, cap = 0, found = 0;
	bool *below = NULL, grew = true;
	DIR *d = opendir("/proc");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char path[64], buf[512], *rp;
		FILE *f;
		int p, pp;

		if ((p = atoi(e->d_name)) <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", p);
		f = fopen(path, "r");
		rp = f && fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		if (f)
			fclose(f);
		if (!rp || sscanf(rp + 1, " %*c %d", &pp) != 1)
			continue; /* gone, or a name that hides the field: skipped */
		if (count == cap) {
			cap = cap ? 2 * cap : 1024;
			pid = realloc(pid, (size_t)cap * sizeof(*pid));
			ppid = realloc(ppid, (size_t)cap * sizeof(*ppid));
			if (!pid || !ppid)
				break;
		}
		pid[count] = p;
		ppid[count++] = pp;
	}
	if (d)
		closedir(d);
	below = pid && ppid ? calloc((size_t)count + 1, sizeof(*below)) : NULL;
	out = below ? malloc(((size_t)count + 1) * sizeof(*out)) : NULL;
	while (out && grew) { /* parents before children, in as many passes as levels */
		grew = false;
		for (int i = 0; i < count; i++) {
			bool parent_below = ppid[i] == top;

			for (int k = 0; k < found && !parent_below; k++)
				parent_below = out[k] == ppid[i];
			if (!below[i] && parent_below && pid[i] != top) {
				below[i] = grew = true;
				out[found++] = pid[i];
			}
		}
	}
	free(pid);
	free(ppid);
	free(below);
	*n = found;
	if (!found) {
		free(out);
		return NULL;
	}
	return out;
}

/* Signal every process below the keeper; how many there were. */
static int signal_all(int sig)
{
	int n = 0;
	pid_t *p = descendants(getpid(), &n);

	for (int i = 0; i < n; i++)
		kill(p[i], sig);
	free(p);
	return n;
}

static void reap(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* run died: SIGTERM to the job, then SIGKILL to what is left after the
 * grace period; returns once nothing is left below the keeper. */
static void stop_job(void)
{
	struct timespec nap = { 0, 20 * 1000 * 1000 };

	signal_all(SIGTERM);
	for (int ms = 0; ms < RT_KEEPER_GRACE_MS; ms += 20) {
		reap();
		if (!signal_all(0))
			return;
		nanosleep(&nap, NULL);
	}
	for (int round = 0; round < 500 && signal_all(SIGKILL); round++) {
		nanosleep(&nap, NULL);
		reap();
	}
}

static void close_all_but(int keep)
{
#ifdef SYS_close_range
	if ((keep == 0 || syscall(SYS_close_range, 0u, (unsigned)keep - 1, 0u) == 0) &&
	    syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u) == 0)
		return;
#endif
	for (int fd = 0; fd < 1024; fd++)
		if (fd != keep)
			close(fd);
}

/* The keeper's life, in the child of run; never returns. */
static void keeper(char **argv, const sigset_t *cmd_mask, int wfd, pid_t run)
{
	sigset_t set;
	pid_t cmd;
	int status;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, KEEPER_DEATH_SIG);
	sigprocmask(SIG_BLOCK, &set, NULL); /* run's forwarded ones stay blocked too */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	prctl(PR_SET_PDEATHSIG, KEEPER_DEATH_SIG);
	if (getppid() != run)
		_exit(1); /* run died before the command started */
	cmd = fork();
	if (cmd == 0) {
		sigprocmask(SIG_SETMASK, cmd_mask, NULL);
		execvp(argv[0], argv);
		fprintf(stderr, "ranktrace run: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (write(wfd, &cmd, sizeof(cmd)) != sizeof(cmd) || cmd < 0)
		_exit(1); /* run reads -1: it could not be started */
	close_all_but(wfd); /* the job's descriptors are the job's */
	for (;;) {
		int sig = sigwaitinfo(&set, NULL);
		pid_t p;

		if (sig == KEEPER_DEATH_SIG && getppid() != run) {
			stop_job();
			_exit(1);
		}
		while ((p = waitpid(-1, &status, WNOHANG)) > 0)
			if (p == cmd) {
				_exit(write(wfd, &status, sizeof(status)) == sizeof(status) ? 0 : 1);
			}
	}
}

int rt_run_keeper_start(char **argv, const sigset_t *cmd_mask, struct rt_run_keeper *k)
{
	int fds[2];
	pid_t run = getpid();

	if (pipe2(fds, O_CLOEXEC) != 0)
		return -errno;
	k->keeper = fork();
	if (k->keeper < 0) {
		int e = errno;

		close(fds[0]);
		close(fds[1]);
		return -e;
	}
	if (k->keeper == 0) {
		close(fds[0]);
		keeper(argv, cmd_mask, fds[1], run);
	}
	close(fds[1]);
	k->fd = fds[0];
	if (read(k->fd, &k->cmd, sizeof(k->cmd)) != sizeof(k->cmd))
		k->cmd = -1; /* the keeper could not start it: it has exited */
	return 0;
}

int rt_run_keeper_status(struct rt_run_keeper *k, int keeper_status)
{
	int status;
	ssize_t got = read(k->fd, &status, sizeof(status));

	close(k->fd);
	k->fd = -1;
	/* no status: the keeper itself was killed (or could not fork): its own */
	return got == sizeof(status) ? status : keeper_status;
}
