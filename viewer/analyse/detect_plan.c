/* SPDX-License-Identifier: MIT */
/* detect_plan.c - the detector of a fault plan's rule that never fired: on
 * no rank did it fire (no rt_fault of it, and each process's rt_inj_rule at
 * its end says 0), so the run tested nothing it meant to; said with what the
 * rule targets and whether any rank reached it (format/presets.def,
 * format/points.def).
 *
 * A detector of format/findings.def (rt_vw_detect_E), run once after the
 * pass; reads the rank models' rules, adds one finding per rule. Rules no
 * process recorded (all killed by SIGKILL, older traces) are not judged. */
#include "analyse.h"

/* Rule rule's records on every rank: the ranks that recorded it (into f,
 * when not NULL), the calls or passes counted, whether any fired; the
 * first record. */
static bool rule_fired(const struct rt_vw_trace *t, int rule, struct rt_vw_finding *f,
		       uint64_t *seen, const struct rt_vw_rule **first)
{
	bool fired = false;

	*seen = 0;
	*first = NULL;
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		fired = fired || (rule < 64 && (r->rules_fired >> rule & 1));
		for (int j = 0; j < r->nrules; j++) {
			if (r->lists->rules[j].rule != rule)
				continue;
			fired = fired || r->lists->rules[j].fired;
			*seen += r->lists->rules[j].seen;
			*first = *first ? *first : &r->lists->rules[j];
			if (f)
				rt_vw_finding_rank(f, r->meta.rank);
		}
	}
	return fired;
}

/* Has rule already been judged (a lower rank recorded it first)? */
static bool judged(const struct rt_vw_trace *t, int ri, int rule)
{
	for (int i = 0; i < ri; i++)
		for (int j = 0; j < t->ranks[i].nrules; j++)
			if (t->ranks[i].lists->rules[j].rule == rule)
				return true;
	return false;
}

static void never_fired(struct rt_vw_trace *t, enum rt_finding_kind k, int rule)
{
	const struct rt_vw_rule *first;
	const struct rt_point_info *point;
	struct rt_vw_finding *f;
	uint64_t seen;

	if (rule_fired(t, rule, NULL, &seen, &first) || !first)
		return;
	f = rt_vw_finding_add(t, k, -1);
	rule_fired(t, rule, f, &seen, &first);
	point = rt_point_find(first->target);
	rt_vw_fv_text(f, RT_FV_spec, first->spec);
	rt_vw_fv_text(f, RT_FV_target, first->target);
	if (point && !seen)
		rt_vw_fv_text(f, RT_FV_what, point->reached);
	if (seen)
		rt_vw_fv_int(f, RT_FV_seen, (int64_t)seen);
	else
		rt_vw_fv_flag(f, RT_FV_unreached, true);
	rt_vw_fv_int(f, RT_FV_reported, f ? f->nranks : 0);
}

void rt_vw_detect_INJECTION_NEVER_FIRED(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	for (int i = 0; i < t->nranks; i++)
		for (int j = 0; j < t->ranks[i].nrules; j++)
			if (!judged(t, i, t->ranks[i].lists->rules[j].rule))
				never_fired(t, k, t->ranks[i].lists->rules[j].rule);
}
