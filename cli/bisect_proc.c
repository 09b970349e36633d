/* SPDX-License-Identifier: MIT */
/* bisect_proc.c - child processes and files for `ranktrace bisect`.
 *
 * Every command bisect starts (pip, git, a set-up, a traced run) runs in a
 * process group of its own, so that a timeout or a SIGINT (bs_stop) kills it
 * and everything it started: SIGTERM to the group, SIGKILL 3 s later, and a
 * final SIGKILL to the group once the leader is reaped (stray ranks). Waiting
 * polls every 20 ms; no signal handler does more than set bs_stop. These
 * helpers allocate, print nothing but what the caller asks, and are called
 * from one thread. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bisect.h"
#include "rt_util.h"
#include "env.h"

volatile sig_atomic_t bs_stop;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void prepend_env(const char *name, const char *value)
{
	const char *old = getenv(name);
	size_t n;
	char *v;

	if (!value || !*value)
		return;
	n = strlen(value) + (old ? strlen(old) : 0) + 2;
	v = malloc(n);
	if (!v)
		return;
	snprintf(v, n, "%s%s%s", value, old && *old ? ":" : "", old && *old ? old : "");
	setenv(name, v, 1);
	free(v);
}

/* In the child, before exec: own group, environment (--env first, then the
 * candidate's PYTHONPATH / PATH in front), cwd, output. */
static void child_setup(const char *cwd, int out_fd, const struct bs_env *env)
{
	int devnull = open("/dev/null", O_RDONLY);

	setpgid(0, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (devnull >= 0) {
		dup2(devnull, 0);
		close(devnull);
	}
	if (out_fd >= 0) {
		dup2(out_fd, 1);
		dup2(out_fd, 2);
	}
	if (env) {
		for (int k = 0; k < env->nvars; k++) { /* NAME=VALUE, checked by the parser */
			char name[256];
			const char *eq = strchr(env->vars[k], '=');
			size_t len = eq ? (size_t)(eq - env->vars[k]) : 0;

			if (len && len < sizeof(name)) {
				memcpy(name, env->vars[k], len);
				name[len] = '\0';
				setenv(name, eq + 1, 1);
			}
		}
		prepend_env("PYTHONPATH", env->pythonpath);
		prepend_env("PATH", env->path);
		if (env->venv)
			setenv("VIRTUAL_ENV", env->venv, 1);
		if (env->candidate)
			setenv(RT_ENV_NAME(BISECT_CANDIDATE), env->candidate, 1);
		if (env->dir) /* {dir} in --setup (bs_subst_sh) */
			setenv(RT_ENV_NAME(BISECT_DIR), env->dir, 1);
	}
	if (cwd && chdir(cwd) != 0) {
		fprintf(stderr, "ranktrace bisect: cannot enter %s: %s\n", cwd, strerror(errno));
		_exit(126);
	}
}

/* Wait for pid (a group leader); kill its group on timeout or bs_stop.
 * Returns the wait status, or -1. */
static int wait_group(pid_t pid, double timeout, bool *timed_out)
{
	double start = now(), kill_at = 0;
	int status = 0;

	if (timed_out)
		*timed_out = false;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return -1;
		if (!kill_at && (bs_stop || (timeout > 0 && now() - start > timeout))) {
			if (!bs_stop && timed_out)
				*timed_out = true;
			kill(-pid, SIGTERM);
			kill_at = now() + 3;
		} else if (kill_at && now() > kill_at) {
			kill(-pid, SIGKILL);
			kill_at = now() + 3600;
		}
		usleep(20000);
	}
	kill(-pid, SIGKILL);
	return status;
}

/* Run argv in its own group, output to out_fd (-1: inherit), env added.
 * Returns the wait status (-1 if it could not start); *timed_out set when
 * it was killed for running over timeout seconds (0: no limit). */
int bs_spawn(char *const *argv, const char *cwd, int out_fd, const struct bs_env *env,
	     double timeout, bool *timed_out)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		child_setup(cwd, out_fd, env);
		execvp(argv[0], argv);
		fprintf(stderr, "ranktrace bisect: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	return wait_group(pid, timeout, timed_out);
}

/* Run argv, its stdout into *out (malloc'd, NUL-terminated); stderr to
 * /dev/null when quiet. Returns the exit status (128+sig), -1 on failure. */
int bs_capture(char *const *argv, const char *cwd, char **out, bool quiet)
{
	int fds[2], status;
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	pid_t pid;

	*out = NULL;
	if (!buf || pipe2(fds, O_CLOEXEC) != 0) {
		free(buf);
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		child_setup(cwd, -1, NULL);
		dup2(fds[1], 1);
		if (quiet && null >= 0)
			dup2(null, 2);
		execvp(argv[0], argv);
		fprintf(stderr, "ranktrace bisect: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	if (pid > 0)
		setpgid(pid, pid);
	for (ssize_t k; pid > 0;) {
		if (len + 1024 > cap) {
			char *b = realloc(buf, cap *= 2);

			if (!b)
				break;
			buf = b;
		}
		k = read(fds[0], buf + len, cap - len - 1);
		if (k < 0 && errno == EINTR && !bs_stop)
			continue;
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	close(fds[0]);
	buf[len] = '\0';
	*out = buf;
	if (pid < 0)
		return -1;
	status = wait_group(pid, 0, NULL);
	if (status < 0)
		return -1;
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) == 0 || errno == ENOENT ? 0 : -errno;
	return unlink(path) == 0 || errno == ENOENT ? 0 : -errno;
}

/* rm -rf PATH, never following symlinks. 0 or -errno. */
int bs_rm_rf(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) == 0 ? 0 : -errno;
	return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* mkdir -p PATH (0700 for what it creates). 0 or -errno. */
int bs_mkdir_p(const char *path)
{
	return rt_mkdir_p(path, 0700, 0700);
}

/* S quoted for a POSIX shell (bare when it needs no quotes). */
void bs_shell_quote(FILE *f, const char *s)
{
	if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
			    "_-+=./:,@%^") == strlen(s)) {
		fputs(s, f);
		return;
	}
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

/* S with {version} and {dir} replaced (malloc'd; NULL on allocation failure). */
char *bs_subst(const char *s, const char *version, const char *dir)
{
	size_t cap = strlen(s) + 1, len = 0;
	char *out;

	for (const char *p = s; (p = strchr(p, '{')); p++)
		cap += strlen(version) + strlen(dir);
	out = malloc(cap);
	if (!out)
		return NULL;
	while (*s) {
		const char *with = NULL;
		size_t skip = 0;

		if (!strncmp(s, "{version}", 9)) {
			with = version;
			skip = 9;
		} else if (!strncmp(s, "{dir}", 5)) {
			with = dir;
			skip = 5;
		}
		if (with) {
			memcpy(out + len, with, strlen(with));
			len += strlen(with);
			s += skip;
		} else {
			out[len++] = *s++;
		}
	}
	out[len] = '\0';
	return out;
}

/* S for `sh -c` with {version} and {dir} as expansions of the variables
 * child_setup exports (RANKTRACE_BISECT_CANDIDATE, RANKTRACE_BISECT_DIR),
 * never as text: the shell expands a variable once and never runs what it
 * holds, so a version or path holding $(...), ` or ; stays data. Quoted
 * to suit where the placeholder stands: "${V}" unquoted, ${V} inside "...",
 * '"${V}"' inside '...'. malloc'd; NULL on allocation failure. */
char *bs_subst_sh(const char *s)
{
	const char *const var[2] = { RT_ENV_NAME(BISECT_CANDIDATE), RT_ENV_NAME(BISECT_DIR) };
	static const char *const form[3] = { "\"${%s}\"", "${%s}", "'\"${%s}\"'" };
	size_t cap = strlen(s) * 12 + 1, len = 0;
	int q = 0; /* 0 unquoted, 1 in "...", 2 in '...' */
	char *out = malloc(cap);

	while (out && *s) {
		int v = !strncmp(s, "{version}", 9) ? 0 : !strncmp(s, "{dir}", 5) ? 1 : -1;

		if (v >= 0) {
			len += (size_t)snprintf(out + len, cap - len, form[q], var[v]);
			s += v ? 5 : 9;
			continue;
		}
		if (*s == '\\' && q != 2 && s[1]) {
			out[len++] = *s++;
		} else if ((*s == '"' && q != 2) || (*s == '\'' && q != 1)) {
			int to = *s == '"' ? 1 : 2;

			q = q == to ? 0 : to;
		}
		out[len++] = *s++;
	}
	if (out)
		out[len] = '\0';
	return out;
}

/* The last non-empty line of a file (a log), at most n-1 characters. */
void bs_last_line(const char *path, char *out, size_t n)
{
	FILE *f = fopen(path, "r");
	char line[1024];

	out[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		size_t k = strcspn(line, "\r\n");

		line[k] = '\0';
		if (k && strncmp(line, "== ", 3))
			snprintf(out, n, "%s", line);
	}
	fclose(f);
}
