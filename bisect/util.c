/* SPDX-License-Identifier: MIT */
/* util.c - small helpers of bisect/: rm -rf and mkdir -p of its work
 * directories, whether -o's directory is empty, the download cache's place,
 * shell quoting (the reproducing command), {version} and {dir} in CMD and
 * --setup, the last line of a step's log, a judgement's name.
 *
 * No state; allocate only where they return a string; any process. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bisect_int.h"
#include "env.h"
#include "rt_util.h"

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
 * spawn.c exports (RANKTRACE_BISECT_CANDIDATE, RANKTRACE_BISECT_DIR),
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

const char *bs_judged_name(int judged)
{
	static const char *const names[] = { "untested", "good", "bad", "skip" };

	return judged >= 0 && judged <= BS_SKIP ? names[judged] : "?";
}

void bs_cache_dir(struct bs_ctx *x)
{
	const char *env = getenv(RT_ENV_NAME(CACHE_DIR)), *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");

	if (env && *env)
		snprintf(x->cache, sizeof(x->cache), "%s", env);
	else if (xdg && *xdg)
		snprintf(x->cache, sizeof(x->cache), "%s/ranktrace", xdg);
	else
		snprintf(x->cache, sizeof(x->cache), "%s/.cache/ranktrace", home ? home : "/tmp");
}

bool bs_dir_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool empty = true;

	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = false;
	if (d)
		closedir(d);
	return d && empty;
}
