/* SPDX-License-Identifier: MIT */
/* root.c - the probe's evidence about how training ran, in the rank model:
 * calls of a module an FSDP root wraps while no root forward ran (the direct
 * evidence of a skipped root, rt_unwrapped_call) and the start of teardown
 * (rt_marker "rt.teardown"), with whether training work followed it.
 *
 * Called from the model's single pass (model.c) per event; allocates nothing
 * (a rank keeps RT_VW_MAX_UNWRAPPED (module, caller) pairs, later pairs are
 * counted in unwrapped_calls only). */
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
	for (int i = 0; i < r->nunwrapped && !u; i++)
		if (!strcmp(r->unwrapped[i].module, module) && !strcmp(r->unwrapped[i].caller, caller))
			u = &r->unwrapped[i];
	if (!r->nunwrapped && !r->unwrapped_calls)
		r->root_forwards_before_unwrapped = r->fsdp_root_forwards;
	if (u) {
		r->unwrapped_calls += calls > u->calls ? calls - u->calls : 0;
		u->calls = calls > u->calls ? calls : u->calls;
		return;
	}
	r->unwrapped_calls += calls;
	if (r->nunwrapped == RT_VW_MAX_UNWRAPPED)
		return;
	u = &r->unwrapped[r->nunwrapped++];
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

/* Did rank r end abnormally in teardown, after training finished? It began
 * teardown (the probe's marker), no collective or probe report followed, and
 * it then died: a signal, a call that never returned, or no end record. An
 * exit status the program chose (exit(1)) is not a teardown crash. */
bool rt_vw_teardown_crash(const struct rt_vw_rank *r)
{
	if (!r->readable || r->state == RT_S_RUNNING || !rt_vw_crashed(r))
		return false;
	if (!r->teardown_ts || r->active_after_teardown)
		return false;
	return r->signo || !(r->exit_seen && r->exit_status > 0);
}

/* Supporting evidence for a rank that called the unwrapped module: its
 * parameters when the top-level module was first called (else their latest
 * report) at storage FSDP freed, or shard views (fewer elements than as
 * handed to FSDP: use_orig_params=True). */
void rt_vw_unwrapped_support(const struct rt_vw_rank *r, uint64_t *freed, uint64_t *views)
{
	for (uint32_t q = 0; q < r->nparams; q++) {
		const struct rt_vw_param *p = &r->params[q];
		const struct rt_vw_placement *pl = p->at[RT_PP_FIRST_FORWARD].seen ?
			&p->at[RT_PP_FIRST_FORWARD] : &p->last;
		const struct rt_vw_placement *wrap = &p->at[RT_PP_WRAP];

		if (pl->place == RT_P_FREED)
			(*freed)++;
		else if (wrap->seen && pl->seen && pl->numel < wrap->numel)
			(*views)++;
	}
}

/* "ranks 0,1 called M from C while no FSDP root forward ran (...)": the
 * first rank's first (module, caller), the calls, the placement behind it.
 * idx: k rank indices in order. */
void rt_vw_describe_unwrapped(const struct rt_vw_trace *t, const int *idx, int k, char *out,
			      size_t n)
{
	const struct rt_vw_rank *r0 = &t->ranks[idx[0]];
	uint64_t calls = 0, freed = 0, views = 0, before = 0;
	char list[256], place[96] = "", when[48] = "no root forward ran before";
	int ranks[64] = { 0 }, nr = 0;

	for (int i = 0; i < k; i++) {
		const struct rt_vw_rank *r = &t->ranks[idx[i]];

		calls += r->unwrapped_calls;
		before += r->root_forwards_before_unwrapped;
		rt_vw_unwrapped_support(r, &freed, &views);
		if (nr < 64)
			ranks[nr++] = r->meta.rank;
	}
	rt_vw_rank_list(ranks, nr, list, sizeof(list));
	if (before)
		snprintf(when, sizeof(when), "after %llu root forward%s",
			 (unsigned long long)r0->root_forwards_before_unwrapped,
			 r0->root_forwards_before_unwrapped == 1 ? "" : "s");
	if (freed || views)
		snprintf(place, sizeof(place), "; %s parameters then: %llu shard views, %llu at "
			 "storage FSDP freed", k > 1 ? "their" : "its", (unsigned long long)views,
			 (unsigned long long)freed);
	snprintf(out, n, "rank%s %s called %s from %s while no FSDP root forward ran (%llu "
		 "call%s in all%s; %s%s)", k > 1 ? "s" : "", list, r0->unwrapped[0].module,
		 r0->unwrapped[0].caller, (unsigned long long)calls, calls == 1 ? "" : "s",
		 r0->nunwrapped > 1 ? ", more module/caller pairs" : "", when, place);
}
