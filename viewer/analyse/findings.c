/* SPDX-License-Identifier: MIT */
/* findings.c - the trace's findings, as the passes add them: the matcher
 * (matcher.c), liveness (hang.c) and the detectors (detectors.c), each with
 * its severity, failure signature, the rank(s) it names; and a finding's
 * sentence made from them (rt_vw_finding_text, for the outputs).
 *
 * One thread, after the rank models (the replay, then the finish). A finding
 * that cannot be stored (out of memory) is dropped: the adders return NULL. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_int.h"

struct rt_vw_finding *rt_vw_vadd_finding(struct rt_vw_trace *t, int rank, bool subject, int severity,
					 enum rt_vw_verdict sigv, const char *fmt, va_list ap)
{
	struct rt_vw_finding *f;

	f = realloc(t->findings, sizeof(*f) * (size_t)(t->nfindings + 1));
	if (!f)
		return NULL;
	t->findings = f;
	f = &t->findings[t->nfindings++];
	memset(f, 0, sizeof(*f));
	f->severity = severity;
	f->signature = sigv;
	/* the matcher's and liveness pass's findings: level from what they mean */
	f->level = sigv == RT_V_HEALTHY ? RT_VW_NOTE : sigv == RT_V_INCONCLUSIVE ? RT_VW_WARNING
									   : RT_VW_ERROR;
	f->id = sigv == RT_V_COLLECTIVE_MISMATCH ? "matcher" : sigv == RT_V_HUNG ? "hang" : "model";
	f->advice = NULL;
	f->rank = rank;
	f->subject = subject && rank >= 0;
	if (rank >= 0)
		rt_vw_finding_rank(f, rank);
	/* the sentence, "rank N" and all, fits in text */
	vsnprintf(f->text, sizeof(f->text) - (f->subject ? (size_t)snprintf(NULL, 0, "rank %d", rank) : 0),
		  fmt, ap);
	return f;
}

void rt_vw_finding_rank(struct rt_vw_finding *f, int rank)
{
	if (f->nranks < RT_VW_FINDING_RANKS)
		f->ranks[f->nranks] = rank;
	f->nranks++;
}

void rt_vw_finding_text(const struct rt_vw_finding *f, char *out, size_t n)
{
	if (f->subject)
		snprintf(out, n, "rank %d%s", f->rank, f->text);
	else
		snprintf(out, n, "%s", f->text);
}

struct rt_vw_finding *rt_vw_add_finding(struct rt_vw_trace *t, int severity, enum rt_vw_verdict sigv,
					const char *fmt, ...)
{
	struct rt_vw_finding *f;
	va_list ap;

	va_start(ap, fmt);
	f = rt_vw_vadd_finding(t, -1, false, severity, sigv, fmt, ap);
	va_end(ap);
	return f;
}

struct rt_vw_finding *rt_vw_add_rank_finding(struct rt_vw_trace *t, int rank, int severity,
					     enum rt_vw_verdict sigv, const char *fmt, ...)
{
	struct rt_vw_finding *f;
	va_list ap;

	va_start(ap, fmt);
	f = rt_vw_vadd_finding(t, rank, true, severity, sigv, fmt, ap);
	va_end(ap);
	return f;
}
