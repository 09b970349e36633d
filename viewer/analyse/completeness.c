/* SPDX-License-Identifier: MIT */
/* completeness.c - how much of the run a trace holds, and the verdict rules
 * that follow from it: a verdict never guesses.
 *
 * The first analysis after the pass (analyses.c): the matcher's, the
 * liveness pass's and the detectors' conclusions ask it per rank
 * (rt_vw_evidence_complete), the verdict decides from it (verdict.c).
 * A rank is complete, capped (the writer stopped: size cap, disk full),
 * damaged (a file unreadable past some offset, metadata unreadable, or
 * another directory claims the same rank), missing (the metadata's world
 * size or a communicator's size says it exists, no directory holds it) or
 * live (its process still holds its stream file's lock). A finding that
 * rests on the absence of events ("never called", "no recorded end") is only
 * made from complete ranks; a verdict with no finding resting on complete
 * evidence is inconclusive (125) with the first reason (verdict.c). Why a
 * rank is not complete is kept as data (enum rt_vw_why_incomplete), said by
 * the render room. Allocates only the missing-rank list. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_int.h"

const char *const rt_vw_completeness_names[RT_C_COUNT] = { "complete", "capped", "damaged",
							    "missing", "live" };
const char *const rt_vw_state_names[RT_S_COUNT] = { "running", "exited", "killed", "vanished",
						     "unknown" };

/* Running when a stream file of the rank's main process is locked (the
 * pipeline asked before the analyses: r->sys, read/live.c). The metadata
 * names that process (its pid), which wrote the rank's first stream file:
 * when no stream file is its, the metadata is another rank's or another
 * run's (swapped, copied): the rank is damaged, and unreadable (its
 * identity unknown: a detector taking its LOCAL_RANK would judge another
 * rank's events). */
static enum rt_vw_state rank_state(struct rt_vw_trace *t, struct rt_vw_rank *r)
{
	if (!r->readable)
		return RT_S_UNKNOWN;
	if (r->sys.streams > 0 && !r->sys.own) { /* who the rank is, is not known: no finding rests on it */
		t->damaged += !r->damaged[0];
		snprintf(r->damaged, sizeof(r->damaged), "%.200s/metadata names process %d, but "
			 "no stream file here is its (%.200s/stream-%d-*): the metadata of another "
			 "rank or run", r->name, r->meta.pid, r->name, r->meta.pid);
		r->readable = false;
		return RT_S_UNKNOWN;
	}
	if (r->sys.locked)
		return RT_S_RUNNING;
	if (r->signo)
		return RT_S_KILLED;
	return r->exit_seen ? RT_S_EXITED : RT_S_VANISHED;
}

static int by_rank_then_index(const void *a, const void *b)
{
	const int *x = a, *y = b;

	return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : x[1] - y[1];
}

/* Directories claiming one rank: each names the first other one (by trace
 * index) as what it duplicates. One sort by (rank, index), so that the
 * claimants of a rank are adjacent: comparing every pair of directories was
 * 13 % of verdict at 16,384 ranks. */
static void find_duplicates(struct rt_vw_trace *t)
{
	int (*v)[2] = malloc(sizeof(*v) * ((size_t)t->nranks + 1)), n = 0;

	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *a = &t->ranks[i];

		t->ranks[i].dup_of = -1;
		if (v && a->readable && a->meta.rank < 100000) /* pid-named: apart */
			v[n][0] = a->meta.rank, v[n++][1] = i;
	}
	if (n)
		qsort(v, (size_t)n, sizeof(*v), by_rank_then_index);
	for (int a = 0, b; a < n; a = b) {
		for (b = a + 1; b < n && v[b][0] == v[a][0]; b++)
			;
		for (int k = a; b - a > 1 && k < b; k++) {
			t->ranks[v[k][1]].dup_of = v[k == a ? a + 1 : a][1];
			t->duplicates++;
		}
	}
	free(v);
}

/* Ranks below the world size (metadata, communicators) without a directory. */
static void find_missing(struct rt_vw_trace *t, const struct rt_vw_matcher *m)
{
	int world = 0, n = 0;
	bool *seen;

	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].readable && t->ranks[i].meta.world_size > world)
			world = t->ranks[i].meta.world_size;
	(void)m;
	/* a ncclCommInitAll communicator's ranks are all in one directory */
	for (int c = 0; c < t->ncomms; c++)
		if (!t->comms[c].local && t->comms[c].nranks > world)
			world = t->comms[c].nranks;
	if (world > 100000)
		world = 100000;
	t->world_size = world;
	seen = calloc((size_t)world + 1, sizeof(*seen));
	if (!seen)
		return;
	for (int i = 0; i < t->nranks; i++) {
		int r = rt_vw_rank_number(&t->ranks[i]);

		if (r >= 0 && r < world)
			seen[r] = true;
	}
	/* one array for them all: a realloc per missing rank was quadratic (a
	 * damaged metadata's world size of 100000: 2 GB under ASan) */
	for (int r = 0; r < world; r++)
		n += !seen[r];
	t->missing = n ? malloc(sizeof(*t->missing) * (size_t)n) : NULL;
	for (int r = 0; t->missing && r < world; r++)
		if (!seen[r])
			t->missing[t->nmissing++] = r;
	free(seen);
}

/* How complete r's trace is, and why not (render/finding_say.c says it). */
static void rank_completeness(struct rt_vw_rank *r)
{
	enum rt_vw_why_incomplete why = RT_I_NONE;

	if (r->state == RT_S_RUNNING)
		why = RT_I_LIVE;
	else if (!r->readable || r->damaged[0])
		why = RT_I_DAMAGED;
	else if (!r->events)
		why = RT_I_EMPTY;
	else if (r->dup_of >= 0)
		why = RT_I_DUPLICATE;
	else if (r->stopped)
		why = RT_I_STOPPED;
	else if (r->discarded)
		why = RT_I_CAPPED;
	r->incomplete = (uint8_t)why;
	r->completeness = why == RT_I_NONE ? RT_C_COMPLETE : why == RT_I_LIVE ? RT_C_LIVE :
			  why == RT_I_STOPPED || why == RT_I_CAPPED ? RT_C_CAPPED : RT_C_DAMAGED;
}

void rt_vw_completeness(struct rt_vw_trace *t, const struct rt_vw_matcher *m)
{
	find_duplicates(t);
	find_missing(t, m);
	t->completeness = t->nmissing ? RT_C_MISSING : RT_C_COMPLETE;
	for (int i = 0; i < t->nranks; i++) {
		struct rt_vw_rank *r = &t->ranks[i];

		r->state = rank_state(t, r);
		rank_completeness(r);
		t->running += r->state == RT_S_RUNNING;
		if (r->completeness > t->completeness)
			t->completeness = r->completeness;
	}
}

bool rt_vw_probe_missing(const struct rt_vw_rank *r)
{
	return r->readable && (r->meta.python_probe == RT_PROBE_FAILED ||
			       r->meta.python_probe == RT_PROBE_MISSING);
}

bool rt_vw_evidence_complete(const struct rt_vw_trace *t, int ri)
{
	return t->ranks[ri].completeness == RT_C_COMPLETE && !t->nmissing;
}

bool rt_vw_all_evidence_complete(const struct rt_vw_trace *t)
{
	for (int i = 0; i < t->nranks; i++)
		if (!rt_vw_evidence_complete(t, i))
			return false;
	return true;
}
