/* SPDX-License-Identifier: MIT */
/* cands.c - the candidates of a bisect, oldest first: pip versions,
 * git commits or a given list, from the older endpoint to the newer (good
 * to bad; with --find fix, bad to good).
 *
 * pip: the chosen interpreter runs pip (`pip index versions`, which honours
 * --find-links, --index-url, pip.conf and PIP_* variables) and orders what
 * it finds with `packaging` (pip's vendored copy when `packaging` itself is
 * not installed): no version parsing here. git: `git log --ancestry-path`
 * between the endpoints. Runs in the parent before BISECT_DIR exists, so a
 * bad input creates nothing; errors print one message and return exit 2. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "bisect_int.h"
#include "escape.h"

/* argv[1..]: pkg good bad pre find [pip options]. Prints "tag T" then the
 * versions from the older endpoint to the newer (good to bad; with find
 * "fix", bad to good), or "error: ..." and exits 3. */
static const char pip_lister[] =
	"import subprocess, sys, sysconfig\n"
	"try:\n"
	"    from packaging.version import Version, InvalidVersion\n"
	"except ImportError:\n"
	"    from pip._vendor.packaging.version import Version, InvalidVersion\n"
	"pkg, good, bad, pre, find = sys.argv[1:6]\n"
	"def fail(msg):\n"
	"    print('error: ' + msg)\n"
	"    sys.exit(3)\n"
	"try:\n"
	"    g, b = Version(good), Version(bad)\n"
	"except InvalidVersion as e:\n"
	"    fail('not a PEP 440 version: %s' % e)\n"
	"cmd = [sys.executable, '-m', 'pip', 'index', 'versions', pkg, '--pre',\n"
	"       '--disable-pip-version-check'] + sys.argv[6:]\n"
	"p = subprocess.run(cmd, capture_output=True, text=True)\n"
	"avail = None\n"
	"for line in p.stdout.splitlines():\n"
	"    if line.startswith('Available versions:'):\n"
	"        avail = [s.strip() for s in line.split(':', 1)[1].split(',') if s.strip()]\n"
	"if not avail:\n"
	"    last = [l for l in p.stderr.splitlines() if l.strip() and 'experimental' not in l]\n"
	"    fail('package %s: pip finds no versions (%s)' % (pkg, last[-1] if last else 'no output'))\n"
	"vs = {}\n"
	"for s in avail:\n"
	"    try:\n"
	"        vs.setdefault(Version(s), s)\n"
	"    except InvalidVersion:\n"
	"        pass\n"
	"for name, v in (('--good', g), ('--bad', b)):\n"
	"    if v not in vs:\n"
	"        fail('%s %s: %s has no such version (it has %s)' % (name, v, pkg,\n"
	"             ', '.join(vs[k] for k in sorted(vs))))\n"
	"if g == b:\n"
	"    fail('--good and --bad are the same version (%s)' % vs[g])\n"
	"if find == 'break' and g > b:\n"
	"    fail('--good %s comes after --bad %s (looking for the release that fixed it? '\n"
	"         '--find fix)' % (vs[g], vs[b]))\n"
	"if find == 'fix' and b > g:\n"
	"    fail('--find fix: --bad %s comes after --good %s (the fix is looked for after a '\n"
	"         'bad release: --bad the older, --good the newer)' % (vs[b], vs[g]))\n"
	"old, new = (b, g) if find == 'fix' else (g, b)\n"
	"print('tag %s-%s' % (sys.implementation.cache_tag, sysconfig.get_platform()))\n"
	"for v in sorted(vs):\n"
	"    if old <= v <= new and (pre == '1' or not v.is_prerelease or v in (g, b)):\n"
	"        print(vs[v])\n";

struct bs_cand *bs_cand_slot(struct bs_ctx *x)
{
	/* room doubles at 16, 32, 64...: a realloc per candidate was quadratic
	 * over the ten thousand commits of a long history */
	if (x->n == 0 || (x->n >= 16 && (x->n & (x->n - 1)) == 0)) {
		size_t cap = x->n ? (size_t)x->n * 2 : 16;
		struct bs_cand *c = realloc(x->c, sizeof(*c) * cap);

		if (!c)
			return NULL;
		x->c = c;
	}
	memset(&x->c[x->n], 0, sizeof(x->c[x->n]));
	return &x->c[x->n];
}

static int add_cand(struct bs_ctx *x, const char *id, const char *label, bool git)
{
	struct bs_cand *c = bs_cand_slot(x);

	if (!c)
		return -1;
	x->n++;
	snprintf(c->id, sizeof(c->id), "%s", id);
	snprintf(c->label, sizeof(c->label), "%s", label ? label : "");
	if (git) {
		snprintf(c->name, sizeof(c->name), "%.12s", id);
		return 0;
	}
	snprintf(c->name, sizeof(c->name), "%s%s", id[0] == '.' ? "v" : "", id);
	for (char *p = c->name; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-", *p))
			*p = '_';
	for (int i = 0; i < x->n - 1; i++) {
		size_t l = strlen(c->name) > 70 ? 70 : strlen(c->name);

		if (!strcmp(x->c[i].name, c->name)) { /* "1/2" and "1_2": keep dirs apart */
			snprintf(c->name + l, sizeof(c->name) - l, "~%d", x->n);
			break;
		}
	}
	return 0;
}

/* Append where pip looks for packages (--find-links, --index-url, as given)
 * to argv at k (room for 4 more); returns the new k. Listing and installing
 * look in the same places. */
int bs_pip_index_args(const struct bs_ctx *x, char **argv, int k)
{
	if (x->o.find_links) {
		argv[k++] = "--find-links";
		argv[k++] = (char *)x->o.find_links;
	}
	if (x->o.index_url) {
		argv[k++] = "--index-url";
		argv[k++] = (char *)x->o.index_url;
	}
	return k;
}

static int list_pip(struct bs_ctx *x)
{
	char *argv[16], *out = NULL, *line, *save = NULL;
	int k = 0, rc;

	argv[k++] = (char *)x->o.python;
	argv[k++] = "-c";
	argv[k++] = (char *)pip_lister;
	argv[k++] = (char *)x->o.pkg;
	argv[k++] = (char *)x->o.good;
	argv[k++] = (char *)x->o.bad;
	argv[k++] = x->o.pre ? "1" : "0";
	argv[k++] = x->o.find == BS_FIND_FIX ? "fix" : "break";
	k = bs_pip_index_args(x, argv, k);
	argv[k] = NULL;
	rc = bs_capture(argv, NULL, &out, true);
	if (rc == 127 || rc < 0) {
		rt_esc_printf(stderr, "ranktrace bisect: --python %s: cannot run it\n",
			      x->o.python);
		free(out);
		return BS_EXIT_USAGE;
	}
	if (rc != 0 || strncmp(out, "tag ", 4)) {
		line = strstr(out, "error: ");
		rt_esc_printf(stderr, "ranktrace bisect: %s%s",
			      line ? line + 7 : "listing versions with pip failed\n",
			      line && line[strlen(line) - 1] == '\n' ? "" : "\n");
		free(out);
		return BS_EXIT_USAGE;
	}
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "tag ", 4))
			snprintf(x->pytag, sizeof(x->pytag), "%s", line + 4);
		else if (add_cand(x, line, NULL, false) != 0)
			break;
	}
	free(out);
	return 0;
}

/* REV -> full hash in out; false (after a message) if it is no commit. */
static bool git_commit(struct bs_ctx *x, const char *opt, const char *rev, char *out, size_t n)
{
	char spec[256], *o = NULL;
	char *argv[] = { "git", "-C", x->repo, "rev-parse", "--verify", "-q", spec, NULL };
	int rc;

	snprintf(spec, sizeof(spec), "%s^{commit}", rev);
	rc = bs_capture(argv, NULL, &o, true);
	if (rc != 0 || strlen(o) < 40) {
		rt_esc_printf(stderr, "ranktrace bisect: %s %s: no such commit in %s\n",
			      opt, rev, x->repo);
		free(o);
		return false;
	}
	o[strcspn(o, "\n")] = '\0';
	snprintf(out, n, "%s", o);
	free(o);
	return true;
}

/* The commits from OLD to NEW (the older endpoint first). */
static int git_log_cands(struct bs_ctx *x, const char *old, const char *new)
{
	char range[200], *out = NULL, *line, *save = NULL;
	char *first[] = { "git", "-C", x->repo, "log", "-1", "--format=%H%x09%s", (char *)old, NULL };
	char *log[] = { "git", "-C", x->repo, "log", "--reverse", "--ancestry-path",
			"--format=%H%x09%s", range, x->o.first_parent ? "--first-parent" : NULL, NULL };

	snprintf(range, sizeof(range), "%s..%s", old, new);
	for (int pass = 0; pass < 2; pass++) {
		if (bs_capture(pass ? log : first, NULL, &out, true) != 0) {
			rt_esc_printf(stderr, "ranktrace bisect: git log %s failed\n", range);
			free(out);
			return BS_EXIT_USAGE;
		}
		for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char *tab = strchr(line, '\t');

			if (tab)
				*tab++ = '\0';
			if (add_cand(x, line, tab, true) != 0)
				break;
		}
		free(out);
		out = NULL;
	}
	if (x->n < 2 || strcmp(x->c[x->n - 1].id, new)) {
		bool fix = x->o.find == BS_FIND_FIX;

		rt_esc_printf(stderr, "ranktrace bisect: %s %s is not reached from %s %s%s\n",
			      fix ? "--good" : "--bad", fix ? x->o.good : x->o.bad, fix ? "--bad" : "--good",
			      fix ? x->o.bad : x->o.good, x->o.first_parent ? " by first parents" : "");
		return BS_EXIT_USAGE;
	}
	return 0;
}

static int list_git(struct bs_ctx *x)
{
	bool fix = x->o.find == BS_FIND_FIX;
	char good[64], bad[64], *o = NULL;
	char *old = fix ? bad : good, *new = fix ? good : bad;
	char *top[] = { "git", "-C", (char *)x->o.repo, "rev-parse", "--show-toplevel", NULL };
	char *anc[] = { "git", "-C", x->repo, "merge-base", "--is-ancestor", old, new, NULL };

	if (bs_capture(top, NULL, &o, true) != 0 || !*o) {
		rt_esc_printf(stderr, "ranktrace bisect: --git %s: not a git repository\n",
			      x->o.repo);
		free(o);
		return BS_EXIT_USAGE;
	}
	o[strcspn(o, "\n")] = '\0';
	snprintf(x->repo, sizeof(x->repo), "%s", o);
	free(o);
	if (!git_commit(x, "--good", x->o.good, good, sizeof(good)) ||
	    !git_commit(x, "--bad", x->o.bad, bad, sizeof(bad)))
		return BS_EXIT_USAGE;
	if (!strcmp(good, bad)) {
		rt_esc_printf(stderr, "ranktrace bisect: --good %s and --bad %s are the same commit\n",
			      
			      x->o.good, x->o.bad);
		return BS_EXIT_USAGE;
	}
	if (bs_capture(anc, NULL, &o, true) != 0) {
		free(o);
		if (fix)
			rt_esc_printf(stderr, "ranktrace bisect: --find fix: --bad %s is not an ancestor of "
				      "--good %s (the fix is looked for after the bad commit)\n", x->o.bad, x->o.good);
		else
			rt_esc_printf(stderr, "ranktrace bisect: --good %s is not an ancestor of --bad %s (good "
				      "after bad, or on another branch; looking for the fix? --find fix)\n",
				      x->o.good, x->o.bad);
		return BS_EXIT_USAGE;
	}
	free(o);
	return git_log_cands(x, old, new);
}

static int find_version(const struct bs_ctx *x, const char *v)
{
	for (int i = 0; i < x->n; i++)
		if (!strcmp(x->c[i].id, v))
			return i;
	return -1;
}

/* A --versions entry is a version, not text for a shell or a path: it
 * names the candidate's directory and reaches CMD and --setup. PEP 440 and
 * common tags: a letter or digit first, then letters, digits and . _ + ! ~ -. */
static bool valid_version(const char *v)
{
	size_t n = strlen(v);

	return n && n <= 100 && isalnum((unsigned char)v[0]) &&
	       strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+!~-") == n;
}

/* --good and --bad in --versions (default: the first and the last, by
 * --find): the candidates from the older to the newer. 0 or 2. */
static int pick_versions(struct bs_ctx *x)
{
	bool fix = x->o.find == BS_FIND_FIX;
	int g = x->o.good ? find_version(x, x->o.good) : fix ? x->n - 1 : 0;
	int b = x->o.bad ? find_version(x, x->o.bad) : fix ? 0 : x->n - 1;
	int old = fix ? b : g, new = fix ? g : b;

	if (g < 0 || b < 0) {
		rt_esc_printf(stderr, "ranktrace bisect: %s %s is not in --versions\n",
			      g < 0 ? "--good" : "--bad",
			      g < 0 ? x->o.good : x->o.bad);
		return BS_EXIT_USAGE;
	}
	if (old >= new) {
		rt_esc_printf(stderr, "ranktrace bisect: %s\n",
			      g == b ? "--good and --bad are the same version"
			      : fix ? "--find fix: --bad comes after --good in --versions (list them oldest "
			      "first: the fix is looked for after the bad one)"
			      : "--good comes after --bad in --versions (list them oldest first; looking for "
			      "the fix? --find fix)");
		return BS_EXIT_USAGE;
	}
	memmove(x->c, x->c + old, sizeof(*x->c) * (size_t)(new - old + 1));
	x->n = new - old + 1;
	return 0;
}

static int list_versions(struct bs_ctx *x)
{
	char *copy = strdup(x->o.versions), *tok, *save = NULL;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!*tok)
			continue;
		if (!valid_version(tok)) {
			rt_esc_printf(stderr, "ranktrace bisect: --versions: '%s' is not a version (a letter or "
				      "digit, then letters, digits and . _ + ! ~ - only)\n", tok);
			free(copy);
			return BS_EXIT_USAGE;
		}
		if (find_version(x, tok) >= 0) {
			rt_esc_printf(stderr, "ranktrace bisect: --versions lists %s twice\n", tok);
			free(copy);
			return BS_EXIT_USAGE;
		}
		add_cand(x, tok, NULL, false);
	}
	free(copy);
	return pick_versions(x);
}

/* The ordered candidates into x->c, oldest first (index 0 the good
 * endpoint, n-1 the bad; with --find fix 0 the bad, n-1 the good). 0 or 2. */
int bs_list_candidates(struct bs_ctx *x)
{
	switch (x->o.source) {
	case BS_PIP: return list_pip(x);
	case BS_GIT: return list_git(x);
	default: return list_versions(x);
	}
}
