/* SPDX-License-Identifier: MIT */
/* cmd_params.c - `ranktrace params`: parameter x rank, where each parameter
 * lives at a report point (FSDP wrap, first forward, last report), its size
 * and dtype, the allocation its data pointer falls in, and what changed.
 *
 * A view of the model (model.h: struct rt_vw_param); text groups the ranks
 * that agree ("cuda:N" = each rank on its own device, N its LOCAL_RANK), JSON
 * (schema ranktrace.params/1, docs/json.md) lists every rank. */
#include <ctype.h>
#include <fnmatch.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define AT_LAST RT_VW_AT_LAST /* --at last: the latest report */

static int name_width = 40; /* the longest parameter name shown (text output) */

static const char *const usage =
	"usage: ranktrace params DIR [--rank N] [--param GLOB] [--at wrap|first-forward|last]\n"
	"                        [--json]\n";

static int expected_device(const struct rt_vw_rank *r)
{
	return r->meta.local_rank >= 0 ? r->meta.local_rank : r->meta.rank;
}

/* Placement text; with norm, a rank's own device reads "cuda:N". */
static void place_text(const struct rt_vw_rank *r, const struct rt_vw_placement *pl, bool norm,
		       char *out, size_t n)
{
	if (norm && pl->seen && pl->place == RT_P_CUDA && pl->device == expected_device(r))
		snprintf(out, n, "cuda:N");
	else
		rt_vw_placement_str(pl, out, n);
}

static const char *call_name(unsigned id)
{
	return id < RT_ID_COUNT && id ? rt_events[id].name : "?";
}

/* One rank's cell, tab-separated: where, elements, shape, dtype, the
 * parameter's own bytes, the bytes of the storage it lies in (under FSDP the
 * flat shard), the allocation its data pointer falls in, the change. */
static void cell(const struct rt_vw_rank *r, const struct rt_vw_param *p, int at, bool norm,
		 char *out, size_t n)
{
	const struct rt_vw_placement *from = NULL, *pl;
	char where[64], bytes[32] = "?", storage[32], alloc[96] = "-", change[160] = "", a[64], b[64],
	     sz[32], shape[96];
	int from_at = 0;
	int64_t own;

	pl = p ? rt_vw_param_at(p, at, &from, &from_at) : NULL;
	if (!pl || !pl->seen) {
		snprintf(out, n, "not reported\t\t\t\t\t\t-\t");
		return;
	}
	place_text(r, pl, norm, where, sizeof(where));
	own = rt_vw_param_bytes(pl);
	if (own >= 0)
		rt_cli_human_bytes(bytes, sizeof(bytes), (uint64_t)own);
	rt_cli_human_bytes(storage, sizeof(storage), pl->bytes);
	rt_vw_shape_str(&pl->shape, shape, sizeof(shape));
	if (pl->in_alloc) {
		rt_cli_human_bytes(sz, sizeof(sz), pl->alloc_size);
		if (pl->alloc_dev >= 0)
			snprintf(a, sizeof(a), norm && pl->alloc_dev == expected_device(r) ? "cuda:N"
						: "cuda:%d", pl->alloc_dev);
		else
			snprintf(a, sizeof(a), "host");
		snprintf(alloc, sizeof(alloc), "%s %s on %s", call_name(pl->alloc_call), sz, a);
	}
	if (from) {
		place_text(r, from, norm, b, sizeof(b));
		snprintf(change, sizeof(change), "%s -> %s at %s", b, where,
			 rt_vw_param_point_names[from_at]);
	}
	snprintf(out, n, "%s\t%llu\t%s\t%s\t%s\t%s\t%s\t%s", where, (unsigned long long)pl->numel, shape,
		 rt_vw_dtype_name(pl->dtype), bytes, storage, alloc, change);
}

/* The next tab-separated field of *s ("" at the end); empty fields kept. */
static const char *field(char **s)
{
	char *f = *s, *tab = f ? strchr(f, '\t') : NULL;

	if (!f)
		return "";
	if (tab)
		*tab = '\0';
	*s = tab ? tab + 1 : NULL;
	return f;
}

static int shape_width = 5; /* the longest shape shown (text output) */

static void print_row(const char *name, const char *list, char *c)
{
	const char *f[8];

	for (int i = 0; i < 8; i++)
		f[i] = field(&c);
	printf("%-*s %-7s %-14s %8s %-*s %-8s %8s %8s  %-28s %s\n", name_width, rt_vw_esc(name), list, f[0], f[1],
	       shape_width, f[2], f[3], f[4], f[5], f[6], f[7]);
}

/* A parameter's row(s): ranks with the same cell share one. */
static void print_param_text(const struct rt_vw_trace *t, const char *name, int at, int only)
{
	char (*cells)[480] = calloc((size_t)t->nranks, sizeof(*cells));
	int *ranks = calloc((size_t)t->nranks, sizeof(int));
	bool *done = calloc((size_t)t->nranks, sizeof(bool)), first = true;

	for (int i = 0; cells && ranks && done && i < t->nranks; i++)
		cell(&t->ranks[i], rt_vw_find_param(&t->ranks[i], name), at, only < 0, cells[i],
		     sizeof(cells[i]));
	for (int i = 0; cells && ranks && done && i < t->nranks; i++) {
		char list[256];

		if (!rt_cli_same_text(t, only, cells[0], sizeof(cells[0]), i, done, ranks, list,
				      sizeof(list)))
			continue;
		print_row(first ? name : "", list, cells[i]);
		first = false;
	}
	free(cells);
	free(ranks);
	free(done);
}

static bool on_cuda(const struct rt_vw_param *p)
{
	const struct rt_vw_placement *v[RT_PP_COUNT + 2] = { &p->last, &p->before };

	for (int k = 0; k < RT_PP_COUNT; k++)
		v[k + 2] = &p->at[k];
	for (int i = 0; i < RT_PP_COUNT + 2; i++)
		if (v[i]->seen && (v[i]->place == RT_P_CUDA || v[i]->place == RT_P_WRONG_DEVICE))
			return true;
	return false;
}

/* Column widths: the longest name and shape shown. CUDA used: a parameter
 * reported on cuda at some point, or a device the rank touched. */
static bool measure(const struct rt_vw_trace *t, const struct rt_vw_names *nm, int at, int only)
{
	bool cuda = false;

	name_width = 9;
	shape_width = 5;
	for (size_t i = 0; i < nm->n; i++)
		if ((int)strlen(nm->v[i]) > name_width)
			name_width = strlen(nm->v[i]) > 64 ? 64 : (int)strlen(nm->v[i]);
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		if (!rt_cli_want_rank(r, only))
			continue;
		cuda |= r->devices_used != 0;
		for (uint32_t q = 0; q < r->nparams; q++) {
			const struct rt_vw_placement *from, *pl;
			char shape[96];
			int from_at;

			cuda |= on_cuda(&r->params[q]);
			pl = rt_vw_param_at(&r->params[q], at, &from, &from_at);
			if (pl->seen && rt_vw_shape_str(&pl->shape, shape, sizeof(shape)) > shape_width)
				shape_width = (int)strlen(shape) > 40 ? 40 : (int)strlen(shape);
		}
	}
	return cuda;
}

static void print_text(const struct rt_vw_trace *t, const struct rt_vw_names *nm, int at, int only)
{
	bool cuda;

	printf("trace %s: %d rank%s, %zu parameter%s; placement at %s\n\n", rt_vw_esc(t->dir), t->nranks,
	       t->nranks == 1 ? "" : "s", nm->n, nm->n == 1 ? "" : "s",
	       at == AT_LAST ? "the last report" : rt_vw_param_point_names[at]);
	rt_cli_print_placement(t, only, "");
	if (!nm->n) {
		printf("\nno parameter reported (the PyTorch probe reports them under `ranktrace run`;\n"
		       "C programs call rt_param() from ranktrace.h)\n");
		return;
	}
	cuda = measure(t, nm, at, only);
	printf("\n%-*s %-7s %-14s %8s %-*s %-8s %8s %8s  %-28s %s\n", name_width, "parameter", "ranks",
	       "where", "elements", shape_width, "shape", "dtype", "bytes", "storage",
	       "allocation (data pointer in)", "change");
	for (size_t i = 0; i < nm->n; i++)
		print_param_text(t, nm->v[i], at, only);
	if (only < 0 && cuda)
		printf("\ncuda:N: each rank on its own device (N = its LOCAL_RANK)\n");
}

static void json_placement(const struct rt_vw_placement *pl)
{
	char label[64];
	int64_t own = rt_vw_param_bytes(pl);

	rt_vw_placement_str(pl, label, sizeof(label));
	printf("{\"where\": \"%s\", \"label\": ", rt_vw_place_names[pl->place]);
	rt_cli_json_str(stdout, label);
	printf(", \"device\": %d, \"dtype\": \"%s\", \"numel\": %llu, \"bytes\": %llu, "
	       "\"ptr\": \"0x%llx\", \"allocation\": ", pl->place == RT_P_CUDA ||
	       pl->place == RT_P_WRONG_DEVICE ? pl->device : -1, rt_vw_dtype_name(pl->dtype),
	       (unsigned long long)pl->numel, (unsigned long long)pl->bytes,
	       (unsigned long long)pl->ptr);
	if (pl->in_alloc)
		printf("{\"device\": %d, \"base\": \"0x%llx\", \"size\": %llu, \"call\": \"%s\"}",
		       pl->alloc_dev, (unsigned long long)pl->alloc_base,
		       (unsigned long long)pl->alloc_size, call_name(pl->alloc_call));
	else
		printf("null");
	printf(", \"shape\": ");
	if (pl->shape.known) {
		printf("[");
		for (int i = 0; i < pl->shape.ndim && i < RT_VW_MAX_DIMS; i++)
			printf("%s%u", i ? ", " : "", pl->shape.dim[i]);
		printf("], \"ndim\": %u", pl->shape.ndim);
	} else {
		printf("null, \"ndim\": null");
	}
	printf(", \"param_bytes\": ");
	own >= 0 ? printf("%lld", (long long)own) : printf("null");
	printf("}");
}

/* One rank's record of a parameter: the shown placement, every point, the change. */
static void json_rank(const struct rt_vw_rank *r, const struct rt_vw_param *p, int at)
{
	const struct rt_vw_placement *from = NULL, *pl;
	int from_at = 0;
	char a[64], b[64];

	pl = rt_vw_param_at(p, at, &from, &from_at);
	printf("{\"rank\": %d, \"reported\": %s", r->meta.rank, pl->seen ? "true" : "false");
	if (pl->seen) {
		printf(", \"placement\": ");
		json_placement(pl);
	}
	printf(", \"points\": {");
	for (int k = 0; k < RT_PP_COUNT; k++) {
		printf("%s\"%s\": ", k ? ", " : "", rt_vw_param_point_names[k]);
		if (p->at[k].seen)
			json_placement(&p->at[k]);
		else
			printf("null");
	}
	printf("}, \"changed\": ");
	if (from && pl->seen) {
		rt_vw_placement_str(from, a, sizeof(a));
		rt_vw_placement_str(pl, b, sizeof(b));
		printf("{\"from\": ");
		rt_cli_json_str(stdout, a);
		printf(", \"to\": ");
		rt_cli_json_str(stdout, b);
		printf(", \"at\": \"%s\"}", rt_vw_param_point_names[from_at]);
	} else {
		printf("null");
	}
	printf("}");
}

/* Schema ranktrace.params/1 (docs/json.md). */
static void print_json(const struct rt_vw_trace *t, const struct rt_vw_names *nm, int at, int only)
{
	printf("{\"schema\": \"ranktrace.params/1\", \"dir\": ");
	rt_cli_json_str(stdout, t->dir);
	printf(", \"at\": \"%s\", \"ranks\": [",
	       at == AT_LAST ? "last" : rt_vw_param_point_names[at]);
	for (int i = 0, c = 0; i < t->nranks; i++) {
		char text[200];
		bool wrong;

		if (!rt_cli_want_rank(&t->ranks[i], only))
			continue;
		wrong = rt_vw_placement_summary(&t->ranks[i], text, sizeof(text));
		printf("%s\n  {\"rank\": %d, \"parameters\": %u, \"wrong\": %s, \"summary\": ",
		       c++ ? "," : "", t->ranks[i].meta.rank, t->ranks[i].nparams,
		       wrong ? "true" : "false");
		rt_cli_json_str(stdout, text);
		printf("}");
	}
	printf("\n], \"params\": [");
	for (size_t q = 0; q < nm->n; q++) {
		printf("%s\n  {\"name\": ", q ? "," : "");
		rt_cli_json_str(stdout, nm->v[q]);
		printf(", \"ranks\": [");
		for (int i = 0, c = 0; i < t->nranks; i++) {
			const struct rt_vw_param *p = rt_vw_find_param(&t->ranks[i], nm->v[q]);

			if (!rt_cli_want_rank(&t->ranks[i], only))
				continue;
			printf("%s\n    ", c++ ? "," : "");
			if (p)
				json_rank(&t->ranks[i], p, at);
			else
				printf("{\"rank\": %d, \"reported\": false}", t->ranks[i].meta.rank);
		}
		printf("]}");
	}
	printf("\n]}\n");
}

static int parse_at(const char *s)
{
	if (!strcmp(s, "last"))
		return AT_LAST;
	for (int k = 0; k < RT_PP_COUNT; k++)
		if (!strcmp(s, rt_vw_param_point_names[k]) && k != RT_PP_ROOT_FORWARD)
			return k;
	return -1;
}

static void help(void)
{
	printf("%s\n"
	       "Where each parameter lives on each rank, as the PyTorch probe (or rt_param())\n"
	       "reported it: cuda:N, cpu, meta, storage freed, or a tensor whose data lies in\n"
	       "another device's memory; its elements, dtype and bytes; the allocation its\n"
	       "data pointer falls in (the call that made it, its size and device); and the\n"
	       "change that led there (\"meta -> cuda:1 at first-forward\"). Ranks that agree\n"
	       "share a row; cuda:N means each rank on its own device.\n\n"
	       "  --rank N        only rank N (devices shown as they are)\n"
	       "  --param GLOB    only parameters matching GLOB, e.g. 'layers.0.*'\n"
	       "  --at POINT      wrap (the module handed to FSDP, as loaded), first-forward\n"
	       "                  (the first forward of the top-level module) or last (the\n"
	       "                  latest report; default)\n"
	       "  --json          schema ranktrace.params/1 (docs/json.md): every rank, every\n"
	       "                  report point\n\n"
	       "Exit status: 0; 3 when a rank's files are damaged (the others are shown);\n"
	       "2 for a usage error.\n", usage);
}

int rt_cli_cmd_params(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rank", required_argument, NULL, 'r' },
		{ "param", required_argument, NULL, 'p' },
		{ "at", required_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *glob = NULL;
	int c, only = -1, at = AT_LAST, rc;
	bool json = false;
	struct rt_vw_trace *t;
	struct rt_vw_names nm = { 0 };

	while ((c = getopt_long(argc, argv, "r:p:a:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			only = rt_cli_parse_rank("params", optarg);
			if (only < 0)
				return EXIT_USAGE;
			break;
		case 'p': glob = optarg; break;
		case 'a':
			at = parse_at(optarg);
			if (at < 0) {
				fprintf(stderr, "ranktrace params: --at %s: expected wrap, first-forward or "
					"last\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'j': json = true; break;
		case 'h': help(); return 0;
		default: fputs(usage, stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ranktrace params: expected one trace directory\n%s", usage);
		return EXIT_USAGE;
	}
	rc = rt_cli_check_dir("params", argv[optind]);
	if (rc)
		return rc;
	t = rt_cli_load("params", argv[optind]);
	if (!t)
		return RT_VW_ERR_CORRUPT;
	if (only >= 0 && rt_vw_rank_index(t, only) < 0) {
		fprintf(stderr, "ranktrace params: no rank %d in %s\n", only, argv[optind]);
		rt_vw_free(t);
		return EXIT_USAGE;
	}
	if (rt_vw_param_names(t, glob, &nm) != 0) {
		fprintf(stderr, "ranktrace params: out of memory\n");
		rt_vw_free(t);
		return 1;
	}
	if (json)
		print_json(t, &nm, at, only);
	else
		print_text(t, &nm, at, only);
	rc = t->damaged ? RT_VW_ERR_CORRUPT : 0;
	free(nm.v);
	rt_vw_free(t);
	return rc;
}
