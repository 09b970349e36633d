/* SPDX-License-Identifier: MIT */
/* detect_root.c - the detectors of a skipped FSDP root forward: the probe's
 * direct evidence (a module the root wraps called while no root forward
 * ran), the probe's parameters (no root forward, views at freed storage),
 * and NCCL alone (init broadcasts, then no all-gather, then a crash).
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

/* The unwrapped calls of the k ranks idx as a finding of kind: the ranks,
 * their calls, the first rank's first (module, caller) and root forwards
 * before it, what their parameters showed then, how many crashed. */
static void unwrapped_finding(struct rt_vw_trace *t, enum rt_finding_kind kind, const int *idx, int k,
			      int crashed)
{
	const struct rt_vw_rank *r0 = &t->ranks[idx[0]];
	struct rt_vw_finding *f = rt_vw_finding_add(t, kind, -1);
	uint64_t calls = 0, freed = 0, views = 0, before = 0;

	for (int i = 0; i < k; i++) {
		const struct rt_vw_rank *r = &t->ranks[idx[i]];

		calls += r->unwrapped_calls;
		before += r->root_forwards_before_unwrapped;
		unwrapped_support(r, &freed, &views);
		rt_vw_finding_rank(f, r->meta.rank);
	}
	rt_vw_fv_text(f, RT_FV_module, r0->unwrapped[0].module);
	rt_vw_fv_text(f, RT_FV_caller, r0->unwrapped[0].caller);
	rt_vw_fv_int(f, RT_FV_calls, (int64_t)calls);
	rt_vw_fv_flag(f, RT_FV_more_pairs, r0->nunwrapped > 1);
	rt_vw_fv_int(f, RT_FV_root_forwards_before, (int64_t)r0->root_forwards_before_unwrapped);
	rt_vw_fv_int(f, RT_FV_root_forwards_before_any, (int64_t)before);
	rt_vw_fv_int(f, RT_FV_freed, (int64_t)freed);
	rt_vw_fv_int(f, RT_FV_views, (int64_t)views);
	rt_vw_fv_int(f, RT_FV_crashed, crashed);
}

void rt_vw_detect_ROOT_FORWARD_UNWRAPPED(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	int idx[1024], n, crashed;

	n = unwrapped_ranks(t, idx, 1024, &crashed);
	if (n && crashed)
		unwrapped_finding(t, k, idx, n, crashed);
}

/* The same evidence on ranks that all finished: a warning, not the verdict. */
void rt_vw_detect_UNWRAPPED_CALL(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	int idx[1024], n, crashed;

	n = unwrapped_ranks(t, idx, 1024, &crashed);
	if (n && !crashed)
		unwrapped_finding(t, k, idx, n, crashed);
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
