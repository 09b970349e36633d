/* SPDX-License-Identifier: MIT */
/* params_view.c - `ranktrace params`: parameter x rank, where each
 * parameter lives at a report point (FSDP wrap, first forward, last
 * report), its size and dtype, the allocation its data pointer falls in,
 * and what changed. A view of the model (model.h: struct rt_vw_param): text
 * groups the ranks that agree ("cuda:N" = each rank on its own device, N its
 * LOCAL_RANK); JSON (schema ranktrace.params/1, docs/json.md) lists every
 * rank and every report point, through util/'s writer. */
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "json.h"
#include "json_keys.h"
#include "view.h"

#define AT_LAST RT_VW_AT_LAST /* --at last: the latest report */

/* Column widths of the text table: the longest name and shape shown. */
struct widths {
	int name, shape;
};

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

/* The shape column: "[64, 32]", a DTensor's with its placements and mesh
 * ("[128, 32] Shard(0) mesh [2]": its local shard is in bytes and storage). */
static int shape_text(const struct rt_vw_placement *pl, char *out, size_t n)
{
	size_t len = (size_t)rt_vw_shape_str(&pl->shape, out, n);
	const struct rt_vw_layout *l = &pl->layout;
	char place[40];

	for (int i = 0; l->known && i < l->mesh_ndim && i < 3 && len < n; i++) {
		rt_vw_place_str(l, i, place, sizeof(place));
		len += (size_t)snprintf(out + len, n - len, "%s%s", i ? "," : " ", place);
	}
	for (int i = 0; l->known && i < l->mesh_ndim && i < 3 && len < n; i++)
		len += (size_t)snprintf(out + len, n - len, "%s%u%s", i ? ", " : " mesh [", l->mesh[i],
					i + 1 == l->mesh_ndim || i == 2 ? "]" : "");
	return (int)len;
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
		rt_vw_human_bytes(bytes, sizeof(bytes), (uint64_t)own);
	rt_vw_human_bytes(storage, sizeof(storage), pl->bytes);
	shape_text(pl, shape, sizeof(shape));
	if (pl->in_alloc) {
		rt_vw_human_bytes(sz, sizeof(sz), pl->alloc_size);
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

static void print_row(FILE *out, const struct widths *w, const char *name, const char *list, char *c)
{
	const char *f[8];

	for (int i = 0; i < 8; i++)
		f[i] = field(&c);
	fprintf(out, "%-*s %-7s %-14s %8s %-*s %-8s %8s %8s  %-28s %s\n", w->name, rt_vw_esc(name), list,
		f[0], f[1], w->shape, f[2], f[3], f[4], f[5], f[6], f[7]);
}

/* A parameter's row(s): ranks with the same cell share one. */
static void print_param(FILE *f, const struct widths *w, const struct rt_vw_trace *t, const char *name,
			int at, int only)
{
	char (*cells)[480] = calloc((size_t)t->nranks, sizeof(*cells));
	int *ranks = calloc((size_t)t->nranks, sizeof(int));
	bool *done = calloc((size_t)t->nranks, sizeof(bool)), first = true;

	for (int i = 0; cells && ranks && done && i < t->nranks; i++)
		cell(&t->ranks[i], rt_vw_find_param(&t->ranks[i], name), at, only < 0, cells[i],
		     sizeof(cells[i]));
	for (int i = 0; cells && ranks && done && i < t->nranks; i++) {
		char list[256];

		if (!rt_vw_same_text(t, only, cells[0], sizeof(cells[0]), i, done, ranks, list,
				     sizeof(list)))
			continue;
		print_row(f, w, first ? name : "", list, cells[i]);
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
static bool measure(const struct rt_vw_trace *t, const struct rt_vw_names *nm, int at, int only,
		    struct widths *w)
{
	bool cuda = false;

	*w = (struct widths){ .name = 9, .shape = 5 };
	for (size_t i = 0; i < nm->n; i++)
		if ((int)strlen(nm->v[i]) > w->name)
			w->name = strlen(nm->v[i]) > 64 ? 64 : (int)strlen(nm->v[i]);
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		if (!rt_vw_want_rank(r, only))
			continue;
		cuda |= r->devices_used != 0;
		for (uint32_t q = 0; q < r->nparams; q++) {
			const struct rt_vw_placement *from, *pl;
			char shape[96];
			int from_at;

			cuda |= on_cuda(&r->params[q]);
			pl = rt_vw_param_at(&r->params[q], at, &from, &from_at);
			if (pl->seen && shape_text(pl, shape, sizeof(shape)) > w->shape)
				w->shape = (int)strlen(shape) > 40 ? 40 : (int)strlen(shape);
		}
	}
	return cuda;
}

int rt_vw_params_text(FILE *f, const struct rt_vw_trace *t, const struct rt_vw_names *nm, int at,
		      int only)
{
	struct widths w;
	bool cuda;

	fprintf(f, "trace %s: %d rank%s, %zu parameter%s; placement at %s\n\n", rt_vw_esc(t->dir),
		t->nranks, t->nranks == 1 ? "" : "s", nm->n, nm->n == 1 ? "" : "s",
		at == AT_LAST ? "the last report" : rt_vw_param_point_names[at]);
	rt_vw_placement_text(f, t, only, "");
	if (!nm->n) {
		fprintf(f, "\nno parameter reported (the PyTorch probe reports them under `ranktrace run`;\n"
			"C programs call rt_param() from ranktrace.h)\n");
		return ferror(f) ? -EIO : 0;
	}
	cuda = measure(t, nm, at, only, &w);
	fprintf(f, "\n%-*s %-7s %-14s %8s %-*s %-8s %8s %8s  %-28s %s\n", w.name, "parameter", "ranks",
		"where", "elements", w.shape, "shape", "dtype", "bytes", "storage",
		"allocation (data pointer in)", "change");
	for (size_t i = 0; i < nm->n; i++)
		print_param(f, &w, t, nm->v[i], at, only);
	if (only < 0 && cuda)
		fprintf(f, "\ncuda:N: each rank on its own device (N = its LOCAL_RANK)\n");
	return ferror(f) ? -EIO : 0;
}

/* ---- JSON: schema ranktrace.params/1 ---- */

/* A DTensor's layout (FSDP2, tensor parallel): its mesh, a placement per
 * mesh dimension, the local shard's shape; null for a plain tensor. */
static void json_dtensor(struct rt_json *w, const struct rt_vw_layout *l)
{
	char place[40];

	if (!l->known) {
		rt_json_null(w, RT_JK(dtensor));
		return;
	}
	rt_json_obj(w, RT_JK(dtensor));
	rt_json_arr(w, RT_JK(mesh));
	for (int i = 0; i < l->mesh_ndim && i < 3; i++)
		rt_json_uint(w, NULL, l->mesh[i]);
	rt_json_end(w);
	rt_json_arr(w, RT_JK(placements));
	for (int i = 0; i < l->mesh_ndim && i < 3; i++) {
		rt_vw_place_str(l, i, place, sizeof(place));
		rt_json_str(w, NULL, place);
	}
	rt_json_end(w);
	rt_json_arr(w, RT_JK(local_shape));
	for (int i = 0; i < l->local.ndim && i < RT_VW_MAX_DIMS; i++)
		rt_json_uint(w, NULL, l->local.dim[i]);
	rt_json_end(w);
	rt_json_end(w);
}

static void json_placement(struct rt_json *w, const char *key, const struct rt_vw_placement *pl)
{
	char label[64];
	int64_t own = rt_vw_param_bytes(pl);

	rt_vw_placement_str(pl, label, sizeof(label));
	rt_json_obj(w, key);
	rt_json_str(w, RT_JK(where), rt_vw_place_names[pl->place]);
	rt_json_str(w, RT_JK(label), label);
	rt_json_int(w, RT_JK(device), pl->place == RT_P_CUDA || pl->place == RT_P_WRONG_DEVICE ?
				      pl->device : -1);
	rt_json_str(w, RT_JK(dtype), rt_vw_dtype_name(pl->dtype));
	rt_json_uint(w, RT_JK(numel), pl->numel);
	rt_json_uint(w, RT_JK(bytes), pl->bytes);
	rt_json_strf(w, RT_JK(ptr), "0x%llx", (unsigned long long)pl->ptr);
	if (pl->in_alloc) {
		rt_json_obj(w, RT_JK(allocation));
		rt_json_int(w, RT_JK(device), pl->alloc_dev);
		rt_json_strf(w, RT_JK(base), "0x%llx", (unsigned long long)pl->alloc_base);
		rt_json_uint(w, RT_JK(size), pl->alloc_size);
		rt_json_str(w, RT_JK(call), call_name(pl->alloc_call));
		rt_json_end(w);
	} else {
		rt_json_null(w, RT_JK(allocation));
	}
	if (pl->shape.known) {
		rt_json_arr(w, RT_JK(shape));
		for (int i = 0; i < pl->shape.ndim && i < RT_VW_MAX_DIMS; i++)
			rt_json_uint(w, NULL, pl->shape.dim[i]);
		rt_json_end(w);
		rt_json_uint(w, RT_JK(ndim), pl->shape.ndim);
	} else {
		rt_json_null(w, RT_JK(shape));
		rt_json_null(w, RT_JK(ndim));
	}
	if (own >= 0)
		rt_json_int(w, RT_JK(param_bytes), own);
	else
		rt_json_null(w, RT_JK(param_bytes));
	json_dtensor(w, &pl->layout);
	rt_json_end(w);
}

/* One rank's record of a parameter: the shown placement, every point, the change. */
static void json_rank(struct rt_json *w, const struct rt_vw_rank *r, const struct rt_vw_param *p, int at)
{
	const struct rt_vw_placement *from = NULL, *pl;
	int from_at = 0;

	pl = rt_vw_param_at(p, at, &from, &from_at);
	rt_json_obj(w, NULL);
	rt_json_int(w, RT_JK(rank), r->meta.rank);
	rt_json_bool(w, RT_JK(reported), pl->seen);
	if (pl->seen)
		json_placement(w, RT_JK(placement), pl);
	rt_json_obj(w, RT_JK(points));
	for (int k = 0; k < RT_PP_COUNT; k++)
		if (p->at[k].seen)
			json_placement(w, rt_vw_param_point_names[k], &p->at[k]);
		else
			rt_json_null(w, rt_vw_param_point_names[k]);
	rt_json_end(w);
	if (from && pl->seen) {
		char a[64], b[64];

		rt_vw_placement_str(from, a, sizeof(a));
		rt_vw_placement_str(pl, b, sizeof(b));
		rt_json_obj(w, RT_JK(changed));
		rt_json_str(w, RT_JK(from), a);
		rt_json_str(w, RT_JK(to), b);
		rt_json_str(w, RT_JK(at), rt_vw_param_point_names[from_at]);
		rt_json_end(w);
	} else {
		rt_json_null(w, RT_JK(changed));
	}
	rt_json_end(w);
}

/* Each rank kept: its parameters, whether they are wrong, view's line. */
static void json_ranks(struct rt_json *w, const struct rt_vw_trace *t, int only)
{
	rt_json_arr(w, RT_JK(ranks));
	rt_json_lines(w, 2, true);
	for (int i = 0; i < t->nranks; i++) {
		char text[200];
		bool wrong;

		if (!rt_vw_want_rank(&t->ranks[i], only))
			continue;
		wrong = rt_vw_placement_summary(&t->ranks[i], text, sizeof(text));
		rt_json_obj(w, NULL);
		rt_json_int(w, RT_JK(rank), t->ranks[i].meta.rank);
		rt_json_uint(w, RT_JK(parameters), t->ranks[i].nparams);
		rt_json_bool(w, RT_JK(wrong), wrong);
		rt_json_str(w, RT_JK(summary), text);
		rt_json_end(w);
	}
	rt_json_end(w);
}

int rt_vw_params_json(FILE *f, const struct rt_vw_trace *t, const struct rt_vw_names *nm, int at,
		      int only)
{
	struct rt_json w;

	rt_json_init(&w, f, false);
	rt_json_obj(&w, NULL);
	rt_json_str(&w, RT_JK(schema), RT_JSCHEMA(params));
	rt_json_str(&w, RT_JK(dir), t->dir);
	rt_json_str(&w, RT_JK(at), at == AT_LAST ? "last" : rt_vw_param_point_names[at]);
	json_ranks(&w, t, only);
	rt_json_arr(&w, RT_JK(params));
	rt_json_lines(&w, 2, true);
	for (size_t q = 0; q < nm->n; q++) {
		rt_json_obj(&w, NULL);
		rt_json_str(&w, RT_JK(name), nm->v[q]);
		rt_json_arr(&w, RT_JK(ranks));
		rt_json_lines(&w, 4, false);
		for (int i = 0; i < t->nranks; i++) {
			const struct rt_vw_param *p = rt_vw_find_param(&t->ranks[i], nm->v[q]);

			if (!rt_vw_want_rank(&t->ranks[i], only))
				continue;
			if (p) {
				json_rank(&w, &t->ranks[i], p, at);
				continue;
			}
			rt_json_obj(&w, NULL);
			rt_json_int(&w, RT_JK(rank), t->ranks[i].meta.rank);
			rt_json_bool(&w, RT_JK(reported), false);
			rt_json_end(&w);
		}
		rt_json_end(&w);
		rt_json_end(&w);
	}
	rt_json_end(&w);
	rt_json_end(&w);
	return rt_json_finish(&w);
}
