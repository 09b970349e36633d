/* SPDX-License-Identifier: MIT */
/* detect_root.c - the detectors of the bug class: a skipped FSDP root
 * forward from the probe's direct evidence (a module FSDP shards called
 * without FSDP's forward, and the exception that left it), from the probe's
 * parameters (no root forward, views at freed storage), and from NCCL alone
 * (init broadcasts, then no all-gather, then a crash); and a model nobody
 * prepared (optimizer steps over parameters neither sharded nor
 * synchronised, nothing reduced across ranks).
 *
 * Detectors of format/findings.def (rt_vw_detect_E), run once after the
 * pass in the table's order (detectors.c); they read the finished rank
 * models and add findings with their values, no sentence. */
#include "analyse.h"

/* Ranks with the probe's direct evidence (a module the FSDP root wraps
 * called while no root forward ran), into idx; *crashed: how many of them
 * crashed while training. */
static int unwrapped_ranks(const struct rt_vw_trace *t, int *idx, int cap, int *crashed)
{
	int k = 0;

	*crashed = 0;
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		if (!r->readable || !r->unwrapped_calls)
			continue;
		*crashed += r->state != RT_S_RUNNING && rt_vw_crashed_training(r);
		if (k < cap)
			idx[k++] = i;
	}
	return k;
}

/* Supporting evidence for a rank that called the unwrapped module: its
 * parameters when the top-level module was first called (else their latest
 * report) at storage FSDP freed, or shard views (fewer elements than as
 * handed to FSDP: use_orig_params=True). */
static void unwrapped_support(const struct rt_vw_rank *r, uint64_t *freed, uint64_t *views)
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

/* The first exception that left an unwrapped call on the k ranks idx. */
static const struct rt_vw_exception *first_exception(const struct rt_vw_trace *t, const int *idx,
						     int k)
{
	for (int i = 0; i < k; i++)
		if (t->ranks[idx[i]].nexc)
			return &t->ranks[idx[i]].lists->exc[0];
	return NULL;
}

/* The unwrapped calls of the k ranks idx as a finding of kind: the ranks,
 * their calls, the first rank's first (module, caller) and root forwards
 * before it, what their parameters showed then, how many crashed, the
 * exception that left the call. */
static struct rt_vw_finding *unwrapped_finding(struct rt_vw_trace *t, enum rt_finding_kind kind,
					       const int *idx, int k, int crashed)
{
	const struct rt_vw_rank *r0 = &t->ranks[idx[0]];
	const struct rt_vw_exception *x;
	struct rt_vw_finding *f = rt_vw_finding_add(t, kind, -1);
	uint64_t calls = 0, freed = 0, views = 0, before = 0;

	for (int i = 0; i < k; i++) {
		const struct rt_vw_rank *r = &t->ranks[idx[i]];

		calls += r->unwrapped_calls;
		before += r->root_forwards_before_unwrapped;
		unwrapped_support(r, &freed, &views);
		rt_vw_finding_rank(f, r->meta.rank);
	}
	/* a rank with calls has a pair (a pass that lost one failed): guarded all the same */
	rt_vw_fv_text(f, RT_FV_module, r0->nunwrapped ? r0->lists->unwrapped[0].module : "");
	rt_vw_fv_text(f, RT_FV_caller, r0->nunwrapped ? r0->lists->unwrapped[0].caller : "");
	rt_vw_fv_int(f, RT_FV_calls, (int64_t)calls);
	rt_vw_fv_flag(f, RT_FV_more_pairs, r0->nunwrapped > 1);
	rt_vw_fv_int(f, RT_FV_root_forwards_before, (int64_t)r0->root_forwards_before_unwrapped);
	rt_vw_fv_int(f, RT_FV_root_forwards_before_any, (int64_t)before);
	rt_vw_fv_int(f, RT_FV_freed, (int64_t)freed);
	rt_vw_fv_int(f, RT_FV_views, (int64_t)views);
	rt_vw_fv_int(f, RT_FV_crashed, crashed);
	if ((x = first_exception(t, idx, k)) != NULL) {
		rt_vw_fv_text(f, RT_FV_exc_type, x->type);
		if (x->message[0])
			rt_vw_fv_text(f, RT_FV_exc_message, x->message);
	}
	return f;
}

/* Every rank called a module FSDP shards without FSDP's forward and no root
 * forward ever ran, on a trace that holds every rank's whole run: the
 * skipped root whatever the program did with the exception (an HPO loop
 * that catches the failed trial and goes on). */
static bool every_rank_skipped(const struct rt_vw_trace *t)
{
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		if (!rt_vw_end_evidence(t, i) || !r->unwrapped_calls || r->fsdp_root_forwards)
			return false;
	}
	return t->nranks > 0;
}

void rt_vw_detect_ROOT_FORWARD_UNWRAPPED(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	int idx[1024], n, crashed;
	bool all = every_rank_skipped(t);

	n = unwrapped_ranks(t, idx, 1024, &crashed);
	if (n && (crashed || all)) {
		struct rt_vw_finding *f = unwrapped_finding(t, k, idx, n, crashed);

		if (all)
			rt_vw_fv_flag(f, RT_FV_no_root_forward, true);
	}
}

/* The same evidence on ranks that all finished, the root forward having run
 * too: a warning, not the verdict. */
void rt_vw_detect_UNWRAPPED_CALL(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	int idx[1024], n, crashed;

	n = unwrapped_ranks(t, idx, 1024, &crashed);
	if (n && !crashed && !every_rank_skipped(t))
		unwrapped_finding(t, k, idx, n, crashed);
}

/* A rank that trained its own copy: optimizer steps (the probe's), none of
 * the parameters they updated sharded or synchronised, no reduction asked of
 * torch.distributed nor made through NCCL, no FSDP root forward, no
 * unwrapped call (another signature), and its whole run in the trace. */
static bool trained_alone(const struct rt_vw_trace *t, int i)
{
	const struct rt_vw_rank *r = &t->ranks[i];
	const struct rt_vw_optim *o = &r->optim;

	for (int k = 0; k < RT_CK_COUNT; k++)
		if (rt_ck_has_op(k) && r->colls[k]) /* NCCL reduced something */
			return false;
	return rt_vw_end_evidence(t, i) && o->steps && o->params && !o->sharded && !o->synced &&
	       !o->reductions && !r->fsdp_root_forwards && !r->unwrapped_calls;
}

void rt_vw_detect_UNPREPARED_MODEL(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	struct rt_vw_finding *f;
	uint64_t steps = UINT64_MAX;

	if (t->nranks < 2) /* one process trains alone by design */
		return;
	for (int i = 0; i < t->nranks; i++) {
		if (!trained_alone(t, i))
			return;
		if (t->ranks[i].optim.steps < steps)
			steps = t->ranks[i].optim.steps;
	}
	f = rt_vw_finding_add(t, k, -1);
	for (int i = 0; i < t->nranks; i++)
		rt_vw_finding_rank(f, t->ranks[i].meta.rank);
	rt_vw_fv_int(f, RT_FV_steps, (int64_t)steps);
	rt_vw_fv_int(f, RT_FV_params, (int64_t)t->ranks[0].optim.params);
}

/* What the probe says about the FSDP root forward: did every rank report
 * parameters (probed), and does each show no root forward and freed
 * storage (confirmed)? freed: parameter views at freed storage. */
static void root_evidence(const struct rt_vw_trace *t, bool *probed, bool *confirmed, uint64_t *freed)
{
	*probed = *confirmed = true;
	*freed = 0;
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		if (!rt_vw_end_evidence(t, i)) {
			*probed = *confirmed = false;
			continue;
		}
		if (!r->readable)
			continue;
		*freed += r->params_freed;
		if (!r->params_reported)
			*probed = false;
		else if (r->fsdp_root_forwards || !r->params_freed)
			*confirmed = false;
	}
}

void rt_vw_detect_ROOT_FORWARD_PROBE(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	bool probed, confirmed;
	uint64_t freed;

	root_evidence(t, &probed, &confirmed, &freed);
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].unwrapped_calls) /* direct evidence: root-forward-unwrapped */
			return;
	if (probed && confirmed && rt_vw_all_crashed(t))
		rt_vw_fv_int(rt_vw_finding_add(t, k, -1), RT_FV_freed, (int64_t)freed);
}

/* Inferred from NCCL alone: init broadcasts, then no all-gather, then a
 * crash, on every rank whose whole run we have. */
void rt_vw_detect_ROOT_FORWARD_NCCL(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	bool probed, confirmed;
	uint64_t freed;

	root_evidence(t, &probed, &confirmed, &freed);
	if (probed || !rt_vw_all_crashed(t))
		return;
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		if (!r->readable)
			continue;
		if (!rt_vw_end_evidence(t, i) || !(r->broadcasts_before_allgather > 0 &&
						   r->colls[RT_CK_AllGather] == 0))
			return;
	}
	rt_vw_finding_add(t, k, -1);
}
