/* SPDX-License-Identifier: MIT */
/* diff_view.c - `ranktrace diff` as text and as JSON (schema
 * ranktrace.diff/1, docs/json.md): the comparison analyse/diff.c makes, the
 * decisive difference first: the probe's counts per rank, parameter
 * placement and shapes, each rank's collectives, allocations and ending;
 * then both verdicts and whether B shows A's failure signature. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "export.h"
#include "json.h"
#include "json_keys.h"
#include "view.h"

static void call_str(const struct rt_vw_call_sig *c, char *out, size_t n)
{
	snprintf(out, n, "%s #%u (count %llu)", rt_coll_names[c->kind], c->seq,
		 (unsigned long long)c->count);
}

static const char *verdict_line(const struct rt_vw_diff *d)
{
	if (!d->same_verdict)
		return "different";
	return d->a->verdict == RT_V_HEALTHY ? "both healthy" : "B shows the same failure signature as A";
}

static void print_kinds(FILE *f, const struct rt_vw_diff_kind *k, int nk, const char *what, size_t total)
{
	for (int i = 0; i < nk; i++)
		fprintf(f, "  B: %s %s%s, A: %s; %zu of %zu parameters alike\n", rt_vw_esc(k[i].example), what,
			k[i].b, k[i].a, k[i].n, total);
}

static void print_rank(FILE *f, const struct rt_vw_diff_rank *r)
{
	char x[96], y[96];

	if (!r->a || !r->b) {
		fprintf(f, "rank %d: only in %s\n", r->rank, r->a ? "A" : "B");
		return;
	}
	if (!r->calls_differ) {
		fprintf(f, "rank %d: same %u collectives", r->rank, r->same_calls);
	} else {
		if (r->next_a)
			call_str(r->next_a, x, sizeof(x));
		else
			snprintf(x, sizeof(x), "nothing more (%s)", r->end_a);
		if (r->next_b)
			call_str(r->next_b, y, sizeof(y));
		else
			snprintf(y, sizeof(y), "nothing more (%s)", r->end_b);
		fprintf(f, "rank %d: first divergence after %u identical collectives%s: A %s, B %s", r->rank,
			r->same_calls, r->init_broadcasts ? " (the init broadcasts)" : "", x, y);
	}
	fprintf(f, "; allocations A %llu, B %llu", (unsigned long long)r->a->allocs,
		(unsigned long long)r->b->allocs);
	if (strcmp(r->end_a, r->end_b))
		fprintf(f, "; end A %s, B %s", r->end_a, r->end_b);
	fprintf(f, "\n");
}

int rt_vw_diff_text(FILE *f, const struct rt_vw_diff *d)
{
	fprintf(f, "A %s: %s\nB %s: %s\n\n", rt_vw_esc(d->a->dir), rt_verdicts[d->a->verdict].word,
		rt_vw_esc(d->b->dir), rt_verdicts[d->b->verdict].word);
	for (int c = 0; c < RT_VW_DC_COUNT; c++) {
		char pa[200], pb[200];

		if (!d->count_differs[c])
			continue;
		rt_vw_diff_count_phrase(d, c, 0, pa, sizeof(pa));
		rt_vw_diff_count_phrase(d, c, 1, pb, sizeof(pb));
		fprintf(f, "%s: A %s, B %s\n", rt_vw_diff_count_labels[c], pa, pb);
	}
	if (d->nparams)
		fprintf(f, "parameter placement and shapes (latest report)%s\n",
			d->nparams_differ ? ":" : ": the same in A and B");
	print_kinds(f, d->place_kinds, d->nplace_kinds, "", d->nparams);
	if (d->place_other)
		fprintf(f, "  and %zu more parameters placed differently\n", d->place_other);
	print_kinds(f, d->shape_kinds, d->nshape_kinds, "shape ", d->nparams);
	if (d->shape_other)
		fprintf(f, "  and %zu more parameters shaped differently\n", d->shape_other);
	for (int i = 0; i < d->nranks; i++)
		print_rank(f, &d->ranks[i]);
	fprintf(f, "\nverdicts: A %s, B %s: %s\n", rt_verdicts[d->a->verdict].word,
		rt_verdicts[d->b->verdict].word, verdict_line(d));
	return ferror(f) ? -EIO : 0;
}

/* ---- JSON: schema ranktrace.diff/1 ---- */

/* Kinds of difference (placement or shapes), then how many more. */
static void json_kinds(struct rt_json *w, const char *key, const char *more,
		       const struct rt_vw_diff_kind *k, int nk, size_t other)
{
	rt_json_arr(w, key);
	for (int i = 0; i < nk; i++) {
		rt_json_obj(w, NULL);
		rt_json_str(w, RT_JK(example), k[i].example);
		rt_json_str(w, RT_JK(a), k[i].a);
		rt_json_str(w, RT_JK(b), k[i].b);
		rt_json_uint(w, RT_JK(params), k[i].n);
		rt_json_end(w);
	}
	rt_json_end(w);
	rt_json_uint(w, more, other);
}

/* One parameter's phrases in one trace. */
static void json_side(struct rt_json *w, const char *key, const char *place, const char *shape)
{
	rt_json_obj(w, key);
	rt_json_str(w, RT_JK(placement), place);
	rt_json_str(w, RT_JK(shape), shape);
	rt_json_end(w);
}

static void json_params(struct rt_json *w, const struct rt_vw_diff *d)
{
	rt_json_brk(w, 1);
	rt_json_obj(w, RT_JK(params));
	rt_json_str(w, RT_JK(at), "last");
	rt_json_uint(w, RT_JK(compared), d->nparams);
	rt_json_uint(w, RT_JK(placement_differ), d->placement_differ);
	rt_json_uint(w, RT_JK(shape_differ), d->shape_differ);
	json_kinds(w, RT_JK(placement), RT_JK(placement_more), d->place_kinds, d->nplace_kinds,
		   d->place_other);
	json_kinds(w, RT_JK(shapes), RT_JK(shapes_more), d->shape_kinds, d->nshape_kinds, d->shape_other);
	rt_json_arr(w, RT_JK(differing));
	rt_json_lines(w, 2, false);
	for (size_t q = 0; q < d->nparams_differ; q++) {
		const struct rt_vw_diff_param *p = &d->params[q];

		rt_json_obj(w, NULL);
		rt_json_str(w, RT_JK(name), p->name);
		rt_json_bool(w, RT_JK(placement), p->placement);
		rt_json_bool(w, RT_JK(shape), p->shape);
		json_side(w, RT_JK(a), p->place_a, p->shape_a);
		json_side(w, RT_JK(b), p->place_b, p->shape_b);
		rt_json_end(w);
	}
	rt_json_end(w);
	rt_json_end(w);
}

/* A side's first unlike call, or null when it called nothing more. */
static void json_call(struct rt_json *w, const char *key, const struct rt_vw_call_sig *c)
{
	if (!c) {
		rt_json_null(w, key);
		return;
	}
	rt_json_obj(w, key);
	rt_json_str(w, RT_JK(kind), rt_coll_names[c->kind]);
	rt_json_uint(w, RT_JK(seq), c->seq);
	rt_json_uint(w, RT_JK(count), c->count);
	rt_json_uint(w, RT_JK(dtype), c->dtype);
	rt_json_uint(w, RT_JK(op), c->op);
	rt_json_int(w, RT_JK(root), c->root);
	rt_json_end(w);
}

/* {"a": A's, "b": B's}, null for a side without the rank. */
static void json_pair_u(struct rt_json *w, const char *key, const struct rt_vw_diff_rank *r,
			uint64_t a, uint64_t b)
{
	rt_json_obj(w, key);
	r->a ? rt_json_uint(w, RT_JK(a), a) : rt_json_null(w, RT_JK(a));
	r->b ? rt_json_uint(w, RT_JK(b), b) : rt_json_null(w, RT_JK(b));
	rt_json_end(w);
}

static void json_rank(struct rt_json *w, const struct rt_vw_diff_rank *r)
{
	rt_json_obj(w, NULL);
	rt_json_int(w, RT_JK(rank), r->rank);
	rt_json_str(w, RT_JK(in), r->a && r->b ? "both" : r->a ? "a" : "b");
	rt_json_obj(w, RT_JK(counts));
	for (int c = 0; c < RT_VW_DC_COUNT; c++)
		json_pair_u(w, rt_vw_diff_count_ids[c], r, r->count[c][0], r->count[c][1]);
	rt_json_end(w);
	if (r->a && r->b) {
		rt_json_obj(w, RT_JK(collectives));
		rt_json_uint(w, RT_JK(identical), r->same_calls);
		rt_json_bool(w, RT_JK(diverged), r->calls_differ);
		rt_json_bool(w, RT_JK(init_broadcasts), r->init_broadcasts);
		json_call(w, RT_JK(a), r->next_a);
		json_call(w, RT_JK(b), r->next_b);
		rt_json_end(w);
	} else {
		rt_json_null(w, RT_JK(collectives));
	}
	json_pair_u(w, RT_JK(allocations), r, r->a ? r->a->allocs : 0, r->b ? r->b->allocs : 0);
	rt_json_obj(w, RT_JK(end));
	rt_json_str(w, RT_JK(a), r->a ? r->end_a : NULL);
	rt_json_str(w, RT_JK(b), r->b ? r->end_b : NULL);
	rt_json_end(w);
	rt_json_end(w);
}

/* {"dir": ..., "verdict": ...} of one trace. */
static void json_trace(struct rt_json *w, const char *key, const struct rt_vw_trace *t)
{
	rt_json_obj(w, key);
	rt_json_str(w, RT_JK(dir), t->dir);
	rt_json_str(w, RT_JK(verdict), rt_verdicts[t->verdict].word);
	rt_json_end(w);
}

int rt_vw_diff_json(FILE *f, const struct rt_vw_diff *d)
{
	struct rt_json w;

	rt_json_init(&w, f, false);
	rt_json_obj(&w, NULL);
	rt_json_str(&w, RT_JK(schema), RT_JSCHEMA(diff));
	json_trace(&w, RT_JK(a), d->a);
	json_trace(&w, RT_JK(b), d->b);
	rt_json_brk(&w, 1);
	rt_json_str(&w, RT_JK(decisive), rt_vw_diff_section_id(d->decisive));
	rt_json_arr(&w, RT_JK(counts));
	for (int c = 0; c < RT_VW_DC_COUNT; c++) {
		rt_json_obj(&w, NULL);
		rt_json_str(&w, RT_JK(id), rt_vw_diff_count_ids[c]);
		rt_json_str(&w, RT_JK(label), rt_vw_diff_count_labels[c]);
		rt_json_bool(&w, RT_JK(differ), d->count_differs[c]);
		rt_json_end(&w);
	}
	rt_json_end(&w);
	json_params(&w, d);
	rt_json_brk(&w, 1);
	rt_json_arr(&w, RT_JK(ranks));
	rt_json_lines(&w, 2, false);
	for (int i = 0; i < d->nranks; i++)
		json_rank(&w, &d->ranks[i]);
	rt_json_end(&w);
	rt_json_brk(&w, 1);
	rt_json_obj(&w, RT_JK(verdicts));
	rt_json_bool(&w, RT_JK(same), d->same_verdict);
	rt_json_str(&w, RT_JK(text), verdict_line(d));
	rt_json_end(&w);
	rt_json_end(&w);
	return rt_json_finish(&w);
}
