/* SPDX-License-Identifier: MIT */
/* analyse.h - what the analyses share (viewer/analyse/ only): the
 * detectors format/findings.def declares (a row made `by detect` is
 * rt_vw_detect_E, run in the rows' order by detectors.c), and the rules
 * several of them use (did a rank crash while training, may a finding rest
 * on how it ended). Each analysis reads the rank models and the results of
 * the analyses before it (analyses.c's table) and adds findings
 * (findings.c); none writes a sentence. */
#ifndef RT_VW_ANALYSE_H
#define RT_VW_ANALYSE_H

#include "model_int.h"

#define RT_VW_DETECT_detect(E) void rt_vw_detect_##E(struct rt_vw_trace *t, enum rt_finding_kind k);
#define RT_VW_DETECT_liveness(E)
#define RT_VW_DETECT_watchdog(E)
#define RT_VW_DETECT_matcher(E)
#define RT_VW_DETECT_straggler(E)
#define RT_VW_DETECT_p2p(E)
#define RT_FINDING(E, id, by, ...) RT_VW_DETECT_##by(E)
#include "findings.def"
#undef RT_FINDING

/* The host as NCCL tells ranks apart (NCCL_HOSTID, else the hostname):
 * "one rank per device" holds per NCCL host. */
const char *rt_vw_nccl_host(const struct rt_vw_rank *r);
/* Does rank ri's trace show how it ended, so that what it lacks before its
 * end can be relied on? Complete, or its end record read despite damage in
 * another of its streams (and no rank missing, not running, not a copy). */
bool rt_vw_end_evidence(const struct rt_vw_trace *t, int ri);
/* Crashed while training: not in teardown, after training finished. */
bool rt_vw_crashed_training(const struct rt_vw_rank *r);
/* Every readable rank crashed while training (and at least one rank exists). */
bool rt_vw_all_crashed(const struct rt_vw_trace *t);

/* Where rank r is, as evidence e shows it (hang.c): alive (or stopped
 * with the whole job) inside its oldest open call or idle, else how it
 * ended and the call it died in. e may be NULL. */
void rt_vw_ev_where(struct rt_vw_evidence *e, const struct rt_vw_rank *r);

/* devhang.c: the earliest collective some rank enqueued and no device
 * completed (device records), or NULL; its evidence into f (the hang's):
 * who enqueued it, which devices started it, who never enqueued it. */
struct rt_vw_devcoll;
const struct rt_vw_devcoll *rt_vw_dev_stuck(const struct rt_vw_trace *t);
void rt_vw_dev_hang_evidence(const struct rt_vw_trace *t, const struct rt_vw_devcoll *c,
			     struct rt_vw_finding *f);
/* Without a device record that shows it (none, or dropped): the earliest
 * collective some rank called and another rank of its communicator never
 * did, by the host trace, or NULL; its evidence into f (host_only): who
 * called it, who never did and where that rank is. */
const struct rt_vw_devcoll *rt_vw_host_stuck(const struct rt_vw_trace *t);
void rt_vw_host_hang_evidence(const struct rt_vw_trace *t, const struct rt_vw_devcoll *c,
			      struct rt_vw_finding *f);
/* The device records the tracer dropped (all ranks) as f's value dropped,
 * when there were any: the sentence says no finding rests on them. */
void rt_vw_dev_dropped_value(const struct rt_vw_trace *t, struct rt_vw_finding *f);

/* p2p.c: each ncclSend paired with its ncclRecv across ranks (a rank's
 * k-th Send to a peer with the peer's k-th Recv from it, per communicator):
 * the first pair whose sides differ (p2p-mismatch) and the first call whose
 * peer, whose whole run the trace holds, never made its counterpart
 * (p2p-unmatched). */
void rt_vw_p2p_match(struct rt_vw_trace *t);
/* A hang in point to point, into f (the hang's): who waits in which Send
 * or Recv on whom, and the ranks the others wait for (f's ranks), which
 * never made the counterpart; false (f untouched) when no live rank waits
 * in a call whose peer never made its counterpart. */
bool rt_vw_p2p_hang_evidence(const struct rt_vw_trace *t, struct rt_vw_finding *f);

/* Ranks that ended, with evidence: not running, readable. */
#define RT_VW_FOR_ENDED(t, i, r)                                                        \
	for (int i = 0; i < (t)->nranks; i++)                                           \
		for (const struct rt_vw_rank *r = &(t)->ranks[i]; r; r = NULL)          \
			if (r->readable && r->state != RT_S_RUNNING)

/* Ranks that ended, with evidence, and did not crash in teardown. */
#define RT_VW_FOR_ENDED_TRAINING(t, i, r) RT_VW_FOR_ENDED(t, i, r) if (!r->teardown_crash)

#endif
