/* SPDX-License-Identifier: MIT */
/* view_text.c - `ranktrace view` as text: a row per rank, where the
 * parameters live, flight-recorder notes, the device section and the
 * findings as a diagnosis with what to do next. A view of the report
 * (report.c); every string from the trace escaped for a terminal. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "export.h"
#include "view.h"

/* "next: ..." with this trace's directory in place of DIR: the job's, not
 * the attempt's (DIR/attempt-N is read as DIR --attempt N). */
static void print_advice(FILE *f, const char *advice, const struct rt_vw_trace *t)
{
	char dir[sizeof(t->dir)], tail[32];
	size_t n = strlen(t->dir), k;

	snprintf(dir, sizeof(dir), "%s", t->dir);
	k = (size_t)snprintf(tail, sizeof(tail), "/attempt-%d", t->attempt);
	if (t->attempt > 0 && n > k && !strcmp(dir + n - k, tail))
		dir[n - k] = '\0';
	fprintf(f, "     next: ");
	for (const char *p = advice; *p; p++) {
		if (!strncmp(p, "DIR", 3) && (p == advice || p[-1] == ' ')) {
			rt_esc_text_file(f, dir);
			p += 2;
		} else {
			fputc(*p, f);
		}
	}
	fputc('\n', f);
}

/* The findings as a diagnosis: levels, ranks collapsed, notes hidden unless
 * all, what to do next under the first group that knows. */
static void print_findings(FILE *f, const struct rt_vw_report *rp, bool all)
{
	int next = rt_vw_report_advice(rp, all), shown = 0;

	fprintf(f, "\nfindings:\n");
	for (int k = 0; k < rp->ndiag; k++) {
		const struct rt_vw_diag *g = &rp->diag[k];

		if (g->level == RT_LEVEL_NOTE && !all)
			continue;
		fprintf(f, "  %d. %s: %s\n", ++shown, rt_level_names[g->level], rt_vw_esc(g->text));
		if (k == next)
			print_advice(f, rt_findings[rp->t->findings[g->first].kind].advice, rp->t);
	}
	if (!shown)
		fprintf(f, "  none%s\n", rp->t->verdict == RT_V_HEALTHY ? ": every rank ended cleanly, "
			"collectives matched across ranks" : "");
	if (!all && rp->notes)
		fprintf(f, "  (%d note%s not shown: --all)\n", rp->notes, rp->notes == 1 ? "" : "s");
}

/* The kinds `ranktrace view` shows, in their view column's order (nccl_api.def):
 * "AG/RS/AR/BC" from labels, or "1/2/3/4" from rank r's counts (r NULL: labels). */
static void colls_column(char *out, size_t n, const struct rt_vw_rank *r)
{
	size_t k = 0;

	out[0] = '\0';
	for (int pos = 1; pos <= RT_CK_COUNT; pos++)
		for (int c = 0; c < RT_CK_COUNT; c++) {
			if (rt_coll_info[c].view != pos || k >= n)
				continue;
			if (r)
				k += (size_t)snprintf(out + k, n - k, "%s%llu", k ? "/" : "",
						      (unsigned long long)r->colls[c]);
			else
				k += (size_t)snprintf(out + k, n - k, "%s%s", k ? "/" : "",
						      rt_coll_info[c].label);
		}
}

static void print_ranks(FILE *f, const struct rt_vw_report *rp)
{
	const struct rt_vw_trace *t = rp->t;
	char labels[48], head[64];

	colls_column(labels, sizeof(labels), NULL);
	snprintf(head, sizeof(head), "collectives (%s)", labels);
	fprintf(f, "%-6s %-10s %-8s %-4s %10s %7s %-28s %5s %-9s %-16s\n", "rank", "host", "devices",
		"exp", "peak mem", "allocs", head, "fwd", "trace", "end");
	for (int i = 0; i < rp->nranks; i++) {
		const struct rt_vw_report_rank *row = &rp->ranks[i];
		const struct rt_vw_rank *r = row->r;
		char colls[64], exp[8];

		colls_column(colls, sizeof(colls), r);
		if (r->meta.local_rank >= 0)
			snprintf(exp, sizeof(exp), "%d", r->meta.local_rank);
		else
			snprintf(exp, sizeof(exp), "-");
		fprintf(f, "%-6d %-10.10s %-8s %-4s %10s %7llu %-28s %5llu %-9s %-16s\n", r->meta.rank,
			rt_vw_esc(r->meta.hostname), row->devices, exp, row->peak_h,
			(unsigned long long)r->allocs, colls, (unsigned long long)r->fsdp_root_forwards,
			rt_vw_completeness_names[r->completeness], row->end);
	}
	for (int k = 0; k < t->nmissing; k++)
		if (rp->only < 0 || t->missing[k] == rp->only)
			fprintf(f, "%-6d %-10s %-8s %-4s %10s %7s %-28s %5s %-9s %-16s\n", t->missing[k],
				"-", "-", "-", "-", "-", "-", "-", "missing", "no directory");
}

/* Ranks that kept only their last events (run --ring): how far back it reaches. */
static void print_rings(FILE *f, const struct rt_vw_report *rp)
{
	for (int i = 0; i < rp->nranks; i++) {
		const struct rt_vw_rank *r = rp->ranks[i].r;
		char ring[32];

		if (!r->meta.ring_bytes)
			continue;
		rt_vw_human_bytes(ring, sizeof(ring), r->meta.ring_bytes);
		fprintf(f, "rank %d: flight recorder (each thread kept its last %s): the trace begins "
			"%.3f s before its last event; what came before was overwritten\n",
			r->meta.rank, ring, (double)(r->last_ts - r->first_ts) / 1e9);
	}
}

int rt_vw_view_text(FILE *f, const struct rt_vw_report *rp, bool all)
{
	const struct rt_vw_trace *t = rp->t;

	fprintf(f, "trace %s: %d rank%s, %llu events, verdict: %s\n", rt_vw_esc(t->dir), t->nranks,
		t->nranks == 1 ? "" : "s", (unsigned long long)t->events,
		rt_verdicts[t->verdict].word);
	fprintf(f, "completeness: %s%s%s%s\n\n", rt_vw_completeness_names[t->completeness],
		rp->why[0] ? " (" : "", rt_vw_esc(rp->why), rp->why[0] ? ")" : "");
	print_ranks(f, rp);
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].nparams) { /* the probe reported parameters: where they live */
			fprintf(f, "\nparameters (`ranktrace params` for each one):\n");
			rt_vw_placement_text(f, t, rp->only, "  ");
			break;
		}
	print_rings(f, rp);
	rt_vw_comms_text(f, t, rp->only, all);
	rt_vw_device_text(f, t, rp->only);
	print_findings(f, rp, all);
	return ferror(f) ? -EIO : 0;
}
