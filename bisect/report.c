/* SPDX-License-Identifier: MIT */
/* report.c - the end of a bisect on stdout: text (first bad, last good, the
 * candidates tried, `ranktrace diff` of the two boundary traces, the command
 * reproducing the first bad run, the commits or release range between) or
 * JSON (schema ranktrace.bisect/1).
 *
 * Parent process only, after the rounds (search.c); reads the context, may
 * allocate, runs `ranktrace diff` and `git log` through spawn.c. */
#include <stdlib.h>
#include <string.h>

#include "bisect_int.h"
#include "export.h"

static void json_s(FILE *f, const char *s)
{
	fputc('"', f);
	rt_vw_json_esc(f, s);
	fputc('"', f);
}

static void json_cand(const struct bs_ctx *x, int i, FILE *f)
{
	const struct bs_cand *c = &x->c[i];
	char trace[PATH_MAX];

	bs_trace_dir(x, i, 0, trace, sizeof(trace));
	fprintf(f, "{\"index\": %d, \"name\": ", i);
	json_s(f, c->name);
	fprintf(f, ", \"id\": ");
	json_s(f, c->id);
	fprintf(f, ", \"label\": ");
	json_s(f, c->label);
	fprintf(f, ", \"judged\": \"%s\", \"verdict\": ", bs_judged_name(c->judged));
	json_s(f, c->verdict);
	fprintf(f, ", \"reason\": ");
	json_s(f, c->reason);
	fprintf(f, ", \"runs\": %d, \"seconds\": %.3f, \"round\": %d, \"trace\": ", c->runs,
		c->seconds, c->round);
	if (c->runs)
		json_s(f, trace);
	else
		fputs("null", f);
	fputc('}', f);
}

/* --env's value of NAME, or NULL. */
static const char *env_value(const struct bs_env *env, const char *name)
{
	const char *v = NULL;
	size_t k = strlen(name);

	for (int i = 0; i < env->nvars; i++)
		if (!strncmp(env->vars[i], name, k) && env->vars[i][k] == '=')
			v = env->vars[i] + k + 1;
	return v;
}

/* VAR=prefix:rest, rest being --env's value or the shell's own. */
static void repro_prepend(FILE *f, const struct bs_env *env, const char *name, const char *prefix)
{
	const char *given = env_value(env, name);

	fprintf(f, "%s=", name);
	bs_shell_quote(f, prefix);
	if (given && *given) {
		fputc(':', f);
		bs_shell_quote(f, given);
	} else if (!given) {
		fprintf(f, "${%s:+:$%s}", name, name);
	}
	fputc(' ', f);
}

/* The candidate's environment as shell assignments: --env (the last of a
 * name wins, as in the run), then PYTHONPATH / PATH with its own first. */
static void repro_env(FILE *f, const struct bs_env *env)
{
	for (int i = 0; i < env->nvars; i++) {
		const char *eq = strchr(env->vars[i], '=');
		char name[256];

		snprintf(name, sizeof(name), "%.*s", (int)(eq - env->vars[i]), env->vars[i]);
		if (env_value(env, name) != eq + 1 || (env->pythonpath && !strcmp(name, "PYTHONPATH")) ||
		    (env->path && !strcmp(name, "PATH")))
			continue;
		fprintf(f, "%s=", name);
		bs_shell_quote(f, eq + 1);
		fputc(' ', f);
	}
	if (env->pythonpath)
		repro_prepend(f, env, "PYTHONPATH", env->pythonpath);
	if (env->path) {
		fputs("VIRTUAL_ENV=", f);
		bs_shell_quote(f, env->venv);
		fputc(' ', f);
		repro_prepend(f, env, "PATH", env->path);
	}
}

/* The command that runs candidate i again, traced, into DIR/<name>.repro. */
static char *repro(const struct bs_ctx *x, int i)
{
	char pp[PATH_MAX], path[PATH_MAX], venv[PATH_MAX], wd[PATH_MAX], out[PATH_MAX + 16];
	struct bs_env env;
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);

	if (!f)
		return NULL;
	bs_candidate_env(x, i, &env, pp, path, venv, PATH_MAX);
	bs_work_dir(x, i, wd, sizeof(wd));
	if (x->o.source == BS_GIT) {
		strncat(wd, "/src", sizeof(wd) - strlen(wd) - 1);
		fputs("cd ", f);
		bs_shell_quote(f, wd);
		fputs(" && ", f);
	}
	repro_env(f, &env);
	if (x->o.launcher)
		fprintf(f, "%s ", x->o.launcher);
	snprintf(out, sizeof(out), "%s/%s.repro", x->dir, x->c[i].name);
	bs_shell_quote(f, x->self);
	fputs(" run -o ", f);
	bs_shell_quote(f, out);
	fputs(" --", f);
	for (int k = 0; k < x->o.ncmd; k++) {
		char *a = bs_subst(x->o.cmd[k], x->c[i].id, wd);

		fputc(' ', f);
		bs_shell_quote(f, a ? a : "");
		free(a);
	}
	fclose(f);
	return s;
}

static void json_head(const struct bs_ctx *x, bool found, int runs)
{
	printf("{\"schema\": \"ranktrace.bisect/1\", \"found\": %s, \"signature\": ",
	       found ? "true" : "false");
	json_s(stdout, x->signature);
	printf(", \"source\": \"%s\", \"candidates_total\": %d, \"rounds\": %d, \"runs\": %d",
	       x->o.source == BS_PIP ? "pip" : x->o.source == BS_GIT ? "git" : "versions", x->n,
	       x->rounds, runs);
	printf(",\n \"order\": [");
	for (int i = 0; i < x->n; i++)
		json_s(stdout, x->c[i].id), printf(i < x->n - 1 ? ", " : "");
	printf("]");
}

static void json_tried(const struct bs_ctx *x)
{
	int k = 0;

	printf(",\n \"candidates\": [");
	for (int i = 0; i < x->n; i++) {
		if (x->c[i].judged == BS_UNTESTED)
			continue;
		printf("%s\n  ", k++ ? "," : "");
		json_cand(x, i, stdout);
	}
	printf("\n]");
}

/* git mode: `git log --oneline` last_good..first_bad, oldest first. */
static void json_commits(const struct bs_ctx *x, int lo, int hi)
{
	char range[300], *out = NULL, *save = NULL;
	char *log[] = { "git", "-C", (char *)x->repo, "log", "--oneline", "--reverse", range, NULL };
	int k = 0;

	snprintf(range, sizeof(range), "%s..%s", x->c[lo].id, x->c[hi].id);
	if (bs_capture(log, NULL, &out, true) == 0)
		for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			printf("%s", k++ ? ", " : "");
			json_s(stdout, l);
		}
	free(out);
}

static void report_json(struct bs_ctx *x, int lo, int hi, bool found, const char *cmd)
{
	int runs = 0;

	for (int i = 0; i < x->n; i++)
		runs += x->c[i].runs;
	json_head(x, found, runs);
	printf(",\n \"first_bad\": ");
	if (found)
		json_cand(x, hi, stdout);
	else
		printf("null");
	printf(",\n \"last_good\": ");
	json_cand(x, lo, stdout);
	printf(",\n \"first_bad_range\": [");
	for (int i = lo + 1; i <= hi; i++)
		json_s(stdout, x->c[i].id), printf(i < hi ? ", " : "");
	printf("],\n \"commits\": [");
	if (x->o.source == BS_GIT)
		json_commits(x, lo, hi);
	printf("],\n \"repro\": ");
	json_s(stdout, cmd ? cmd : "");
	json_tried(x);
	printf("}\n");
}

/* --json when the bisect stops at its endpoints: what was tried, and why. */
void bs_report_error(struct bs_ctx *x, const char *msg)
{
	int runs = 0;

	for (int i = 0; i < x->n; i++)
		runs += x->c[i].runs;
	json_head(x, false, runs);
	printf(",\n \"first_bad\": null, \"last_good\": null, \"error\": ");
	json_s(stdout, msg);
	json_tried(x);
	printf("}\n");
	fflush(stdout);
}

static void report_table(const struct bs_ctx *x)
{
	int tried = 0;

	for (int i = 0; i < x->n; i++)
		tried += x->c[i].judged != BS_UNTESTED;
	printf("\ncandidates tried (%d of %d, oldest first):\n", tried, x->n);
	printf("  %-14s %-20s %-6s %4s %8s %5s  %s\n", "candidate", "verdict", "judged", "runs",
	       "time", "round", "trace, or why skipped");
	for (int i = 0; i < x->n; i++) {
		const struct bs_cand *c = &x->c[i];
		char trace[PATH_MAX];

		if (c->judged == BS_UNTESTED)
			continue;
		bs_trace_dir(x, i, 0, trace, sizeof(trace));
		printf("  %-14.14s %-20s %-6s %4d %7.1fs %5d  %s\n", x->o.source == BS_GIT ? c->name : c->id,
		       c->verdict, bs_judged_name(c->judged), c->runs, c->seconds, c->round,
		       c->judged == BS_SKIP ? c->reason : trace);
	}
}

static void report_text(struct bs_ctx *x, int lo, int hi, bool found, const char *cmd)
{
	const struct bs_cand *g = &x->c[lo], *b = &x->c[hi];
	char ta[PATH_MAX], tb[PATH_MAX], range[300];
	char *diff[] = { x->self, "diff", ta, tb, NULL };
	char *log[] = { "git", "-C", x->repo, "log", "--oneline", range, NULL };

	if (found)
		printf("first bad: %s%s%s  (%s)\n", b->id, b->label[0] ? "  " : "", b->label, x->signature);
	else {
		printf("the first bad is one of (the others were skipped):");
		for (int i = lo + 1; i <= hi; i++)
			printf(" %s", x->c[i].id);
		printf("\n");
	}
	printf("last good: %s%s%s\n", g->id, g->label[0] ? "  " : "", g->label);
	report_table(x);
	bs_trace_dir(x, lo, 0, ta, sizeof(ta));
	bs_trace_dir(x, hi, 0, tb, sizeof(tb));
	printf("\nranktrace diff %s %s:\n", ta, tb);
	fflush(stdout);
	bs_spawn(diff, NULL, -1, NULL, 600, NULL);
	printf("\nreproduce the %s run:\n  %s\n", found ? "first bad" : "first known bad", cmd ? cmd : "?");
	if (x->o.source == BS_GIT) {
		snprintf(range, sizeof(range), "%s..%s", g->id, b->id);
		printf("\ngit log --oneline %.12s..%.12s:\n", g->id, b->id);
		fflush(stdout);
		bs_spawn(log, NULL, -1, NULL, 60, NULL);
	} else {
		printf("\n%s%s range: %s .. %s\n", x->o.pkg ? x->o.pkg : "version",
		       x->o.pkg ? " release" : "", g->id, b->id);
	}
}

/* The end of a bisect: lo = last good, hi = first (known) bad. */
void bs_report(struct bs_ctx *x, int lo, int hi, bool found)
{
	char *cmd = repro(x, hi);

	if (x->o.json)
		report_json(x, lo, hi, found, cmd);
	else
		report_text(x, lo, hi, found, cmd);
	fflush(stdout);
	free(cmd);
}
