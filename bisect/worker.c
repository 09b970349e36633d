/* SPDX-License-Identifier: MIT */
/* worker.c - judge one bisect candidate: set it up, run the command
 * traced, read the trace's verdict.
 *
 * Runs in a worker process forked by search.c (several at once with
 * --jobs), reading the shared context and writing only under
 * BISECT_DIR/<candidate>*, BISECT_DIR/.bisect/<candidate>/ and, in pip mode,
 * one new overlay in the cache (installed into a temporary directory and
 * renamed into place, so concurrent bisects never see half an overlay).
 * Every step's output goes to BISECT_DIR/.bisect/<candidate>/log. The
 * verdict comes from `ranktrace verdict` on the trace, so its rules (125 for
 * a damaged or incomplete trace) are the bisect's rules; a caller's
 * bs_ctx.run (the unit tests' fake judge) stands in for run and verdict. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bisect_int.h"
#include "findings.h"

/* the verdict words (format/findings.def) */
#define HEALTHY (rt_verdicts[RT_V_HEALTHY].word)
#define INCONCLUSIVE (rt_verdicts[RT_V_INCONCLUSIVE].word)
#define OVERLAY_SIZE ".rt-bytes" /* an overlay's size, recorded at install */

/* Run k of candidate i: BISECT_DIR/<name>, then <name>.run2, .run3 ... */
void bs_trace_dir(const struct bs_ctx *x, int i, int run, char *out, size_t n)
{
	if (run == 0)
		snprintf(out, n, "%s/%s", x->dir, x->c[i].name);
	else
		snprintf(out, n, "%s/%s.run%d", x->dir, x->c[i].name, run + 1);
}

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (h ^ '|') * 1099511628211ull;
}

/* The cached overlay of candidate i: keyed by interpreter, package,
 * version, pins and where pip looks. */
static void overlay_dir(const struct bs_ctx *x, int i, char *out, size_t n)
{
	uint64_t h = fnv(1469598103934665603ull, x->pytag);

	h = fnv(fnv(h, x->o.pkg), x->c[i].id);
	for (int k = 0; k < x->o.nwith; k++)
		h = fnv(h, x->o.with[k]);
	h = fnv(fnv(h, x->o.find_links), x->o.index_url);
	snprintf(out, n, "%s/overlays/%s-%s-%016llx", x->cache, x->o.pkg, x->c[i].name,
		 (unsigned long long)h);
}

/* Where the candidate's code lives: git worktree, else its work dir. */
static void code_dir(const struct bs_ctx *x, int i, char *out, size_t n)
{
	bs_work_dir(x, i, out, n);
	if (x->o.source == BS_GIT)
		strncat(out, "/src", n - strlen(out) - 1);
}

/* The environment of candidate i's set-up and runs (buffers of n bytes). */
void bs_candidate_env(const struct bs_ctx *x, int i, struct bs_env *env, char *pp, char *path,
		      char *venv, size_t n)
{
	char wd[PATH_MAX];

	memset(env, 0, sizeof(*env));
	env->candidate = x->c[i].id;
	env->vars = x->o.env;
	env->nvars = x->o.nenv;
	bs_work_dir(x, i, wd, sizeof(wd));
	if (x->o.source == BS_PIP && x->o.isolated) {
		char base[PATH_MAX];

		bs_base_dir(x, base, sizeof(base)); /* its console scripts after the candidate's */
		snprintf(venv, n, "%s/venv", wd);
		snprintf(path, n, "%s/venv/bin:%s/venv/bin", wd, base);
		env->venv = venv;
		env->path = path;
	} else if (x->o.source == BS_PIP) {
		overlay_dir(x, i, pp, n);
		env->pythonpath = pp;
	} else if (x->o.source == BS_GIT && x->o.pythonpath) {
		snprintf(pp, n, "%s/src/%s", wd, x->o.pythonpath);
		env->pythonpath = pp;
	}
}

static int log_open(const struct bs_ctx *x, int i)
{
	char p[PATH_MAX];

	bs_work_dir(x, i, p, sizeof(p));
	strncat(p, "/log", sizeof(p) - strlen(p) - 1);
	return open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

/* The largest overlay of this package in the cache (as recorded at install). */
static unsigned long long largest_overlay(const struct bs_ctx *x)
{
	char dir[PATH_MAX], f[PATH_MAX + 96];
	unsigned long long max = 0, b;
	struct dirent *e;
	DIR *d;
	size_t k = strlen(x->o.pkg);

	snprintf(dir, sizeof(dir), "%s/overlays", x->cache);
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, x->o.pkg, k) || e->d_name[k] != '-')
			continue;
		snprintf(f, sizeof(f), "%s/%s/" OVERLAY_SIZE, dir, e->d_name);
		b = bs_read_size(f);
		max = b > max ? b : max;
	}
	if (d)
		closedir(d);
	return max;
}

/* 0 ready, -1 set-up failed (why), -2 refused for free space (why). */
static int prepare_overlay(const struct bs_ctx *x, int i, int fd, char *why, size_t n)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 32], parent[PATH_MAX + 16];

	overlay_dir(x, i, dir, sizeof(dir));
	if (access(dir, F_OK) == 0) {
		dprintf(fd, "== overlay %s (cached)\n", dir);
		return 0;
	}
	snprintf(parent, sizeof(parent), "%s/overlays", x->cache);
	if (bs_mkdir_p(parent) != 0) {
		snprintf(why, n, "cannot create %s: %s", parent, strerror(errno));
		return -1;
	}
	if (bs_space_check(parent, "an overlay", bs_need(x, largest_overlay(x)), why, n) != 0)
		return -2;
	snprintf(tmp, sizeof(tmp), "%s/.tmp-%s-%d", parent, x->c[i].name, (int)getpid());
	bs_rm_rf(tmp);
	if (bs_pip_install(x, x->c[i].id, fd, NULL, tmp, why, n) != 0) {
		bs_rm_rf(tmp);
		return -1;
	}
	{
		char size[PATH_MAX + 48];

		snprintf(size, sizeof(size), "%s/" OVERLAY_SIZE, tmp);
		bs_record_size(tmp, size);
	}
	if (rename(tmp, dir) != 0) {
		bs_rm_rf(tmp); /* another bisect made it first: use theirs */
		if (access(dir, F_OK) != 0) {
			snprintf(why, n, "cannot create %s: %s", dir, strerror(errno));
			return -1;
		}
	}
	dprintf(fd, "== overlay %s (installed)\n", dir);
	return 0;
}

static int prepare_worktree(const struct bs_ctx *x, int i, int fd, const char *wd, char *why,
			    size_t n)
{
	char src[PATH_MAX + 8];
	char *add[] = { "git", "-C", (char *)x->repo, "worktree", "add", "--detach", "--force", src,
			(char *)x->c[i].id, NULL };
	char *prune[] = { "git", "-C", (char *)x->repo, "worktree", "prune", NULL };

	char lock[PATH_MAX + 16];
	int lfd, rc = -1;

	snprintf(src, sizeof(src), "%s/src", wd);
	snprintf(lock, sizeof(lock), "%s/.bisect/git.lock", x->dir);
	/* one left by an interrupted bisect may be half made: start again */
	bs_rm_rf(src);
	/* workers take turns (git's own locks make concurrent adds fail); retry
	 * anyway, in case another program holds the repository's lock */
	lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	while (lfd >= 0 && flock(lfd, LOCK_EX) != 0 && errno == EINTR && !bs_stop)
		;
	for (int attempt = 0; attempt < 5 && rc && !bs_stop; attempt++) {
		bs_step(x, fd, "git worktree prune", prune, NULL, NULL, why, n);
		rc = bs_step(x, fd, "git worktree add", add, NULL, NULL, why, n);
		if (rc) {
			bs_rm_rf(src);
			usleep(200000u * (unsigned)(attempt + 1));
		}
	}
	if (lfd >= 0)
		close(lfd); /* releases the lock */
	return rc;
}

/* Set-up of candidate i; 0, -1 with why (and the log's last line), or -2:
 * an install refused for free space (why). */
static int prepare(const struct bs_ctx *x, int i, int fd, char *why, size_t n)
{
	char wd[PATH_MAX], cd[PATH_MAX], pp[PATH_MAX], path[PATH_MAX], venv[PATH_MAX], *setup;
	struct bs_env env;
	int rc = 0;

	bs_work_dir(x, i, wd, sizeof(wd));
	code_dir(x, i, cd, sizeof(cd));
	if (x->o.source == BS_PIP)
		rc = x->o.isolated ? bs_prepare_venv(x, i, fd, why, n) : prepare_overlay(x, i, fd, why, n);
	else if (x->o.source == BS_GIT)
		rc = prepare_worktree(x, i, fd, wd, why, n);
	if (rc != 0 || !x->o.setup)
		return rc;
	setup = bs_subst_sh(x->o.setup); /* never the version's text as shell */
	if (!setup)
		return -1;
	bs_candidate_env(x, i, &env, pp, path, venv, PATH_MAX);
	env.dir = cd;
	{
		char *argv[] = { "/bin/sh", "-c", setup, NULL };

		rc = bs_step(x, fd, "--setup", argv, cd, &env, why, n);
	}
	free(setup);
	return rc;
}

/* One traced run: ranktrace run -o TRACE [through the launcher] -- CMD.
 * Returns the verdict word in v ("timeout" when killed for --timeout). */
static void run_once(const struct bs_ctx *x, int i, int k, int fd, char *v, size_t n)
{
	char trace[PATH_MAX], cd[PATH_MAX], pp[PATH_MAX], path[PATH_MAX], venv[PATH_MAX];
	char launch[PATH_MAX + 16], **argv = calloc((size_t)x->o.ncmd + 16, sizeof(char *));
	char *vargv[] = { (char *)x->self, "verdict", trace, NULL }, *out = NULL;
	struct bs_env env;
	bool timed_out = false;
	int a = 0, base;

	bs_trace_dir(x, i, k, trace, sizeof(trace));
	code_dir(x, i, cd, sizeof(cd));
	bs_rm_rf(trace);
	bs_candidate_env(x, i, &env, pp, path, venv, PATH_MAX);
	if (!argv) {
		snprintf(v, n, "%s", INCONCLUSIVE);
		return;
	}
	if (x->o.launcher) {
		snprintf(launch, sizeof(launch), "%s \"$@\"", x->o.launcher);
		argv[a++] = "/bin/sh";
		argv[a++] = "-c";
		argv[a++] = launch;
		argv[a++] = "sh";
	}
	argv[a++] = (char *)x->self;
	argv[a++] = "run";
	argv[a++] = "-o";
	argv[a++] = trace;
	argv[a++] = "--";
	base = a;
	for (int c = 0; c < x->o.ncmd; c++)
		argv[a++] = bs_subst(x->o.cmd[c], x->c[i].id, cd);
	bs_spawn(argv, x->o.source == BS_GIT ? cd : NULL, fd, &env, x->o.timeout, &timed_out);
	for (int c = base; c < a; c++)
		free(argv[c]);
	free(argv);
	if (timed_out) {
		snprintf(v, n, "timeout");
		return;
	}
	bs_capture(vargv, NULL, &out, true);
	snprintf(v, n, "%s", out && *out ? out : INCONCLUSIVE);
	v[strcspn(v, " \t\r\n")] = '\0';
	if (!*v)
		snprintf(v, n, "%s", INCONCLUSIVE);
	free(out);
	dprintf(fd, "== verdict of %s: %s\n", trace, v);
}

static bool is_failure(const char *v)
{
	return strcmp(v, HEALTHY) && strcmp(v, INCONCLUSIVE) && strcmp(v, "timeout");
}

/* Runs until decided: healthy = good; the signature = bad (twice in a row
 * with --retries: it must repeat); anything else = skip. With no signature
 * known yet (the bad endpoint), the first failure seen is taken as it. */
static void judge_runs(const struct bs_ctx *x, int i, int fd, struct bs_result *r)
{
	char sig[40], v[40] = "";
	int seen = 0, need = x->o.retries > 0 ? 2 : 1;

	snprintf(sig, sizeof(sig), "%s", x->signature);
	for (int k = 0; k <= x->o.retries && !bs_stop; k++) {
		(x->run ? x->run : run_once)(x, i, k, fd, v, sizeof(v));
		r->runs++;
		snprintf(r->verdict, sizeof(r->verdict), "%s", v);
		if (!strcmp(v, HEALTHY)) {
			r->judged = seen ? BS_SKIP : BS_GOOD;
			if (seen)
				snprintf(r->reason, sizeof(r->reason), "flaky: %s, then healthy", sig);
			return;
		}
		if (!sig[0] && is_failure(v))
			snprintf(sig, sizeof(sig), "%s", v);
		if (!strcmp(v, sig) && ++seen >= need) {
			r->judged = BS_BAD;
			return;
		}
	}
	r->judged = BS_SKIP;
	if (seen)
		snprintf(r->reason, sizeof(r->reason), "%s did not repeat (last run: %s)", sig, v);
	else if (!strcmp(v, "timeout"))
		snprintf(r->reason, sizeof(r->reason), "run over --timeout %gs", x->o.timeout);
	else if (!strcmp(v, INCONCLUSIVE))
		snprintf(r->reason, sizeof(r->reason), "trace inconclusive");
	else if (v[0])
		snprintf(r->reason, sizeof(r->reason), "another failure: %s", v);
	else
		snprintf(r->reason, sizeof(r->reason), "interrupted");
}

/* Judge candidate i (in a worker process). */
void bs_judge(const struct bs_ctx *x, int i, struct bs_result *r)
{
	char wd[PATH_MAX], why[200] = "", last[160], logp[PATH_MAX + 8];
	struct timespec t0, t1;
	int fd, rc;

	memset(r, 0, sizeof(*r));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	bs_work_dir(x, i, wd, sizeof(wd));
	bs_mkdir_p(wd);
	fd = log_open(x, i);
	rc = prepare(x, i, fd, why, sizeof(why));
	if (rc == -2) { /* not judged: the bisect stops, --resume tries it again */
		r->judged = BS_UNTESTED;
		snprintf(r->verdict, sizeof(r->verdict), BS_NO_SPACE);
		snprintf(r->reason, sizeof(r->reason), "%s", why);
	} else if (rc != 0) {
		snprintf(logp, sizeof(logp), "%s/log", wd);
		bs_last_line(logp, last, sizeof(last));
		r->judged = BS_SKIP;
		snprintf(r->verdict, sizeof(r->verdict), "set-up-failed");
		snprintf(r->reason, sizeof(r->reason), "set-up failed: %s%s%s", why,
			 last[0] ? ": " : "", last);
	} else {
		judge_runs(x, i, fd, r);
	}
	if (fd >= 0)
		close(fd);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}
