/* SPDX-License-Identifier: MIT */
/* cmd_diff.c - `ranktrace diff A B [--json]`: prints the comparison the
 * viewer makes (viewer/analyse/diff.c), the decisive difference first: the probe's
 * counts per rank, parameter placement and shapes, each rank's collectives,
 * allocations and ending; then both verdicts and whether B shows A's failure
 * signature. JSON: schema ranktrace.diff/1 (docs/json.md). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diff.h"

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

static void print_kinds(const struct rt_vw_diff_kind *k, int nk, const char *what, size_t total)
{
	for (int i = 0; i < nk; i++)
		printf("  B: %s %s%s, A: %s; %zu of %zu parameters alike\n", rt_vw_esc(k[i].example), what, k[i].b,
		       k[i].a, k[i].n, total);
}

static void print_rank(const struct rt_vw_diff_rank *r)
{
	char x[96], y[96];

	if (!r->a || !r->b) {
		printf("rank %d: only in %s\n", r->rank, r->a ? "A" : "B");
		return;
	}
	if (!r->calls_differ) {
		printf("rank %d: same %u collectives", r->rank, r->same_calls);
	} else {
		if (r->next_a)
			call_str(r->next_a, x, sizeof(x));
		else
			snprintf(x, sizeof(x), "nothing more (%s)", r->end_a);
		if (r->next_b)
			call_str(r->next_b, y, sizeof(y));
		else
			snprintf(y, sizeof(y), "nothing more (%s)", r->end_b);
		printf("rank %d: first divergence after %u identical collectives%s: A %s, B %s", r->rank,
		       r->same_calls, r->init_broadcasts ? " (the init broadcasts)" : "", x, y);
	}
	printf("; allocations A %llu, B %llu", (unsigned long long)r->a->allocs,
	       (unsigned long long)r->b->allocs);
	if (strcmp(r->end_a, r->end_b))
		printf("; end A %s, B %s", r->end_a, r->end_b);
	printf("\n");
}

static void print_text(const struct rt_vw_diff *d)
{
	printf("A %s: %s\nB %s: %s\n\n", rt_vw_esc(d->a->dir), rt_vw_verdict_names[d->a->verdict],
	       rt_vw_esc(d->b->dir),
	       rt_vw_verdict_names[d->b->verdict]);
	for (int c = 0; c < RT_VW_DC_COUNT; c++) {
		char pa[200], pb[200];

		if (!d->count_differs[c])
			continue;
		rt_vw_diff_count_phrase(d, c, 0, pa, sizeof(pa));
		rt_vw_diff_count_phrase(d, c, 1, pb, sizeof(pb));
		printf("%s: A %s, B %s\n", rt_vw_diff_count_labels[c], pa, pb);
	}
	if (d->nparams)
		printf("parameter placement and shapes (latest report)%s\n",
		       d->nparams_differ ? ":" : ": the same in A and B");
	print_kinds(d->place_kinds, d->nplace_kinds, "", d->nparams);
	if (d->place_other)
		printf("  and %zu more parameters placed differently\n", d->place_other);
	print_kinds(d->shape_kinds, d->nshape_kinds, "shape ", d->nparams);
	if (d->shape_other)
		printf("  and %zu more parameters shaped differently\n", d->shape_other);
	for (int i = 0; i < d->nranks; i++)
		print_rank(&d->ranks[i]);
	printf("\nverdicts: A %s, B %s: %s\n", rt_vw_verdict_names[d->a->verdict],
	       rt_vw_verdict_names[d->b->verdict], verdict_line(d));
}

/* ---- JSON: schema ranktrace.diff/1 ---- */

static void json_kinds(const char *key, const struct rt_vw_diff_kind *k, int nk, size_t other)
{
	printf(", \"%s\": [", key);
	for (int i = 0; i < nk; i++) {
		printf("%s{\"example\": ", i ? ", " : "");
		rt_cli_json_str(stdout, k[i].example);
		printf(", \"a\": ");
		rt_cli_json_str(stdout, k[i].a);
		printf(", \"b\": ");
		rt_cli_json_str(stdout, k[i].b);
		printf(", \"params\": %zu}", k[i].n);
	}
	printf("], \"%s_more\": %zu", key, other);
}

static void json_params(const struct rt_vw_diff *d)
{
	printf(",\n \"params\": {\"at\": \"last\", \"compared\": %zu, \"placement_differ\": %zu, "
	       "\"shape_differ\": %zu", d->nparams, d->placement_differ, d->shape_differ);
	json_kinds("placement", d->place_kinds, d->nplace_kinds, d->place_other);
	json_kinds("shapes", d->shape_kinds, d->nshape_kinds, d->shape_other);
	printf(", \"differing\": [");
	for (size_t q = 0; q < d->nparams_differ; q++) {
		const struct rt_vw_diff_param *p = &d->params[q];

		printf("%s\n  {\"name\": ", q ? "," : "");
		rt_cli_json_str(stdout, p->name);
		printf(", \"placement\": %s, \"shape\": %s, \"a\": {\"placement\": ",
		       p->placement ? "true" : "false", p->shape ? "true" : "false");
		rt_cli_json_str(stdout, p->place_a);
		printf(", \"shape\": ");
		rt_cli_json_str(stdout, p->shape_a);
		printf("}, \"b\": {\"placement\": ");
		rt_cli_json_str(stdout, p->place_b);
		printf(", \"shape\": ");
		rt_cli_json_str(stdout, p->shape_b);
		printf("}}");
	}
	printf("]}");
}

static void json_call(const struct rt_vw_call_sig *c)
{
	if (!c) {
		printf("null");
		return;
	}
	printf("{\"kind\": \"%s\", \"seq\": %u, \"count\": %llu, \"dtype\": %u, \"op\": %u, "
	       "\"root\": %d}", rt_coll_names[c->kind], c->seq, (unsigned long long)c->count, c->dtype,
	       c->op, c->root);
}

static void json_side_str(bool present, const char *s)
{
	if (present)
		rt_cli_json_str(stdout, s);
	else
		printf("null");
}

static void json_rank(const struct rt_vw_diff_rank *r)
{
	printf("{\"rank\": %d, \"in\": \"%s\", \"counts\": {", r->rank,
	       r->a && r->b ? "both" : r->a ? "a" : "b");
	for (int c = 0; c < RT_VW_DC_COUNT; c++) {
		printf("%s\"%s\": {\"a\": ", c ? ", " : "", rt_vw_diff_count_ids[c]);
		r->a ? printf("%llu", (unsigned long long)r->count[c][0]) : printf("null");
		printf(", \"b\": ");
		r->b ? printf("%llu", (unsigned long long)r->count[c][1]) : printf("null");
		printf("}");
	}
	printf("}, \"collectives\": ");
	if (r->a && r->b) {
		printf("{\"identical\": %u, \"diverged\": %s, \"init_broadcasts\": %s, \"a\": ",
		       r->same_calls, r->calls_differ ? "true" : "false",
		       r->init_broadcasts ? "true" : "false");
		json_call(r->next_a);
		printf(", \"b\": ");
		json_call(r->next_b);
		printf("}");
	} else {
		printf("null");
	}
	printf(", \"allocations\": {\"a\": ");
	r->a ? printf("%llu", (unsigned long long)r->a->allocs) : printf("null");
	printf(", \"b\": ");
	r->b ? printf("%llu", (unsigned long long)r->b->allocs) : printf("null");
	printf("}, \"end\": {\"a\": ");
	json_side_str(r->a, r->end_a);
	printf(", \"b\": ");
	json_side_str(r->b, r->end_b);
	printf("}}");
}

static void print_json(const struct rt_vw_diff *d)
{
	const char *dec = rt_vw_diff_section_id(d->decisive);

	printf("{\"schema\": \"ranktrace.diff/1\", \"a\": {\"dir\": ");
	rt_cli_json_str(stdout, d->a->dir);
	printf(", \"verdict\": \"%s\"}, \"b\": {\"dir\": ", rt_vw_verdict_names[d->a->verdict]);
	rt_cli_json_str(stdout, d->b->dir);
	printf(", \"verdict\": \"%s\"},\n \"decisive\": ", rt_vw_verdict_names[d->b->verdict]);
	json_side_str(dec != NULL, dec ? dec : "");
	printf(", \"counts\": [");
	for (int c = 0; c < RT_VW_DC_COUNT; c++)
		printf("%s{\"id\": \"%s\", \"label\": \"%s\", \"differ\": %s}", c ? ", " : "",
		       rt_vw_diff_count_ids[c], rt_vw_diff_count_labels[c],
		       d->count_differs[c] ? "true" : "false");
	printf("]");
	json_params(d);
	printf(",\n \"ranks\": [");
	for (int i = 0; i < d->nranks; i++) {
		printf("%s\n  ", i ? "," : "");
		json_rank(&d->ranks[i]);
	}
	printf("],\n \"verdicts\": {\"same\": %s, \"text\": \"%s\"}}\n",
	       d->same_verdict ? "true" : "false", verdict_line(d));
}

static const char *const usage = "usage: ranktrace diff A B [--json]\n";

static void help(void)
{
	printf("%s\nCompares two traces, the decisive difference first: the probe's counts per\n"
	       "rank where they differ (FSDP root forwards, calls of the unwrapped module); where\n"
	       "each parameter lives and its shape (latest report); then rank by rank where the\n"
	       "sequence of collectives first diverges, allocation counts and how each rank\n"
	       "ended; then both verdicts and whether B shows A's failure signature.\n\n"
	       "  --json   schema ranktrace.diff/1 (docs/json.md)\n\n"
	       "Exit status: 0 same verdict, 1 different verdicts, 2 a usage error, 3\n"
	       "unreadable input.\n", usage);
}

int rt_cli_cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rt_vw_trace *a, *b;
	struct rt_vw_diff d;
	bool json = false;
	int c, rc;

	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'h': help(); return 0;
		default: fputs(usage, stderr); return EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "ranktrace diff: expected two trace directories, A and B\n%s", usage);
		return EXIT_USAGE;
	}
	if (rt_cli_check_dir("diff", argv[optind]) || rt_cli_check_dir("diff", argv[optind + 1]))
		return EXIT_USAGE;
	a = rt_cli_load("diff", argv[optind]);
	b = a ? rt_cli_load("diff", argv[optind + 1]) : NULL;
	if (!a || !b) {
		rt_vw_free(a);
		return RT_VW_ERR_CORRUPT;
	}
	if (rt_vw_diff(a, b, &d) != 0) {
		fprintf(stderr, "ranktrace diff: out of memory\n");
		rt_vw_free(a);
		rt_vw_free(b);
		return 1;
	}
	if (json)
		print_json(&d);
	else
		print_text(&d);
	rc = d.same_verdict ? 0 : 1;
	rt_vw_diff_free(&d);
	rt_vw_free(a);
	rt_vw_free(b);
	return rc;
}
