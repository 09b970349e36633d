/* SPDX-License-Identifier: MIT */
/* bisect_int.h - what the files of bisect/ share among themselves (the
 * module's callers use bisect.h). Same rules: the parent alone changes the
 * context, workers read it; one thread. */
#ifndef RT_BISECT_INT_H
#define RT_BISECT_INT_H

#include "bisect.h"

#define BS_NO_SPACE "no-space" /* a worker's verdict: an install refused for free space */

/* The two sides of the hunt, as git bisect's old and new: what the old
 * endpoint (index 0) is judged and what is searched for after it. */
static inline int bs_old_judged(const struct bs_ctx *x)
{
	return x->o.find == BS_FIND_FIX ? BS_BAD : BS_GOOD;
}

static inline int bs_new_judged(const struct bs_ctx *x)
{
	return x->o.find == BS_FIND_FIX ? BS_GOOD : BS_BAD;
}

/* The index of the bad endpoint (it names the signature) and the good one's. */
static inline int bs_bad_end(const struct bs_ctx *x)
{
	return x->o.find == BS_FIND_FIX ? 0 : x->n - 1;
}

static inline int bs_good_end(const struct bs_ctx *x)
{
	return x->o.find == BS_FIND_FIX ? x->n - 1 : 0;
}

/* cands.c: pip's --find-links/--index-url into argv at k; returns the new k. */
int bs_pip_index_args(const struct bs_ctx *x, char **argv, int k);

/* spawn.c: commands in their own process group (util/proc.h), killed with
 * it at a timeout or bs_stop, in a candidate's environment. */
struct bs_env {
	const char *const *vars; /* --env NAME=VALUE, set first */
	int nvars;
	const char *pythonpath; /* prepended to PYTHONPATH */
	const char *path;       /* prepended to PATH */
	const char *venv;       /* VIRTUAL_ENV */
	const char *candidate;  /* RANKTRACE_BISECT_CANDIDATE */
	const char *dir;        /* RANKTRACE_BISECT_DIR: {dir} of --setup */
};
/* Run argv, output to out_fd (-1: inherit), env added. Returns the wait
 * status (-1 if it could not start); *timed_out set when it was killed for
 * running over timeout seconds (0: no limit). */
int bs_spawn(char *const *argv, const char *cwd, int out_fd, const struct bs_env *env,
	     double timeout, bool *timed_out);

/* util.c: files and shell text. */
int bs_rm_rf(const char *path);
void bs_shell_quote(FILE *f, const char *s);
char *bs_subst(const char *s, const char *version, const char *dir);
char *bs_subst_sh(const char *s);
void bs_last_line(const char *path, char *out, size_t n);

/* worker.c: judge one candidate (runs in a forked worker process). */
struct bs_result {
	int judged, runs;
	double seconds;
	char verdict[40], reason[256];
};
void bs_work_dir(const struct bs_ctx *x, int i, char *out, size_t n);
void bs_trace_dir(const struct bs_ctx *x, int i, int run, char *out, size_t n);
void bs_judge(const struct bs_ctx *x, int i, struct bs_result *r);
void bs_candidate_env(const struct bs_ctx *x, int i, struct bs_env *env, char *pp, char *path,
		      char *venv, size_t n);
int bs_step(const struct bs_ctx *x, int fd, const char *what, char *const *argv, const char *cwd,
	    const struct bs_env *env, char *why, size_t n);
int bs_pip_install(const struct bs_ctx *x, const char *version, int fd, const char *venv_py,
		   const char *target, char *why, size_t n);

/* env.c: --isolated environments (one shared base, a thin venv per
 * candidate), disk space before installs, removal of judged environments.
 * bs_base_prepare: 0, or -1 with the reason in x->fatal. bs_prepare_venv:
 * 0, -1 set-up failed, -2 refused for free space (why). */
void bs_base_dir(const struct bs_ctx *x, char *out, size_t n);
int bs_base_prepare(struct bs_ctx *x);
int bs_prepare_venv(const struct bs_ctx *x, int i, int fd, char *why, size_t n);
int bs_space_check(const char *dir, const char *what, unsigned long long need, char *why,
		   size_t n);
unsigned long long bs_need(const struct bs_ctx *x, unsigned long long largest);
unsigned long long bs_du(const char *path);
void bs_record_size(const char *dir, const char *file);
unsigned long long bs_read_size(const char *file);
void bs_remove_envs(const struct bs_ctx *x, int lo, int hi);

/* report.c: the end of a bisect on stdout (lo = the old side's last: last
 * good, or last bad with --find fix; hi = the new side's first known), text or JSON (schema ranktrace.bisect/1); the JSON of a
 * bisect stopped at its endpoints or short of space. */
void bs_report(struct bs_ctx *x, int lo, int hi, bool found);
void bs_report_error(struct bs_ctx *x, const char *msg);

#endif
