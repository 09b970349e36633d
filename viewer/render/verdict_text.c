/* SPDX-License-Identifier: MIT */
/* verdict_text.c - why `ranktrace verdict` said what it said (view.h:
 * rt_vw_verdict_why): a fault plan's rule that never fired, what the
 * verdict lacks when inconclusive, the hang's findings, the findings that
 * decided a failure and how each rank ended, ranks alike said once. From the report (report.c), as every output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "view.h"
#include "rt_util.h"

/* How each rank ended, ranks that ended alike on one line ("ranks 0-3
 * exited: exit 1"): a thousand ranks killed by the launcher read as one.
 * Ranks marked in named had their ending said already. */
static void print_endings(FILE *f, const struct rt_vw_report *rp, const bool *named)
{
	const struct rt_vw_trace *t = rp->t;
	char (*how)[128] = calloc((size_t)t->nranks, sizeof(*how));
	int *same = calloc((size_t)t->nranks, sizeof(*same));
	bool *done = calloc((size_t)t->nranks, sizeof(*done));
	char list[256];

	for (int i = 0; how && same && done && i < t->nranks; i++) {
		done[i] = named && named[i];
		snprintf(how[i], sizeof(how[i]), "%s: %s", rt_vw_state_names[t->ranks[i].state],
			 rp->ranks[i].end);
	}
	for (int i = 0; how && same && done && i < t->nranks; i++) {
		int n = 0;

		if (done[i])
			continue;
		for (int j = i; j < t->nranks; j++)
			if (!done[j] && !strcmp(how[j], how[i])) {
				done[j] = true;
				same[n++] = t->ranks[j].meta.rank;
			}
		rt_int_ranges(same, n, list, sizeof(list));
		fprintf(f, "ranktrace verdict: rank%s %s %s\n", n > 1 ? "s" : "", list, how[i]);
	}
	free(how);
	free(same);
	free(done);
}

/* Why: the findings that decided the verdict, the same finding on several
 * ranks said once ("ranks 0-1 exited with status 1"). A crash's finding
 * names those ranks' endings: they are marked in named, not said again. */
static void print_why(FILE *f, const struct rt_vw_report *rp, bool *named)
{
	const struct rt_vw_trace *t = rp->t;

	for (int k = 0; k < rp->ndiag; k++) {
		const struct rt_vw_diag *g = &rp->diag[k];

		if (rt_findings[t->findings[g->first].kind].verdict != t->verdict)
			continue;
		fprintf(f, "ranktrace verdict: %s\n", rt_vw_esc(g->text));
		for (int j = 0; named && t->verdict == RT_V_CRASHED && j < g->nranks; j++) {
			int i = rt_vw_rank_index(t, g->ranks[j]);

			if (i >= 0)
				named[i] = true;
		}
		break;
	}
}

/* A fault plan's rule that never fired, whatever the verdict: a verdict on
 * such a run judged a fault that did not happen. */
static void print_never_fired(FILE *f, const struct rt_vw_trace *t)
{
	for (int i = 0; i < t->nfindings; i++)
		if (t->findings[i].kind == RT_FK_INJECTION_NEVER_FIRED) {
			char text[RT_VW_FINDING_TEXT];

			rt_vw_finding_text(t, &t->findings[i], text, sizeof(text));
			fprintf(f, "ranktrace verdict: warning: %s\n", rt_vw_esc(text));
		}
}

void rt_vw_verdict_why(FILE *f, const struct rt_vw_report *rp)
{
	const struct rt_vw_trace *t = rp->t;

	print_never_fired(f, t);
	if (t->verdict == RT_V_INCONCLUSIVE)
		fprintf(f, "ranktrace verdict: %s: %s\n", rt_verdicts[RT_V_INCONCLUSIVE].word,
			rt_vw_esc(rp->why));
	for (int i = 0; t->verdict == RT_V_HUNG && i < t->nfindings; i++)
		if (rt_findings[t->findings[i].kind].verdict == RT_V_HUNG) {
			char text[RT_VW_FINDING_TEXT];

			rt_vw_finding_text(t, &t->findings[i], text, sizeof(text));
			fprintf(f, "ranktrace verdict: %s\n", rt_vw_esc(text));
		}
	if (t->interrupted && t->verdict == RT_V_INCONCLUSIVE)
		print_endings(f, rp, NULL);
	if (t->verdict != RT_V_HEALTHY && t->verdict != RT_V_INCONCLUSIVE &&
	    t->verdict != RT_V_HUNG) {
		/* why, and how each rank ended: each ending once */
		bool *named = calloc((size_t)t->nranks + 1, sizeof(*named));

		print_why(f, rp, named);
		print_endings(f, rp, named);
		free(named);
	}
}
