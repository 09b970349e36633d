/* SPDX-License-Identifier: MIT */
/* view.h - what `view`, `params` and `diff` print, as text and as JSON,
 * and the one report model they and the exports (export.h: HTML, Perfetto)
 * render from.
 *
 * The report (report.c) is made once per output from a loaded trace: the
 * ranks shown with what every output says of them (devices, peak, how it
 * ended), the findings said once per group (diagnosis.c), and what to do
 * next. Text (view_text.c), JSON (view_json.c), the HTML report and the
 * Perfetto export read it; none keeps a table of its own. JSON is written
 * through util/'s writer with format/json_keys.def's keys (docs/json.md).
 *
 * Each printer writes to f and returns 0, -EIO on a write error (f's error
 * flag), or for JSON -EINVAL when the writer was misused (a bug: the CLI
 * says so rather than exit 0 after printing broken JSON). */
#ifndef RT_VW_VIEW_H
#define RT_VW_VIEW_H

#include <stdbool.h>
#include <stdio.h>

#include "diff.h"
#include "model.h"

/* One rank as every output shows it. */
struct rt_vw_report_rank {
	const struct rt_vw_rank *r;
	char devices[64]; /* "0,1", "-" when none */
	uint64_t peak;    /* the largest peak of its devices, bytes */
	char peak_h[32];  /* the same as every output writes bytes ("3.1 KiB") */
	uint64_t colls;   /* collectives of every kind */
	char end[160];    /* how it ended (rt_vw_rank_end) */
	char incomplete[400]; /* why its trace is not complete, "" when it is */
};

struct rt_vw_report {
	const struct rt_vw_trace *t;
	int only;                        /* --rank N, or -1 */
	struct rt_vw_report_rank *ranks; /* the ranks shown, in the trace's order */
	int nranks;
	/* the findings about the ranks shown, most important first, the same
	 * saying about several ranks once (notes included: level says) */
	struct rt_vw_diag *diag;
	int ndiag;
	int notes;                       /* findings that are notes (view hides them) */
	char why[600];                   /* why the verdict would be a guess, "" when not */
	char laggard[600];               /* a hang's laggard analysis, "" when none */
};

/* The report of t for `--rank only` (-1: every rank). 0, or -1 out of
 * memory (nothing to free then). */
int rt_vw_report_make(const struct rt_vw_trace *t, int only, struct rt_vw_report *rp);
void rt_vw_report_free(struct rt_vw_report *rp);
/* The group "what to do next" goes under: the first group (notes counted
 * only when notes) whose finding has advice; -1 when none. */
int rt_vw_report_advice(const struct rt_vw_report *rp, bool notes);

/* `view`: the table of ranks, parameters, the device section and the
 * findings (all: the notes too). */
int rt_vw_view_text(FILE *f, const struct rt_vw_report *rp, bool all);
/* `view --json`: schema ranktrace.view/1 (docs/json.md). */
int rt_vw_view_json(FILE *f, const struct rt_vw_report *rp);

/* `verdict`'s why, for stderr: what an inconclusive verdict lacks, a hang's
 * findings, the findings that decided a failure and how each rank ended,
 * ranks that ended alike said once; lines "ranktrace verdict: ...". */
void rt_vw_verdict_why(FILE *f, const struct rt_vw_report *rp);

/* Each rank's placement summary (rt_vw_placement_summary), ranks with the
 * same line collapsed ("ranks 0-3: all 5 parameters on cuda:N"), each line
 * after indent. */
void rt_vw_placement_text(FILE *f, const struct rt_vw_trace *t, int only, const char *indent);
/* only < 0 keeps every rank, else rank `only`. */
bool rt_vw_want_rank(const struct rt_vw_rank *r, int only);
/* Ranks that read the same. texts: one string per rank, stride bytes apart.
 * From rank i on, the kept ranks whose text equals rank i's: marked in done,
 * listed ("0-3,5") in list; returns how many, 0 when rank i is done already
 * or not kept. ranks: scratch room for t->nranks ints. */
int rt_vw_same_text(const struct rt_vw_trace *t, int only, const char *texts, size_t stride,
		    int i, bool *done, int *ranks, char *list, size_t len);

/* `params`: parameter x rank at report point at (RT_VW_AT_LAST: the
 * latest), the names in nm. Text groups the ranks that agree; JSON (schema
 * ranktrace.params/1) lists every rank and every report point. */
int rt_vw_params_text(FILE *f, const struct rt_vw_trace *t, const struct rt_vw_names *nm, int at,
		      int only);
int rt_vw_params_json(FILE *f, const struct rt_vw_trace *t, const struct rt_vw_names *nm, int at,
		      int only);

/* `diff`: the comparison (diff.c), the decisive difference first; JSON:
 * schema ranktrace.diff/1. */
int rt_vw_diff_text(FILE *f, const struct rt_vw_diff *d);
int rt_vw_diff_json(FILE *f, const struct rt_vw_diff *d);

#endif
