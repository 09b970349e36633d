/* SPDX-License-Identifier: MIT */
/* diagnosis.c - the findings as a reader wants them: the same finding on
 * several ranks said once ("ranks 0-3 exited with status 1"), notes left out
 * unless asked for, most important first (the model's order), and what to do
 * next from the first finding that knows.
 *
 * A view of t->findings; allocates the returned array only. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* text with its first "rank N" as "rank #" (what findings about single
 * ranks have in common); false when it names no rank. */
static bool normalise(const char *text, char *out, size_t n, const char **after)
{
	const char *p = strstr(text, "rank ");

	while (p && !isdigit((unsigned char)p[5]))
		p = strstr(p + 1, "rank ");
	if (!p) {
		snprintf(out, n, "%s", text);
		return false;
	}
	*after = p + 5;
	while (isdigit((unsigned char)**after))
		(*after)++;
	snprintf(out, n, "%.*srank #%s", (int)(p - text), text, *after);
	return true;
}

void rt_vw_rank_list(const int *v, int n, char *out, size_t len)
{
	size_t k = 0;

	out[0] = '\0';
	for (int i = 0; i < n && k < len; i++) {
		int j = i;

		while (j + 1 < n && v[j + 1] == v[j] + 1)
			j++;
		k += (size_t)snprintf(out + k, len - k, j > i ? "%s%d-%d" : "%s%d", k ? "," : "",
				      v[i], v[j]);
		i = j;
	}
}

static int cmp_int(const void *a, const void *b)
{
	return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* The group's text: "ranks 0-3 ..." in place of "rank N ..." when several. */
static void group_text(const struct rt_vw_trace *t, struct rt_vw_diag *g)
{
	const struct rt_vw_finding *f = &t->findings[g->first];
	char norm[sizeof(f->text)], list[160];
	const char *after = NULL, *hash;

	if (g->nranks < 2 || !normalise(f->text, norm, sizeof(norm), &after)) {
		snprintf(g->text, sizeof(g->text), "%s", f->text);
		return;
	}
	qsort(g->ranks, (size_t)g->nranks, sizeof(int), cmp_int);
	rt_vw_rank_list(g->ranks, g->nranks, list, sizeof(list));
	hash = strstr(norm, "rank #");
	snprintf(g->text, sizeof(g->text), "%.*sranks %s%s", (int)(hash - norm), norm, list,
		 hash + 6);
}

int rt_vw_diagnose(const struct rt_vw_trace *t, int only_rank, bool all, struct rt_vw_diag **out,
		   int *hidden)
{
	struct rt_vw_diag *g = calloc((size_t)t->nfindings + 1, sizeof(*g));
	int n = 0;

	*hidden = 0;
	*out = g;
	if (!g)
		return -1;
	for (int i = 0; i < t->nfindings; i++) {
		const struct rt_vw_finding *f = &t->findings[i];
		char a[sizeof(f->text)], b[sizeof(f->text)];
		const char *after;
		int k;

		if (only_rank >= 0 && f->rank >= 0 && f->rank != only_rank)
			continue;
		if (f->level == RT_VW_NOTE && !all) {
			(*hidden)++;
			continue;
		}
		normalise(f->text, a, sizeof(a), &after);
		for (k = 0; k < n; k++) {
			const struct rt_vw_finding *h = &t->findings[g[k].first];

			normalise(h->text, b, sizeof(b), &after);
			if (h->id == f->id && h->level == f->level && f->rank >= 0 && h->rank >= 0 &&
			    !strcmp(a, b) && g[k].nranks < RT_VW_DIAG_RANKS)
				break;
		}
		if (k == n)
			g[n++] = (struct rt_vw_diag){ .first = i, .level = f->level };
		if (f->rank >= 0 && g[k].nranks < RT_VW_DIAG_RANKS)
			g[k].ranks[g[k].nranks++] = f->rank;
	}
	for (int k = 0; k < n; k++)
		group_text(t, &g[k]);
	return n;
}

const char *rt_vw_diag_advice(const struct rt_vw_trace *t, const struct rt_vw_diag *g, int n)
{
	for (int k = 0; k < n; k++)
		if (t->findings[g[k].first].advice)
			return t->findings[g[k].first].advice;
	return NULL;
}
