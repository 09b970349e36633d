/* SPDX-License-Identifier: MIT */
/* env.c - the environments bisect installs: --isolated candidates
 * over one shared base, free space before each install, and the removal of
 * judged candidates' environments.
 *
 * --isolated: the parent makes BISECT_DIR/.bisect/base/venv once, before the
 * rounds: the --with pins and the package's dependencies at the bad endpoint
 * (the package itself uninstalled again). Each candidate gets a venv of its
 * own without pip (a few kilobytes: links to the interpreter) whose
 * site-packages holds a .pth naming the base's: pip, run for the candidate's
 * interpreter, finds the base's packages installed and adds only what this
 * version needs on top (another version of a dependency lands in the
 * candidate, first on sys.path; pip never uninstalls outside the candidate's
 * environment). Free space: before an install, the filesystem must have
 * --min-free bytes (default 512 MiB, 2 GiB for the base) or twice the largest
 * environment of that kind installed so far, whichever is more; below it the
 * install is refused with one line saying how much is needed. Sizes are
 * measured (blocks in use) after each install and kept beside it. Parent or
 * worker process as each function says; one thread; may allocate. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "bisect_int.h"
#include "escape.h"

#define MIB (1ull << 20)
#define ENV_SIZE "env-bytes" /* a candidate venv's size, in its work dir */

void bs_base_dir(const struct bs_ctx *x, char *out, size_t n)
{
	snprintf(out, n, "%s/.bisect/base", x->dir);
}

static void human(unsigned long long b, char *out, size_t n)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)b;
	int k = 0;

	while (v >= 1024 && k < 6) {
		v /= 1024;
		k++;
	}
	snprintf(out, n, k ? "%.1f %s" : "%.0f %s", v, u[k]);
}

static unsigned long long du_sum;

static int du_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)flag;
	(void)ftw;
	du_sum += (unsigned long long)st->st_blocks * 512;
	return 0;
}

/* Bytes in use under path (blocks, links not followed). */
unsigned long long bs_du(const char *path)
{
	du_sum = 0;
	nftw(path, du_one, 16, FTW_PHYS);
	return du_sum;
}

/* The size of dir, written to file (a decimal number). */
void bs_record_size(const char *dir, const char *file)
{
	unsigned long long b = bs_du(dir);
	FILE *f = fopen(file, "w");

	if (f) {
		fprintf(f, "%llu\n", b);
		fclose(f);
	}
}

unsigned long long bs_read_size(const char *file)
{
	unsigned long long b = 0;
	FILE *f = fopen(file, "r");

	if (f) {
		if (fscanf(f, "%llu", &b) != 1)
			b = 0;
		fclose(f);
	}
	return b;
}

/* What an install needs free, given the largest of its kind so far. */
unsigned long long bs_need(const struct bs_ctx *x, unsigned long long largest)
{
	unsigned long long floor = x->o.min_free ? x->o.min_free : 512 * MIB;

	return largest > floor / 2 ? largest * 2 : floor;
}

/* 0 when dir's filesystem has need bytes free (or cannot tell); -1 with why. */
int bs_space_check(const char *dir, const char *what, unsigned long long need, char *why,
		   size_t n)
{
	struct statvfs sv;
	unsigned long long avail;
	char a[32], b[32];

	if (statvfs(dir, &sv) != 0)
		return 0;
	avail = (unsigned long long)sv.f_bavail * sv.f_frsize;
	if (avail >= need)
		return 0;
	human(need, b, sizeof(b));
	human(avail, a, sizeof(a));
	snprintf(why, n, "not enough free space for %s in %s: %s needed, %s free", what, dir, b, a);
	return -1;
}

/* The site-packages directories of interpreter py, one a line, into out. */
static int site_dirs(const char *py, char *out, size_t n)
{
	char *argv[] = { (char *)py, "-c",
			 "import sysconfig; p = sysconfig.get_paths(); "
			 "print(p['purelib']); p['platlib'] != p['purelib'] and print(p['platlib'])",
			 NULL };
	char *o = NULL;
	int rc = bs_capture(argv, NULL, &o, true);

	snprintf(out, n, "%s", o ? o : "");
	free(o);
	return rc == 0 && out[0] == '/' ? 0 : -1;
}

static int make_venv(const struct bs_ctx *x, int fd, const char *venv, char *why, size_t n)
{
	char *mk[] = { (char *)x->o.python, "-m", "venv", "--without-pip", (char *)venv, NULL };

	bs_rm_rf(venv);
	return bs_step(x, fd, "python -m venv", mk, NULL, NULL, why, n);
}

/* The base's packages: the pins and PKG's dependencies at the newer
 * endpoint (the bad one; with --find fix the good one), PKG itself removed
 * again; the pins alone when that install fails. */
static int fill_base(const struct bs_ctx *x, int fd, const char *py, char *why, size_t n)
{
	char *rm[] = { (char *)x->o.python, "-m", "pip", "--python", (char *)py, "uninstall",
		       "--disable-pip-version-check", "-y", (char *)x->o.pkg, NULL };

	if (bs_pip_install(x, x->c[x->n - 1].id, fd, py, NULL, why, n) == 0)
		return bs_step(x, fd, "pip uninstall", rm, NULL, NULL, why, n);
	dprintf(fd, "== the newer endpoint does not install: the base gets the --with pins only\n");
	return x->o.nwith ? bs_pip_install(x, NULL, fd, py, NULL, why, n) : 0;
}

static int base_steps(struct bs_ctx *x, const char *base, int fd, char *why, size_t n)
{
	char venv[PATH_MAX + 8], py[PATH_MAX + 24], sites[2 * PATH_MAX], f[PATH_MAX + 16];
	unsigned long long floor = x->o.min_free ? x->o.min_free : 2048 * MIB;
	FILE *s;

	snprintf(venv, sizeof(venv), "%s/venv", base);
	snprintf(py, sizeof(py), "%s/bin/python", venv);
	if (bs_space_check(base, "the shared base environment", floor, why, n) != 0)
		return -2;
	if (make_venv(x, fd, venv, why, n) != 0 || fill_base(x, fd, py, why, n) != 0)
		return -1;
	if (site_dirs(py, sites, sizeof(sites)) != 0) {
		snprintf(why, n, "cannot ask %s for its site-packages", py);
		return -1;
	}
	snprintf(f, sizeof(f), "%s/site", base);
	s = fopen(f, "w");
	if (!s || fputs(sites, s) < 0 || fclose(s) != 0) {
		snprintf(why, n, "cannot write %s", f);
		return -1;
	}
	snprintf(f, sizeof(f), "%s/bytes", base);
	bs_record_size(venv, f);
	return 0;
}

/* Parent, before the rounds: the shared base of --isolated candidates (once;
 * kept for --resume). 0, or -1 with the reason in x->fatal. */
int bs_base_prepare(struct bs_ctx *x)
{
	char base[PATH_MAX], f[PATH_MAX + 16], why[300] = "", last[160], size[32];
	time_t t0 = time(NULL);
	int fd, rc;

	if (x->o.source != BS_PIP || !x->o.isolated)
		return 0;
	bs_base_dir(x, base, sizeof(base));
	snprintf(f, sizeof(f), "%s/ready", base);
	if (access(f, F_OK) == 0)
		return 0;
	bs_mkdir_p(base);
	snprintf(f, sizeof(f), "%s/log", base);
	fd = open(f, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	rt_esc_printf(stderr, "bisect: installing the shared base of the --isolated candidates in %s\n",
		      base);
	rc = base_steps(x, base, fd, why, sizeof(why));
	if (fd >= 0)
		close(fd);
	if (rc != 0) {
		bs_last_line(f, last, sizeof(last));
		snprintf(x->fatal, sizeof(x->fatal), "%s%s%s%s", rc == -2 ? "" : "the shared base: ", why,
			 rc == -2 || !last[0] ? "" : ": ", rc == -2 ? "" : last);
		return -1;
	}
	snprintf(f, sizeof(f), "%s/bytes", base);
	human(bs_read_size(f), size, sizeof(size));
	snprintf(f, sizeof(f), "%s/ready", base);
	fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	rt_esc_printf(stderr, "bisect: shared base ready: %s in %lds\n",
		      size, (long)(time(NULL) - t0));
	return 0;
}

/* The largest candidate venv installed so far in this bisect. */
static unsigned long long largest_venv(const struct bs_ctx *x)
{
	char f[PATH_MAX + 16];
	unsigned long long max = 0, b;

	for (int i = 0; i < x->n; i++) {
		bs_work_dir(x, i, f, PATH_MAX);
		strcat(f, "/" ENV_SIZE);
		b = bs_read_size(f);
		max = b > max ? b : max;
	}
	return max;
}

/* The candidate venv's .pth naming the base's site-packages. */
static int link_base(const struct bs_ctx *x, const char *py, char *why, size_t n)
{
	char base[PATH_MAX], f[PATH_MAX + 32], sites[2 * PATH_MAX], own[2 * PATH_MAX];
	FILE *in, *out;
	size_t k;

	bs_base_dir(x, base, sizeof(base));
	snprintf(f, sizeof(f), "%s/site", base);
	in = fopen(f, "r");
	k = in ? fread(sites, 1, sizeof(sites) - 1, in) : 0;
	if (in)
		fclose(in);
	sites[k] = '\0';
	if (!k || site_dirs(py, own, sizeof(own)) != 0) {
		snprintf(why, n, "cannot find the site-packages of %s or of the base", py);
		return -1;
	}
	own[strcspn(own, "\n")] = '\0';
	snprintf(f, sizeof(f), "%s/_ranktrace_base.pth", own);
	out = fopen(f, "w");
	if (!out || fputs(sites, out) < 0 || fclose(out) != 0) {
		snprintf(why, n, "cannot write %s", f);
		return -1;
	}
	return 0;
}

/* Worker: candidate i's venv over the base, PKG==V installed on top.
 * 0, -1 set-up failed (why), -2 refused for free space (why). */
int bs_prepare_venv(const struct bs_ctx *x, int i, int fd, char *why, size_t n)
{
	char wd[PATH_MAX], venv[PATH_MAX + 8], py[PATH_MAX + 24], f[PATH_MAX + 16];

	bs_work_dir(x, i, wd, sizeof(wd));
	snprintf(venv, sizeof(venv), "%s/venv", wd);
	snprintf(py, sizeof(py), "%s/bin/python", venv);
	if (bs_space_check(wd, "a candidate's environment", bs_need(x, largest_venv(x)), why, n))
		return -2;
	if (make_venv(x, fd, venv, why, n) != 0 || link_base(x, py, why, n) != 0)
		return -1;
	if (bs_pip_install(x, x->c[i].id, fd, py, NULL, why, n) != 0)
		return -1;
	snprintf(f, sizeof(f), "%s/" ENV_SIZE, wd);
	bs_record_size(venv, f);
	return 0;
}

/* Parent, after each round and at the end: the environments of judged
 * candidates other than the boundaries lo and hi (--isolated venvs, git
 * worktrees) are removed, unless --keep. Logs, traces and sizes stay. */
void bs_remove_envs(const struct bs_ctx *x, int lo, int hi)
{
	for (int i = 0; i < x->n && !x->o.keep; i++) {
		char wd[PATH_MAX], p[PATH_MAX + 8], *o = NULL;
		char *rm[] = { "git", "-C", (char *)x->repo, "worktree", "remove", "--force", p, NULL };

		if (i == lo || i == hi || x->c[i].judged == BS_UNTESTED)
			continue;
		bs_work_dir(x, i, wd, sizeof(wd));
		if (x->o.source == BS_PIP && x->o.isolated) {
			snprintf(p, sizeof(p), "%s/venv", wd);
			bs_rm_rf(p);
		} else if (x->o.source == BS_GIT) {
			snprintf(p, sizeof(p), "%s/src", wd);
			if (access(p, F_OK) == 0)
				bs_capture(rm, NULL, &o, true);
			free(o);
			o = NULL;
		}
	}
}
