/* SPDX-License-Identifier: MIT */
/* bisect.h - `ranktrace bisect`: shared state of the bisect files (cli/bisect*.c).
 *
 * One struct bs_ctx per bisect, owned by bisect.c. Candidates are an ordered
 * array (oldest first: index 0 is the good endpoint, n-1 the bad one). Only
 * the parent process changes it; worker processes (one per candidate being
 * judged) read it and report through a result file. Not thread-safe; no
 * threads are used. */
#ifndef RT_CLI_BISECT_H
#define RT_CLI_BISECT_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#define BS_EXIT_FOUND 0
#define BS_EXIT_NOT_FOUND 1
#define BS_EXIT_USAGE 2
#define BS_MAX_WITH 16
#define BS_MAX_ENV 32
#define BS_NO_SPACE "no-space" /* a worker's verdict: an install refused for free space */

enum bs_source { BS_PIP, BS_GIT, BS_VERSIONS };
enum bs_judged { BS_UNTESTED, BS_GOOD, BS_BAD, BS_SKIP };

struct bs_cand {
	char name[80];   /* directory name under BISECT_DIR */
	char id[128];    /* the version, or the full commit hash */
	char label[96];  /* git: the commit's subject */
	int judged;      /* enum bs_judged */
	char verdict[40]; /* last verdict word, or set-up-failed / timeout */
	char reason[256]; /* why skipped (or what was seen) */
	int runs, round;
	double seconds;
};

struct bs_opts {
	int source;
	const char *pkg, *good, *bad, *find_links, *index_url, *python;
	const char *repo, *setup, *pythonpath, *versions;
	const char *signature, *like, *launcher, *dir;
	const char *with[BS_MAX_WITH];
	const char *env[BS_MAX_ENV]; /* --env NAME=VALUE, in order */
	int nwith, nenv, jobs, retries;
	bool pre, isolated, first_parent, resume, json, keep;
	double timeout;
	unsigned long long min_free; /* --min-free: bytes an install needs at least (0: default) */
	char **cmd;
	int ncmd;
};

struct bs_ctx {
	struct bs_opts o;
	char dir[PATH_MAX];     /* BISECT_DIR, absolute */
	char self[PATH_MAX];    /* this ranktrace executable */
	char cache[PATH_MAX];   /* overlay cache (pip mode) */
	char repo[PATH_MAX];    /* git mode: the repository, absolute */
	char pytag[96];         /* pip mode: interpreter tag, part of the cache key */
	char signature[40];
	struct bs_cand *c;
	int n, rounds, runs;
	int argc;               /* the bisect's own arguments, saved for --resume */
	char **argv;
	bool tty, save_warned;
	char fatal[320];        /* why the bisect stopped (an install refused for space) */
};

extern volatile sig_atomic_t bs_stop;

/* bisect_cands.c: the ordered candidate list (0, or exit code 2 after a message). */
int bs_list_candidates(struct bs_ctx *x);
/* Room for one more candidate: x->c[x->n], zeroed (x->n unchanged); NULL: no memory. */
struct bs_cand *bs_cand_slot(struct bs_ctx *x);
/* pip's --find-links/--index-url into argv at k; returns the new k. */
int bs_pip_index_args(const struct bs_ctx *x, char **argv, int k);

/* bisect_proc.c: child processes in their own process group. */
struct bs_env {
	const char *const *vars; /* --env NAME=VALUE, set first */
	int nvars;
	const char *pythonpath; /* prepended to PYTHONPATH */
	const char *path;       /* prepended to PATH */
	const char *venv;       /* VIRTUAL_ENV */
	const char *candidate;  /* RANKTRACE_BISECT_CANDIDATE */
	const char *dir;        /* RANKTRACE_BISECT_DIR: {dir} of --setup */
};
int bs_spawn(char *const *argv, const char *cwd, int out_fd, const struct bs_env *env,
	     double timeout, bool *timed_out);
int bs_capture(char *const *argv, const char *cwd, char **out, bool quiet);
int bs_rm_rf(const char *path);
int bs_mkdir_p(const char *path);
void bs_shell_quote(FILE *f, const char *s);
char *bs_subst(const char *s, const char *version, const char *dir);
char *bs_subst_sh(const char *s);
void bs_last_line(const char *path, char *out, size_t n);

/* bisect_worker.c: judge one candidate (runs in a forked worker process). */
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

/* bisect_env.c: --isolated environments (one shared base, a thin venv per
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

/* bisect_search.c: the rounds. Returns the exit code. */
int bs_search(struct bs_ctx *x);
const char *bs_judged_name(int judged);

/* bisect_state.c: BISECT_DIR/.bisect/state, and the final report. */
int bs_state_save(const struct bs_ctx *x);
int bs_state_load(struct bs_ctx *x, char ***argv, int *argc);
void bs_report(struct bs_ctx *x, int lo, int hi, bool found);
void bs_report_error(struct bs_ctx *x, const char *msg);

/* cmd_bisect.c */
int bs_parse(struct bs_ctx *x, int argc, char **argv);

#endif
