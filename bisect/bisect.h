/* SPDX-License-Identifier: MIT */
/* bisect.h - the bisect module (bisect/, library rtbisect): find the first
 * candidate (version, commit) whose traced run shows a failure signature.
 * Serves cli/cmd_bisect.c, the command layer (it parses the arguments into
 * struct bs_opts, then calls what is declared here), the unit tests
 * (tests/unit/test_bisect.c, a fake judge in bs_ctx.run) and
 * fuzz/fuzz_bisect_state.c.
 *
 * The files: cands.c lists the candidates; search.c runs the rounds (one
 * forked worker per candidate judged); worker.c judges one candidate (set-up,
 * traced runs, verdict); env.c the --isolated environments and free space;
 * state.c the state file of --resume; report.c the final report; spawn.c
 * runs commands (util/proc.h) in a candidate's environment; util.c small
 * file and shell-text helpers. bisect_int.h declares what they share.
 *
 * One struct bs_ctx per bisect, owned by the caller. Candidates are an
 * ordered array, oldest first: index 0 is the old endpoint, n-1 the new
 * one. What is hunted is the first candidate whose judgement differs from
 * the old endpoint's (git bisect's old/new terms): with --find break (the
 * default) the old endpoint is good and the first bad is found; with --find
 * fix the old endpoint is bad and the first good is found. Only the parent process changes it; worker processes (one per
 * candidate being judged) read it and report through a result file. Not
 * thread-safe; no threads are used. Errors of the user's input print one
 * line on stderr; the module never exits the process. */
#ifndef RT_BISECT_H
#define RT_BISECT_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#define BS_EXIT_FOUND 0
#define BS_EXIT_NOT_FOUND 1
#define BS_EXIT_USAGE 2
#define BS_MAX_WITH 16
#define BS_MAX_ENV 32

enum bs_source { BS_PIP, BS_GIT, BS_VERSIONS };
enum bs_judged { BS_UNTESTED, BS_GOOD, BS_BAD, BS_SKIP };
/* --find: the first bad after a good one, or the first good after a bad one */
enum bs_find { BS_FIND_BREAK, BS_FIND_FIX };

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
	int find; /* enum bs_find */
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
	/* One traced run of candidate i (run k, its log on fd): the verdict
	 * word into v (n bytes). NULL: `ranktrace run` then `ranktrace
	 * verdict` (worker.c); the unit tests put a fake judge here. Called in
	 * the worker process judging i. */
	void (*run)(const struct bs_ctx *x, int i, int k, int fd, char *v, size_t n);
};

/* Set (by the signal handlers bs_search installs, or a caller) to stop: the
 * running commands' process groups are killed, the round is forgotten. */
extern volatile sig_atomic_t bs_stop;

/* cands.c: the ordered candidate list into x->c (0, or exit code 2 after a
 * message). Runs before BISECT_DIR exists. */
int bs_list_candidates(struct bs_ctx *x);
/* Room for one more candidate: x->c[x->n], zeroed (x->n unchanged); NULL: no memory. */
struct bs_cand *bs_cand_slot(struct bs_ctx *x);

/* search.c: the rounds, up to the report on stdout. x->dir exists with
 * .bisect/ in it and x->c holds the candidates (judged ones from a state
 * are kept). Returns the exit code: BS_EXIT_FOUND, BS_EXIT_NOT_FOUND, or
 * 130 when interrupted (state saved). */
int bs_search(struct bs_ctx *x);
const char *bs_judged_name(int judged);

/* state.c: BISECT_DIR/.bisect/state. save: 0 or -errno. load: candidates,
 * signature, rounds into x; the saved arguments into *argv (malloc'd, each
 * string too). 0, or -1 after a message. */
int bs_state_save(const struct bs_ctx *x);
int bs_state_load(struct bs_ctx *x, char ***argv, int *argc);
/* A new bisect's BISECT_DIR (x->o.dir, the candidates listed): created with
 * .bisect/ in it, its real path into x->dir, the state saved, the start said
 * on stderr. 0, or BS_EXIT_USAGE after a message. */
int bs_state_create(struct bs_ctx *x);

/* spawn.c: run argv (no timeout), its stdout into *out (malloc'd,
 * NUL-terminated); stderr to /dev/null when quiet. Returns the exit status
 * (128+sig), -1 when it could not run. */
int bs_capture(char *const *argv, const char *cwd, char **out, bool quiet);
/* util.c: mkdir -p PATH (0700 for what it creates). 0 or -errno. */
int bs_mkdir_p(const char *path);
/* util.c: x->cache from RANKTRACE_CACHE_DIR, else $XDG_CACHE_HOME/ranktrace,
 * else ~/.cache/ranktrace (pip's downloads and wheels, shared by bisects). */
void bs_cache_dir(struct bs_ctx *x);
/* util.c: path is a directory holding nothing (-o may reuse it). */
bool bs_dir_empty(const char *path);

#endif
