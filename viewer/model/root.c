/* SPDX-License-Identifier: MIT */
/* root.c - the probe's evidence about how training ran, in the rank model:
 * calls of a module an FSDP root wraps while no root forward ran (the direct
 * evidence of a skipped root, rt_unwrapped_call) and the start of teardown
 * (rt_marker "rt.teardown"), with whether training work followed it.
 *
 * Called from the model's single pass (model.c) per event; allocates only
 * the rank's lists, at the first pair (rt_vw_rank_lists, evidence.c): a rank
 * keeps RT_VW_MAX_UNWRAPPED (module, caller) pairs, later pairs are counted
 * in unwrapped_calls only. */
#include <stdio.h>
#include <string.h>

#include "model_int.h"

/* The probe reports each (module, caller) at its 1st, 2nd, 4th, ... call with
 * the count so far: the latest count replaces the pair's earlier one. */
void rt_vw_unwrapped_event(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	char module[65], caller[65];
	uint64_t calls = (uint64_t)rt_vw_fld(e, RT_FN_calls);
	struct rt_vw_unwrapped *u = NULL;

	rt_field_text(e->id, e->fields, RT_FN_module, module);
	rt_field_text(e->id, e->fields, RT_FN_caller, caller);
	if (!calls)
		calls = 1;
	for (int i = 0; i < r->nunwrapped && !u; i++) {
		struct rt_vw_unwrapped *p = &r->lists->unwrapped[i];

		if (!strcmp(p->module, module) && !strcmp(p->caller, caller))
			u = p;
	}
	if (!r->nunwrapped && !r->unwrapped_calls)
		r->root_forwards_before_unwrapped = r->fsdp_root_forwards;
	if (u) {
		r->unwrapped_calls += calls > u->calls ? calls - u->calls : 0;
		u->calls = calls > u->calls ? calls : u->calls;
		return;
	}
	r->unwrapped_calls += calls;
	if (r->nunwrapped == RT_VW_MAX_UNWRAPPED || !rt_vw_rank_lists(r))
		return; /* full: counted only (out of memory: the pass fails) */
	u = &r->lists->unwrapped[r->nunwrapped++];
	memcpy(u->module, module, sizeof(u->module));
	memcpy(u->caller, caller, sizeof(u->caller));
	u->calls = calls;
	u->ts = e->ts;
}

/* "rt.teardown" from the rank's main process: 1 destroy_process_group
 * entered with no exception in flight, 2 the interpreter exits after the
 * program's main code ended without an uncaught exception. Other values (an
 * exception in flight) do not start a teardown "after training finished". */
bool rt_vw_teardown_marker(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	char name[65];
	int64_t v = rt_vw_fld(e, RT_FN_value);

	rt_field_text(e->id, e->fields, RT_FN_name, name);
	if (strcmp(name, RT_VW_TEARDOWN_MARKER))
		return false;
	if ((v == 1 || v == 2) && (int)e->pid == r->meta.pid && !r->teardown_ts) {
		r->teardown_ts = e->ts ? e->ts : 1;
		r->teardown_how = (uint8_t)v;
	}
	return true;
}

/* Training work after the teardown began: a collective or a probe report. */
void rt_vw_teardown_activity(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	unsigned id = e->id;

	if (!r->teardown_ts || e->ts < r->teardown_ts)
		return;
	if (rt_vw_coll_kind(id) >= 0 || id == RT_ID_rt_param || id == RT_ID_rt_fsdp_forward ||
	    id == RT_ID_rt_unwrapped_call)
		r->active_after_teardown = true;
}
