/* SPDX-License-Identifier: MIT */
/* diagnosis.c - the findings as a reader wants them: the same finding on
 * several ranks said once ("ranks 0-3 exited with status 1"), notes left out
 * unless asked for, most important first (the model's order), and what to do
 * next from the first finding that knows.
 *
 * A view of t->findings, grouped by what they are (kind, rank, words),
 * never by reading their text for ranks; allocates the returned array and
 * the findings' words while it works. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "rt_util.h"

/* A finding's body as the diagnosis compares and says it: after "rank N"
 * for a subject (cut where the sentence would be), else the sentence. */
struct said {
	bool subject;
	char body[RT_VW_FINDING_TEXT];
};

static void say(const struct rt_vw_trace *t, const struct rt_vw_finding *f, struct said *s)
{
	s->subject = rt_vw_finding_subject(f);
	if (s->subject)
		rt_vw_finding_body(t, f, s->body,
				   sizeof(s->body) - (size_t)snprintf(NULL, 0, "rank %d", f->rank), false);
	else
		rt_vw_finding_text(t, f, s->body, sizeof(s->body));
}

/* Do f and h say the same of different ranks? The same kind, each about
 * one rank, and the same words: about their rank (subject), or the same
 * sentence. */
static bool same_saying(const struct rt_vw_finding *f, const struct said *fs,
			const struct rt_vw_finding *h, const struct said *hs)
{
	return h->kind == f->kind && f->rank >= 0 && h->rank >= 0 && fs->subject == hs->subject &&
	       !strcmp(fs->body, hs->body);
}

static int cmp_int(const void *a, const void *b)
{
	return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* The group's text: "ranks 0-3 ..." in place of "rank N ..." when several. */
static void group_text(const struct rt_vw_trace *t, struct rt_vw_diag *g, const struct said *s)
{
	const struct rt_vw_finding *f = &t->findings[g->first];
	char list[160], body[RT_VW_FINDING_TEXT];

	if (g->nranks < 2 || !s->subject) {
		rt_vw_finding_text(t, f, g->text, sizeof(g->text) < RT_VW_FINDING_TEXT ?
				   sizeof(g->text) : RT_VW_FINDING_TEXT);
		return;
	}
	qsort(g->ranks, (size_t)g->nranks, sizeof(int), cmp_int);
	rt_int_ranges(g->ranks, g->nranks, list, sizeof(list));
	rt_vw_finding_body(t, f, body, sizeof(body) - strlen(list) - 6, true);
	snprintf(g->text, sizeof(g->text), "ranks %s%s", list, body);
}

int rt_vw_diagnose(const struct rt_vw_trace *t, int only_rank, bool all, struct rt_vw_diag **out,
		   int *hidden)
{
	struct rt_vw_diag *g = calloc((size_t)t->nfindings + 1, sizeof(*g));
	struct said *s = calloc((size_t)t->nfindings + 1, sizeof(*s));
	int n = 0;

	*hidden = 0;
	*out = g;
	if (!g || !s) {
		free(s);
		return -1;
	}
	for (int i = 0; i < t->nfindings; i++) {
		const struct rt_vw_finding *f = &t->findings[i];
		int k;

		if (only_rank >= 0 && f->rank >= 0 && f->rank != only_rank)
			continue;
		if (rt_findings[f->kind].level == RT_LEVEL_NOTE && !all) {
			(*hidden)++;
			continue;
		}
		say(t, f, &s[i]);
		for (k = 0; k < n; k++)
			if (same_saying(f, &s[i], &t->findings[g[k].first], &s[g[k].first]) &&
			    g[k].nranks < RT_VW_DIAG_RANKS)
				break;
		if (k == n)
			g[n++] = (struct rt_vw_diag){ .first = i, .level = rt_findings[f->kind].level };
		if (f->rank >= 0 && g[k].nranks < RT_VW_DIAG_RANKS)
			g[k].ranks[g[k].nranks++] = f->rank;
	}
	for (int k = 0; k < n; k++)
		group_text(t, &g[k], &s[g[k].first]);
	free(s);
	return n;
}

const char *rt_vw_diag_advice(const struct rt_vw_trace *t, const struct rt_vw_diag *g, int n)
{
	for (int k = 0; k < n; k++)
		if (rt_findings[t->findings[g[k].first].kind].advice)
			return rt_findings[t->findings[g[k].first].kind].advice;
	return NULL;
}
