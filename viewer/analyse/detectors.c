/* SPDX-License-Identifier: MIT */
/* detectors.c - the table detectors: one function per kind of finding that
 * format/findings.def says a detector makes (`by detect`), run in the
 * rows' order after the pass (detect_root.c, detect_device.c,
 * detect_end.c hold them), and the rules they share.
 *
 * Adding a check is a row in findings.def, its function rt_vw_detect_E and
 * a test row: the table below is the rows, expanded. One thread, after the
 * rank models and the analyses before the detectors (analyses.c). */
#include <string.h>

#include "analyse.h"

typedef void (*detect_fn)(struct rt_vw_trace *t, enum rt_finding_kind k);

#define RT_VW_ROW_detect(E) { RT_FK_##E, rt_vw_detect_##E },
#define RT_VW_ROW_liveness(E)
#define RT_VW_ROW_watchdog(E)
#define RT_VW_ROW_matcher(E)
#define RT_VW_ROW_straggler(E)
#define RT_VW_ROW_p2p(E)
static const struct detector {
	enum rt_finding_kind kind;
	detect_fn fn;
} detectors[] = {
#define RT_FINDING(E, id, by, ...) RT_VW_ROW_##by(E)
#include "findings.def"
#undef RT_FINDING
};

const char *rt_vw_nccl_host(const struct rt_vw_rank *r)
{
	return r->meta.nccl_host[0] ? r->meta.nccl_host : r->meta.hostname;
}

bool rt_vw_end_evidence(const struct rt_vw_trace *t, int ri)
{
	const struct rt_vw_rank *r = &t->ranks[ri];

	if (t->nmissing || r->state == RT_S_RUNNING || !r->readable || r->dup_of >= 0)
		return false;
	return r->completeness == RT_C_COMPLETE || r->exit_seen;
}

bool rt_vw_crashed_training(const struct rt_vw_rank *r)
{
	return rt_vw_crashed(r) && !r->teardown_crash;
}

bool rt_vw_all_crashed(const struct rt_vw_trace *t)
{
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].readable && !rt_vw_crashed_training(&t->ranks[i]))
			return false;
	return t->nranks > 0;
}

void rt_vw_detect(struct rt_vw_trace *t)
{
	for (size_t i = 0; i < sizeof(detectors) / sizeof(detectors[0]); i++)
		detectors[i].fn(t, detectors[i].kind);
}
