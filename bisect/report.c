/* SPDX-License-Identifier: MIT */
/* report.c - the end of a bisect on stdout: text (first bad and last good,
 * or with --find fix first good and last bad; the candidates tried, oldest
 * first; `ranktrace diff` of the two boundary traces, older first; the
 * command reproducing the boundary's bad run; the commits or release range
 * between) or JSON (schema ranktrace.bisect/1).
 *
 * Parent process only, after the rounds (search.c); reads the context, may
 * allocate, runs `ranktrace diff` and `git log` through spawn.c. */
#include <stdlib.h>
#include <string.h>

#include "bisect_int.h"
#include "escape.h"
#include "json.h"
#include "json_keys.h"

/* One candidate as an object (docs/json.md: "Each candidate"). */
static void json_cand(const struct bs_ctx *x, int i, struct rt_json *w, const char *key)
{
	const struct bs_cand *c = &x->c[i];
	char trace[PATH_MAX];

	bs_trace_dir(x, i, 0, trace, sizeof(trace));
	rt_json_obj(w, key);
	rt_json_int(w, RT_JK(index), i);
	rt_json_str(w, RT_JK(name), c->name);
	rt_json_str(w, RT_JK(id), c->id);
	rt_json_str(w, RT_JK(label), c->label);
	rt_json_str(w, RT_JK(judged), bs_judged_name(c->judged));
	rt_json_str(w, RT_JK(verdict), c->verdict);
	rt_json_str(w, RT_JK(reason), c->reason);
	rt_json_int(w, RT_JK(runs), c->runs);
	rt_json_fixed(w, RT_JK(seconds), c->seconds, 3);
	rt_json_int(w, RT_JK(round), c->round);
	rt_json_str(w, RT_JK(trace), c->runs ? trace : NULL);
	rt_json_end(w);
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

static void json_head(const struct bs_ctx *x, struct rt_json *w, bool found)
{
	static const char *const sources[] = { [BS_PIP] = "pip", [BS_GIT] = "git", [BS_VERSIONS] = "versions" };
	int runs = 0;

	for (int i = 0; i < x->n; i++)
		runs += x->c[i].runs;
	rt_json_init(w, stdout, false);
	rt_json_obj(w, NULL);
	rt_json_str(w, RT_JK(schema), RT_JSCHEMA(bisect));
	rt_json_str(w, RT_JK(find), x->o.find == BS_FIND_FIX ? "fix" : "break");
	rt_json_bool(w, RT_JK(found), found);
	rt_json_str(w, RT_JK(signature), x->signature);
	rt_json_str(w, RT_JK(source), sources[x->o.source]);
	rt_json_int(w, RT_JK(candidates_total), x->n);
	rt_json_int(w, RT_JK(rounds), x->rounds);
	rt_json_int(w, RT_JK(runs), runs);
	rt_json_brk(w, 1);
	rt_json_arr(w, RT_JK(order));
	for (int i = 0; i < x->n; i++)
		rt_json_str(w, NULL, x->c[i].id);
	rt_json_end(w);
}

/* The candidates tried, oldest first, one a line; then the document ends. */
static void json_tried(const struct bs_ctx *x, struct rt_json *w)
{
	rt_json_brk(w, 1);
	rt_json_arr(w, RT_JK(candidates));
	rt_json_lines(w, 2, true);
	for (int i = 0; i < x->n; i++)
		if (x->c[i].judged != BS_UNTESTED)
			json_cand(x, i, w, NULL);
	rt_json_end(w);
	rt_json_end(w);
	if (rt_json_finish(w) != 0)
		rt_esc_printf(stderr, "ranktrace bisect: writing the JSON report failed\n");
}

/* git mode: `git log --oneline` from the older boundary to the newer, oldest first. */
static void json_commits(const struct bs_ctx *x, struct rt_json *w, int lo, int hi)
{
	char range[300], *out = NULL, *save = NULL;
	char *log[] = { "git", "-C", (char *)x->repo, "log", "--oneline", "--reverse", range, NULL };

	snprintf(range, sizeof(range), "%s..%s", x->c[lo].id, x->c[hi].id);
	if (bs_capture(log, NULL, &out, true) == 0)
		for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
			rt_json_str(w, NULL, l);
	free(out);
}

/* KEY: candidate i, or null (when not side, or i < 0). */
static void json_end(const struct bs_ctx *x, struct rt_json *w, const char *key, int i, bool side)
{
	rt_json_brk(w, 1);
	if (side && i >= 0)
		json_cand(x, i, w, key);
	else
		rt_json_null(w, key);
}

/* KEY: the ids where the hunted candidate lies, lo+1..hi ([] for the other side). */
static void json_range(const struct bs_ctx *x, struct rt_json *w, const char *key, int lo, int hi,
		       bool side)
{
	rt_json_brk(w, 1);
	rt_json_arr(w, key);
	for (int i = lo + 1; side && i <= hi; i++)
		rt_json_str(w, NULL, x->c[i].id);
	rt_json_end(w);
}

static void report_json(struct bs_ctx *x, int lo, int hi, bool found, const char *cmd)
{
	bool fix = x->o.find == BS_FIND_FIX;
	struct rt_json w;

	json_head(x, &w, found);
	json_end(x, &w, RT_JK(first_bad), found ? hi : -1, !fix);
	json_end(x, &w, RT_JK(last_good), lo, !fix);
	json_end(x, &w, RT_JK(first_good), found ? hi : -1, fix);
	json_end(x, &w, RT_JK(last_bad), lo, fix);
	json_range(x, &w, RT_JK(first_bad_range), lo, hi, !fix);
	json_range(x, &w, RT_JK(first_good_range), lo, hi, fix);
	rt_json_brk(&w, 1);
	rt_json_arr(&w, RT_JK(commits));
	if (x->o.source == BS_GIT)
		json_commits(x, &w, lo, hi);
	rt_json_end(&w);
	rt_json_brk(&w, 1);
	rt_json_str(&w, RT_JK(repro), cmd ? cmd : "");
	json_tried(x, &w);
}

/* --json when the bisect stops at its endpoints: what was tried, and why. */
void bs_report_error(struct bs_ctx *x, const char *msg)
{
	struct rt_json w;

	json_head(x, &w, false);
	rt_json_brk(&w, 1);
	rt_json_null(&w, RT_JK(first_bad));
	rt_json_null(&w, RT_JK(last_good));
	rt_json_null(&w, RT_JK(first_good));
	rt_json_null(&w, RT_JK(last_bad));
	rt_json_str(&w, RT_JK(error), msg);
	json_tried(x, &w);
}

static void report_table(const struct bs_ctx *x)
{
	int tried = 0;

	for (int i = 0; i < x->n; i++)
		tried += x->c[i].judged != BS_UNTESTED;
	rt_esc_printf(stdout, "\ncandidates tried (%d of %d, oldest first):\n", tried, x->n);
	rt_esc_printf(stdout, "  %-14s %-20s %-6s %4s %8s %5s  %s\n",
		      "candidate", "verdict", "judged", "runs",
		      "time", "round", "trace, or why skipped");
	for (int i = 0; i < x->n; i++) {
		const struct bs_cand *c = &x->c[i];
		char trace[PATH_MAX], why[4 * sizeof(c->reason)];

		if (c->judged == BS_UNTESTED)
			continue;
		bs_trace_dir(x, i, 0, trace, sizeof(trace));
		/* a reason quotes a set-up log's last line: escaped for the terminal */
		rt_esc_printf(stdout, "  %-14.14s %-20s %-6s %4d %7.1fs %5d  %s\n",
			      x->o.source == BS_GIT ? c->name : c->id,
			      c->verdict, bs_judged_name(c->judged), c->runs, c->seconds, c->round,
			      c->judged == BS_SKIP ? rt_esc_text(why, sizeof(why), c->reason) : trace);
	}
}

/* First bad and last good, or (--find fix) first good and last bad; the
 * commit subjects escaped for the terminal. */
static void report_ends(const struct bs_ctx *x, int lo, int hi, bool found)
{
	const struct bs_cand *o = &x->c[lo], *h = &x->c[hi];
	char lo_label[4 * sizeof(o->label)], hi_label[sizeof(lo_label)];
	bool fix = x->o.find == BS_FIND_FIX;

	rt_esc_text(lo_label, sizeof(lo_label), o->label);
	rt_esc_text(hi_label, sizeof(hi_label), h->label);
	if (found && fix)
		rt_esc_printf(stdout, "first good: %s%s%s  (fixes %s)\n",
			      h->id, hi_label[0] ? "  " : "", hi_label,
			      x->signature);
	else if (found)
		rt_esc_printf(stdout, "first bad: %s%s%s  (%s)\n",
			      h->id, hi_label[0] ? "  " : "", hi_label,
			      x->signature);
	else {
		rt_esc_printf(stdout, "the first %s is one of (the others were skipped):",
			      fix ? "good" : "bad");
		for (int i = lo + 1; i <= hi; i++)
			rt_esc_printf(stdout, " %s", x->c[i].id);
		rt_esc_printf(stdout, "\n");
	}
	if (fix)
		rt_esc_printf(stdout, "last bad: %s%s%s  (%s)\n",
			      o->id, lo_label[0] ? "  " : "", lo_label, x->signature);
	else
		rt_esc_printf(stdout, "last good: %s%s%s\n",
			      o->id, lo_label[0] ? "  " : "", lo_label);
}

static void report_text(struct bs_ctx *x, int lo, int hi, bool found, const char *cmd)
{
	const struct bs_cand *o = &x->c[lo], *h = &x->c[hi];
	char ta[PATH_MAX], tb[PATH_MAX], range[300];
	char *diff[] = { x->self, "diff", ta, tb, NULL };
	char *log[] = { "git", "-C", x->repo, "log", "--oneline", range, NULL };
	bool fix = x->o.find == BS_FIND_FIX;

	report_ends(x, lo, hi, found);
	report_table(x);
	bs_trace_dir(x, lo, 0, ta, sizeof(ta));
	bs_trace_dir(x, hi, 0, tb, sizeof(tb));
	rt_esc_printf(stdout, "\nranktrace diff %s %s:\n", ta, tb);
	fflush(stdout);
	bs_spawn(diff, NULL, -1, NULL, 600, NULL);
	rt_esc_printf(stdout, "\nreproduce the %s run:\n  %s\n",
		      fix ? "last bad" : found ? "first bad" : "first known bad",
		      cmd ? cmd : "?");
	if (x->o.source == BS_GIT) {
		snprintf(range, sizeof(range), "%s..%s", o->id, h->id);
		rt_esc_printf(stdout, "\ngit log --oneline %.12s..%.12s:\n", o->id, h->id);
		fflush(stdout);
		bs_spawn(log, NULL, -1, NULL, 60, NULL);
	} else {
		rt_esc_printf(stdout, "\n%s%s range: %s .. %s\n", x->o.pkg ? x->o.pkg : "version",
			      x->o.pkg ? " release" : "", o->id, h->id);
	}
}

/* The end of a bisect: lo = the last of the old side (last good; --find
 * fix: last bad), hi = the first (known) of the new side. */
void bs_report(struct bs_ctx *x, int lo, int hi, bool found)
{
	char *cmd = repro(x, x->o.find == BS_FIND_FIX ? lo : hi); /* the bad boundary */

	if (x->o.json)
		report_json(x, lo, hi, found, cmd);
	else
		report_text(x, lo, hi, found, cmd);
	fflush(stdout);
	free(cmd);
}
