/* SPDX-License-Identifier: MIT */
/* analyses.c - the analyses, in one table: what each reads and what it
 * makes, in the order they run after the model's pass (load/load.c calls
 * rt_vw_analyse once per trace).
 *
 * A row's inputs are the rank models (MODEL), the matcher's collectives
 * still open after the pass (MATCHER), the state of the job's processes as
 * the pipeline asked it before the analyses (LIVE: each rank's sys, from
 * read/live.c: stream locks, /proc on this host, the clock; no row asks the
 * system itself) and what rows above it made; analyses_in_order() checks that every input is made above (the
 * unit test test_analyses does too). Findings are data (findings.c); the
 * verdict is decided from them last. One thread; the model is read-only to
 * every row but the ones that say what they set on each rank (completeness:
 * state, completeness, duplicates; interruption; liveness: ages, idle time;
 * teardown). */
#include "analyse.h"
#include "device.h"

enum {
	IN_MODEL = 1 << 0, IN_MATCHER = 1 << 1, IN_LIVE = 1 << 2,
	MK_COMPLETENESS = 1 << 3, MK_INTERRUPTION = 1 << 4, MK_MATCHED = 1 << 5,
	MK_LIVENESS = 1 << 6, MK_WATCHDOG = 1 << 7, MK_TEARDOWN = 1 << 8, MK_DETECTED = 1 << 9,
	MK_STRAGGLE = 1 << 10, MK_VERDICT = 1 << 11, MK_P2P = 1 << 12,
	MK_FINDINGS = MK_MATCHED | MK_P2P | MK_LIVENESS | MK_WATCHDOG | MK_DETECTED | MK_STRAGGLE,
};

static void run_completeness(struct rt_vw_trace *t, struct rt_vw_matcher *m)
{
	rt_vw_completeness(t, m);
}

static void run_interruption(struct rt_vw_trace *t, struct rt_vw_matcher *m)
{
	rt_vw_interruption(t);
}

static void run_matcher(struct rt_vw_trace *t, struct rt_vw_matcher *m)
{
	rt_vw_matcher_finish(m);
}

static void run_p2p(struct rt_vw_trace *t, struct rt_vw_matcher *m)
{
	rt_vw_p2p_match(t);
}

static void run_liveness(struct rt_vw_trace *t, struct rt_vw_matcher *m)
{
	rt_vw_liveness(t);
}

static void run_watchdog(struct rt_vw_trace *t, struct rt_vw_matcher *m)
{
	rt_vw_dev_watchdog(t);
}

/* Did rank r end abnormally in teardown, after training finished? It began
 * teardown (the probe's marker), no collective or probe report followed, and
 * it then died: a signal, a call that never returned, or no end record. An
 * exit status the program chose (exit(1)) is not a teardown crash. */
static bool teardown_crash(const struct rt_vw_rank *r)
{
	if (!r->readable || r->state == RT_S_RUNNING || !rt_vw_crashed(r))
		return false;
	if (!r->teardown_ts || r->active_after_teardown)
		return false;
	return r->signo || !(r->exit_seen && r->exit_status > 0);
}

/* Did each rank crash in teardown, after training finished? */
static void run_teardown(struct rt_vw_trace *t, struct rt_vw_matcher *m)
{
	for (int i = 0; i < t->nranks; i++)
		t->ranks[i].teardown_crash = teardown_crash(&t->ranks[i]);
}

static void run_detectors(struct rt_vw_trace *t, struct rt_vw_matcher *m)
{
	rt_vw_detect(t);
}

static void run_straggler(struct rt_vw_trace *t, struct rt_vw_matcher *m)
{
	rt_vw_straggler_detect(t);
}

static void run_verdict(struct rt_vw_trace *t, struct rt_vw_matcher *m)
{
	rt_vw_decide(t);
}

static const struct rt_vw_analysis {
	const char *name;
	unsigned in, makes;
	void (*run)(struct rt_vw_trace *t, struct rt_vw_matcher *m);
} analyses[] = {
	/* rank states from the stream locks, duplicates, missing ranks */
	{ "completeness", IN_MODEL | IN_LIVE, MK_COMPLETENESS, run_completeness },
	/* every rank stopped from outside by SIGINT, SIGTERM or SIGHUP */
	{ "interruption", IN_MODEL | MK_COMPLETENESS, MK_INTERRUPTION, run_interruption },
	/* the collectives still open: mismatches, never called */
	{ "matcher", IN_MATCHER | MK_COMPLETENESS | MK_INTERRUPTION, MK_MATCHED, run_matcher },
	/* each Send paired with its Recv: mismatches, no counterpart (p2p.c) */
	{ "p2p", IN_MODEL | MK_COMPLETENESS | MK_INTERRUPTION, MK_P2P, run_p2p },
	/* hung or not; the laggards, by host calls or device records (devhang.c) */
	{ "liveness", IN_MODEL | IN_LIVE | MK_COMPLETENESS | MK_INTERRUPTION, MK_LIVENESS,
	  run_liveness },
	/* ranks the NCCL watchdog ended on a collective no device completed */
	{ "watchdog", IN_MODEL | MK_COMPLETENESS | MK_LIVENESS, MK_WATCHDOG, run_watchdog },
	/* crashed in teardown, after training finished */
	{ "teardown", IN_MODEL | MK_COMPLETENESS | MK_INTERRUPTION, MK_TEARDOWN, run_teardown },
	/* the table detectors: format/findings.def's rows made by detect */
	{ "detectors", IN_MODEL | MK_COMPLETENESS | MK_INTERRUPTION | MK_TEARDOWN, MK_DETECTED,
	  run_detectors },
	/* the straggler, from device times */
	{ "straggler", IN_MODEL, MK_STRAGGLE, run_straggler },
	/* the findings sorted, the verdict decided from them */
	{ "verdict", MK_FINDINGS | MK_COMPLETENESS | MK_INTERRUPTION | MK_TEARDOWN, MK_VERDICT,
	  run_verdict },
};

#define NANALYSES (sizeof(analyses) / sizeof(analyses[0]))

int rt_vw_analyses_check(const char **bad)
{
	unsigned made = IN_MODEL | IN_MATCHER | IN_LIVE;

	for (size_t i = 0; i < NANALYSES; i++) {
		if (analyses[i].in & ~made) {
			*bad = analyses[i].name;
			return -1;
		}
		made |= analyses[i].makes;
	}
	return 0;
}

const char *rt_vw_analysis_name(size_t i)
{
	return i < NANALYSES ? analyses[i].name : NULL;
}

void rt_vw_analyse(struct rt_vw_trace *t, struct rt_vw_matcher *m)
{
	for (size_t i = 0; i < NANALYSES; i++)
		analyses[i].run(t, m);
}
