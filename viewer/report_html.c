/* SPDX-License-Identifier: MIT */
/* report_html.c - one self-contained HTML report (no network): verdict,
 * findings, a row per rank, a timeline of collectives per rank (a bounded
 * sample of spans), device memory over time, parameter placement. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_int.h"

/* ---- HTML report ---- */

#define MAX_SPANS 4000   /* per rank, drawn on the timeline */

#define MAX_POINTS 2000  /* per rank, memory curve */

struct span {
	uint64_t ts, dur;
	uint16_t id;
	bool pending;
};

struct point {
	uint64_t ts, bytes;
	int dev;
};

struct rp {
	const struct rt_vw_trace *t;
	uint32_t *mem_at;    /* per rank: next memory change of the model's */
	uint64_t *ev;        /* per rank: events replayed */
	struct span **spans;
	int *nspans;
	struct point **points;
	int *npoints;
	uint64_t t0, t1;
};

static void rp_event(void *arg, int ri, const struct rt_vw_event *e)
{
	struct rp *p = arg;
	const struct rt_vw_rank *r = &p->t->ranks[ri];

	if (e->ts > p->t1)
		p->t1 = e->ts;
	if ((rt_vw_is_coll(e->id) || e->id >= RT_ID_FIRST_TRACER || e->ret != 0 || e->pending) &&
	    p->nspans[ri] < MAX_SPANS)
		p->spans[ri][p->nspans[ri]++] = (struct span){ e->ts, e->pending ? 0 : e->dur,
							       (uint16_t)e->id, e->pending };
	/* device memory as the model counted it, changed by this event */
	p->ev[ri]++;
	for (; p->mem_at[ri] < r->nmem && r->mem[p->mem_at[ri]].ev <= p->ev[ri]; p->mem_at[ri]++) {
		const struct rt_vw_mem_change *c = &r->mem[p->mem_at[ri]];

		if (p->npoints[ri] < MAX_POINTS)
			p->points[ri][p->npoints[ri]++] = (struct point){ e->ts, c->bytes, c->dev };
	}
}

#define END_COLOUR "#e15759"    /* exit, signal, a call that never returned */
#define FAILED_COLOUR "#9c755f" /* a failed call, anything else */

/* A collective in its kind's colour (format/nccl_api.def); the end red. */
static const char *span_color(const struct span *s)
{
	int k = rt_coll_kind_of(s->id);

	if (k >= 0 && rt_coll_colours[k][0])
		return rt_coll_colours[k];
	if (s->id == RT_ID_rt_exit || s->id == RT_ID_rt_signal || s->pending)
		return END_COLOUR;
	return FAILED_COLOUR;
}

/* The timeline's legend: every colour span_color draws. */
static void legend(FILE *f)
{
	fputs("<div class=\"legend\">", f);
	for (int k = 0; k < RT_CK_COUNT; k++)
		if (rt_coll_colours[k][0])
			fprintf(f, "<span><i class=\"sw\" style=\"background:%s\"></i>%s</span>",
				rt_coll_colours[k], rt_coll_names[k]);
	fputs("<span><i class=\"sw\" style=\"background:" END_COLOUR "\"></i>exit, signal, never "
	      "returned</span><span><i class=\"sw\" style=\"background:" FAILED_COLOUR "\"></i>failed "
	      "call</span></div>\n", f);
}

int rt_vw_report_html(const struct rt_vw_trace *t, FILE *f)
{
	struct rp p = { .t = t };
	const double W = 1000, lane = 28, left = 90;
	double span_ns;
	int rc = -1, n = t->nranks;

	p.mem_at = calloc((size_t)n, sizeof(*p.mem_at));
	p.ev = calloc((size_t)n, sizeof(*p.ev));
	p.spans = calloc((size_t)n, sizeof(*p.spans));
	p.nspans = calloc((size_t)n, sizeof(int));
	p.points = calloc((size_t)n, sizeof(*p.points));
	p.npoints = calloc((size_t)n, sizeof(int));
	if (!p.mem_at || !p.ev || !p.spans || !p.nspans || !p.points || !p.npoints)
		goto out;
	for (int i = 0; i < n; i++) {
		p.spans[i] = calloc(MAX_SPANS, sizeof(struct span));
		p.points[i] = calloc(MAX_POINTS, sizeof(struct point));
		if (!p.spans[i] || !p.points[i])
			goto out;
	}
	p.t0 = rt_vw_trace_start(t);
	p.t1 = p.t0 + 1;
	if (rt_vw_foreach(t, rp_event, &p) != 0)
		goto out;
	span_ns = (double)(p.t1 - p.t0);

	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	      "<title>ranktrace report</title><style>"
	      "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}"
	      "h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
	      "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
	      ".verdict{font-weight:bold;padding:2px 8px;border-radius:4px;background:#eee}"
	      ".bad{background:#fdd}.good{background:#dfd}ol li{margin:4px 0}"
	      ".legend span{display:inline-block;margin-right:12px}"
	      ".sw{display:inline-block;width:10px;height:10px;margin-right:4px}"
	      "</style></head><body>\n", f);
	fputs("<h1>ranktrace report: ", f);
	rt_vw_html_esc(f, t->dir);
	fprintf(f, "</h1>\n<p>%d rank%s, %" PRIu64 " events. Verdict: <span class=\"verdict %s\">%s</span></p>\n",
		n, n == 1 ? "" : "s", t->events, t->verdict == RT_V_HEALTHY ? "good" : "bad",
		rt_vw_verdict_names[t->verdict]);
	fprintf(f, "<p>Trace completeness: <span class=\"completeness\">%s</span>",
		rt_vw_completeness_names[t->completeness]);
	if (t->inconclusive[0]) {
		fputs(" (", f);
		rt_vw_html_esc(f, t->inconclusive);
		fputs(")", f);
	}
	fputs("</p>\n<h2>Findings</h2>\n<ol>", f);
	if (!t->nfindings)
		fputs("<li>none: every rank ended cleanly and collectives matched</li>", f);
	for (int i = 0; i < t->nfindings; i++) {
		fputs("<li>", f);
		rt_vw_html_esc(f, t->findings[i].text);
		fputs("</li>", f);
	}
	fputs("</ol>\n<h2>Ranks</h2>\n<table><tr><th>rank</th><th>host</th><th>devices used</th>"
	      "<th>expected</th><th>allocations</th><th>peak device memory</th><th>collectives</th>"
	      "<th>FSDP root forwards</th><th>trace</th><th>end</th></tr>\n", f);
	for (int i = 0; i < n; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		uint64_t peak = 0, colls = 0;
		char end[96];

		for (int d = 0; d < RT_VW_MAX_DEV; d++)
			peak = r->dev_peak[d] > peak ? r->dev_peak[d] : peak;
		for (int k = 0; k < RT_CK_COUNT; k++)
			colls += r->colls[k];
		fprintf(f, "<tr><td>%d</td><td>", r->meta.rank);
		rt_vw_html_esc(f, r->meta.hostname);
		fputs("</td><td>", f);
		for (int d = 0, c = 0; d < RT_VW_MAX_DEV; d++)
			if (r->devices_used & (1ull << d))
				fprintf(f, "%s%d", c++ ? "," : "", d);
		fprintf(f, "</td><td>%d</td><td>%" PRIu64 "</td><td>%" PRIu64 " B</td><td>%" PRIu64
			"</td><td>%" PRIu64 "</td><td title=\"", r->meta.local_rank, r->allocs, peak, colls,
			r->fsdp_root_forwards);
		rt_vw_html_esc(f, r->incomplete);
		fprintf(f, "\">%s</td><td>", rt_vw_completeness_names[r->completeness]);
		rt_vw_rank_end(r, end, sizeof(end));
		rt_vw_html_esc(f, end);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);

	/* timeline: one lane per rank, collectives, errors and the end */
	fputs("<h2>Timeline</h2>\n", f);
	legend(f);
	fprintf(f, "<svg id=\"timeline\" width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n",
		W + left + 10, lane * n + 30);
	for (int i = 0; i < n; i++) {
		double y = lane * i + 4;

		fprintf(f, "<text x=\"4\" y=\"%.0f\">rank %d</text><line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" "
			"y2=\"%.0f\" stroke=\"#ddd\"/>\n", y + 16, t->ranks[i].meta.rank, left, left + W,
			y + 12, y + 12);
		for (int k = 0; k < p.nspans[i]; k++) {
			const struct span *s = &p.spans[i][k];
			double x = left + W * (double)(s->ts - p.t0) / span_ns;
			double w = W * (double)s->dur / span_ns;

			fprintf(f, "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"20\" fill=\"%s\"><title>%s%s</title></rect>\n",
				x, y + 2, w < 1.5 ? 1.5 : w, span_color(s), rt_events[s->id].name,
				s->pending ? " (never returned)" : "");
		}
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">0 s</text><text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.3f s</text>\n</svg>\n",
		left, lane * n + 24, left + W, lane * n + 24, span_ns / 1e9);

	/* device memory over time */
	{
		uint64_t maxb = 1;
		const double H = 160;

		for (int i = 0; i < n; i++)
			for (int k = 0; k < p.npoints[i]; k++)
				maxb = p.points[i][k].bytes > maxb ? p.points[i][k].bytes : maxb;
		fprintf(f, "<h2>Device memory</h2>\n<svg id=\"memory\" width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n",
			W + left + 10, H + 30);
		for (int i = 0; i < n; i++) {
			static const char *colors[] = { "#4e79a7", "#f28e2b", "#59a14f", "#e15759",
							"#76b7b2", "#edc948", "#b07aa1", "#ff9da7" };

			if (!p.npoints[i])
				continue;
			fputs("<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"", f);
			fputs(colors[i % 8], f);
			fputs("\" points=\"", f);
			for (int k = 0; k < p.npoints[i]; k++)
				fprintf(f, "%.1f,%.1f ", left + W * (double)(p.points[i][k].ts - p.t0) / span_ns,
					H - H * (double)p.points[i][k].bytes / (double)maxb + 5);
			fprintf(f, "\"><title>rank %d, device %d</title></polyline>\n", t->ranks[i].meta.rank,
				p.points[i][0].dev);
		}
		fprintf(f, "<text x=\"4\" y=\"15\">%" PRIu64 " B</text><text x=\"4\" y=\"%.0f\">0</text>\n</svg>\n",
			maxb, H + 5);
	}
	fputs("<h2>Parameter placement</h2>\n<p id=\"params\">", f);
	{
		const struct rt_vw_rank *widest = NULL;
		static const char *const place_name[] = { "cuda", "cpu", "meta", "storage freed",
							  "wrong device" };
		static const char *const place_color[] = { "#59a14f", "#4e79a7", "#bab0ac", "#e15759",
							   "#f28e2b" };

		for (int i = 0; i < n; i++)
			if (!widest || t->ranks[i].nparams > widest->nparams)
				widest = &t->ranks[i];
		if (!widest || !widest->nparams) {
			fputs("No parameter events in this trace: the PyTorch probe (or rt_param() in a C "
			      "workload) reports where each parameter lives.", f);
		} else {
			fputs("Latest reported placement of each parameter (rows) on each rank (columns): ", f);
			for (int k = 0; k < 5; k++)
				fprintf(f, "<span><i class=\"sw\" style=\"background:%s\"></i>%s</span> ",
					place_color[k], place_name[k]);
			fputs("</p>\n<table id=\"heatmap\"><tr><th>parameter</th>", f);
			for (int i = 0; i < n; i++)
				fprintf(f, "<th>%d</th>", t->ranks[i].meta.rank);
			fputs("</tr>\n", f);
			for (uint32_t k = 0; k < widest->nparams && k < 500; k++) {
				fputs("<tr><td>", f);
				rt_vw_html_esc(f, widest->params[k].name);
				fputs("</td>", f);
				for (int i = 0; i < n; i++) {
					const struct rt_vw_param *q = NULL;

					for (uint32_t j = 0; j < t->ranks[i].nparams; j++)
						if (!strcmp(t->ranks[i].params[j].name, widest->params[k].name))
							q = &t->ranks[i].params[j];
					if (!q) {
						fputs("<td></td>", f);
						continue;
					}
					fprintf(f, "<td style=\"background:%s\" title=\"%s\">%s", place_color[q->place],
						place_name[q->place], q->place == RT_P_CUDA ? "cuda:" : "");
					if (q->place == RT_P_CUDA)
						fprintf(f, "%d", q->device);
					fputs("</td>", f);
				}
				fputs("</tr>\n", f);
			}
			fputs("</table>\n<p>", f);
		}
	}
	fputs("</p>\n<p style=\"color:#777\">Generated by ranktrace; open the Perfetto export "
	      "(ranktrace export --perfetto) for every call.</p>\n</body></html>\n", f);
	rc = ferror(f) ? -1 : 0;
out:
	for (int i = 0; i < n; i++) {
		if (p.spans)
			free(p.spans[i]);
		if (p.points)
			free(p.points[i]);
	}
	free(p.mem_at);
	free(p.ev);
	free(p.spans);
	free(p.nspans);
	free(p.points);
	free(p.npoints);
	return rc;
}
