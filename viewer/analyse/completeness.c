/* SPDX-License-Identifier: MIT */
/* completeness.c - how much of the run a trace holds, and the verdict rules
 * that follow from it: a verdict never guesses.
 *
 * Runs once per load, after the pass and before the matcher's and the
 * detectors' conclusions (load.c calls rt_vw_completeness, then the
 * detectors call rt_vw_evidence_complete per rank and rt_vw_decide last).
 * A rank is complete, capped (the writer stopped: size cap, disk full),
 * damaged (a file unreadable past some offset, metadata unreadable, or
 * another directory claims the same rank), missing (the metadata's world
 * size or a communicator's size says it exists, no directory holds it) or
 * live (its process still holds its stream file's lock). A finding that
 * rests on the absence of events ("never called", "no recorded end") is only
 * made from complete ranks; a verdict with no finding resting on complete
 * evidence is inconclusive (125) with the first reason. Allocates only the
 * missing-rank list. */
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

/* The rank number a directory name says (rank-00002), or -1 (rank-p123). */
static int rank_of_name(const char *name)
{
	char *end;
	long v;

	if (strncmp(name, "rank-", 5) || name[5] < '0' || name[5] > '9')
		return -1;
	v = strtol(name + 5, &end, 10);
	return *end || v > 99999 ? -1 : (int)v;
}

/* Running when a stream file of the rank's main process is locked. The
 * metadata names that process (its pid), which wrote the rank's first
 * stream file: when no stream file is its, the metadata is another rank's
 * or another run's (swapped, copied): the rank is damaged, and unreadable
 * (its identity unknown: a detector taking its LOCAL_RANK would judge
 * another rank's events). */
static enum rt_vw_state rank_state(struct rt_vw_trace *t, struct rt_vw_rank *r)
{
	char rd[4400], **streams, prefix[32];
	int ns, locked = 0, own = 0;

	if (!r->readable)
		return RT_S_UNKNOWN;
	snprintf(rd, sizeof(rd), "%s/%s", t->dir, r->name);
	snprintf(prefix, sizeof(prefix), "stream-%d-", r->meta.pid);
	ns = t->lttng ? 0 : rt_vw_list_streams(rd, &streams);
	for (int k = 0; k < ns && !locked; k++) {
		char sp[4700];

		if (strncmp(streams[k], prefix, strlen(prefix)))
			continue;
		own++;
		snprintf(sp, sizeof(sp), "%s/%s", rd, streams[k]);
		locked = rt_vw_stream_locked(sp) == 1;
	}
	if (ns > 0)
		rt_vw_free_names(streams, ns);
	if (ns > 0 && !own) { /* who the rank is, is not known: no finding rests on it */
		t->damaged += !r->damaged[0];
		snprintf(r->damaged, sizeof(r->damaged), "%.200s/metadata names process %d, but "
			 "no stream file here is its (%.200s/%s*): the metadata of another rank or run",
			 r->name, r->meta.pid, r->name, prefix);
		r->readable = false;
		return RT_S_UNKNOWN;
	}
	if (locked)
		return RT_S_RUNNING;
	if (r->signo)
		return RT_S_KILLED;
	return r->exit_seen ? RT_S_EXITED : RT_S_VANISHED;
}

static void find_duplicates(struct rt_vw_trace *t)
{
	for (int i = 0; i < t->nranks; i++)
		t->ranks[i].dup_of = -1;
	for (int i = 0; i < t->nranks; i++)
		for (int j = 0; j < t->nranks; j++) {
			struct rt_vw_rank *a = &t->ranks[i], *b = &t->ranks[j];

			if (i == j || !a->readable || !b->readable || a->meta.rank != b->meta.rank ||
			    a->meta.rank >= 100000)
				continue;
			a->dup_of = j;
			t->duplicates++;
			break;
		}
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
		int r = t->ranks[i].readable ? t->ranks[i].meta.rank : rank_of_name(t->ranks[i].name);

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

static int rank_number(const struct rt_vw_rank *r)
{
	return r->readable ? r->meta.rank : rank_of_name(r->name);
}

static void rank_completeness(const struct rt_vw_trace *t, struct rt_vw_rank *r)
{
	int n = rank_number(r);
	char who[80];

	/* "rank 3", or the directory when the rank is not known (rank-p1234) */
	if (n >= 0 && n < 100000)
		snprintf(who, sizeof(who), "rank %d", n);
	else
		snprintf(who, sizeof(who), "%s", r->name);

	r->completeness = RT_C_COMPLETE;
	r->incomplete[0] = '\0';
	if (r->state == RT_S_RUNNING) {
		r->completeness = RT_C_LIVE;
		snprintf(r->incomplete, sizeof(r->incomplete), "%s is still running: a "
			 "live process holds its stream file's lock", who);
	} else if (!r->readable || r->damaged[0]) {
		r->completeness = RT_C_DAMAGED;
		snprintf(r->incomplete, sizeof(r->incomplete), "%s trace damaged: %s", who,
			 r->damaged[0] ? r->damaged : "unreadable");
	} else if (!r->events) {
		r->completeness = RT_C_DAMAGED;
		snprintf(r->incomplete, sizeof(r->incomplete), "%s trace damaged: %s/ holds no "
			 "readable event (no stream file, or only empty ones)", who, r->name);
	} else if (r->dup_of >= 0) {
		r->completeness = RT_C_DAMAGED;
		snprintf(r->incomplete, sizeof(r->incomplete), "%s and %s both claim rank %d", r->name,
			 t->ranks[r->dup_of].name, n);
	} else if (r->stopped) {
		const char *why = rt_stop_prose(r->stop_reason);

		r->completeness = RT_C_CAPPED;
		snprintf(r->incomplete, sizeof(r->incomplete), "%s trace incomplete: %s at event "
			 "%" PRIu64 "%s", who, why ? why : "tracing stopped", r->stop_events,
			 r->discarded ? " (later events only counted)" : "");
	} else if (r->discarded) {
		r->completeness = RT_C_CAPPED;
		snprintf(r->incomplete, sizeof(r->incomplete), "%s trace capped: %" PRIu64
			 " events discarded (tracing stopped early)", who, r->discarded);
	}
}

void rt_vw_completeness(struct rt_vw_trace *t, const struct rt_vw_matcher *m)
{
	size_t len = 0;

	find_duplicates(t);
	find_missing(t, m);
	t->completeness = t->nmissing ? RT_C_MISSING : RT_C_COMPLETE;
	t->inconclusive[0] = '\0';
	for (int i = 0; i < t->nranks; i++) {
		struct rt_vw_rank *r = &t->ranks[i];

		r->state = rank_state(t, r);
		rank_completeness(t, r);
		t->running += r->state == RT_S_RUNNING;
		if (r->completeness > t->completeness)
			t->completeness = r->completeness;
		if (r->completeness != RT_C_COMPLETE && !t->inconclusive[0])
			snprintf(t->inconclusive, sizeof(t->inconclusive), "%s", r->incomplete);
	}
	if (t->nmissing) {
		char list[200] = "";

		for (int k = 0; k < t->nmissing && len < sizeof(list) - 12; k++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", k ? "," : "",
						t->missing[k]);
		/* a missing rank outranks the other reasons: nothing of it is known */
		snprintf(t->inconclusive, sizeof(t->inconclusive), "rank%s %s missing: no directory "
			 "holds %s (world size %d)", t->nmissing > 1 ? "s" : "", list,
			 t->nmissing > 1 ? "them" : "it", t->world_size);
	}
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

/* The verdict: the most important finding made from complete evidence; a
 * hang; else inconclusive when anything is incomplete; else crashed or
 * healthy. Findings are sorted. */
void rt_vw_decide(struct rt_vw_trace *t, bool any_crashed)
{
	t->verdict = RT_V_HEALTHY;
	for (int i = 0; i < t->nfindings; i++)
		if (t->findings[i].signature != RT_V_HEALTHY &&
		    t->findings[i].signature != RT_V_INCONCLUSIVE) {
			t->verdict = t->findings[i].signature;
			break;
		}
	if (t->verdict != RT_V_HEALTHY)
		return;
	if (t->hung) {
		t->verdict = RT_V_HUNG;
		return;
	}
	if (t->inconclusive[0]) {
		t->verdict = RT_V_INCONCLUSIVE;
		return;
	}
	if (any_crashed)
		t->verdict = RT_V_CRASHED;
}
