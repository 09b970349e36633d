/* SPDX-License-Identifier: MIT */
/* params.c - where each parameter lives, per rank and per report point: the
 * model's record of rt_param reports (wrap, first forward, root forwards,
 * announced by rt_marker "rt.params"), their names for outputs, and the
 * one-line placement summary of a rank that view, params and diff print.
 *
 * Called from the model's single pass (model.c) for every rt_param and
 * rt_marker event; allocates nothing (the parameter slots are the model's). */
#include <fnmatch.h>

#include "model_int.h"
#include "rt_util.h"

const char *const rt_vw_place_names[RT_P_COUNT] = { "cuda", "cpu", "meta", "storage-freed",
						    "wrong-device" };
const char *const rt_vw_param_point_names[RT_PP_COUNT] = { "wrap", "first-forward",
							   "root-forward" };

/* The probe's dtype codes: format/dtypes.def. */
const char *rt_vw_dtype_name(unsigned code)
{
	return rt_probe_dtype_name(code);
}

unsigned rt_vw_dtype_size(unsigned code)
{
	return rt_probe_dtype_size(code);
}

int64_t rt_vw_param_bytes(const struct rt_vw_placement *pl)
{
	unsigned size = rt_vw_dtype_size(pl->dtype);

	return size ? (int64_t)(pl->numel * size) : -1;
}

int rt_vw_shape_str(const struct rt_vw_shape *s, char *out, size_t n)
{
	size_t len = 0;

	if (!s->known)
		return snprintf(out, n, "-");
	len += (size_t)snprintf(out, n, "[");
	for (int i = 0; i < s->ndim && i < RT_VW_MAX_DIMS && len < n; i++)
		len += (size_t)snprintf(out + len, n - len, "%s%u", i ? ", " : "", s->dim[i]);
	if (s->ndim > RT_VW_MAX_DIMS && len < n)
		len += (size_t)snprintf(out + len, n - len, ", ...");
	if (len < n)
		len += (size_t)snprintf(out + len, n - len, "]");
	return (int)len;
}

int rt_vw_place_str(const struct rt_vw_layout *l, int i, char *out, size_t n)
{
	int8_t p = i >= 0 && i < 3 ? l->place[i] : RT_PLACE_CODE_other;

	if (p >= 0)
		return snprintf(out, n, "Shard(%d)", p);
	if (p == RT_PLACE_CODE_replicate)
		return snprintf(out, n, "Replicate()");
	if (p == RT_PLACE_CODE_partial)
		return snprintf(out, n, "Partial()");
	return snprintf(out, n, "?");
}

void rt_vw_param_shape(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	static const enum rt_fname dims[RT_VW_MAX_DIMS] = { RT_FN_dim0, RT_FN_dim1, RT_FN_dim2,
							    RT_FN_dim3, RT_FN_dim4, RT_FN_dim5 };

	rt_field_text(e->id, e->fields, RT_FN_name, r->shape_for);
	r->shape_next = (struct rt_vw_shape){ .known = true, .ndim = (uint8_t)rt_vw_fld(e, RT_FN_ndim) };
	for (int i = 0; i < RT_VW_MAX_DIMS; i++)
		r->shape_next.dim[i] = (uint32_t)rt_vw_fld(e, dims[i]);
}

struct rt_vw_shape rt_vw_take_shape(struct rt_vw_rank *r, const char *name)
{
	struct rt_vw_shape s = { 0 };

	if (r->shape_next.known && !strcmp(r->shape_for, name))
		s = r->shape_next;
	r->shape_next.known = false;
	return s;
}

void rt_vw_param_marker(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	char name[65];
	int64_t v = rt_vw_fld(e, RT_FN_value);

	rt_field_text(e->id, e->fields, RT_FN_name, name);
	if (!strcmp(name, RT_VW_PARAMS_MARKER) && v >= 1 && v <= RT_PP_COUNT)
		r->param_point = (uint8_t)(v - 1);
}

static bool same_place(const struct rt_vw_placement *a, const struct rt_vw_placement *b)
{
	return a->place == b->place && (a->place != RT_P_CUDA || a->device == b->device);
}

/* Append to the rank's list of changes (dropped, not fatal, when out of memory). */
static void record_change(struct rt_vw_rank *r, const struct rt_vw_param *p,
			  const struct rt_vw_placement *pl)
{
	if (!RT_GROW(r->changes, r->nchanges, r->changes_cap, 64, 1u << 22))
		return;
	r->changes[r->nchanges++] = (struct rt_vw_param_change){
		.ts = pl->ts, .param = (uint32_t)(p - r->params), .point = r->param_point,
		.from = p->last.place, .to = pl->place, .from_dev = p->last.device, .to_dev = pl->device,
	};
}

void rt_vw_param_record(struct rt_vw_rank *r, struct rt_vw_param *p,
			const struct rt_vw_placement *pl)
{
	struct rt_vw_placement *at = &p->at[r->param_point < RT_PP_COUNT ? r->param_point : 0];

	if (p->last.seen && !same_place(&p->last, pl)) {
		p->before = p->last;
		p->changed_at = r->param_point;
		record_change(r, p, pl);
	}
	p->last = *pl;
	p->last.seen = true;
	if (!at->seen) {
		*at = *pl;
		at->seen = true;
	}
}

int rt_vw_placement_str(const struct rt_vw_placement *pl, char *out, size_t n)
{
	if (!pl->seen)
		return snprintf(out, n, "-");
	switch (pl->place) {
	case RT_P_CUDA: return snprintf(out, n, "cuda:%d", pl->device);
	case RT_P_CPU: return snprintf(out, n, "cpu");
	case RT_P_META: return snprintf(out, n, "meta");
	case RT_P_FREED: return snprintf(out, n, "storage freed");
	default:
		return snprintf(out, n, "cuda:%d, data on cuda:%d", pl->device, pl->alloc_dev);
	}
}

/* "5 of 5 parameters point at freed storage, e.g. NAME" (true: something is
 * wrong) or "all 5 parameters on cuda:1" (false). */
bool rt_vw_placement_summary(const struct rt_vw_rank *r, char *out, size_t n)
{
	static const char *const what[RT_P_COUNT] = {
		"", "", "are still on meta", "point at freed storage",
		"point into another device's memory",
	};
	uint32_t count[RT_P_COUNT] = { 0 }, worst = RT_P_COUNT;
	const char *example = NULL;
	int dev = -2;

	for (uint32_t i = 0; i < r->nparams; i++) {
		uint8_t pl = r->params[i].place;

		count[pl < RT_P_COUNT ? pl : RT_P_CUDA]++;
		if (pl == RT_P_CUDA)
			dev = dev == -2 || dev == r->params[i].device ? r->params[i].device : -1;
	}
	/* what stops the rank from computing, the worst first */
	static const uint8_t order[] = { RT_P_FREED, RT_P_WRONG_DEVICE, RT_P_META };

	for (size_t k = 0; k < sizeof(order) && worst == RT_P_COUNT; k++)
		if (count[order[k]])
			worst = order[k];
	if (!r->nparams) {
		snprintf(out, n, "no parameter reported");
		return false;
	}
	if (worst == RT_P_COUNT) {
		if (count[RT_P_CUDA] == r->nparams && dev >= 0)
			snprintf(out, n, "all %u parameters on cuda:%d", r->nparams, dev);
		else
			snprintf(out, n, "%u parameters: %u on cuda, %u on cpu", r->nparams,
				 count[RT_P_CUDA], count[RT_P_CPU]);
		return false;
	}
	if (worst == RT_P_FREED && r->fsdp_root_forwards && !count[RT_P_WRONG_DEVICE] &&
	    !count[RT_P_META]) {
		/* FSDP v1 reshards after each forward: the original parameters are
		 * views of freed storage between forwards, and the root forward ran
		 * (use_orig_params=false leaves some unsharded: on cuda or cpu) */
		int k = count[RT_P_FREED] == r->nparams ?
			snprintf(out, n, "all %u parameters", r->nparams) :
			snprintf(out, n, "%u of %u parameters", count[RT_P_FREED], r->nparams);
		k = k < 0 || (size_t)k >= n ? (int)n : k;
		k += snprintf(out + k, n - (size_t)k, " sharded by FSDP (storage freed between its "
			      "%llu root forwards: FSDP's normal state between steps)",
			      (unsigned long long)r->fsdp_root_forwards);
		if ((count[RT_P_CUDA] || count[RT_P_CPU]) && k > 0 && (size_t)k < n)
			snprintf(out + k, n - (size_t)k, "; %u on cuda, %u on cpu", count[RT_P_CUDA],
				 count[RT_P_CPU]);
		return false;
	}
	for (uint32_t i = 0; i < r->nparams && !example; i++)
		if (r->params[i].place == worst)
			example = r->params[i].name;
	snprintf(out, n, "%u of %u parameters %s%s, e.g. %s", count[worst], r->nparams, what[worst],
		 worst == RT_P_FREED && !r->fsdp_root_forwards ? " and no FSDP root forward ran" : "",
		 example);
	return true;
}

/* ---- names across ranks (params, report) ---- */


struct ref {
	const char *name;
	size_t key; /* rank index << 32 | parameter index: first appearance */
};

static int by_name_then_key(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->key > y->key) - (x->key < y->key);
}

static int by_key(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;

	return (x->key > y->key) - (x->key < y->key);
}

int rt_vw_param_names(const struct rt_vw_trace *t, const char *glob, struct rt_vw_names *out)
{
	size_t n = 0, k = 0;
	struct ref *refs;

	for (int i = 0; i < t->nranks; i++)
		n += t->ranks[i].nparams;
	refs = calloc(n ? n : 1, sizeof(*refs));
	out->v = calloc(n ? n : 1, sizeof(*out->v));
	if (!refs || !out->v) {
		free(refs);
		return -1;
	}
	for (int i = 0; i < t->nranks; i++)
		for (uint32_t q = 0; q < t->ranks[i].nparams; q++)
			if (!glob || !fnmatch(glob, t->ranks[i].params[q].name, 0))
				refs[k++] = (struct ref){ t->ranks[i].params[q].name, (size_t)i << 32 | q };
	qsort(refs, k, sizeof(*refs), by_name_then_key);
	n = 0;
	for (size_t i = 0; i < k; i++)
		if (!i || strcmp(refs[i].name, refs[i - 1].name))
			refs[n++] = refs[i];
	qsort(refs, n, sizeof(*refs), by_key);
	for (size_t i = 0; i < n; i++)
		out->v[i] = refs[i].name;
	out->n = n;
	free(refs);
	return 0;
}

const struct rt_vw_placement *rt_vw_param_at(const struct rt_vw_param *p, int at,
					     const struct rt_vw_placement **from, int *from_at)
{
	const struct rt_vw_placement *pl = at == RT_VW_AT_LAST ? &p->last : &p->at[at];

	*from = NULL;
	if (at == RT_VW_AT_LAST) {
		if (p->before.seen) {
			*from = &p->before;
			*from_at = p->changed_at;
		}
		return pl;
	}
	for (int k = at - 1; k >= 0 && pl->seen; k--)
		if (p->at[k].seen) {
			if (p->at[k].place != pl->place || p->at[k].device != pl->device)
				*from = &p->at[k];
			*from_at = at;
			break;
		}
	return pl;
}

const struct rt_vw_param *rt_vw_find_param(const struct rt_vw_rank *r, const char *name)
{
	for (uint32_t q = 0; q < r->nparams; q++)
		if (!strcmp(r->params[q].name, name))
			return &r->params[q];
	return NULL;
}

void rt_vw_params_count(struct rt_vw_rank *r)
{
	r->params_meta = r->params_freed = 0;
	for (uint32_t q = 0; q < r->nparams; q++) {
		r->params_meta += r->params[q].place == RT_P_META;
		r->params_freed += r->params[q].place == RT_P_FREED;
	}
}
