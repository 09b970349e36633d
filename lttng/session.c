/* SPDX-License-Identifier: MIT */
/* session.c - `ranktrace run --backend lttng`: the LTTng session around
 * the traced command (lttng_session.h; cli/cmd_run.c calls it).
 *
 * Drives LTTng through its own command-line client (`lttng`, machine
 * interface where output is read) and, when none is running for this user,
 * starts a session daemon as our child (`lttng-sessiond --sig-parent`, which
 * signals readiness; no root needed: a user's daemon lives in $LTTNG_HOME or
 * $HOME/.lttng). The session writes to DIR, records the `ranktrace:*` events
 * in one per-UID channel with the vpid and vtid contexts (the viewer tells
 * processes apart by them), and, with --lttng-kernel, scheduler and process
 * events of the kernel when this user may record them.
 *
 * Every process started here is bounded: each `lttng` command by a timeout
 * (run by util/proc.c in a process group of its own, killed with it after), the daemon we started by an explicit stop (SIGTERM,
 * then SIGKILL) when `run` ends -- unless another session (another run of
 * this user, started meanwhile) still uses it: then it is left running and
 * `run` says so. A daemon that was already running is never touched. Only
 * the CLI runs this: it may print and allocate. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lttng_session.h"
#include "env.h"
#include "proc.h"

#define CMD_TIMEOUT_S 60   /* `lttng stop` waits for the consumer to drain */
#define SESSIOND_READY_S 20
#define SESSIOND_STOP_S 10
#define MAX_ARGS 24

static const char *lttng_bin(void)
{
	const char *p = getenv(RT_ENV_NAME(LTTNG));

	return p && *p ? p : "lttng";
}

/* Wait for pid until deadline (CLOCK_MONOTONIC seconds); 0 and *status when
 * it ended, -1 when it is still running at the deadline. */
static int wait_until(pid_t pid, int *status, double deadline)
{
	for (;;) {
		struct timespec ts, nap = { 0, 20 * 1000 * 1000 };
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return 0; /* not our child any more */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if ((double)ts.tv_sec + ts.tv_nsec / 1e9 > deadline)
			return -1;
		nanosleep(&nap, NULL);
	}
}

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void untraced(void *arg)
{
	(void)arg;
	unsetenv("LD_PRELOAD"); /* the client is not traced */
}

/* Run `lttng ARGS...` (NULL-terminated), its stdout and stderr into out
 * (NUL-terminated, truncated). Returns its exit status, 124 on timeout,
 * 127 when it cannot be started. */
static int run_lttng(char *out, size_t n, const char *arg, ...)
{
	const char *argv[MAX_ARGS];
	struct rt_proc p = { .argv = (char *const *)argv, .out_fd = -1, .capture = true,
			     .capture_err = true, .max_out = n, .timeout = CMD_TIMEOUT_S,
			     .child = untraced };
	struct rt_proc_result r;
	int argc = 0;
	va_list ap;

	argv[argc++] = lttng_bin();
	va_start(ap, arg);
	for (const char *a = arg; a && argc < MAX_ARGS - 1; a = va_arg(ap, const char *))
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	rt_proc_run(&p, &r);
	snprintf(out, n, "%s", r.out ? r.out : "");
	free(r.out);
	if (r.timed_out)
		return 124;
	return r.status < 0 ? 127 : rt_proc_exit_code(r.status);
}

/* The first line of a command's output, for messages. */
static const char *first_line(char *s)
{
	char *nl;

	while (*s == '\n')
		s++;
	nl = strchr(s, '\n');
	if (nl)
		*nl = '\0';
	return *s ? s : "no message";
}

/* The daemon a run started, for the last run using it to stop (a run that
 * started one may leave it to another run still using it). */
static void pidfile_path(char *out, size_t n)
{
	snprintf(out, n, "/tmp/ranktrace-lttng-%u.pid", (unsigned)getuid());
}

static void pidfile_write(pid_t pid)
{
	char path[128];
	int fd;

	pidfile_path(path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		dprintf(fd, "%d\n", (int)pid);
		close(fd);
	}
}

/* The daemon the pid file names, if it is still this user's lttng-sessiond. */
static pid_t pidfile_daemon(void)
{
	char path[128], comm[64] = "";
	struct stat st;
	int pid = 0;
	FILE *f;

	pidfile_path(path, sizeof(path));
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%d", &pid) != 1 || pid <= 0)
		pid = 0;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = pid ? fopen(path, "re") : NULL;
	if (f) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (strncmp(comm, "lttng-sessiond", 14) != 0 || stat(path, &st) != 0 || st.st_uid != getuid())
		return 0;
	return (pid_t)pid;
}

/* Stop a daemon that is not our child (another run started it). */
static void stop_other(pid_t pid)
{
	struct timespec nap = { 0, 50 * 1000 * 1000 };
	double deadline = mono_now() + SESSIOND_STOP_S;

	kill(pid, SIGTERM);
	while (kill(pid, 0) == 0 && mono_now() < deadline)
		nanosleep(&nap, NULL);
	if (kill(pid, 0) == 0)
		kill(pid, SIGKILL);
}

/* Start a session daemon as our child; wait for its readiness signal. */
static int start_sessiond(struct rt_lttng *l, bool kernel, char *err, size_t n)
{
	sigset_t set, old;
	siginfo_t si;
	struct timespec wait = { SESSIOND_READY_S, 0 };
	int status;
	pid_t pid;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		sigprocmask(SIG_SETMASK, &old, NULL);
		setsid(); /* not in the job's process group: ^C reaches the job, not it */
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		unsetenv("LD_PRELOAD");
		if (kernel)
			execlp("lttng-sessiond", "lttng-sessiond", "--sig-parent", (char *)NULL);
		else
			execlp("lttng-sessiond", "lttng-sessiond", "--sig-parent", "--no-kernel",
			       (char *)NULL);
		_exit(127);
	}
	if (pid < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		snprintf(err, n, "cannot start lttng-sessiond: %s", strerror(errno));
		return -1;
	}
	for (;;) {
		int sig = sigtimedwait(&set, &si, &wait);

		if (sig == SIGUSR1)
			break;
		if (sig == SIGCHLD && waitpid(pid, &status, WNOHANG) == pid) {
			sigprocmask(SIG_SETMASK, &old, NULL);
			snprintf(err, n, "lttng-sessiond exited at start (%s %d)%s",
				 WIFEXITED(status) ? "status" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
				 WIFEXITED(status) && WEXITSTATUS(status) == 127
					 ? ": not installed (apt-get install lttng-tools)" : "");
			return -1;
		}
		if (sig < 0 && errno != EINTR) {
			sigprocmask(SIG_SETMASK, &old, NULL);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			snprintf(err, n, "lttng-sessiond did not become ready in %d s", SESSIOND_READY_S);
			return -1;
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	l->sessiond = pid;
	pidfile_write(pid);
	return 0;
}

static void stop_sessiond(struct rt_lttng *l)
{
	int status;

	if (l->sessiond <= 0)
		return;
	l->stopped = l->sessiond;
	kill(l->sessiond, SIGTERM);
	if (wait_until(l->sessiond, &status, mono_now() + SESSIOND_STOP_S) != 0) {
		kill(l->sessiond, SIGKILL);
		waitpid(l->sessiond, &status, 0);
	}
	l->sessiond = 0;
}

/* Runs of this user hold a shared lock on one file while they use a
 * session daemon; the run that started the daemon stops it only if it can
 * take the lock exclusively (no other run is between its first `lttng` call
 * and its end) and no session is left (someone's own, by hand). -1: none. */
static int runs_lock(void)
{
	char path[128];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "/tmp/ranktrace-lttng-%u.lock", (unsigned)getuid());
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_uid != getuid() || flock(fd, LOCK_SH) != 0)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void stop_sessiond_unless_used(struct rt_lttng *l)
{
	static char xml[1 << 16];
	bool alone = l->lock < 0 || flock(l->lock, LOCK_EX | LOCK_NB) == 0;
	pid_t other = l->sessiond <= 0 && alone ? pidfile_daemon() : 0;
	char path[128];

	pidfile_path(path, sizeof(path));
	if ((l->sessiond > 0 || other > 0) &&
	    (!alone || (run_lttng(xml, sizeof(xml), "--mi", "xml", "list", NULL) == 0 &&
			strstr(xml, "<session>")))) {
		l->left_running = l->sessiond > 0; /* another run or session uses it now */
	} else if (l->sessiond > 0) {
		stop_sessiond(l);
		unlink(path);
	} else if (other > 0) { /* an earlier run left it to us, the last user */
		stop_other(other);
		l->stopped = other;
		unlink(path);
	}
	if (l->lock >= 0)
		close(l->lock); /* releases the lock */
	l->lock = -1;
}

/* Is a session daemon reachable for this user? (`lttng list` fails without.) */
static bool sessiond_running(void)
{
	char out[4096];

	return run_lttng(out, sizeof(out), "list", NULL) == 0;
}

/* Ours could not start: did another run's daemon, starting at the same
 * time, win the race? It answers once ready (within SESSIOND_READY_S). */
static bool other_sessiond(void)
{
	for (int i = 0; i < SESSIOND_READY_S * 4; i++) {
		struct timespec nap = { 0, 250 * 1000 * 1000 };

		if (sessiond_running())
			return true;
		nanosleep(&nap, NULL);
	}
	return false;
}

/* Channel, contexts, events. */
static int configure(struct rt_lttng *l, bool kernel, char *err, size_t n)
{
	char out[4096];
	const char *s = l->name;

	if (run_lttng(out, sizeof(out), "enable-channel", "--userspace", "--session", s,
		      "--subbuf-size", "1M", "--num-subbuf", "8", RT_LTTNG_CHANNEL, NULL) != 0 ||
	    run_lttng(out, sizeof(out), "add-context", "--userspace", "--session", s, "--channel",
		      RT_LTTNG_CHANNEL, "--type", "vpid", "--type", "vtid", NULL) != 0 ||
	    run_lttng(out, sizeof(out), "enable-event", "--userspace", "--session", s,
		      "--channel", RT_LTTNG_CHANNEL, "ranktrace:*", NULL) != 0) {
		snprintf(err, n, "lttng: %s", first_line(out));
		return -1;
	}
	if (kernel) {
		int rc = run_lttng(out, sizeof(out), "enable-event", "--kernel", "--session", s,
				   "sched_switch,sched_wakeup,sched_process_fork,"
				   "sched_process_exec,sched_process_exit", NULL);

		/* the client dies of SIGPIPE when the daemon has no kernel tracer */
		if (rc != 0)
			fprintf(stderr, "ranktrace: warning: no kernel events (lttng enable-event "
				"--kernel: %s): recording ranktrace events only\n",
				rc == 128 + SIGPIPE ? "the session daemon has no kernel tracer: "
						      "lttng-modules not loaded, or not root nor in "
						      "the tracing group" : first_line(out));
	}
	return 0;
}

int rt_lttng_begin(struct rt_lttng *l, const char *dir, bool kernel, char *err, size_t n)
{
	char out[4096], opt[4200];

	memset(l, 0, sizeof(*l));
	snprintf(l->name, sizeof(l->name), "ranktrace-%d", (int)getpid());
	l->lock = runs_lock();
	if (!sessiond_running() && start_sessiond(l, kernel, err, n) != 0 && !other_sessiond())
		goto out_stop;
	snprintf(opt, sizeof(opt), "--output=%s", dir);
	if (run_lttng(out, sizeof(out), "create", l->name, opt, NULL) != 0) {
		snprintf(err, n, "lttng create: %s", first_line(out));
		goto out_stop;
	}
	l->created = true;
	if (configure(l, kernel, err, n) != 0)
		goto out_destroy;
	if (run_lttng(out, sizeof(out), "start", l->name, NULL) != 0) {
		snprintf(err, n, "lttng start: %s", first_line(out));
		goto out_destroy;
	}
	return 0;

out_destroy:
	run_lttng(out, sizeof(out), "destroy", l->name, NULL);
	l->created = false;
out_stop:
	stop_sessiond_unless_used(l);
	return -1;
}

/* Sum of every <tag>N</tag> in an MI document. */
static uint64_t mi_sum(const char *xml, const char *tag)
{
	char open[64];
	uint64_t sum = 0;
	size_t k;

	k = (size_t)snprintf(open, sizeof(open), "<%s>", tag);
	for (const char *p = strstr(xml, open); p; p = strstr(p + k, open))
		sum += strtoull(p + k, NULL, 10);
	return sum;
}

int rt_lttng_end(struct rt_lttng *l, uint64_t *discarded, uint64_t *lost_packets)
{
	static char xml[1 << 16];
	int rc = 0;
	char out[4096];

	*discarded = *lost_packets = 0;
	if (l->created) {
		if (run_lttng(out, sizeof(out), "stop", l->name, NULL) != 0) {
			fprintf(stderr, "ranktrace: warning: lttng stop: %s\n", first_line(out));
			rc = -1;
		}
		if (run_lttng(xml, sizeof(xml), "--mi", "xml", "list", l->name, NULL) == 0) {
			*discarded = mi_sum(xml, "discarded_events");
			*lost_packets = mi_sum(xml, "lost_packets");
		} else {
			rc = -1;
		}
		if (run_lttng(out, sizeof(out), "destroy", l->name, NULL) != 0) {
			fprintf(stderr, "ranktrace: warning: lttng destroy: %s\n", first_line(out));
			rc = -1;
		}
		l->created = false;
	}
	stop_sessiond_unless_used(l);
	return rc;
}

int rt_lttng_provider(const char *lib)
{
	const char *slash = strrchr(lib, '/');
	char path[4200];

	snprintf(path, sizeof(path), "%.*s/libranktrace-lttng.so", slash ? (int)(slash - lib) : 1,
		 slash ? lib : ".");
	return access(path, R_OK) == 0 ? 0 : -1;
}

void rt_lttng_fork_helper(void (*preload)(const char *path))
{
	static const char *const dirs[] = { "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
					    "/usr/lib64", "/usr/lib", "/usr/local/lib64",
					    "/usr/local/lib", "/lib/x86_64-linux-gnu", "/lib64" };
	char path[512];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/liblttng-ust-fork.so.1", dirs[i]);
		if (access(path, R_OK) == 0) {
			preload(path);
			return;
		}
	}
	fprintf(stderr, "ranktrace: warning: liblttng-ust-fork.so.1 not found: a process that "
		"forks without exec is recorded as its parent\n");
}
