/* SPDX-License-Identifier: MIT */
/* report.c - the one report model (view.h) the outputs render from: the
 * ranks shown with what every output says of them, the findings grouped
 * (diagnosis.c), what to do next; and the placement lines `view` and
 * `params` share.
 *
 * Reads the loaded trace only; allocates the report's arrays (freed by
 * rt_vw_report_free). Not thread-safe per report; reports of one trace may
 * be made on several threads. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "view.h"
#include "rt_util.h"

bool rt_vw_want_rank(const struct rt_vw_rank *r, int only)
{
	return only < 0 || r->meta.rank == only;
}

static void rank_row(const struct rt_vw_trace *t, const struct rt_vw_rank *r,
		     struct rt_vw_report_rank *row)
{
	row->r = r;
	rt_vw_incomplete_text(t, (int)(r - t->ranks), row->incomplete, sizeof(row->incomplete));
	rt_vw_devices_str(r->devices_used, row->devices, sizeof(row->devices));
	for (int d = 0; d < RT_VW_MAX_DEV; d++)
		row->peak = r->dev_peak[d] > row->peak ? r->dev_peak[d] : row->peak;
	rt_vw_human_bytes(row->peak_h, sizeof(row->peak_h), row->peak);
	for (int k = 0; k < RT_CK_COUNT; k++)
		row->colls += r->colls[k];
	rt_vw_rank_end(r, row->end, sizeof(row->end));
}

int rt_vw_report_make(const struct rt_vw_trace *t, int only, struct rt_vw_report *rp)
{
	int hidden;

	memset(rp, 0, sizeof(*rp));
	rp->t = t;
	rp->only = only;
	rp->ranks = calloc((size_t)t->nranks + 1, sizeof(*rp->ranks));
	rp->ndiag = rt_vw_diagnose(t, only, true, &rp->diag, &hidden);
	if (!rp->ranks || rp->ndiag < 0) {
		rt_vw_report_free(rp);
		return -1;
	}
	for (int i = 0; i < t->nranks; i++)
		if (rt_vw_want_rank(&t->ranks[i], only))
			rank_row(t, &t->ranks[i], &rp->ranks[rp->nranks++]);
	for (int i = 0; i < t->nfindings; i++) /* as rt_vw_diagnose keeps them */
		rp->notes += rt_findings[t->findings[i].kind].level == RT_LEVEL_NOTE &&
			     (only < 0 || t->findings[i].rank < 0 || t->findings[i].rank == only);
	rt_vw_inconclusive_text(t, rp->why, sizeof(rp->why));
	rt_vw_laggard_text(t, rp->laggard, sizeof(rp->laggard));
	return 0;
}

void rt_vw_report_free(struct rt_vw_report *rp)
{
	free(rp->ranks);
	free(rp->diag);
	rp->ranks = NULL;
	rp->diag = NULL;
	rp->nranks = rp->ndiag = 0;
}

int rt_vw_report_advice(const struct rt_vw_report *rp, bool notes)
{
	for (int k = 0; k < rp->ndiag; k++)
		if ((notes || rp->diag[k].level != RT_LEVEL_NOTE) && rt_findings[rp->t->findings[rp->diag[k].first].kind].advice)
			return k;
	return -1;
}

int rt_vw_same_text(const struct rt_vw_trace *t, int only, const char *texts, size_t stride,
		    int i, bool *done, int *ranks, char *list, size_t len)
{
	int n = 0;

	if (done[i] || !rt_vw_want_rank(&t->ranks[i], only))
		return 0;
	for (int j = i; j < t->nranks; j++)
		if (!done[j] && rt_vw_want_rank(&t->ranks[j], only) &&
		    !strcmp(texts + (size_t)i * stride, texts + (size_t)j * stride)) {
			done[j] = true;
			ranks[n++] = t->ranks[j].meta.rank;
		}
	rt_int_ranges(ranks, n, list, len);
	return n;
}

void rt_vw_placement_text(FILE *f, const struct rt_vw_trace *t, int only, const char *indent)
{
	char (*text)[200] = calloc((size_t)t->nranks, sizeof(*text));
	int *ranks = calloc((size_t)t->nranks, sizeof(int));
	bool *done = calloc((size_t)t->nranks, sizeof(bool));

	for (int i = 0; text && ranks && done && i < t->nranks; i++) {
		char own[16], *at;

		rt_vw_placement_summary(&t->ranks[i], text[i], sizeof(text[i]));
		snprintf(own, sizeof(own), "cuda:%d", t->ranks[i].meta.local_rank >= 0 ?
			 t->ranks[i].meta.local_rank : t->ranks[i].meta.rank);
		at = strstr(text[i], own);
		if (only < 0 && at && !isdigit((unsigned char)at[strlen(own)])) {
			/* each rank on its own device: one line for all of them */
			memmove(at + 6, at + strlen(own), strlen(at + strlen(own)) + 1);
			at[5] = 'N';
		}
	}
	for (int i = 0; text && ranks && done && i < t->nranks; i++) {
		char list[256];
		int n = rt_vw_same_text(t, only, text[0], sizeof(text[0]), i, done, ranks, list,
					sizeof(list));

		if (!n)
			continue;
		fprintf(f, "%s%s %s: %s\n", indent, n > 1 ? "ranks" : "rank", list, rt_vw_esc(text[i]));
	}
	free(text);
	free(ranks);
	free(done);
}
