/* SPDX-License-Identifier: MIT */
/* report_device.c - the report's section on collectives on the device, for
 * a trace with device records only (rt_dev_coll; any other trace's report
 * is unchanged): the straggler as view's finding names it; per rank, its
 * collectives enqueued / started / completed on the device, the share of
 * collectives it was last into and its mean lateness then, as bars; and the
 * straggler's lateness in each collective (a bar each, its kind, number and
 * lateness in its title), in the order it started them.
 *
 * From the model (device.c's logs, straggler.c's analysis), so a damaged
 * trace's times (a clock gone backwards, a start at 2^63 ns) reach it: every
 * number drawn is finite and clamped to its chart, every text escaped. The
 * SVGs stretch through their viewBox and carry no text: labels are HTML. */
#include <math.h> /* isfinite: a macro, no libm */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "export_int.h"
#include "escape.h"

#define BAR_W 100.0      /* viewBox width of a bar */
#define LATE_W 1000.0    /* viewBox width of the lateness chart */
#define LATE_H 120.0     /* its height */
#define LATE_PAD 4.0     /* above and below its bars */
#define LATE_BARS 500    /* at most, drawn on it */
#define STRAGGLER_COLOUR "#e15759"
#define RANK_COLOUR "#4e79a7"

static const char *const dev_style =
	"<style>#device .bar{display:inline-block;vertical-align:middle;width:160px;height:12px;"
	"background:#f3f3f3;margin-right:6px}#device tr.straggler td{background:#fff0f0}"
	".late-chart{display:flex;margin:6px 0 16px;max-width:900px}.late-labels{flex:none;"
	"width:80px;display:flex;flex-direction:column;justify-content:space-between;"
	"height:120px;font-size:12px;color:#555}.late-chart svg{flex:1;display:block}</style>\n";

/* v if finite, else 0: what a damaged trace's arithmetic may produce. */
static double fin(double v)
{
	return isfinite(v) ? v : 0.0;
}

static double mag(double v)
{
	return v < 0 ? -v : v;
}

/* Nanoseconds as milliseconds, readable whatever their size. */
static const char *ms(char *out, size_t n, double ns)
{
	double v = fin(ns) / 1e6;

	snprintf(out, n, mag(v) < 1e6 ? "%.2f ms" : "%.3g ms", v);
	return out;
}

/* A bar of frac (clamped to 0..1) of its cell; data-value for readers. */
static void bar(FILE *f, const char *cls, double frac, double value, bool hot)
{
	frac = fin(frac);
	frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
	fprintf(f, "<svg class=\"bar %s\" viewBox=\"0 0 %.0f 12\" preserveAspectRatio=\"none\" "
		"xmlns=\"http://www.w3.org/2000/svg\"><rect x=\"0\" y=\"0\" width=\"%.2f\" "
		"height=\"12\" fill=\"%s\" data-value=\"%.4f\"/></svg>", cls, BAR_W, BAR_W * frac,
		hot ? STRAGGLER_COLOUR : RANK_COLOUR, fin(value));
}

/* Who the others wait for: view's finding, or why none is named. */
static void verdict(FILE *f, const struct rt_vw_trace *t, const struct rt_vw_straggle *s)
{
	char text[RT_VW_FINDING_TEXT], a[48];

	fputs("<p id=\"straggler\">", f);
	for (int i = 0; i < t->nfindings; i++)
		if (t->findings[i].kind == RT_FK_STRAGGLER) {
			rt_vw_finding_text(t, &t->findings[i], text, sizeof(text));
			fputs("<b>Straggler:</b> ", f);
			rt_esc_html_file(f, text);
			fputs("</p>\n", f);
			return;
		}
	if (s)
		fprintf(f, "No straggler: no rank was last into most of the %llu collectives by more "
			"than the noise; the others waited %s per collective on average.</p>\n",
			(unsigned long long)s->colls, ms(a, sizeof(a), s->wait_ns));
	else
		fputs("No straggler analysis: no collective was started on the device by every rank "
		      "of its communicator.</p>\n", f);
}

static const char *source_name(unsigned s)
{
	return s == RT_DEV_SRC_PLUGIN ? "NCCL profiler plugin" : s == RT_DEV_SRC_EVENT ? "CUDA events"
										       : "none";
}

/* The records the tracer dropped: "<br><span class="dropped">15904 dropped
 * (queue-full 15904), seqs 4097-20000: not known</span>" */
static void drops(FILE *f, const struct rt_vw_devlog *d)
{
	const char *sep = "";

	if (!d->ndrops)
		return;
	fprintf(f, "<br><span class=\"dropped\">%llu dropped (", (unsigned long long)d->ndrops);
	for (unsigned k = 0; k < RT_DROP_COUNT_; k++) {
		if (!d->drop_by[k])
			continue;
		fprintf(f, "%s%s %llu", sep, rt_drop_word(k), (unsigned long long)d->drop_by[k]);
		sep = ", ";
	}
	fprintf(f, ")");
	if (d->drop_hi)
		fprintf(f, ", seqs %u-%u", d->drop_lo, d->drop_hi);
	fprintf(f, ": their device times are not known</span>");
}

/* A row per rank with device records: counts, and the two bars. */
static void ranks(FILE *f, const struct rt_vw_trace *t, const struct rt_vw_straggle *s)
{
	double top = 0;

	for (int i = 0; s && i < s->nranks; i++)
		top = fin(s->r[i].late_ns) > top ? s->r[i].late_ns : top;
	fputs("<table id=\"device\"><tr><th>rank</th><th>enqueued / started / completed</th>"
	      "<th>device times from</th><th>last into</th><th>mean lateness when last</th></tr>\n", f);
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_devlog *d = t->ranks[i].dev;
		bool hot = s && s->straggler == i, in = s && i < s->nranks;
		double share = in ? (double)s->r[i].last / (double)s->colls : 0;
		char a[48];

		if (!d)
			continue;
		fprintf(f, "<tr%s data-rank=\"%d\"><td>%d</td><td>%llu / %llu / %llu",
			hot ? " class=\"straggler\"" : "", t->ranks[i].meta.rank, t->ranks[i].meta.rank,
			(unsigned long long)d->enqueued, (unsigned long long)d->started,
			(unsigned long long)d->completed);
		drops(f, d);
		fprintf(f, "</td><td>%s</td><td>", source_name(d->source));
		if (in) {
			bar(f, "share", share, share, hot);
			fprintf(f, "%.0f %% (%llu of %llu)</td><td>", 100.0 * fin(share),
				(unsigned long long)s->r[i].last, (unsigned long long)s->colls);
			bar(f, "late", top > 0 ? s->r[i].late_ns / top : 0, s->r[i].late_ns / 1e6, hot);
			fprintf(f, "%s</td></tr>\n", s->r[i].last ? ms(a, sizeof(a), s->r[i].late_ns) : "-");
		} else {
			fputs("-</td><td>-</td></tr>\n", f);
		}
	}
	fputs("</table>\n", f);
}

/* Where lateness v lies on the chart, lo..hi from its foot to its top. */
static double late_y(double v, double lo, double hi)
{
	return LATE_PAD + (LATE_H - 2 * LATE_PAD) * (hi - v) / (hi - lo);
}

/* One bar from the zero line to v's lateness, for the k collectives from
 * l (the one drawn: the furthest from 0 of them). */
static void late_bar(FILE *f, const struct rt_vw_late *l, size_t k, double x, double w, double lo,
		     double hi)
{
	const struct rt_vw_late *p = l;
	double v, y0 = late_y(0, lo, hi), y;
	char a[48];

	for (size_t i = 1; i < k; i++)
		if (mag(fin(l[i].late_ns)) > mag(fin(p->late_ns)))
			p = &l[i];
	v = fin(p->late_ns);
	y = late_y(v, lo, hi);
	fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
		"data-late-ms=\"%.3f\"><title>%s #%u: %s", x, y < y0 ? y : y0, w, mag(y - y0),
		v > 0 ? STRAGGLER_COLOUR : RANK_COLOUR, v / 1e6,
		p->kind < RT_CK_COUNT ? rt_coll_names[p->kind] : "collective", p->seq,
		ms(a, sizeof(a), v));
	if (k > 1)
		fprintf(f, " (the furthest from 0 of %zu collectives)", k);
	fputs("</title></rect>\n", f);
}

/* The straggler's lateness per collective: a bar each (at most LATE_BARS),
 * up from a zero line when late, down when early. */
static void series(FILE *f, const struct rt_vw_trace *t, const struct rt_vw_straggle *s)
{
	size_t n = 0, nb;
	struct rt_vw_late *l = rt_vw_straggle_series(t, s->straggler, &n);
	double lo = 0, hi = 0;
	char a[48], b[48];

	for (size_t k = 0; k < n; k++) {
		lo = fin(l[k].late_ns) < lo ? fin(l[k].late_ns) : lo;
		hi = fin(l[k].late_ns) > hi ? fin(l[k].late_ns) : hi;
	}
	if (!n || !(hi > lo)) {
		free(l);
		return;
	}
	nb = n < LATE_BARS ? n : LATE_BARS;
	fprintf(f, "<h3>Rank %d's lateness in each collective (%zu, in the order it started them)"
		"</h3>\n<div class=\"late-chart\"><div class=\"late-labels\"><div>%s</div><div>%s"
		"</div></div><svg id=\"lateness\" viewBox=\"0 0 %.0f %.0f\" preserveAspectRatio=\"none\" "
		"height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n", s->r[s->straggler].rank, n,
		ms(a, sizeof(a), hi), ms(b, sizeof(b), lo), LATE_W, LATE_H, LATE_H);
	fprintf(f, "<line x1=\"0\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"#999\" "
		"vector-effect=\"non-scaling-stroke\"/>\n", LATE_W, late_y(0, lo, hi), late_y(0, lo, hi));
	for (size_t i = 0; i < nb; i++) {
		size_t from = i * n / nb, to = (i + 1) * n / nb;

		late_bar(f, &l[from], to - from, LATE_W * (double)i / (double)nb,
			 0.8 * LATE_W / (double)nb, lo, hi);
	}
	fputs("</svg></div>\n", f);
	free(l);
}

void rt_vw_report_device(const struct rt_vw_trace *t, FILE *f)
{
	const struct rt_vw_straggle *s = t->straggle && t->straggle->colls ? t->straggle : NULL;

	if (!rt_vw_dev_any(t))
		return;
	fputs(dev_style, f);
	fputs("<h2>Collectives on the device</h2>\n", f);
	verdict(f, t, s);
	ranks(f, t, s);
	if (s && s->straggler >= 0 && s->straggler < s->nranks)
		series(f, t, s);
}
