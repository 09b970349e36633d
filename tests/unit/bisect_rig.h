/* SPDX-License-Identifier: MIT */
/* bisect_rig.h - the unit tests' bisect (test_bisect.c, test_bisect_cands.c):
 * a context of N candidates "v0".."vN-1" in a temporary BISECT_DIR and a
 * fake judge in bs_ctx.run. The judge runs in the bisect's forked workers
 * like the real one; it says "healthy" below rig.first_bad and the
 * signature from there (with rig.fix, the signature below rig.first_bad and
 * "healthy" from there: a fix), unless rig.runs[i] scripts candidate i's verdicts
 * run by run ("skipped-fsdp-root,healthy": the last word repeats). Every
 * run it is asked for is appended to BISECT_DIR/calls ("i k"), so the
 * tests count the runs themselves instead of trusting the bisect's own
 * bookkeeping. Static functions: include it once per test file. */
#ifndef RT_TEST_BISECT_RIG_H
#define RT_TEST_BISECT_RIG_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bisect.h"

#define SIG "skipped-fsdp-root"
#define RIG_MAX 1024

static struct {
	int first_bad;       /* the first bad; with fix, the first good */
	bool fix;
	const char *runs[RIG_MAX];
	int interrupt_at;    /* judging it sends SIGINT to the bisect (-1: none) */
	char root[PATH_MAX]; /* the test's temporary directory */
	char calls[PATH_MAX + 8];
	char *saved_argv[4];
} rig;

/* The k-th comma-separated word of s (the last when there are fewer). */
static void word(const char *s, int k, char *v, size_t n)
{
	const char *end;

	for (; k > 0 && strchr(s, ','); k--)
		s = strchr(s, ',') + 1;
	end = strchr(s, ',');
	snprintf(v, n, "%.*s", (int)(end ? end - s : (long)strlen(s)), s);
}

static void fake_run(const struct bs_ctx *x, int i, int k, int fd, char *v, size_t n)
{
	int f = open(rig.calls, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);

	if (f >= 0) {
		dprintf(f, "%d %d\n", i, k);
		close(f);
	}
	dprintf(fd, "== fake run %d of %s\n", k, x->c[i].name);
	if (i == rig.interrupt_at)
		kill(getppid(), SIGINT);
	if (i < RIG_MAX && rig.runs[i])
		word(rig.runs[i], k, v, n);
	else
		snprintf(v, n, "%s", (i >= rig.first_bad) != rig.fix ? SIG : "healthy");
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void rig_rm(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh BISECT_DIR (root/name, with .bisect/) and a context of n
 * versions judged by the fake judge, --jobs jobs, --json. */
static void rig_ctx(struct bs_ctx *x, const char *name, int n, int jobs)
{
	char side[PATH_MAX + 16];

	memset(x, 0, sizeof(*x));
	bs_stop = 0;
	if (!rig.root[0]) {
		snprintf(rig.root, sizeof(rig.root), "%s/rt-test-bisect-XXXXXX",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		cr_assert_not_null(mkdtemp(rig.root));
	}
	snprintf(x->dir, sizeof(x->dir), "%s/%s", rig.root, name);
	snprintf(side, sizeof(side), "%s/.bisect", x->dir);
	cr_assert_eq(bs_mkdir_p(side), 0, "%s", side);
	snprintf(rig.calls, sizeof(rig.calls), "%s/calls", x->dir);
	snprintf(x->self, sizeof(x->self), "/bin/true"); /* the report's `ranktrace diff` */
	x->o.source = BS_VERSIONS;
	x->o.jobs = jobs;
	x->o.json = true;
	x->o.python = "python3";
	x->run = fake_run;
	rig.saved_argv[0] = "--versions";
	rig.saved_argv[1] = "v0,v1";
	x->argv = rig.saved_argv;
	x->argc = 2;
	for (int i = 0; i < n; i++) {
		struct bs_cand *c = bs_cand_slot(x);

		cr_assert_not_null(c);
		snprintf(c->id, sizeof(c->id), "v%d", i);
		snprintf(c->name, sizeof(c->name), "v%d", i);
		x->n++;
	}
}

static void rig_fini(void)
{
	if (rig.root[0])
		rig_rm(rig.root);
	rig.root[0] = '\0';
}

static void rig_init(void)
{
	memset(&rig, 0, sizeof(rig));
	rig.interrupt_at = -1;
	rig.first_bad = 1;
}

/* bs_search with stdout and stderr into BISECT_DIR/out and /err. */
static int rig_search(struct bs_ctx *x)
{
	char p[PATH_MAX + 8];
	int o = dup(1), e = dup(2), fo, fe, rc;

	fflush(NULL);
	snprintf(p, sizeof(p), "%s/out", x->dir);
	fo = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	snprintf(p, sizeof(p), "%s/err", x->dir);
	fe = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert(fo >= 0 && fe >= 0 && o >= 0 && e >= 0);
	dup2(fo, 1);
	dup2(fe, 2);
	rc = bs_search(x);
	fflush(NULL);
	dup2(o, 1);
	dup2(e, 2);
	close(o), close(e), close(fo), close(fe);
	return rc;
}

/* The whole of BISECT_DIR/name (malloc'd; "" when missing). */
static char *rig_file(const struct bs_ctx *x, const char *name)
{
	char p[PATH_MAX + 64], *s = NULL;
	size_t n = 0;
	FILE *f, *m = open_memstream(&s, &n);
	int ch;

	snprintf(p, sizeof(p), "%s/%s", x->dir, name);
	f = fopen(p, "r");
	while (f && (ch = fgetc(f)) != EOF)
		fputc(ch, m);
	if (f)
		fclose(f);
	fclose(m);
	return s;
}

/* Runs the fake judge was asked for: in all, and of candidate i (-1: all). */
static int rig_calls(const struct bs_ctx *x, int i)
{
	char *s = rig_file(x, "calls"), *save = NULL;
	int count = 0;

	for (char *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		count += i < 0 || atoi(l) == i;
	free(s);
	return count;
}

static inline int ceil_log(double n, double base)
{
	return n <= 1 ? 0 : (int)ceil(log(n) / log(base) - 1e-9);
}

#endif
