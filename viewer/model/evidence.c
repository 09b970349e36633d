/* SPDX-License-Identifier: MIT */
/* evidence.c - the probe's evidence of the bug class beyond the unwrapped
 * calls (root.c), in the rank model: a DTensor parameter's layout (FSDP2),
 * the exception that left an unwrapped call and its message (caught or
 * not), the optimizer's steps and what they updated; and what the fault
 * plan did, as each of the rank's processes ended (rt_inj_rule).
 *
 * Called from the model's single pass (model.c) per event; allocates the
 * rank's lists at their first entry (rt_vw_rank_lists, freed with the
 * trace; out of memory fails the pass), else fixed slots (RT_VW_MAX_EXC
 * exceptions, RT_VW_MAX_RULES rules, later ones dropped; a rule's counts
 * summed over the rank's processes). */
#include <stdio.h>
#include <string.h>

#include "model_int.h"

static void on_dtensor(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	static const enum rt_fname mesh[3] = { RT_FN_mesh0, RT_FN_mesh1, RT_FN_mesh2 };
	static const enum rt_fname place[3] = { RT_FN_place0, RT_FN_place1, RT_FN_place2 };
	static const enum rt_fname dims[RT_VW_MAX_DIMS] = { RT_FN_dim0, RT_FN_dim1, RT_FN_dim2,
							    RT_FN_dim3, RT_FN_dim4, RT_FN_dim5 };
	struct rt_vw_layout *l = &r->layout_next;

	rt_field_text(e->id, e->fields, RT_FN_name, r->layout_for);
	*l = (struct rt_vw_layout){ .known = true, .mesh_ndim = (uint8_t)rt_vw_fld(e, RT_FN_mesh_ndim) };
	for (int i = 0; i < 3; i++) {
		l->mesh[i] = (uint32_t)rt_vw_fld(e, mesh[i]);
		l->place[i] = (int8_t)rt_vw_fld(e, place[i]);
	}
	l->local = (struct rt_vw_shape){ .known = true, .ndim = (uint8_t)rt_vw_fld(e, RT_FN_ndim) };
	for (int i = 0; i < RT_VW_MAX_DIMS; i++)
		l->local.dim[i] = (uint32_t)rt_vw_fld(e, dims[i]);
}

struct rt_vw_layout rt_vw_take_layout(struct rt_vw_rank *r, const char *name)
{
	struct rt_vw_layout l = { 0 };

	if (r->layout_next.known && !strcmp(r->layout_for, name))
		l = r->layout_next;
	r->layout_next.known = false;
	return l;
}

struct rt_vw_rank_lists *rt_vw_rank_lists(struct rt_vw_rank *r)
{
	if (!r->lists && !(r->lists = calloc(1, sizeof(*r->lists))))
		r->lists_lost = true; /* evidence lost changes findings: the pass fails */
	return r->lists;
}

static void on_exception(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	struct rt_vw_exception *x;

	if (r->nexc == RT_VW_MAX_EXC || !rt_vw_rank_lists(r))
		return; /* full: dropped (out of memory: the pass fails) */
	x = &r->lists->exc[r->nexc++];
	memset(x, 0, sizeof(*x));
	rt_field_text(e->id, e->fields, RT_FN_module, x->module);
	rt_field_text(e->id, e->fields, RT_FN_exc_type, x->type);
	x->tid = e->tid;
	x->ts = e->ts;
}

/* The message follows its exception on the same thread. */
static void on_exception_text(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	char part[2][65];

	for (int i = r->nexc - 1; i >= 0; i--) {
		struct rt_vw_exception *x = &r->lists->exc[i];

		if (x->tid != e->tid || x->has_text)
			continue;
		rt_field_text(e->id, e->fields, RT_FN_msg0, part[0]);
		rt_field_text(e->id, e->fields, RT_FN_msg1, part[1]);
		snprintf(x->message, sizeof(x->message), "%s%s", part[0], part[1]);
		x->has_text = true;
		return;
	}
}

static void on_optim(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	struct rt_vw_optim *o = &r->optim;
	uint64_t step = (uint64_t)rt_vw_fld(e, RT_FN_step);

	if (step >= o->steps) { /* the latest report of the rank's highest step */
		o->steps = step;
		o->params = (uint64_t)rt_vw_fld(e, RT_FN_params);
		o->sharded = (uint64_t)rt_vw_fld(e, RT_FN_sharded);
		o->synced = (uint64_t)rt_vw_fld(e, RT_FN_synced);
	}
	if ((uint64_t)rt_vw_fld(e, RT_FN_reductions) > o->reductions)
		o->reductions = (uint64_t)rt_vw_fld(e, RT_FN_reductions);
}

static void on_rule(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	int rule = (int)rt_vw_fld(e, RT_FN_rule);
	struct rt_vw_rule *u = NULL;

	for (int i = 0; i < r->nrules && !u; i++)
		if (r->lists->rules[i].rule == rule)
			u = &r->lists->rules[i];
	if (!u) {
		if (r->nrules == RT_VW_MAX_RULES || !rt_vw_rank_lists(r))
			return; /* full: dropped (out of memory: the pass fails) */
		u = &r->lists->rules[r->nrules++];
		memset(u, 0, sizeof(*u));
		u->rule = rule;
		rt_field_text(e->id, e->fields, RT_FN_spec, u->spec);
		rt_spec_target(u->spec, u->target, sizeof(u->target));
	}
	u->seen += (uint64_t)rt_vw_fld(e, RT_FN_seen);
	u->fired += (uint64_t)rt_vw_fld(e, RT_FN_fired);
}

void rt_vw_evidence_event(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	switch (e->id) {
	case RT_ID_rt_param_dtensor: on_dtensor(r, e); break;
	case RT_ID_rt_exception: on_exception(r, e); break;
	case RT_ID_rt_exception_text: on_exception_text(r, e); break;
	case RT_ID_rt_optim_step: on_optim(r, e); break;
	case RT_ID_rt_inj_rule: on_rule(r, e); break;
	default: break;
	}
}
