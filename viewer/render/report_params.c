/* SPDX-License-Identifier: MIT */
/* report_params.c - the report's parameter placement grid: parameter x rank,
 * the latest placement as text in a coloured cell, grouped by module
 * (model.layers.0, lm_head) in collapsible sections so that thousands of
 * parameters stay readable; groups with something wrong start open.
 * A view of the model's rank.params (params.c); no script. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_int.h"
#include "escape.h"

#define MAX_ROWS 50000 /* parameters drawn; the rest are counted */
#define OPEN_ALL 60    /* up to this many parameters, every group starts open */

static const char *const place_colour[RT_P_COUNT] = { "#8cd17d", "#a0cbe8", "#d7d2cc",
						      "#ff9d9a", "#ffbe7d" };

/* The module a parameter belongs to: up to its first numeric component
 * (model.layers.0), else everything before its last component (lm_head). */
static size_t group_len(const char *name)
{
	const char *last = strrchr(name, '.'), *p = name;

	while (p && *p) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);

		if (len && strspn(p, "0123456789") == len && dot)
			return (size_t)(dot - name);
		p = dot ? dot + 1 : NULL;
	}
	return last ? (size_t)(last - name) : strlen(name);
}

/* Something a reader must see: meta, wrong device, or freed with no root forward. */
static bool wrong(const struct rt_vw_rank *r, const struct rt_vw_param *q)
{
	return q->place == RT_P_META || q->place == RT_P_WRONG_DEVICE ||
	       (q->place == RT_P_FREED && !r->fsdp_root_forwards);
}

static void cell(FILE *f, const struct rt_vw_param *q)
{
	char text[64];

	if (!q) {
		fputs("<td class=\"p\" title=\"not reported\">-</td>", f);
		return;
	}
	rt_vw_placement_str(&q->last, text, sizeof(text));
	fprintf(f, "<td class=\"p\" style=\"background:%s\" title=\"%s\">%s</td>",
		place_colour[q->place < RT_P_COUNT ? q->place : 0],
		q->place == RT_P_FREED ? "storage freed" : rt_vw_place_names[q->place], text);
}

/* One group: a <details> whose summary counts what is wrong in it. */
static void group(FILE *f, const struct rt_vw_trace *t, const struct rt_vw_names *nm, size_t from,
		  size_t to, bool open_all)
{
	size_t len = group_len(nm->v[from]), bad = 0;
	char prefix[80];

	for (size_t k = from; k < to; k++)
		for (int i = 0; i < t->nranks; i++) {
			const struct rt_vw_param *q = rt_vw_find_param(&t->ranks[i], nm->v[k]);

			bad += q && wrong(&t->ranks[i], q);
		}
	snprintf(prefix, sizeof(prefix), "%.*s", (int)len, nm->v[from]);
	fprintf(f, "<details%s><summary>", open_all || bad ? " open" : "");
	rt_esc_html_file(f, prefix);
	fprintf(f, " (%zu parameter%s%s", to - from, to - from == 1 ? "" : "s",
		bad ? ", " : "");
	if (bad)
		fprintf(f, "%zu placement%s wrong", bad, bad == 1 ? "" : "s");
	fputs(")</summary>\n<table class=\"heatmap\"><tr><th>parameter</th>", f);
	for (int i = 0; i < t->nranks; i++)
		fprintf(f, "<th>rank %d</th>", t->ranks[i].meta.rank);
	fputs("</tr>\n", f);
	for (size_t k = from; k < to; k++) {
		fputs("<tr><td>", f);
		rt_esc_html_file(f, nm->v[k]);
		fputs("</td>", f);
		for (int i = 0; i < t->nranks; i++)
			cell(f, rt_vw_find_param(&t->ranks[i], nm->v[k]));
		fputs("</tr>\n", f);
	}
	fputs("</table></details>\n", f);
}

void rt_vw_report_params(const struct rt_vw_trace *t, FILE *f)
{
	struct rt_vw_names nm = { 0 };
	size_t rows;

	fputs("<h2>Parameter placement</h2>\n<div id=\"params\">", f);
	if (rt_vw_param_names(t, NULL, &nm) != 0 || !nm.n) {
		fputs("<p>No parameter events in this trace: the PyTorch probe (or rt_param() in a C "
		      "workload) reports where each parameter lives.</p></div>\n", f);
		free(nm.v);
		return;
	}
	fputs("<p>The latest reported placement of each parameter (rows) on each rank (columns), "
	      "grouped by module; `ranktrace params` shows each report point. ", f);
	for (int k = 0; k < RT_P_COUNT; k++)
		fprintf(f, "<span><i class=\"sw\" style=\"background:%s\"></i>%s</span> ",
			place_colour[k], k == RT_P_FREED ? "storage freed" : rt_vw_place_names[k]);
	fputs("</p>\n", f);
	for (int i = 0; i < t->nranks; i++) {
		char line[200];

		if (rt_vw_placement_summary(&t->ranks[i], line, sizeof(line))) {
			fprintf(f, "<p>rank %d: ", t->ranks[i].meta.rank);
			rt_esc_html_file(f, line);
			fputs("</p>\n", f);
		}
	}
	rows = nm.n < MAX_ROWS ? nm.n : MAX_ROWS;
	for (size_t from = 0, to; from < rows; from = to) {
		size_t len = group_len(nm.v[from]);

		for (to = from + 1; to < rows && group_len(nm.v[to]) == len &&
				    !strncmp(nm.v[to], nm.v[from], len); to++)
			;
		group(f, t, &nm, from, to, nm.n <= OPEN_ALL);
	}
	if (nm.n > rows)
		fprintf(f, "<p>... and %zu more parameters (`ranktrace params` lists them all)</p>\n",
			nm.n - rows);
	fputs("</div>\n", f);
	free(nm.v);
}
