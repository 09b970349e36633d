/* SPDX-License-Identifier: MIT */
/* search.c - the rounds of a bisect: endpoints first, then
 * multisection around skipped candidates.
 *
 * Each round judges up to --jobs candidates at once, one forked worker
 * process each (worker.c), chosen evenly among the untested
 * candidates strictly between the last good and the first bad: about
 * log_(P+1) N rounds; P = 1 is plain bisection. A skipped candidate only
 * drops out of the choice, so the search goes around it, as `git bisect
 * skip` does. The parent alone changes the candidate array and saves the
 * state after every result; SIGINT/SIGTERM set bs_stop, the workers kill
 * their command's process group, the unfinished round is forgotten (its
 * candidates run again on --resume). Progress goes to stderr. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bisect_int.h"
#include "proc.h"
#include "escape.h"

#define EXIT_INTERRUPTED 130
#define EXIT_FATAL (-3) /* x->fatal says why; exit 1 after saying it */

struct worker {
	pid_t pid;
	int i;
};

static void on_stop(int sig)
{
	(void)sig;
	bs_stop = 1;
}

static void handle_stop_signals(void)
{
	struct sigaction sa = { 0 };

	sa.sa_handler = on_stop; /* no SA_RESTART: waitpid returns EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void result_path(const struct bs_ctx *x, int i, char *out, size_t n)
{
	bs_work_dir(x, i, out, n);
	strncat(out, "/result", n - strlen(out) - 1);
}

static pid_t start_worker(const struct bs_ctx *x, int i)
{
	char path[PATH_MAX + 8];
	struct bs_result r;
	pid_t pid;

	result_path(x, i, path, sizeof(path));
	unlink(path);
	fflush(NULL);
	pid = fork();
	if (pid != 0)
		return pid;
	bs_judge(x, i, &r);
	FILE *f = fopen(path, "w");

	if (f) {
		fprintf(f, "%d %d %.3f\n%s\n%s\n", r.judged, r.runs, r.seconds, r.verdict, r.reason);
		fclose(f);
	}
	rt_proc_coverage_dump(); /* _exit writes no gcov counters */
	_exit(0);
}

static bool read_result(const struct bs_ctx *x, int i, struct bs_result *r)
{
	char path[PATH_MAX + 8];
	FILE *f;
	bool ok;

	memset(r, 0, sizeof(*r));
	result_path(x, i, path, sizeof(path));
	f = fopen(path, "r");
	if (!f)
		return false;
	ok = fscanf(f, "%d %d %lf\n", &r->judged, &r->runs, &r->seconds) == 3 &&
	     fgets(r->verdict, sizeof(r->verdict), f);
	if (ok && !fgets(r->reason, sizeof(r->reason), f))
		r->reason[0] = '\0';
	fclose(f);
	r->verdict[strcspn(r->verdict, "\n")] = '\0';
	r->reason[strcspn(r->reason, "\n")] = '\0';
	return ok;
}

/* Untested candidates strictly between the bounds; their count. */
static int untested(const struct bs_ctx *x, int lo, int hi, int *u)
{
	int m = 0;

	for (int i = lo + 1; i < hi; i++)
		if (x->c[i].judged == BS_UNTESTED)
			u[m++] = i;
	return m;
}

/* The bounds: hi = the first candidate judged as the new side (the first
 * bad; with --find fix the first good), lo = the last judged as the old
 * side before it. */
static void bounds(const struct bs_ctx *x, int *lo, int *hi)
{
	int old = bs_old_judged(x), new = bs_new_judged(x);

	*hi = x->n - 1;
	for (int i = 0; i < x->n; i++)
		if (x->c[i].judged == new) {
			*hi = i;
			break;
		}
	*lo = 0;
	for (int i = 0; i < *hi; i++)
		if (x->c[i].judged == old)
			*lo = i;
}

static int rounds_left(int m, int p)
{
	return m <= 0 ? 0 : (int)ceil(log((double)m + 1) / log((double)p + 1) - 1e-9);
}

static void progress(const struct bs_ctx *x, int i, double elapsed, int steps_left)
{
	const struct bs_cand *c = &x->c[i];
	int done = 0;
	double per = 0;

	for (int k = 0; k < x->n; k++)
		if (x->c[k].judged != BS_UNTESTED) {
			done++;
			per += x->c[k].seconds;
		}
	per = done ? per / done : 0;
	if (x->tty)
		fprintf(stderr, "\r\033[K");
	rt_esc_printf(stderr, "bisect: step %d of about %d: %s%s%s -> %s (%s%s%s) %.1fs; %.0fs elapsed, "
		      "about %.0fs left\n", done, done + steps_left, c->name, c->label[0] ? " " : "", c->label,
		      c->verdict, bs_judged_name(c->judged), c->reason[0] ? ": " : "", c->reason, c->seconds,
		      elapsed, per * (double)steps_left / (x->o.jobs > 0 ? x->o.jobs : 1));
}

static void bar(const struct bs_ctx *x, const int *idx, int m, int steps_left)
{
	int done = 0, width = 24, fill;

	if (!x->tty)
		return;
	for (int k = 0; k < x->n; k++)
		done += x->c[k].judged != BS_UNTESTED;
	fill = done + steps_left ? width * done / (done + steps_left) : width;
	fprintf(stderr, "\r\033[K[");
	for (int k = 0; k < width; k++)
		fputc(k < fill ? '#' : '.', stderr);
	rt_esc_printf(stderr, "] round %d: running", x->rounds);
	for (int k = 0; k < m && k < 4; k++)
		rt_esc_printf(stderr, " %s", x->c[idx[k]].name);
	fprintf(stderr, m > 4 ? " ..." : "");
}

/* Judge candidates idx[0..m) at once; 0, or EXIT_INTERRUPTED. */
static int run_round(struct bs_ctx *x, const int *idx, int m, double t0, int steps_left)
{
	struct worker w[64];
	int live = 0;

	x->rounds++;
	bar(x, idx, m, steps_left);
	for (int k = 0; k < m && k < 64; k++) {
		w[k].i = idx[k];
		w[k].pid = start_worker(x, idx[k]);
		live += w[k].pid > 0;
		if (w[k].pid < 0) { /* judged skip, or the next round picks it again */
			x->c[idx[k]].judged = BS_SKIP;
			x->c[idx[k]].round = x->rounds;
			snprintf(x->c[idx[k]].verdict, sizeof(x->c[idx[k]].verdict), "error");
			snprintf(x->c[idx[k]].reason, sizeof(x->c[idx[k]].reason), "cannot fork: %s",
				 strerror(errno));
		}
	}
	while (live > 0) {
		struct timespec ts;
		struct bs_result r;
		int st;
		pid_t pid = waitpid(-1, &st, 0);

		if (pid < 0 && errno == EINTR && bs_stop) {
			for (int k = 0; k < m; k++)
				if (w[k].pid > 0)
					kill(w[k].pid, SIGTERM);
			continue;
		}
		if (pid < 0)
			break;
		for (int k = 0; k < m; k++) {
			if (w[k].pid != pid)
				continue;
			w[k].pid = 0;
			live--;
			if (bs_stop)
				break;
			if (!read_result(x, w[k].i, &r)) {
				memset(&r, 0, sizeof(r));
				r.judged = BS_SKIP;
				snprintf(r.verdict, sizeof(r.verdict), "error");
				snprintf(r.reason, sizeof(r.reason), "the worker judging it died (status %d)", st);
			}
			struct bs_cand *c = &x->c[w[k].i];

			if (!strcmp(r.verdict, BS_NO_SPACE)) { /* stays untested for --resume */
				snprintf(x->fatal, sizeof(x->fatal), "%s", r.reason);
				continue;
			}
			c->judged = r.judged;
			c->runs = r.runs;
			c->seconds = r.seconds;
			c->round = x->rounds;
			snprintf(c->verdict, sizeof(c->verdict), "%s", r.verdict);
			snprintf(c->reason, sizeof(c->reason), "%s", r.reason);
			if (bs_state_save(x) != 0 && !x->save_warned) {
				x->save_warned = true;
				rt_esc_printf(stderr, "ranktrace bisect: warning: cannot save the state in %s/.bisect "
					      "(--resume will redo what follows)\n", x->dir);
			}
			clock_gettime(CLOCK_MONOTONIC, &ts);
			progress(x, w[k].i, (double)ts.tv_sec - t0, live ? live + steps_left : steps_left);
			if (live)
				bar(x, idx, m, steps_left);
		}
	}
	return bs_stop ? EXIT_INTERRUPTED : x->fatal[0] ? EXIT_FATAL : 0;
}

/* A bad endpoint sets the signature; a failure other than the signature
 * judged "bad" (signature still unknown when it ran) is a skip. */
static void settle(struct bs_ctx *x, int i)
{
	struct bs_cand *c = &x->c[i];

	if (c->judged != BS_BAD)
		return;
	if (!x->signature[0] && i == bs_bad_end(x)) {
		snprintf(x->signature, sizeof(x->signature), "%s", c->verdict);
		bs_state_save(x);
	} else if (strcmp(c->verdict, x->signature)) {
		c->judged = BS_SKIP;
		snprintf(c->reason, sizeof(c->reason), "another failure: %s", c->verdict);
		bs_state_save(x);
	}
}

/* A misjudged endpoint: one message (stderr, and the JSON's "error"); 1. */
static int endpoint_error(struct bs_ctx *x)
{
	const struct bs_cand *g = &x->c[bs_good_end(x)], *b = &x->c[bs_bad_end(x)];
	bool fix = x->o.find == BS_FIND_FIX;
	char msg[1024];

	if (b->judged == BS_GOOD)
		snprintf(msg, sizeof(msg), "the \"bad\" endpoint %s is healthy: nothing to bisect "
			 "(trace %s/%s)", b->id, x->dir, b->name);
	else if (b->judged != BS_BAD)
		snprintf(msg, sizeof(msg), "the \"bad\" endpoint %s could not be judged: %s%s%s%s",
			 b->id, b->reason, x->signature[0] ? " (hunting " : "", x->signature,
			 x->signature[0] ? ")" : "");
	else if (g->judged == BS_BAD)
		snprintf(msg, sizeof(msg), "the \"good\" endpoint %s %s %s: %s (trace %s/%s)", g->id,
			 fix ? "still shows" : "already shows", x->signature,
			 fix ? "the fix, if any, is newer" : "the change is older", x->dir, g->name);
	else if (g->judged != BS_GOOD)
		snprintf(msg, sizeof(msg), "the \"good\" endpoint %s is not healthy: %s", g->id,
			 g->reason);
	else
		return 0;
	if (x->tty)
		fprintf(stderr, "\r\033[K");
	rt_esc_printf(stderr, "ranktrace bisect: %s\n", msg);
	if (x->o.json)
		bs_report_error(x, msg);
	return BS_EXIT_NOT_FOUND;
}

/* Both endpoints judged: the bad one first when it names the signature. */
static int endpoints(struct bs_ctx *x, double t0)
{
	int both[2] = { bs_bad_end(x), bs_good_end(x) }, m = 0, rc;
	int ends[2];

	for (int k = 0; k < 2; k++)
		if (x->c[both[k]].judged == BS_UNTESTED)
			ends[m++] = both[k];
	if (m == 2 && x->o.jobs < 2) { /* bad first: it names the signature */
		rc = run_round(x, ends, 1, t0, 1 + rounds_left(x->n - 2, 1));
		settle(x, ends[0]);
		if (!rc && x->c[ends[0]].judged == BS_BAD)
			rc = run_round(x, ends + 1, 1, t0, rounds_left(x->n - 2, 1));
	} else {
		rc = m ? run_round(x, ends, m, t0, rounds_left(x->n - 2, x->o.jobs)) : 0;
	}
	if (rc)
		return rc;
	settle(x, both[0]);
	settle(x, both[1]);
	return endpoint_error(x);
}

/* The bisect stops short (no space for an install): one line, the JSON's
 * error, exit 1; the state is saved, so --resume continues after freeing. */
static int stop_fatal(struct bs_ctx *x)
{
	if (x->tty)
		fprintf(stderr, "\r\033[K");
	rt_esc_printf(stderr, "ranktrace bisect: %s (state saved: `ranktrace bisect --resume -o %s`)\n",
		      
		      x->fatal, x->dir);
	if (x->o.json)
		bs_report_error(x, x->fatal);
	return BS_EXIT_NOT_FOUND;
}

int bs_search(struct bs_ctx *x)
{
	struct timespec ts;
	int lo, hi, m, rc, *u = calloc((size_t)x->n, sizeof(int)), pick[64];
	double t0;

	if (!u)
		return BS_EXIT_NOT_FOUND;
	handle_stop_signals();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = (double)ts.tv_sec;
	rc = bs_base_prepare(x) ? EXIT_FATAL : endpoints(x, t0);
	while (!rc) {
		int p = x->o.jobs, k = 0;

		bounds(x, &lo, &hi);
		m = untested(x, lo, hi, u);
		if (!m)
			break;
		if (p > m)
			p = m;
		for (int j = 1; j <= p; j++) { /* P points split the untested into P+1 parts */
			int at = (int)((long)j * (m + 1) / (p + 1)) - 1;

			if (at >= 0 && at < m && (!k || pick[k - 1] != u[at]))
				pick[k++] = u[at];
		}
		rc = run_round(x, pick, k, t0, (rounds_left(m, x->o.jobs) - 1) * x->o.jobs);
		for (int j = 0; j < k; j++)
			settle(x, pick[j]);
		bounds(x, &lo, &hi);
		bs_remove_envs(x, lo, hi);
	}
	free(u);
	if (rc == EXIT_FATAL)
		return stop_fatal(x);
	if (rc == EXIT_INTERRUPTED) {
		if (x->tty)
			fprintf(stderr, "\r\033[K");
		rt_esc_printf(stderr, "ranktrace bisect: interrupted; state saved in %s: continue with "
			      "`ranktrace bisect --resume -o %s`\n", x->dir, x->dir);
		return rc;
	}
	if (rc)
		return rc;
	if (x->tty)
		fprintf(stderr, "\r\033[K");
	bounds(x, &lo, &hi);
	bs_remove_envs(x, lo, hi);
	bs_report(x, lo, hi, hi == lo + 1);
	return hi == lo + 1 ? BS_EXIT_FOUND : BS_EXIT_NOT_FOUND;
}
