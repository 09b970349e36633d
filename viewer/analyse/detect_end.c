/* SPDX-License-Identifier: MIT */
/* detect_end.c - the detectors of how ranks ended and what their traces
 * hold: killed by a signal, died inside a call, a non-zero exit status, no
 * recorded end, a crash in teardown, an interrupted job; frees of unknown
 * pointers, events discarded, incomplete traces, missing ranks, and ranks
 * whose Python ran without the probe.
 *
 * Detectors of format/findings.def (rt_vw_detect_E), run once after the
 * pass in the table's order (detectors.c). A finding that rests on the
 * absence of events ("died inside", "no recorded end") is made only from a
 * rank whose whole run the trace holds (rt_vw_evidence_complete). */
#include <signal.h>
#include <stdio.h>

#include "analyse.h"

static bool died_inside(const struct rt_vw_trace *t, int i);

/* Did rank index i fail on its own: a non-zero exit, a signal other than
 * SIGTERM, death inside a call? */
static bool failed_itself(const struct rt_vw_trace *t, int i)
{
	const struct rt_vw_rank *r = &t->ranks[i];

	if (r->signo)
		return r->signo != SIGTERM && !r->interrupted;
	return died_inside(t, i) || (r->exit_seen && r->exit_status > 0);
}

/* The rank index whose own failure ended first (its last event), or -1. */
int rt_vw_first_failure(const struct rt_vw_trace *t)
{
	int first = -1;

	RT_VW_FOR_ENDED_TRAINING(t, i, r)
		if (failed_itself(t, i) && (first < 0 || r->last_ts < t->ranks[first].last_ts))
			first = i;
	return first;
}

/* SIGTERM to a rank after another rank failed on its own: the launcher
 * (torchrun, elastic, rt-launch) stopping the survivors. */
static bool stopped_after(const struct rt_vw_trace *t, int i, int first)
{
	const struct rt_vw_rank *r = &t->ranks[i];

	return first >= 0 && first != i && r->signo == SIGTERM && !r->interrupted &&
	       t->ranks[first].last_ts <= r->last_ts;
}

void rt_vw_detect_KILLED(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	int first = rt_vw_first_failure(t);

	RT_VW_FOR_ENDED_TRAINING(t, i, r)
		if (r->signo && !r->interrupted && !stopped_after(t, i, first)) {
			struct rt_vw_finding *f = rt_vw_finding_add(t, k, r->meta.rank);

			rt_vw_fv_int(f, RT_FV_signo, r->signo);
			if (r->died)
				rt_vw_fv_call(f, RT_FV_died_in, (struct rt_vw_callref){ .id = r->died_id });
		}
}

/* The survivors the launcher stopped after the first failure: said, and
 * no failure of their own (the first failure decides the verdict). */
void rt_vw_detect_STOPPED_AFTER_FAILURE(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	int first = rt_vw_first_failure(t);

	RT_VW_FOR_ENDED_TRAINING(t, i, r)
		if (stopped_after(t, i, first)) {
			struct rt_vw_finding *f = rt_vw_finding_add(t, k, r->meta.rank);

			rt_vw_fv_int(f, RT_FV_signal, r->signo);
			rt_vw_fv_int(f, RT_FV_first_failed, t->ranks[first].meta.rank);
		}
}

/* How each earlier attempt of an elastic job ended (load.c read them):
 * the verdict is this attempt's, the earlier ones are said. */
void rt_vw_detect_EARLIER_ATTEMPT(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	for (int a = 0; a < t->nearlier; a++) {
		const struct rt_vw_attempt_end *e = &t->earlier[a];
		struct rt_vw_finding *f = rt_vw_finding_add(t, k, e->rank);

		rt_vw_fv_int(f, RT_FV_attempt, e->attempt);
		rt_vw_fv_int(f, RT_FV_next_attempt, e->attempt + 1);
		if (e->rank >= 0 && e->signo)
			rt_vw_fv_int(f, RT_FV_signal, e->signo);
		else if (e->rank >= 0 && e->died)
			rt_vw_fv_call(f, RT_FV_died_in, (struct rt_vw_callref){ .id = e->died_id });
		else if (e->rank >= 0 && e->status)
			rt_vw_fv_int(f, RT_FV_status, e->status);
		else
			rt_vw_fv_text(f, RT_FV_ended, e->why);
	}
}

/* The whole job stopped from outside (hang.c): no failure of its own, and
 * nothing known of what came next; the verdict's reason unless a rank's
 * evidence gives a more basic one. */
void rt_vw_detect_INTERRUPTED(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	struct rt_vw_finding *f;

	if (!t->interrupted)
		return;
	f = rt_vw_finding_add(t, k, -1);
	rt_vw_fv_int(f, RT_FV_signo, t->interrupted);
	rt_vw_fv_int(f, RT_FV_signal, t->interrupted);
}

static bool died_inside(const struct rt_vw_trace *t, int i)
{
	return t->ranks[i].died && rt_vw_evidence_complete(t, i);
}

void rt_vw_detect_DIED_INSIDE(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	RT_VW_FOR_ENDED_TRAINING(t, i, r)
		if (!r->signo && died_inside(t, i))
			rt_vw_fv_call(rt_vw_finding_add(t, k, r->meta.rank), RT_FV_died_in,
				      (struct rt_vw_callref){ .id = r->died_id });
}

void rt_vw_detect_EXIT_STATUS(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	RT_VW_FOR_ENDED_TRAINING(t, i, r)
		if (!r->signo && !died_inside(t, i) && r->exit_seen && r->exit_status > 0) {
			struct rt_vw_finding *f = rt_vw_finding_add(t, k, r->meta.rank);

			rt_vw_fv_int(f, RT_FV_status, r->exit_status);
			rt_vw_fv_text(f, RT_FV_first_error, r->first_error);
		}
}

void rt_vw_detect_NO_END(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	RT_VW_FOR_ENDED_TRAINING(t, i, r)
		if (!r->signo && !died_inside(t, i) && !r->exit_seen && rt_vw_evidence_complete(t, i))
			rt_vw_fv_real(rt_vw_finding_add(t, k, r->meta.rank), RT_FV_last_event_s,
				      (double)(r->last_ts - r->first_ts) / 1e9);
}

/* Ended abnormally after training finished: named, not a crash. */
void rt_vw_detect_CRASHED_IN_TEARDOWN(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	RT_VW_FOR_ENDED(t, i, r)
		if (r->teardown_crash) {
			struct rt_vw_finding *f = rt_vw_finding_add(t, k, r->meta.rank);

			rt_vw_fv_end(f, RT_FV_end, r);
			rt_vw_fv_flag(f, RT_FV_by_destroy, r->teardown_how == 1);
			rt_vw_fv_flag(f, RT_FV_by_exit, r->teardown_how != 1);
		}
}

void rt_vw_detect_UNKNOWN_FREES(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	RT_VW_FOR_ENDED(t, i, r)
		if (r->unknown_frees)
			rt_vw_fv_int(rt_vw_finding_add(t, k, r->meta.rank), RT_FV_frees,
				     (int64_t)r->unknown_frees);
}

void rt_vw_detect_DISCARDED(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	RT_VW_FOR_ENDED(t, i, r)
		if (r->discarded)
			rt_vw_fv_int(rt_vw_finding_add(t, k, r->meta.rank), RT_FV_events,
				     (int64_t)r->discarded);
}

/* A rank's trace that is not complete (completeness.c says why); a live
 * rank's is not a finding (the trace's completeness says it). */
void rt_vw_detect_INCOMPLETE(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].completeness != RT_C_COMPLETE && t->ranks[i].completeness != RT_C_LIVE)
			rt_vw_fv_end(rt_vw_finding_add(t, k, t->ranks[i].meta.rank), RT_FV_trace,
				     &t->ranks[i]);
}

/* Ranks the world size expects that no directory holds: one finding naming them. */
void rt_vw_detect_MISSING_RANKS(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	struct rt_vw_finding *f;

	if (!t->nmissing)
		return;
	f = rt_vw_finding_add(t, k, -1);
	for (int i = 0; i < t->nmissing; i++)
		rt_vw_finding_rank(f, t->missing[i]);
	rt_vw_fv_int(f, RT_FV_world_size, t->world_size);
}

/* A rank's Python without the PyTorch probe (its metadata: the import
 * failed, or it never loaded; RANKTRACE_PROBE=0 is the user's choice, not
 * a finding): the evidence of the bug class is not in its trace. */
void rt_vw_detect_PROBE_MISSING(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	for (int i = 0; i < t->nranks; i++)
		if (rt_vw_probe_missing(&t->ranks[i]))
			rt_vw_fv_text(rt_vw_finding_add(t, k, t->ranks[i].meta.rank), RT_FV_probe,
				      t->ranks[i].meta.python_probe_detail[0]
				      ? t->ranks[i].meta.python_probe_detail : "it did not load");
}
