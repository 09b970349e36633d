/* SPDX-License-Identifier: MIT */
/* export.c - a loaded trace as Chrome trace-event JSON (Perfetto UI,
 * chrome://tracing) and as one self-contained HTML report.
 *
 * Both stream the events again (rt_vw_foreach) and write as they go; state
 * grows with live allocations (memory counters) and open collectives (flow
 * arrows), plus, for the report, a bounded sample of spans to draw. Every
 * string from a trace is escaped for its output (JSON, HTML). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"

void rt_vw_json_esc(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
}

void rt_vw_html_esc(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* A collective (not point-to-point): what flows link across ranks. */
static bool is_coll(unsigned id)
{
	int k = rt_vw_coll_kind(id);

	return k >= 0 && k != RT_CK_SEND && k != RT_CK_RECV;
}

/* Per-rank memory accounting, as in the model: ptr -> (size, device). */
struct mem_entry {
	uint64_t ptr, size;
	int dev;
	struct mem_entry *next;
};

#define MEM_BUCKETS 4096

struct mem {
	struct mem_entry *b[MEM_BUCKETS];
	uint64_t bytes[RT_VW_MAX_DEV];
};

static struct mem_entry **mem_slot(struct mem *m, uint64_t ptr)
{
	struct mem_entry **l = &m->b[(ptr >> 8) % MEM_BUCKETS];

	while (*l && (*l)->ptr != ptr)
		l = &(*l)->next;
	return l;
}

/* Update memory for alloc/free events; returns the device changed, or -1. */
static int mem_update(struct mem *m, const struct rt_vw_event *e)
{
	struct mem_entry **l, *x;

	if (e->pending || e->ret != 0)
		return -1;
	switch (e->id) {
	case RT_ID_cudaMalloc: case RT_ID_cudaMallocAsync: case RT_ID_cudaMallocFromPoolAsync:
	case RT_ID_cudaMallocManaged:
		if (e->dev < 0 || e->dev >= RT_VW_MAX_DEV)
			return -1;
		x = malloc(sizeof(*x));
		if (!x)
			return -1;
		x->ptr = (uint64_t)rt_vw_fld(e, RT_F_PTR);
		x->size = (uint64_t)rt_vw_fld(e, RT_F_SIZE);
		x->dev = e->dev;
		l = mem_slot(m, x->ptr);
		x->next = *l;
		*l = x;
		m->bytes[x->dev] += x->size;
		return x->dev;
	case RT_ID_cudaFree: case RT_ID_cudaFreeAsync:
		l = mem_slot(m, (uint64_t)rt_vw_fld(e, RT_F_PTR));
		if (!(x = *l))
			return -1;
		*l = x->next;
		m->bytes[x->dev] -= x->size;
		{
			int dev = x->dev;

			free(x);
			return dev;
		}
	default:
		return -1;
	}
}

static void mem_free(struct mem *m)
{
	for (int i = 0; i < MEM_BUCKETS; i++)
		while (m->b[i]) {
			struct mem_entry *x = m->b[i];

			m->b[i] = x->next;
			free(x);
		}
}

/* Open collectives: (comm, seq) -> ranks seen so far, for flow phases. */
struct flow {
	uint64_t comm;
	uint32_t seq;
	int seen;
	struct flow *next;
};

#define FLOW_BUCKETS 4096

/* ---- Perfetto / Chrome trace JSON ---- */

struct pf {
	FILE *f;
	const struct rt_vw_trace *t;
	uint64_t t0;
	struct mem *mem;
	struct flow *flows[FLOW_BUCKETS];
	int *comm_n; /* unused: nranks from the trace */
	bool first;
};

static void pf_sep(struct pf *p)
{
	fputs(p->first ? "\n" : ",\n", p->f);
	p->first = false;
}

static double us(const struct pf *p, uint64_t ns)
{
	return (double)(ns - p->t0) / 1000.0;
}

static void pf_event(void *arg, int ri, const struct rt_vw_event *e)
{
	struct pf *p = arg;
	const struct rt_vw_rank *r = &p->t->ranks[ri];
	const struct rt_event_desc *d = &rt_events[e->id];
	uint64_t stream = (uint64_t)rt_vw_fld(e, RT_F_STREAM);
	uint64_t tid = e->tid;
	int dev;

	if (e->ts < p->t0)
		return;
	/* async work on a CUDA stream goes on that stream's track */
	if (is_coll(e->id) || e->id == RT_ID_cudaMemcpyAsync || e->id == RT_ID_cudaMemsetAsync)
		tid = stream ? (0x10000000ull | ((stream >> 4) & 0xfffffff)) : tid;
	pf_sep(p);
	fprintf(p->f, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":%.3f,\"dur\":%.3f,\"name\":\"%s\","
		"\"cat\":\"%s\",\"args\":{\"ret\":%d,\"device\":%d%s", r->meta.rank, tid, us(p, e->ts),
		e->pending ? us(p, r->last_ts) - us(p, e->ts) : (double)e->dur / 1000.0, d->name,
		d->lib == RT_LIB_NCCL ? "nccl" : d->lib == RT_LIB_CUDA ? "cuda" : "ranktrace", e->ret,
		e->dev, e->pending ? ",\"never_returned\":true" : "");
	for (int i = 0; i < d->nfields; i++) {
		int64_t v = rt_field_get(e->id, e->fields, i);

		if (d->fields[i].kind == RT_K_PTR || d->fields[i].kind == RT_K_U64)
			fprintf(p->f, ",\"%s\":\"%s%" PRIx64 "\"", d->fields[i].name,
				d->fields[i].kind == RT_K_PTR ? "0x" : "", (uint64_t)v);
		else
			fprintf(p->f, ",\"%s\":%" PRId64, d->fields[i].name, v);
	}
	fputs("}}", p->f);
	if (is_coll(e->id)) {
		uint64_t comm = (uint64_t)rt_vw_fld(e, RT_F_COMM_ID);
		uint32_t seq = (uint32_t)rt_vw_fld(e, RT_F_SEQ);
		size_t b = (size_t)((comm ^ seq * 0x9E3779B97F4A7C15ull) % FLOW_BUCKETS);
		struct flow **l = &p->flows[b], *fl;
		const char *ph;

		while (*l && ((*l)->comm != comm || (*l)->seq != seq))
			l = &(*l)->next;
		fl = *l;
		if (!fl) {
			fl = calloc(1, sizeof(*fl));
			if (!fl)
				return;
			fl->comm = comm;
			fl->seq = seq;
			fl->next = p->flows[b];
			p->flows[b] = fl;
			l = &p->flows[b];
		}
		fl->seen++;
		ph = fl->seen == 1 ? "s" : fl->seen >= p->t->nranks ? "f" : "t";
		pf_sep(p);
		fprintf(p->f, "{\"ph\":\"%s\",\"id\":\"%016" PRIx64 "-%u\",\"name\":\"%s #%u\",\"cat\":\"collective\","
			"\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":%.3f%s}", ph, comm, seq, d->name, seq,
			r->meta.rank, tid, us(p, e->ts), ph[0] == 'f' ? ",\"bp\":\"e\"" : "");
		if (fl->seen >= p->t->nranks) {
			*l = fl->next;
			free(fl);
		}
	}
	dev = mem_update(&p->mem[ri], e);
	if (dev >= 0) {
		pf_sep(p);
		fprintf(p->f, "{\"ph\":\"C\",\"pid\":%d,\"ts\":%.3f,\"name\":\"device %d memory\",\"args\":{\"bytes\":%"
			PRIu64 "}}", r->meta.rank, us(p, e->ts), dev, p->mem[ri].bytes[dev]);
	}
}

static uint64_t trace_start(const struct rt_vw_trace *t)
{
	uint64_t t0 = UINT64_MAX;

	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].readable && t->ranks[i].events && t->ranks[i].first_ts < t0)
			t0 = t->ranks[i].first_ts;
	return t0 == UINT64_MAX ? 0 : t0;
}

int rt_vw_export_perfetto(const struct rt_vw_trace *t, FILE *f)
{
	struct pf p = { .f = f, .t = t, .first = true };
	int rc;

	p.t0 = trace_start(t);
	p.mem = calloc((size_t)t->nranks, sizeof(*p.mem));
	if (!p.mem)
		return -1;
	fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"ranktrace\",\"verdict\":\"", f);
	fputs(rt_vw_verdict_names[t->verdict], f);
	fputs("\"},\"traceEvents\":[", f);
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		if (!r->readable)
			continue;
		pf_sep(&p);
		fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"rank %d (",
			r->meta.rank, r->meta.rank);
		rt_vw_json_esc(f, r->meta.hostname);
		fputs(")\"}}", f);
		pf_sep(&p);
		fprintf(f, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
			r->meta.rank, r->meta.rank);
	}
	rc = rt_vw_foreach(t, pf_event, &p);
	fputs("\n]}\n", f);
	for (int i = 0; i < t->nranks; i++)
		mem_free(&p.mem[i]);
	free(p.mem);
	for (int b = 0; b < FLOW_BUCKETS; b++)
		while (p.flows[b]) {
			struct flow *x = p.flows[b];

			p.flows[b] = x->next;
			free(x);
		}
	return rc || ferror(f) ? -1 : 0;
}

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
	struct mem *mem;
	struct span **spans;
	int *nspans;
	struct point **points;
	int *npoints;
	uint64_t t0, t1;
};

static void rp_event(void *arg, int ri, const struct rt_vw_event *e)
{
	struct rp *p = arg;
	int dev;

	if (e->ts > p->t1)
		p->t1 = e->ts;
	if ((is_coll(e->id) || e->id >= RT_ID_FIRST_TRACER || e->ret != 0 || e->pending) &&
	    p->nspans[ri] < MAX_SPANS)
		p->spans[ri][p->nspans[ri]++] = (struct span){ e->ts, e->pending ? 0 : e->dur,
							       (uint16_t)e->id, e->pending };
	dev = mem_update(&p->mem[ri], e);
	if (dev >= 0 && p->npoints[ri] < MAX_POINTS)
		p->points[ri][p->npoints[ri]++] = (struct point){ e->ts, p->mem[ri].bytes[dev], dev };
}

static const char *span_color(const struct span *s)
{
	switch (s->id) {
	case RT_ID_ncclAllGather: return "#4e79a7";
	case RT_ID_ncclReduceScatter: return "#f28e2b";
	case RT_ID_ncclAllReduce: return "#59a14f";
	case RT_ID_ncclBroadcast: case RT_ID_ncclBcast: return "#b07aa1";
	case RT_ID_rt_exit: case RT_ID_rt_signal: return "#e15759";
	default: return s->pending ? "#e15759" : "#9c755f";
	}
}

int rt_vw_report_html(const struct rt_vw_trace *t, FILE *f)
{
	struct rp p = { .t = t };
	const double W = 1000, lane = 28, left = 90;
	double span_ns;
	int rc = -1, n = t->nranks;

	p.mem = calloc((size_t)n, sizeof(*p.mem));
	p.spans = calloc((size_t)n, sizeof(*p.spans));
	p.nspans = calloc((size_t)n, sizeof(int));
	p.points = calloc((size_t)n, sizeof(*p.points));
	p.npoints = calloc((size_t)n, sizeof(int));
	if (!p.mem || !p.spans || !p.nspans || !p.points || !p.npoints)
		goto out;
	for (int i = 0; i < n; i++) {
		p.spans[i] = calloc(MAX_SPANS, sizeof(struct span));
		p.points[i] = calloc(MAX_POINTS, sizeof(struct point));
		if (!p.spans[i] || !p.points[i])
			goto out;
	}
	p.t0 = trace_start(t);
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
	fputs("<h2>Findings</h2>\n<ol>", f);
	if (!t->nfindings)
		fputs("<li>none: every rank ended cleanly and collectives matched</li>", f);
	for (int i = 0; i < t->nfindings; i++) {
		fputs("<li>", f);
		rt_vw_html_esc(f, t->findings[i].text);
		fputs("</li>", f);
	}
	fputs("</ol>\n<h2>Ranks</h2>\n<table><tr><th>rank</th><th>host</th><th>devices used</th>"
	      "<th>expected</th><th>allocations</th><th>peak device memory</th><th>collectives</th>"
	      "<th>FSDP root forwards</th><th>end</th></tr>\n", f);
	for (int i = 0; i < n; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		uint64_t peak = 0, colls = 0;

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
			"</td><td>%" PRIu64 "</td><td>", r->meta.local_rank, r->allocs, peak, colls,
			r->fsdp_root_forwards);
		if (r->signo)
			fprintf(f, "signal %d", r->signo);
		else if (r->exit_seen && r->exit_status >= 0)
			fprintf(f, "exit %d", r->exit_status);
		else if (r->died_in[0])
			fprintf(f, "died in %s", r->died_in);
		else
			fputs(r->exit_seen ? "returned" : "no end recorded", f);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);

	/* timeline: one lane per rank, collectives, errors and the end */
	fprintf(f, "<h2>Timeline</h2>\n<div class=\"legend\"><span><i class=\"sw\" style=\"background:#4e79a7\"></i>AllGather</span>"
		"<span><i class=\"sw\" style=\"background:#f28e2b\"></i>ReduceScatter</span>"
		"<span><i class=\"sw\" style=\"background:#59a14f\"></i>AllReduce</span>"
		"<span><i class=\"sw\" style=\"background:#b07aa1\"></i>Broadcast</span>"
		"<span><i class=\"sw\" style=\"background:#e15759\"></i>exit, signal, never returned</span>"
		"<span><i class=\"sw\" style=\"background:#9c755f\"></i>failed call</span></div>\n"
		"<svg id=\"timeline\" width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n",
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
		if (p.mem)
			mem_free(&p.mem[i]);
		if (p.spans)
			free(p.spans[i]);
		if (p.points)
			free(p.points[i]);
	}
	free(p.mem);
	free(p.spans);
	free(p.nspans);
	free(p.points);
	free(p.npoints);
	return rc;
}
