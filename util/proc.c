/* SPDX-License-Identifier: MIT */
/*
 * proc.c - the process runner (proc.h): a command in a process group of its
 * own, bounded, its output to a descriptor or captured.
 *
 * The group is what makes the bound hold: a timeout or the caller's stop
 * flag (set by its SIGINT handler) sends SIGTERM to the whole group, SIGKILL
 * after the grace, and once the command itself is reaped a last SIGKILL
 * reaches whatever it left behind (ranks of a launcher, a pip build). The
 * parent polls every 20 ms (waitpid WNOHANG, or poll on the capture pipe),
 * so no SIGCHLD handler is needed and a signal handler only sets a flag.
 * Called by the CLI's processes from one thread; allocates only the
 * captured output.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"

#define POLL_MS 20
#define STRAY_S 1.0 /* after SIGKILL: how long a pipe held open elsewhere is read */

struct sink {
	char *buf;
	size_t len, cap, max;
};

#ifdef RT_COVERAGE
void __gcov_dump(void); /* libgcov */
#endif

void rt_proc_coverage_dump(void)
{
#ifdef RT_COVERAGE
	__gcov_dump();
#endif
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* In the child: own group, descriptors, the caller's hook, cwd, exec. */
static void __attribute__((noreturn)) child(const struct rt_proc *p, int pipe_w)
{
	const char *who = p->who ? p->who : "", *sep = p->who ? ": " : "";
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	setpgid(0, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (p->null_stdin && null >= 0)
		dup2(null, STDIN_FILENO);
	if (pipe_w >= 0)
		dup2(pipe_w, STDOUT_FILENO);
	else if (p->out_fd > 0)
		dup2(p->out_fd, STDOUT_FILENO);
	if (pipe_w >= 0 && p->capture_err)
		dup2(pipe_w, STDERR_FILENO);
	else if (p->out_fd > 0)
		dup2(p->out_fd, STDERR_FILENO);
	else if (p->quiet && null >= 0)
		dup2(null, STDERR_FILENO);
	if (p->child)
		p->child(p->arg);
	if (p->cwd && chdir(p->cwd) != 0) {
		fprintf(stderr, "%s%scannot enter %s: %s\n", who, sep, p->cwd, strerror(errno));
		_exit(126);
	}
	rt_proc_coverage_dump();
	execvp(p->argv[0], p->argv);
	fprintf(stderr, "%s%scannot run %s: %s\n", who, sep, p->argv[0], strerror(errno));
	_exit(127);
}

static void keep(struct sink *s, const char *b, size_t k)
{
	if (!s->buf)
		return;
	if (s->max && s->len + k > s->max - 1)
		k = s->max - 1 > s->len ? s->max - 1 - s->len : 0;
	if (s->len + k + 1 > s->cap) {
		size_t cap = s->cap;
		char *nb;

		while (s->len + k + 1 > cap)
			cap *= 2;
		nb = realloc(s->buf, cap);
		if (!nb)
			return; /* the rest is dropped: what was read stays */
		s->buf = nb;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, b, k);
	s->len += k;
	s->buf[s->len] = '\0';
}

/* Wait up to POLL_MS for output and read one chunk; false at end of file. */
static bool pump(int fd, struct sink *s)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char b[4096];
	ssize_t k;

	if (poll(&pfd, 1, POLL_MS) <= 0)
		return true; /* nothing yet, or EINTR: the caller looks at its flags */
	k = read(fd, b, sizeof(b));
	if (k > 0)
		keep(s, b, (size_t)k);
	return k > 0 || (k < 0 && (errno == EAGAIN || errno == EINTR));
}

/* Until the command is reaped and its output closed, or given up on. */
static void wait_loop(const struct rt_proc *p, pid_t pid, int fd, struct sink *s,
		      struct rt_proc_result *r)
{
	struct timespec nap = { 0, POLL_MS * 1000 * 1000 };
	double start = now(), kill_at = 0, give_up = 0;
	bool reaped = false;

	while (!reaped || fd >= 0) {
		if (fd >= 0 && !pump(fd, s)) {
			close(fd);
			fd = -1;
		} else if (fd < 0) {
			nanosleep(&nap, NULL);
		}
		if (!reaped) {
			int st;
			pid_t w = waitpid(pid, &st, WNOHANG);

			if (w == pid)
				r->status = st;
			reaped = w == pid || (w < 0 && errno != EINTR); /* not ours any more: -1 */
		}
		if (!kill_at && ((p->stop && *p->stop) || (p->timeout > 0 && now() - start > p->timeout))) {
			r->timed_out = !(p->stop && *p->stop);
			kill(-pid, p->grace > 0 ? SIGTERM : SIGKILL);
			kill_at = now() + (p->grace > 0 ? p->grace : 0);
			give_up = p->grace > 0 ? 0 : now() + STRAY_S;
		} else if (kill_at && !give_up && now() > kill_at) {
			kill(-pid, SIGKILL);
			give_up = now() + STRAY_S;
		}
		if (reaped && fd >= 0 && give_up && now() > give_up) {
			close(fd); /* a writer out of the group's reach keeps it open */
			fd = -1;
		}
	}
	kill(-pid, SIGKILL);
}

int rt_proc_run(const struct rt_proc *p, struct rt_proc_result *r)
{
	struct sink s = { .cap = 4096, .max = p->max_out };
	int fds[2] = { -1, -1 };
	pid_t pid;

	memset(r, 0, sizeof(*r));
	r->status = -1;
	if (p->capture) {
		s.buf = malloc(s.cap);
		if (!s.buf || pipe2(fds, O_CLOEXEC) != 0) {
			free(s.buf);
			return -1;
		}
		s.buf[0] = '\0';
		r->out = s.buf;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		child(p, fds[1]);
	if (fds[1] >= 0)
		close(fds[1]);
	if (pid < 0) {
		if (fds[0] >= 0)
			close(fds[0]);
		return -1;
	}
	setpgid(pid, pid); /* also here: no window where a kill of the group misses it */
	if (fds[0] >= 0)
		fcntl(fds[0], F_SETFL, O_NONBLOCK);
	wait_loop(p, pid, fds[0], &s, r);
	r->out = s.buf;
	r->len = s.len;
	return r->status;
}

int rt_proc_exit_code(int status)
{
	if (status < 0)
		return -1;
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}
