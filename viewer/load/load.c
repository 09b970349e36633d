/* SPDX-License-Identifier: MIT */
/* load.c - a trace directory read into the model: rt_vw_load.
 *
 * Lists the rank directories (trace_dir.c; an LTTng session's processes
 * grouped into ranks by read_bt2.c), reads each rank's metadata, opens its
 * streams (merge.c) - these and the live state below on the pass's threads,
 * each rank's result in its place (fanout.c) -, runs the pass (parallel.c: rank models, the matcher)
 * asks the system what it says now of each rank's processes (read/live.c:
 * alive, stopped, the clock) and then runs the analyses (analyses.c: what
 * needs every rank, the findings, the verdict; rt_vw_model_finish).
 * rt_vw_free frees what it built. Not thread-safe per trace; the CLI and
 * the tests call it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "device.h"
#include "model.h"
#include "model_int.h"
#include "read_bt2.h"
#include "reader.h"

/* The ranks of an LTTng trace, as read_bt2.c grouped its processes. */
static int lttng_ranks(struct rt_vw_trace *t, char *err, size_t errlen)
{
	t->lttng = rt_vw_bt2_load(t->dir, err, errlen);
	if (!t->lttng)
		return -1;
	t->ranks = calloc((size_t)t->lttng->nranks + 1, sizeof(*t->ranks));
	if (!t->ranks) {
		snprintf(err, errlen, "%s: out of memory", t->dir);
		return -1;
	}
	t->nranks = t->lttng->nranks;
	for (int i = 0; i < t->nranks; i++) {
		struct rt_vw_rank *r = &t->ranks[i];

		snprintf(r->name, sizeof(r->name), "%s", t->lttng->ranks[i].name);
		r->meta = t->lttng->ranks[i].meta;
		r->comm_device = r->init_device = -1;
		r->live = rt_vw_map_new();
		if (r->meta.rank < 0)
			r->meta.rank = 100000 + i; /* pid-named: keep them apart */
		r->readable = true;
	}
	return 0;
}

/* After the pass: what needs every rank's whole model. The live state of
 * the job's processes (read/live.c: stream locks, /proc, the clock) is
 * asked here, once per rank, or handed in (live), before the analyses read
 * it (analyses.c's LIVE input). */
struct finish_job {
	struct rt_vw_trace *t;
	const struct rt_vw_live *live;
};

/* Ranks [lo, hi)'s last step and live state (rt_vw_fanout: in parallel). */
static void finish_ranks(void *arg, int slot, int lo, int hi)
{
	const struct finish_job *j = arg;
	struct rt_vw_trace *t = j->t;

	(void)slot;
	for (int i = lo; i < hi; i++) {
		struct rt_vw_rank *r = &t->ranks[i];

		rt_vw_params_count(r); /* the models' last step */
		if (j->live)
			r->sys = j->live[i];
		else if (r->readable)
			rt_vw_live_ask(t->dir, r->name, &r->meta, !t->lttng, &r->listed, &r->sys);
	}
}

/* After the pass: what needs every rank's whole model. The live state of
 * the job's processes (read/live.c: stream locks, /proc, the clock) is
 * asked here, once per rank on the pass's threads, or handed in (live),
 * before the analyses read it (analyses.c's LIVE input). */
void rt_vw_model_finish_ranks(struct rt_vw_trace *t, int lo, int hi)
{
	struct finish_job j = { t, NULL };

	finish_ranks(&j, 0, lo, hi);
}

void rt_vw_model_finish_after(struct rt_vw_matcher *m)
{
	struct rt_vw_trace *t = m->t;

	if (!t->stall_ns)
		t->stall_ns = RT_VW_STALL_DEFAULT_NS;
	/* the communicators across ranks; out of memory, none: findings then
	 * say a communicator by its id alone and view lists none */
	(void)rt_vw_comm_index(t);
	rt_vw_analyse(t, m);
}

void rt_vw_model_finish_live(struct rt_vw_matcher *m, const struct rt_vw_live *live)
{
	struct rt_vw_trace *t = m->t;
	struct finish_job j = { t, live };

	rt_vw_fanout(t->nranks, rt_vw_fanout_slots(t->nranks), finish_ranks, &j);
	rt_vw_model_finish_after(m);
}

void rt_vw_model_finish(struct rt_vw_matcher *m)
{
	rt_vw_model_finish_live(m, NULL);
}

struct rt_vw_trace *rt_vw_load(const char *dir, unsigned flags, char *err, size_t errlen)
{
	return rt_vw_load_attempt(dir, flags, 0, RT_VW_LAST_ATTEMPT, err, errlen);
}

struct rt_vw_trace *rt_vw_load_stall(const char *dir, unsigned flags, uint64_t stall_ns, char *err,
				     size_t errlen)
{
	return rt_vw_load_attempt(dir, flags, stall_ns, RT_VW_LAST_ATTEMPT, err, errlen);
}

struct meta_job {
	struct rt_vw_trace *t;
	const char *dir;
	char **names;
	struct rt_vw_meta_cache mc[RT_VW_FANOUT_MAX]; /* one per thread */
};

/* Ranks [lo, hi): their names and metadata (rt_vw_fanout: in parallel, a
 * schema cache per thread); a rank whose metadata cannot be read is kept,
 * unreadable, with why. */
static void read_metas(void *arg, int slot, int lo, int hi)
{
	struct meta_job *j = arg;
	struct rt_vw_trace *t = j->t;

	for (int i = lo; i < hi; i++) {
		struct rt_vw_rank *r = &t->ranks[i];
		char rd[4400], e2[512];

		memset(r, 0, sizeof(*r)); /* its first touch, on this thread (native_ranks) */
		snprintf(r->name, sizeof(r->name), "%s", j->names[i]);
		r->comm_device = r->init_device = -1;
		r->live = rt_vw_map_new();
		snprintf(rd, sizeof(rd), "%s/%s", j->dir, j->names[i]);
		if (rt_vw_read_metadata_cached(rd, &r->meta, &j->mc[slot], e2, sizeof(e2)) != 0) {
			r->meta.rank = -1;
			rt_vw_note_damage(t, i, e2);
			continue;
		}
		if (r->meta.rank < 0)
			r->meta.rank = 100000 + i; /* pid-named: keep them apart */
		r->readable = true;
	}
}

/* The ranks of a native trace: its rank-* directories and their metadata,
 * read on the pass's threads, each rank's in its place. */
static int native_ranks(struct rt_vw_trace *t, const char *dir, char *err, size_t errlen)
{
	char **names = NULL;
	int n = rt_vw_list_ranks(dir, &names), readable = 0, slots;
	struct meta_job *j; /* the schema every rank shares, parsed once a thread */

	if (n <= 0) {
		snprintf(err, errlen, "%s: no rank traces (rank-*/ directories) here", dir);
		rt_vw_free_names(names, 0);
		return -1;
	}
	/* zeroed rank by rank on the pass's threads (read_metas): calloc took
	 * them from a heap's top, 4 KB a rank, and cleared 64 MB at 16,384 ranks
	 * on this thread alone (a page fault a rank and the clearing: 45 ms) */
	t->ranks = malloc((size_t)n * sizeof(*t->ranks));
	j = calloc(1, sizeof(*j));
	if (!t->ranks || !j) {
		snprintf(err, errlen, "%s: out of memory", dir);
		rt_vw_free_names(names, n);
		free(j);
		return -1;
	}
	t->nranks = n;
	j->t = t;
	j->dir = dir;
	j->names = names;
	slots = rt_vw_fanout_slots(n);
	rt_vw_fanout(n, slots, read_metas, j);
	for (int i = 0; i < n; i++)
		readable += t->ranks[i].readable;
	for (int k = 0; k < slots; k++)
		rt_vw_meta_cache_free(&j->mc[k]);
	free(j);
	rt_vw_free_names(names, n);
	if (!readable) {
		snprintf(err, errlen, "%s: no readable rank trace (%s)", dir, t->ranks[0].damaged);
		return -1;
	}
	return 0;
}

/* The work after reading (rt_vw_after_read), beside the pass's last
 * replays: the streams closed (their files unmapped, once) and each rank's
 * last step and live state (rt_vw_model_finish_ranks, in chunks). */
struct after_job {
	struct rt_vw_trace *t;
	struct rt_vw_src *srcs;
	int nsrc;
};

static void close_once(void *arg)
{
	struct after_job *a = arg;

	rt_vw_close_sources(a->srcs, a->nsrc);
	a->srcs = NULL;
	a->nsrc = 0;
}

static void finish_each(void *arg, int lo, int hi)
{
	struct after_job *a = arg;

	rt_vw_model_finish_ranks(a->t, lo, hi);
}

/* One attempt's directory read and analysed, its earlier attempts' endings
 * (nearlier of them, owned from here on) there for the detectors. */
static struct rt_vw_trace *load_one(const char *dir, unsigned flags, uint64_t stall_ns,
				    struct rt_vw_attempt_end *earlier, int nearlier, char *err,
				    size_t errlen)
{
	struct rt_vw_trace *t = calloc(1, sizeof(*t));
	struct rt_vw_matcher *m = calloc(1, sizeof(*m));
	struct rt_vw_src *srcs = NULL;
	struct rt_vw_after_read after;
	struct after_job aj;
	int nsrc = 0;

	if (!t || !m)
		goto out_oom;
	snprintf(t->dir, sizeof(t->dir), "%s", dir);
	t->earlier = earlier;
	t->nearlier = nearlier;
	earlier = NULL;
	t->flags = flags;
	m->t = t;
	if ((rt_vw_is_lttng(dir) ? lttng_ranks(t, err, errlen) : native_ranks(t, dir, err, errlen)) != 0)
		goto out_fail;
	if (rt_vw_open_sources(t, &srcs, &nsrc) != 0)
		goto out_oom;
	aj = (struct after_job){ t, srcs, nsrc };
	after = (struct rt_vw_after_read){ close_once, finish_each, t->nranks, &aj };
	srcs = NULL; /* the pass closes them (close_once), failed or not */
	nsrc = 0;
	if (rt_vw_parallel_pass_then(t, m, aj.srcs, aj.nsrc, &after) != 0)
		goto out_oom;
	t->stall_ns = stall_ns ? stall_ns : RT_VW_STALL_DEFAULT_NS;
	rt_vw_model_finish_after(m);
	free(m);
	return t;

out_oom:
	snprintf(err, errlen, "%s: out of memory", dir);
	free(earlier);
out_fail:
	rt_vw_close_sources(srcs, nsrc);
	free(m);
	rt_vw_free(t);
	return NULL;
}

void rt_vw_free(struct rt_vw_trace *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->nranks && t->ranks; i++) {
		if (t->ranks[i].live)
			rt_vw_map_free(t->ranks[i].live);
		free(t->ranks[i].live);
		rt_vw_memory_free_rank(&t->ranks[i]);
		free(t->ranks[i].calls);
		free(t->ranks[i].params);
		free(t->ranks[i].mem);
		free(t->ranks[i].changes);
		free(t->ranks[i].entered);
		free(t->ranks[i].lists);
		free(t->ranks[i].threads);
		rt_vw_dev_free(&t->ranks[i]);
		rt_vw_comms_free(&t->ranks[i]);
		rt_vw_listing_free(&t->ranks[i].listed);
	}
	rt_vw_straggle_free(t);
	rt_vw_comm_index_free(t);
	rt_vw_hosts_free(t->hosts);
	free(t->ranks);
	rt_vw_findings_free(t);
	free(t->missing);
	free(t->comms);
	free(t->comm_slots);
	rt_vw_bt2_free(t->lttng);
	free(t->earlier);
	free(t);
}

/* Attempt a of DIR: DIR itself for attempt 0, else DIR/attempt-a. */
static void attempt_dir(const char *dir, int a, char *out, size_t n)
{
	if (a)
		snprintf(out, n, "%s/attempt-%d", dir, a);
	else
		snprintf(out, n, "%s", dir);
}

/* How attempt a of DIR ended: the rank whose own failure came first, else
 * its verdict in words (or why it could not be read). */
static void attempt_end(const char *dir, int a, struct rt_vw_attempt_end *e)
{
	char sub[4200], err[512] = "";
	struct rt_vw_trace *t;
	int first;

	attempt_dir(dir, a, sub, sizeof(sub));
	t = load_one(sub, 0, 0, NULL, 0, err, sizeof(err));
	*e = (struct rt_vw_attempt_end){ .attempt = a, .rank = -1 };
	if (!t) {
		snprintf(e->why, sizeof(e->why), "its trace could not be read (%s)", err);
		return;
	}
	first = rt_vw_first_failure(t);
	if (first >= 0 && (t->verdict == RT_V_CRASHED || t->verdict == RT_V_INCONCLUSIVE)) {
		const struct rt_vw_rank *r = &t->ranks[first];

		e->rank = r->meta.rank;
		e->signo = r->signo;
		e->died = !r->signo && r->died;
		e->died_id = r->died_id;
		e->status = r->exit_status;
	} else {
		snprintf(e->why, sizeof(e->why), "its verdict %s", rt_verdicts[t->verdict].word);
	}
	rt_vw_free(t);
}

struct rt_vw_trace *rt_vw_load_attempt(const char *dir, unsigned flags, uint64_t stall_ns,
				       int attempt, char *err, size_t errlen)
{
	int last = rt_vw_is_lttng(dir) ? 0 : rt_vw_last_attempt(dir);
	struct rt_vw_attempt_end *earlier = NULL;
	struct rt_vw_trace *t;
	char sub[4200];

	if (attempt == RT_VW_LAST_ATTEMPT)
		attempt = last;
	if (attempt < 0 || attempt > last) {
		if (last)
			snprintf(err, errlen, "%s: no attempt %d: it holds attempts 0-%d", dir, attempt, last);
		else
			snprintf(err, errlen, "%s: no attempt %d: it holds one attempt, 0 (no "
				 "attempt-N/ directories: the job never restarted)", dir, attempt);
		return NULL;
	}
	if (attempt && !(earlier = calloc((size_t)attempt, sizeof(*earlier)))) {
		snprintf(err, errlen, "%s: out of memory", dir);
		return NULL;
	}
	for (int a = 0; a < attempt; a++)
		attempt_end(dir, a, &earlier[a]);
	attempt_dir(dir, attempt, sub, sizeof(sub));
	t = load_one(sub, flags, stall_ns, earlier, attempt, err, errlen);
	if (t) {
		t->attempt = attempt;
		t->nattempts = last + 1;
	}
	return t;
}
