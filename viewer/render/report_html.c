/* SPDX-License-Identifier: MIT */
/* report_html.c - one self-contained HTML report (no network, no script):
 * verdict, findings, a row per rank (its end and last error), collectives on
 * the device and the straggler (report_device.c; traces with device records
 * only), a timeline of collectives and probe events per rank, device memory
 * per rank and device (a legend entry each), and the parameter placement
 * grid grouped by module.
 *
 * Both charts share one time axis that starts at the first event drawn and
 * ends at the last, and one CSS-only zoom (radio buttons widen the charts
 * inside a scrolling box; the SVGs stretch through their viewBox, so they
 * carry no text: labels are HTML). A view of the model: memory is the
 * model's rank.mem, placement its rank.params; only the timeline's spans are
 * replayed from the trace (a bounded sample per rank). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_int.h"
#include "escape.h"
#include "view.h"

#define MAX_SPANS 4000  /* per rank, drawn on the timeline */
#define MAX_POINTS 2000 /* per rank and device, memory curve */
#define VW 1000.0       /* viewBox width of both charts */
#define LANE 28.0       /* timeline lane height */
#define MEM_H 180.0     /* memory chart height */

struct span {
	uint64_t ts, dur;
	uint16_t id;
	bool pending, failed;
};

struct rp {
	const struct rt_vw_trace *t;
	struct span **spans;
	int *nspans;
	uint64_t t0, t1; /* the first and last thing drawn */
};

/* Bookkeeping events drawn nowhere (they mark process start, not work). */
static bool drawn(const struct rt_vw_event *e)
{
	if (e->id == RT_ID_rt_rank || e->id == RT_ID_rt_cupti_state || e->id == RT_ID_rt_drv_entry)
		return false;
	return rt_vw_is_coll(e->id) || !rt_id_is_api(e->id) || e->ret != 0 || e->pending;
}

static void rp_event(void *arg, int ri, const struct rt_vw_event *e)
{
	struct rp *p = arg;
	uint64_t end = e->ts + (e->pending ? 0 : e->dur);

	if (!drawn(e))
		return;
	if (e->ts < p->t0)
		p->t0 = e->ts;
	if (end > p->t1)
		p->t1 = end;
	if (p->nspans[ri] < MAX_SPANS)
		p->spans[ri][p->nspans[ri]++] = (struct span){
			e->ts, e->pending ? 0 : e->dur, (uint16_t)e->id, e->pending,
			!e->pending && e->ret != 0 && rt_id_is_api(e->id) };
}

#define END_COLOUR "#e15759"    /* exit, signal, a call that never returned */
#define FAILED_COLOUR "#9c755f" /* a call that returned an error */
#define PROBE_COLOUR "#bab0ac"  /* probe events: parameters, forwards, markers, faults */

/* A collective in its kind's colour (format/nccl_api.def); the end red. */
static const char *span_colour(const struct span *s)
{
	int k = rt_coll_kind_of(s->id);

	if (s->id == RT_ID_rt_exit || s->id == RT_ID_rt_signal || s->pending)
		return END_COLOUR;
	if (s->failed)
		return FAILED_COLOUR;
	if (k >= 0 && rt_coll_colours[k][0])
		return rt_coll_colours[k];
	return PROBE_COLOUR;
}

static void swatch(FILE *f, const char *colour, const char *label)
{
	fprintf(f, "<span><i class=\"sw\" style=\"background:%s\"></i>", colour);
	rt_esc_html_file(f, label);
	fputs("</span>", f);
}

/* The timeline's legend: every colour span_colour draws. */
static void timeline_legend(FILE *f)
{
	fputs("<div class=\"legend\" id=\"timeline-legend\">", f);
	for (int k = 0; k < RT_CK_COUNT; k++)
		if (rt_coll_colours[k][0])
			swatch(f, rt_coll_colours[k], rt_coll_names[k]);
	swatch(f, PROBE_COLOUR, "probe event (parameters, forwards, markers, faults)");
	swatch(f, FAILED_COLOUR, "call that returned an error");
	swatch(f, END_COLOUR, "exit, signal, never returned");
	fputs("</div>\n", f);
}

static double xpos(const struct rp *p, uint64_t ts)
{
	return VW * (double)(ts - p->t0) / (double)(p->t1 - p->t0);
}

/* Tick labels under a chart, as HTML at percentages (they do not stretch). */
static void axis(FILE *f, const struct rp *p)
{
	double s = (double)(p->t1 - p->t0) / 1e9;

	fputs("<div class=\"axis\">", f);
	for (int k = 0; k <= 4; k++)
		fprintf(f, "<span style=\"left:%d%%\">%.*f s</span>", k * 25, s < 0.1 ? 4 : 3, s * k / 4);
	fputs("</div>", f);
}

static void timeline(FILE *f, const struct rp *p)
{
	const struct rt_vw_trace *t = p->t;

	fputs("<h2>Timeline</h2>\n", f);
	timeline_legend(f);
	fputs("<div class=\"chart\"><div class=\"labels\">", f);
	for (int i = 0; i < t->nranks; i++)
		fprintf(f, "<div class=\"lane\">rank %d</div>", t->ranks[i].meta.rank);
	fputs("</div><div class=\"scroll\"><div class=\"zoomable\">", f);
	fprintf(f, "<svg id=\"timeline\" viewBox=\"0 0 %.0f %.0f\" preserveAspectRatio=\"none\" "
		"height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n", VW, LANE * t->nranks,
		LANE * t->nranks);
	for (int i = 0; i < t->nranks; i++) {
		double y = LANE * i;

		fprintf(f, "<line x1=\"0\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"#ddd\" "
			"vector-effect=\"non-scaling-stroke\"/>\n", VW, y + 14, y + 14);
		for (int k = 0; k < p->nspans[i]; k++) {
			const struct span *s = &p->spans[i][k];
			double w = VW * (double)s->dur / (double)(p->t1 - p->t0);

			fprintf(f, "<rect class=\"span\" x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"20\" "
				"fill=\"%s\"><title>rank %d: %s%s%s</title></rect>\n", xpos(p, s->ts), y + 4,
				w < 0.6 ? 0.6 : w, span_colour(s), t->ranks[i].meta.rank,
				rt_events[s->id].name, s->pending ? " (never returned)" : "",
				s->failed ? " (returned an error)" : "");
		}
	}
	fputs("</svg>", f);
	axis(f, p);
	fputs("</div></div></div>\n", f);
}

static const char *const series_colours[] = { "#4e79a7", "#f28e2b", "#59a14f", "#e15759",
					       "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
					       "#9c755f", "#bab0ac" };

/* One polyline per rank and device from the model's memory changes. */
static int memory_series(FILE *f, const struct rp *p, uint64_t maxb, bool legend_only)
{
	const struct rt_vw_trace *t = p->t;
	int nseries = 0;

	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		for (int d = 0; d < RT_VW_MAX_DEV; d++) {
			uint32_t n = 0, step;
			const char *c = series_colours[nseries % 10];
			char label[64];

			for (uint32_t k = 0; k < r->nmem; k++)
				n += r->mem[k].dev == d;
			if (!n)
				continue;
			nseries++;
			snprintf(label, sizeof(label), "rank %d, cuda:%d", r->meta.rank, d);
			if (legend_only) {
				swatch(f, c, label);
				continue;
			}
			step = n / MAX_POINTS + 1;
			fprintf(f, "<polyline class=\"mem\" data-device=\"%d\" fill=\"none\" stroke=\"%s\" "
				"stroke-width=\"1.5\" vector-effect=\"non-scaling-stroke\" points=\"", d, c);
			for (uint32_t k = 0, j = 0; k < r->nmem; k++)
				if (r->mem[k].dev == d && (j++ % step == 0 || k + 1 == r->nmem) &&
				    r->mem[k].ts >= p->t0)
					fprintf(f, "%.2f,%.1f ", xpos(p, r->mem[k].ts),
						MEM_H - (MEM_H - 4) * (double)r->mem[k].bytes / (double)maxb);
			fprintf(f, "\"><title>%s</title></polyline>\n", label);
		}
	}
	return nseries;
}

static void memory_chart(FILE *f, const struct rp *p)
{
	const struct rt_vw_trace *t = p->t;
	uint64_t maxb = 1;
	char top[32];

	for (int i = 0; i < t->nranks; i++)
		for (uint32_t k = 0; k < t->ranks[i].nmem; k++)
			if (t->ranks[i].mem[k].bytes > maxb)
				maxb = t->ranks[i].mem[k].bytes;
	rt_vw_human_bytes(top, sizeof(top), maxb);
	fputs("<h2>Device memory</h2>\n<div class=\"legend\" id=\"memory-legend\">", f);
	if (!memory_series(f, p, maxb, true))
		fputs("no device allocation traced", f);
	fprintf(f, "</div>\n<div class=\"chart\"><div class=\"labels mem-labels\"><div>%s</div>"
		"<div>0 B</div></div><div class=\"scroll\"><div class=\"zoomable\">", top);
	fprintf(f, "<svg id=\"memory\" viewBox=\"0 0 %.0f %.0f\" preserveAspectRatio=\"none\" "
		"height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n", VW, MEM_H, MEM_H);
	memory_series(f, p, maxb, false);
	fputs("</svg>", f);
	axis(f, p);
	fputs("</div></div></div>\n", f);
}

static const char *const style =
	"body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}"
	"h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
	"table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
	".verdict{font-weight:bold;padding:2px 8px;border-radius:4px;background:#eee}"
	".bad{background:#fdd}.good{background:#dfd}ol li{margin:4px 0}"
	".legend span{display:inline-block;margin-right:12px}"
	".sw{display:inline-block;width:10px;height:10px;margin-right:4px}"
	".chart{display:flex;margin-top:6px}.labels{flex:none;width:80px}"
	".lane{height:28px;line-height:28px}.mem-labels{display:flex;flex-direction:column;"
	"justify-content:space-between;height:180px}"
	".scroll{flex:1;overflow-x:auto;overflow-y:hidden}.zoomable{width:100%}.zoomable svg{width:100%;display:block}"
	".axis{position:relative;height:18px;color:#555;font-size:12px}"
	".axis span{position:absolute;transform:translateX(-50%)}"
	".axis span:first-child{transform:none}.axis span:last-child{transform:translateX(-100%)}"
	".zoom{display:block;margin-top:18px}.zoom input{margin-left:10px}"
	"#z2:checked~.chart .zoomable{width:200%}#z4:checked~.chart .zoomable{width:400%}"
	"#z16:checked~.chart .zoomable{width:1600%}"
	"td.p{font-size:12px;white-space:nowrap}summary{cursor:pointer;margin:4px 0}"
	".lv{font-size:12px;padding:0 6px;border-radius:3px}.lv.error{background:#fdd}"
	".lv.warning{background:#ffe6b3}.lv.note{background:#eee}";

/* The diagnosis (the report's): every level, ranks collapsed, what to do
 * next under the first group that knows. */
static void findings(FILE *f, const struct rt_vw_report *rp)
{
	int next = rt_vw_report_advice(rp, true);

	fputs("<ol id=\"findings\">", f);
	if (rp->ndiag <= 0)
		fputs("<li>none: every rank ended cleanly and collectives matched</li>", f);
	for (int k = 0; k < rp->ndiag; k++) {
		const struct rt_vw_diag *g = &rp->diag[k];

		fprintf(f, "<li><span class=\"lv %s\">%s</span> ", rt_level_names[g->level],
			rt_level_names[g->level]);
		rt_esc_html_file(f, g->text);
		if (k == next) {
			fputs("<br><b>next:</b> ", f);
			rt_esc_html_file(f, rt_findings[rp->t->findings[g->first].kind].advice);
		}
		fputs("</li>", f);
	}
	fputs("</ol>\n", f);
}

static void header(FILE *f, const struct rt_vw_report *rp)
{
	const struct rt_vw_trace *t = rp->t;

	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		"<title>ranktrace report</title><style>%s</style></head><body>\n<h1>ranktrace report: ",
		style);
	rt_esc_html_file(f, t->dir);
	fprintf(f, "</h1>\n<p>%d rank%s, %" PRIu64 " events. Verdict: <span class=\"verdict %s\">%s"
		"</span></p>\n", t->nranks, t->nranks == 1 ? "" : "s", t->events,
		t->verdict == RT_V_HEALTHY ? "good" : "bad", rt_verdicts[t->verdict].word);
	fprintf(f, "<p>Trace completeness: <span class=\"completeness\">%s</span>",
		rt_vw_completeness_names[t->completeness]);
	if (rp->why[0]) {
		fputs(" (", f);
		rt_esc_html_file(f, rp->why);
		fputs(")", f);
	}
	fputs("</p>\n<h2>Findings</h2>\n", f);
	findings(f, rp);
}

/* The report's ranks, as view shows them: devices, peak, collectives, how
 * each ended, its last error. */
static void ranks_table(FILE *f, const struct rt_vw_report *rp)
{
	fputs("<h2>Ranks</h2>\n<table id=\"ranks\"><tr><th>rank</th><th>host</th><th>devices used"
	      "</th><th>expected</th><th>allocations</th><th>peak device memory</th><th>collectives"
	      "</th><th>FSDP root forwards</th><th>trace</th><th>end</th><th>last error</th></tr>\n", f);
	for (int i = 0; i < rp->nranks; i++) {
		const struct rt_vw_report_rank *row = &rp->ranks[i];
		const struct rt_vw_rank *r = row->r;

		fprintf(f, "<tr><td>%d</td><td>", r->meta.rank);
		rt_esc_html_file(f, r->meta.hostname);
		fprintf(f, "</td><td>%s</td><td>%d</td><td>%" PRIu64 "</td><td>%s</td><td>%" PRIu64
			"</td><td>%" PRIu64 "</td><td title=\"", row->devices, r->meta.local_rank, r->allocs,
			row->peak_h, row->colls, r->fsdp_root_forwards);
		rt_esc_html_file(f, row->incomplete);
		fprintf(f, "\">%s</td><td>", rt_vw_completeness_names[r->completeness]);
		rt_esc_html_file(f, row->end);
		fputs("</td><td>", f);
		rt_esc_html_file(f, r->last_error[0] ? r->last_error : "-");
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

int rt_vw_report_html(const struct rt_vw_trace *t, FILE *f)
{
	struct rp p = { .t = t, .t0 = UINT64_MAX };
	struct rt_vw_report rep = { 0 };
	int rc = -1, n = t->nranks;

	p.spans = calloc((size_t)n + 1, sizeof(*p.spans));
	p.nspans = calloc((size_t)n + 1, sizeof(int));
	for (int i = 0; p.spans && i < n; i++)
		if (!(p.spans[i] = calloc(MAX_SPANS, sizeof(struct span))))
			goto out;
	if (!p.spans || !p.nspans || rt_vw_foreach(t, rp_event, &p) != 0 ||
	    rt_vw_report_make(t, -1, &rep) != 0)
		goto out;
	for (int i = 0; i < n; i++) /* memory changes are drawn too */
		for (uint32_t k = 0; k < t->ranks[i].nmem; k++) {
			uint64_t ts = t->ranks[i].mem[k].ts;

			p.t0 = ts < p.t0 ? ts : p.t0;
			p.t1 = ts > p.t1 ? ts : p.t1;
		}
	if (p.t0 == UINT64_MAX)
		p.t0 = rt_vw_trace_start(t);
	if (p.t1 <= p.t0)
		p.t1 = p.t0 + 1;
	header(f, &rep);
	ranks_table(f, &rep);
	rt_vw_report_device(t, f);
	fputs("<div class=\"charts\"><span class=\"zoom\">zoom (both charts):<input type=\"radio\" name=\"zoom\" id=\"z1\" "
	      "checked><label for=\"z1\">1x</label><input type=\"radio\" name=\"zoom\" id=\"z2\">"
	      "<label for=\"z2\">2x</label><input type=\"radio\" name=\"zoom\" id=\"z4\"><label "
	      "for=\"z4\">4x</label><input type=\"radio\" name=\"zoom\" id=\"z16\"><label for=\"z16\">"
	      "16x</label> (scroll sideways); time 0 is the first event drawn</span>\n", f);
	timeline(f, &p);
	memory_chart(f, &p);
	fputs("</div>\n", f);
	rt_vw_report_params(t, f);
	fputs("<p style=\"color:#777\">Generated by ranktrace; open the Perfetto export "
	      "(ranktrace export --perfetto) for every call.</p>\n</body></html>\n", f);
	rc = ferror(f) ? -1 : 0;
out:
	rt_vw_report_free(&rep);
	for (int i = 0; p.spans && i < n; i++)
		free(p.spans[i]);
	free(p.spans);
	free(p.nspans);
	return rc;
}
