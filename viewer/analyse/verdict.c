/* SPDX-License-Identifier: MIT */
/* verdict.c - the last analysis: the findings in their order (severity,
 * then rank, trace-wide ones first, then the order found), and the verdict
 * decided from them and from what the evidence lacks.
 *
 * A verdict never guesses: the most important finding that decides one
 * (format/findings.def: its kind's verdict) made from the evidence there
 * is; else inconclusive when the evidence is incomplete, with the first
 * reason (a missing rank, then the first rank whose trace is not complete,
 * then an interruption, then a rank whose Python ran without the probe:
 * t->why, said by the render room); else crashed (a rank died with no
 * finding that says more) or healthy. Where a rank ran Python without the
 * probe, a crash is no verdict: its evidence would tell the bug class
 * (skipped-fsdp-root) from any other crash; a mismatch, a misplaced device
 * or a hang, which the host trace shows, still decide. */
#include "analyse.h"

/* Severity (the kind's), then rank (trace-wide first), then the order found. */
static void sort_findings(struct rt_vw_trace *t)
{
	for (int i = 1; i < t->nfindings; i++) {
		struct rt_vw_finding f = t->findings[i];
		int sev = rt_findings[f.kind].severity, j = i;

		while (j > 0 && (rt_findings[t->findings[j - 1].kind].severity > sev ||
				 (rt_findings[t->findings[j - 1].kind].severity == sev &&
				  t->findings[j - 1].rank > f.rank))) {
			t->findings[j] = t->findings[j - 1];
			j--;
		}
		t->findings[j] = f;
	}
}

/* Why a verdict would be a guess: the missing ranks outrank the rest
 * (nothing of them is known), then the first rank whose trace is not
 * complete, then an interruption. */
static void why_inconclusive(struct rt_vw_trace *t)
{
	t->why = RT_W_NONE;
	t->why_rank = -1;
	if (t->nmissing) {
		t->why = RT_W_MISSING;
		return;
	}
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].completeness != RT_C_COMPLETE) {
			t->why = RT_W_RANK;
			t->why_rank = i;
			return;
		}
	if (t->interrupted) {
		t->why = RT_W_INTERRUPTED;
		return;
	}
	for (int i = 0; i < t->nranks; i++)
		if (rt_vw_probe_missing(&t->ranks[i])) {
			t->why = RT_W_PROBE;
			t->why_rank = i;
			return;
		}
}

void rt_vw_decide(struct rt_vw_trace *t)
{
	bool any_crashed = false, no_probe = false;

	sort_findings(t);
	why_inconclusive(t);
	for (int i = 0; i < t->nranks; i++) {
		any_crashed = any_crashed ||
			      (t->ranks[i].readable && rt_vw_crashed_training(&t->ranks[i]));
		no_probe = no_probe || rt_vw_probe_missing(&t->ranks[i]);
	}
	t->verdict = RT_V_HEALTHY;
	for (int i = 0; i < t->nfindings; i++) {
		enum rt_verdict v = rt_findings[t->findings[i].kind].verdict;

		if (v != RT_V_HEALTHY && v != RT_V_INCONCLUSIVE && !(no_probe && v == RT_V_CRASHED)) {
			t->verdict = v;
			return;
		}
	}
	if (t->hung)
		t->verdict = RT_V_HUNG;
	else if (t->why != RT_W_NONE)
		t->verdict = RT_V_INCONCLUSIVE;
	else if (any_crashed)
		t->verdict = RT_V_CRASHED;
}
