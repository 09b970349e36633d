/* SPDX-License-Identifier: MIT */
/* rt_launch.c - bin/rt-launch: start N rank processes the way torchrun does.
 *
 * Each rank gets torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE,
 * LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...), runs in its own process
 * group, and has every line of its stdout/stderr prefixed "[rankN]:" on ours.
 * When a rank fails (non-zero exit or signal), the others get what is left of
 * a monitor interval to finish on their own (torchrun's agent notices failures
 * at such an interval), then SIGTERM, then SIGKILL after a grace period; the exit status is the first failure's
 * (128+signal for a signal), 0 when every rank succeeded. SIGHUP, SIGTERM or
 * SIGINT to rt-launch stops the ranks as torchrun's agent does: that signal
 * to each rank's group, SIGKILL after the grace period, exit 128+signal;
 * never a launcher gone with its ranks left running. */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 1024
#define LINE_MAX_BYTES 65536

struct stream {
	int fd;
	FILE *out;
	char buf[LINE_MAX_BYTES];
	size_t len;
};

struct rank_proc {
	pid_t pid;
	bool running;
	int status;
	struct stream s[2];
};

static struct rank_proc *procs;
static int nprocs;
static volatile sig_atomic_t got_signal;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rt-launch -n N [--master-port PORT] [--monitor-interval SEC]\n"
		"                 [--grace SEC] [--] CMD [ARG...]\n"
		"\n"
		"Start N processes of CMD with torchrun's environment: RANK and LOCAL_RANK\n"
		"(0..N-1), WORLD_SIZE and LOCAL_WORLD_SIZE (N), MASTER_ADDR (127.0.0.1),\n"
		"MASTER_PORT (a free port unless given or already set), GROUP_RANK=0.\n"
		"Output lines are prefixed \"[rankN]:\". If a rank fails, the others may\n"
		"still finish within --monitor-interval seconds (default 1, as torchrun's\n"
		"agent polls its workers), then get SIGTERM and, after --grace seconds\n"
		"(default 5), SIGKILL. SIGHUP, SIGTERM or SIGINT to rt-launch is passed to\n"
		"every rank (SIGKILL after --grace), as torchrun does.\n"
		"\n"
		"Exit status: 0 if every rank exited 0; otherwise the first failing rank's\n"
		"status (128+signal if it was killed by a signal); 128+signal when stopped\n"
		"by a signal; 2 on a usage error.\n"
		"\n"
		"example: rt-launch -n 4 fsdp_mini --trainer-version 4.52.4\n");
}

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = 29500;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static double now(struct timespec *ts)
{
	return (double)ts->tv_sec + (double)ts->tv_nsec * 1e-9;
}

static void on_signal(int sig)
{
	got_signal = sig;
}

static void emit(struct stream *s, int rank, const char *line, size_t n)
{
	fprintf(s->out, "[rank%d]:%.*s\n", rank, (int)n, line);
	fflush(s->out);
}

/* Read what is there; print complete lines; at EOF print the rest. */
static void drain(struct rank_proc *p, int rank, int which)
{
	struct stream *s = &p->s[which];
	ssize_t n = read(s->fd, s->buf + s->len, sizeof(s->buf) - s->len);
	size_t start = 0;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		if (s->len)
			emit(s, rank, s->buf, s->len);
		close(s->fd);
		s->fd = -1;
		s->len = 0;
		return;
	}
	s->len += (size_t)n;
	for (size_t i = 0; i < s->len; i++) {
		if (s->buf[i] != '\n')
			continue;
		emit(s, rank, s->buf + start, i - start);
		start = i + 1;
	}
	memmove(s->buf, s->buf + start, s->len - start);
	s->len -= start;
	if (s->len == sizeof(s->buf)) { /* a very long line: flush it as is */
		emit(s, rank, s->buf, s->len);
		s->len = 0;
	}
}

static void signal_all(int sig)
{
	for (int r = 0; r < nprocs; r++)
		if (procs[r].running)
			kill(-procs[r].pid, sig);
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

static pid_t spawn(int rank, int port, char **cmd, int pipes[2][2])
{
	char buf[32];
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	setpgid(0, 0);
	dup2(pipes[0][1], STDOUT_FILENO);
	dup2(pipes[1][1], STDERR_FILENO);
	for (int i = 0; i < 2; i++) {
		close(pipes[i][0]);
		close(pipes[i][1]);
	}
	snprintf(buf, sizeof(buf), "%d", rank);
	setenv("RANK", buf, 1);
	setenv("LOCAL_RANK", buf, 1);
	snprintf(buf, sizeof(buf), "%d", nprocs);
	setenv("WORLD_SIZE", buf, 1);
	setenv("LOCAL_WORLD_SIZE", buf, 1);
	setenv("GROUP_RANK", "0", 1);
	setenv("ROLE_RANK", getenv("RANK"), 1);
	setenv("MASTER_ADDR", "127.0.0.1", 0);
	snprintf(buf, sizeof(buf), "%d", port);
	setenv("MASTER_PORT", buf, 1);
	execvp(cmd[0], cmd);
	fprintf(stderr, "rt-launch: cannot run %s: %s\n", cmd[0], strerror(errno));
	_exit(127);
}

/* Start every rank; 0, or -1 (the started ones killed). */
static int start_ranks(int port, char **cmd)
{
	for (int r = 0; r < nprocs; r++) {
		int pipes[2][2];

		if (pipe(pipes[0]) || pipe(pipes[1])) {
			perror("rt-launch: pipe");
			signal_all(SIGKILL);
			return -1;
		}
		procs[r].pid = spawn(r, port, cmd, pipes);
		if (procs[r].pid < 0) {
			perror("rt-launch: fork");
			signal_all(SIGKILL);
			return -1;
		}
		setpgid(procs[r].pid, procs[r].pid);
		procs[r].running = true;
		for (int i = 0; i < 2; i++) {
			close(pipes[i][1]);
			procs[r].s[i].fd = pipes[i][0];
			procs[r].s[i].out = i ? stderr : stdout;
		}
	}
	return 0;
}

/* What the loop knows: the first failure, when to signal the ranks. */
struct monitor {
	int first_fail, result, running, stop_sig;
	double grace, interval, term_at, kill_at;
};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return now(&ts);
}

/* Output of the ranks, for up to 100 ms; false when no pipe is open. */
static bool pump_output(void)
{
	struct pollfd pfd[2 * MAX_PROCS];
	int idx[2 * MAX_PROCS], n = 0;

	for (int r = 0; r < nprocs; r++)
		for (int i = 0; i < 2; i++)
			if (procs[r].s[i].fd >= 0) {
				pfd[n] = (struct pollfd){ .fd = procs[r].s[i].fd, .events = POLLIN };
				idx[n++] = r * 2 + i;
			}
	if (n == 0) {
		usleep(20000); /* ranks still running without output pipes */
		return false;
	}
	if (poll(pfd, (nfds_t)n, 100) > 0)
		for (int k = 0; k < n; k++)
			if (pfd[k].revents)
				drain(&procs[idx[k] / 2], idx[k] / 2, idx[k] % 2);
	return true;
}

/* Ranks that ended; the first failure starts the monitor interval. */
static void reap(struct monitor *m)
{
	pid_t pid;
	int status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (int r = 0; r < nprocs; r++) {
			if (procs[r].pid != pid || !procs[r].running)
				continue;
			procs[r].running = false;
			procs[r].status = status;
			m->running--;
			if (exit_code(status) == 0 || m->first_fail >= 0)
				continue;
			m->first_fail = r;
			m->result = exit_code(status);
			fprintf(stderr, "rt-launch: rank %d failed (%s %d)%s\n", r,
				WIFSIGNALED(status) ? "signal" : "exit status",
				WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
				m->running > 0 ? "; stopping the other ranks" : "");
			m->term_at = mono() + m->interval;
		}
	}
}

/* A signal to us: passed to the ranks at once (torchrun's death signal). */
static void stop_on_signal(struct monitor *m)
{
	if (!got_signal || m->first_fail >= 0)
		return;
	m->first_fail = nprocs;
	m->result = 128 + got_signal;
	m->stop_sig = got_signal;
	m->term_at = 1; /* at once */
}

static void escalate(struct monitor *m)
{
	if (m->term_at > 0 && m->running > 0 && mono() >= m->term_at) {
		signal_all(m->stop_sig);
		m->term_at = 0;
		m->kill_at = mono() + m->grace;
	}
	if (m->kill_at > 0 && m->running > 0 && mono() >= m->kill_at) {
		signal_all(SIGKILL);
		m->kill_at = 0;
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "nproc", required_argument, NULL, 'n' },
		{ "nproc-per-node", required_argument, NULL, 'n' },
		{ "master-port", required_argument, NULL, 'p' },
		{ "grace", required_argument, NULL, 'g' },
		{ "monitor-interval", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct monitor m = { .first_fail = -1, .stop_sig = SIGTERM, .grace = 5, .interval = 1 };
	int c, port = 0;

	while ((c = getopt_long(argc, argv, "+n:p:g:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': nprocs = atoi(optarg); break;
		case 'p': port = atoi(optarg); break;
		case 'g': m.grace = atof(optarg); break;
		case 'm': m.interval = atof(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (nprocs < 1 || nprocs > MAX_PROCS || optind >= argc) {
		fprintf(stderr, "rt-launch: %s\n", optind >= argc ? "no command given"
				: "-n must be between 1 and 1024");
		usage(stderr);
		return 2;
	}
	if (!port && getenv("MASTER_PORT"))
		port = atoi(getenv("MASTER_PORT"));
	if (!port)
		port = free_port();
	procs = calloc((size_t)nprocs, sizeof(*procs));
	if (!procs)
		return 1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, SIG_IGN);
	if (start_ranks(port, argv + optind) != 0)
		return 1;
	m.running = nprocs;
	while (pump_output() || m.running > 0) {
		reap(&m);
		stop_on_signal(&m);
		escalate(&m);
	}
	return m.result;
}
