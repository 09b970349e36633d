/* SPDX-License-Identifier: MIT */
/* state.c - a bisect's saved state (BISECT_DIR/.bisect/state), read by
 * --resume.
 *
 * The state holds the bisect's own arguments (so `--resume -o DIR` needs
 * nothing else), the signature, the round count and every candidate with
 * its judgement. It is written to a temporary file and renamed after every
 * result: an interrupted bisect leaves the last complete state. Strings are
 * stored escaped (\\, \t, \n), one record a line. Parent process only. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bisect_int.h"
#include "escape.h"

#define STATE_MAGIC "ranktrace-bisect-state 1"

static void put_esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\t')
			fputs("\\t", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* Unescape in place; returns s. */
static char *unesc(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (*r == '\\' && r[1]) {
			r++;
			*w++ = *r == 't' ? '\t' : *r == 'n' ? '\n' : *r;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	return s;
}

int bs_state_save(const struct bs_ctx *x)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 40];
	FILE *f;

	snprintf(path, sizeof(path), "%s/.bisect/state", x->dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%s\nsignature %s\nrounds %d\npytag %s\nrepo ", STATE_MAGIC, x->signature,
		x->rounds, x->pytag);
	put_esc(f, x->repo);
	for (int k = 0; k < x->argc; k++) {
		fputs("\narg ", f);
		put_esc(f, x->argv[k]);
	}
	for (int i = 0; i < x->n; i++) {
		const struct bs_cand *c = &x->c[i];

		fprintf(f, "\ncand %d %d %d %.3f\t", c->judged, c->runs, c->round, c->seconds);
		put_esc(f, c->name);
		fputc('\t', f);
		put_esc(f, c->id);
		fputc('\t', f);
		put_esc(f, c->label);
		fputc('\t', f);
		put_esc(f, c->verdict);
		fputc('\t', f);
		put_esc(f, c->reason);
	}
	fputc('\n', f);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		return -EIO;
	}
	return 0;
}

static void set_field(char *dst, size_t n, char *src)
{
	snprintf(dst, n, "%s", src ? unesc(src) : "");
}

static int load_cand(struct bs_ctx *x, char *line)
{
	char *f[5], *rest, *tab = strchr(line, '\t');
	struct bs_cand *c = tab ? bs_cand_slot(x) : NULL;

	if (!c)
		return -1;
	if (sscanf(line, "%d %d %d %lf", &c->judged, &c->runs, &c->round, &c->seconds) != 4)
		return -1;
	rest = tab + 1;
	for (int k = 0; k < 5; k++) /* a missing field: NULL, read as "" */
		f[k] = strsep(&rest, "\t");
	set_field(c->name, sizeof(c->name), f[0]);
	set_field(c->id, sizeof(c->id), f[1]);
	set_field(c->label, sizeof(c->label), f[2]);
	set_field(c->verdict, sizeof(c->verdict), f[3]);
	set_field(c->reason, sizeof(c->reason), f[4]);
	x->n++;
	return 0;
}

int bs_state_load(struct bs_ctx *x, char ***argv, int *argc)
{
	char path[PATH_MAX + 32], *line = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f;
	int bad = 0;

	snprintf(path, sizeof(path), "%s/.bisect/state", x->dir);
	f = fopen(path, "r");
	*argv = NULL;
	*argc = 0;
	if (!f || (len = getline(&line, &cap, f)) < 0 || strncmp(line, STATE_MAGIC, strlen(STATE_MAGIC))) {
		rt_esc_printf(stderr, "ranktrace bisect: --resume: %s holds no bisect state (%s)\n",
			      x->dir,
			      f ? "not a bisect state file" : strerror(errno));
		if (f)
			fclose(f);
		free(line);
		return -1;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "signature ", 10))
			snprintf(x->signature, sizeof(x->signature), "%s", line + 10);
		else if (!strncmp(line, "rounds ", 7))
			x->rounds = atoi(line + 7);
		else if (!strncmp(line, "pytag ", 6))
			snprintf(x->pytag, sizeof(x->pytag), "%s", line + 6);
		else if (!strncmp(line, "repo ", 5))
			snprintf(x->repo, sizeof(x->repo), "%s", unesc(line + 5));
		else if (!strncmp(line, "arg ", 4)) {
			char **a = realloc(*argv, sizeof(char *) * (size_t)(*argc + 2));

			if (!a)
				break;
			*argv = a;
			a[(*argc)++] = strdup(unesc(line + 4));
			a[*argc] = NULL;
		} else if (!strncmp(line, "cand ", 5))
			bad |= load_cand(x, line + 5);
	}
	fclose(f);
	free(line);
	if (bad || x->n < 2 || !*argv) {
		rt_esc_printf(stderr, "ranktrace bisect: --resume: %s: damaged state file\n", path);
		return -1;
	}
	return 0;
}

int bs_state_create(struct bs_ctx *x)
{
	char side[PATH_MAX + 16];

	snprintf(side, sizeof(side), "%s/.bisect", x->o.dir);
	if (bs_mkdir_p(side) != 0 || !realpath(x->o.dir, x->dir)) {
		rt_esc_printf(stderr, "ranktrace bisect: cannot create %s: %s\n", x->o.dir,
			      strerror(errno));
		return BS_EXIT_USAGE;
	}
	if (bs_state_save(x) != 0) {
		rt_esc_printf(stderr, "ranktrace bisect: cannot write the state in %s\n", side);
		return BS_EXIT_USAGE;
	}
	rt_esc_printf(stderr, "bisect: %d candidates from %s to %s%s%s%s; traces in %s/\n", x->n,
		      x->c[0].id, x->c[x->n - 1].id, x->o.find == BS_FIND_FIX ? "; finding the fix" : "",
		      x->signature[0] ? (x->o.find == BS_FIND_FIX ? " of " : "; hunting ") : "",
		      x->signature, x->dir);
	return 0;
}
