/* SPDX-License-Identifier: MIT */
/* detectors.c - findings and the verdict, from the finished rank models.
 *
 * Runs once after the pass. A detector is one function and one row of
 * `detectors` below: its id, severity (lower is more important: the sort
 * key), the failure signature its findings carry, and what it looks for.
 * Adding a check is a function plus a row. Findings are sorted by severity,
 * then rank (trace-wide ones first), then the order they were found; the
 * verdict is decided from them (completeness.c, rt_vw_decide). The matcher
 * and the liveness pass add their own findings (matcher.c, hang.c). */
#include <inttypes.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "model.h"
#include "model_int.h"

/* The host as NCCL tells ranks apart (NCCL_HOSTID, else the hostname):
 * "one rank per device" holds per NCCL host, so ranks given distinct
 * NCCL_HOSTIDs may share a GPU (they talk over NCCL's network transport). */
static const char *nccl_host(const struct rt_vw_rank *r)
{
	return r->meta.nccl_host[0] ? r->meta.nccl_host : r->meta.hostname;
}

/* ---- findings and verdict ---- */

/* Does rank ri's trace show how it ended, so that what it lacks before its
 * end can be relied on? Complete, or its end record read despite damage in
 * another of its streams. */
static bool end_evidence(const struct rt_vw_trace *t, int ri)
{
	const struct rt_vw_rank *r = &t->ranks[ri];

	if (t->nmissing || r->state == RT_S_RUNNING || !r->readable || r->dup_of >= 0)
		return false;
	return r->completeness == RT_C_COMPLETE || r->exit_seen;
}

static void list_ranks(char *out, size_t n, const struct rt_vw_trace *t, const int *idx, int k)
{
	size_t len = 0;

	out[0] = '\0';
	for (int i = 0; i < k && len < n - 12; i++)
		len += (size_t)snprintf(out + len, n - len, "%s%d", i ? "," : "",
					t->ranks[idx[i]].meta.rank);
}

struct detector;
typedef void (*detect_fn)(struct rt_vw_trace *t, const struct detector *d);

struct detector {
	const char *id;
	int severity;
	enum rt_vw_verdict signature;
	detect_fn fn;
	const char *text; /* what it looks for */
	enum rt_vw_level level;
	const char *advice; /* what to do next, shown with the first finding; or NULL */
};

const char *const rt_vw_level_names[RT_VW_NLEVELS] = { "error", "warning", "note" };

/* A finding of detector d about rank (-1: about several). */
static struct rt_vw_finding *emit(struct rt_vw_trace *t, const struct detector *d, int rank,
				  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static struct rt_vw_finding *vemit(struct rt_vw_trace *t, const struct detector *d, int rank,
				   bool subject, const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));

static struct rt_vw_finding *vemit(struct rt_vw_trace *t, const struct detector *d, int rank,
				   bool subject, const char *fmt, va_list ap)
{
	struct rt_vw_finding *f = rt_vw_vadd_finding(t, rank, subject, d->severity, d->signature, fmt, ap);

	if (f) {
		f->level = d->level;
		f->id = d->id;
		f->advice = d->advice;
	}
	return f;
}

static struct rt_vw_finding *emit(struct rt_vw_trace *t, const struct detector *d, int rank,
				  const char *fmt, ...)
{
	struct rt_vw_finding *f;
	va_list ap;

	va_start(ap, fmt);
	f = vemit(t, d, rank, false, fmt, ap);
	va_end(ap);
	return f;
}

/* A finding of detector d whose fmt says what rank did ("rank N" goes
 * before it at the edge). */
static void emit_about(struct rt_vw_trace *t, const struct detector *d, int rank, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void emit_about(struct rt_vw_trace *t, const struct detector *d, int rank, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vemit(t, d, rank, true, fmt, ap);
	va_end(ap);
}

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* Crashed while training: not in teardown, after training finished. */
static bool crashed_training(const struct rt_vw_rank *r)
{
	return rt_vw_crashed(r) && !r->teardown_crash;
}

/* Every readable rank crashed (and at least one rank exists). */
static bool all_crashed(const struct rt_vw_trace *t)
{
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].readable && !crashed_training(&t->ranks[i]))
			return false;
	return t->nranks > 0;
}

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
		*crashed += r->state != RT_S_RUNNING && crashed_training(r);
		if (k < cap)
			idx[k++] = i;
	}
	return k;
}

static void d_root_unwrapped(struct rt_vw_trace *t, const struct detector *d)
{
	int idx[1024], k, crashed;
	char what[360];

	k = unwrapped_ranks(t, idx, 1024, &crashed);
	if (!k || !crashed)
		return;
	rt_vw_describe_unwrapped(t, idx, k, what, sizeof(what));
	emit(t, d, -1, "FSDP root forward skipped (probe): %s; %s crashed", what,
	     crashed == k ? (k > 1 ? "each of them" : "it") : "some of them");
}

/* The same evidence on ranks that all finished: a warning, not the verdict. */
static void d_unwrapped_survived(struct rt_vw_trace *t, const struct detector *d)
{
	int idx[1024], k, crashed;
	char what[360];

	k = unwrapped_ranks(t, idx, 1024, &crashed);
	if (!k || crashed)
		return;
	rt_vw_describe_unwrapped(t, idx, k, what, sizeof(what));
	emit(t, d, -1, "%s; no rank crashed", what);
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

		if (!end_evidence(t, i)) {
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

static void d_root_probe(struct rt_vw_trace *t, const struct detector *d)
{
	bool probed, confirmed;
	uint64_t freed;

	root_evidence(t, &probed, &confirmed, &freed);
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].unwrapped_calls) /* direct evidence: root-forward-unwrapped */
			return;
	if (probed && confirmed && all_crashed(t))
		emit(t, d, -1, "FSDP root forward never ran (probe): no rank ran the root forward, "
		     "%llu parameter views across ranks point at storage FSDP freed, and every "
		     "rank crashed", (unsigned long long)freed);
}

/* Inferred from NCCL alone: init broadcasts, then no all-gather, then a
 * crash, on every rank whose whole run we have. */
static void d_root_nccl(struct rt_vw_trace *t, const struct detector *d)
{
	bool probed, confirmed;
	uint64_t freed;

	root_evidence(t, &probed, &confirmed, &freed);
	if ((probed && confirmed) || (probed && !confirmed) || !all_crashed(t))
		return;
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		if (!r->readable)
			continue;
		if (!end_evidence(t, i) || !(r->broadcasts_before_allgather > 0 &&
					     r->colls[RT_CK_AllGather] == 0))
			return;
	}
	emit(t, d, -1, "FSDP root forward never ran: every rank did its init broadcasts "
	     "(sync_module_states) but no all-gather followed, and every rank crashed "
	     "(the trainer called the unwrapped module; cf. transformers 4.53.0)");
}

static void d_faults(struct rt_vw_trace *t, const struct detector *d)
{
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		if (r->faults)
			emit_about(t, d, r->meta.rank, ": %llu injected fault%s fired (first: %s)",
			     (unsigned long long)r->faults, plural(r->faults), r->first_fault);
	}
}

static void d_params_misplaced(struct rt_vw_trace *t, const struct detector *d)
{
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		if (r->params_misplaced)
			emit_about(t, d, r->meta.rank, ": %llu parameter report%s point into memory of "
			     "another device", (unsigned long long)r->params_misplaced,
			     plural(r->params_misplaced));
	}
}

static void d_params_meta_later(struct rt_vw_trace *t, const struct detector *d)
{
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		if (r->params_ever_meta && !r->params_meta)
			emit_about(t, d, r->meta.rank, ": %llu parameter%s arrived on meta "
			     "(cpu_ram_efficient_loading) and were materialised later",
				   (unsigned long long)r->params_ever_meta, plural(r->params_ever_meta));
	}
}

static void d_params_still_meta(struct rt_vw_trace *t, const struct detector *d)
{
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		if (r->params_meta && crashed_training(r))
			emit_about(t, d, r->meta.rank, ": %llu parameter%s still on meta when it "
			     "ended (never materialised: cpu_ram_efficient_loading without the "
			     "sync_module_states broadcast?)",
				   (unsigned long long)r->params_meta, plural(r->params_meta));
	}
}

/* Several ranks on one device of one (NCCL) host. */
static void d_shared_device(struct rt_vw_trace *t, const struct detector *d)
{
	int idx[1024], k;
	char list[256];
	struct rt_vw_finding *f;

	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *a = &t->ranks[i];
		bool first = true;

		if (a->init_device < 0 || a->dup_of >= 0)
			continue;
		k = 0;
		for (int j = 0; j < t->nranks; j++) {
			const struct rt_vw_rank *b = &t->ranks[j];

			if (b->init_device != a->init_device || b->dup_of >= 0 ||
			    strcmp(nccl_host(a), nccl_host(b)))
				continue;
			first = first && j >= i;
			if (k < 1024)
				idx[k++] = j;
		}
		if (k <= 1 || !first)
			continue;
		list_ranks(list, sizeof(list), t, idx, k);
		f = emit(t, d, -1, "ranks %s all use device %d on host %s (NCCL allows one rank per "
			 "device: \"Duplicate GPU detected\")%s", list, a->init_device, nccl_host(a),
			 a->init_ret ? "; their communicator init failed" : "");
		for (int x = 0; f && x < k; x++)
			rt_vw_finding_rank(f, t->ranks[idx[x]].meta.rank);
	}
}

/* A rank working on a device other than its own (LOCAL_RANK, else its
 * communicator's). A process that made a ncclCommInitAll communicator
 * drives several devices by design (nccl-tests -g N): it has no one device. */
static void d_other_device(struct rt_vw_trace *t, const struct detector *d)
{
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		int expect = r->meta.local_rank >= 0 ? r->meta.local_rank : r->comm_device;
		uint64_t others;

		if (expect < 0 || expect >= RT_VW_MAX_DEV || !r->readable || r->dup_of >= 0 ||
		    r->multi_device)
			continue;
		others = r->devices_used & ~(1ull << expect);
		if (others)
			emit_about(t, d, r->meta.rank, " used device %d, expected device %d (%s)",
			     __builtin_ctzll(others), expect,
			     r->meta.local_rank >= 0 ? "LOCAL_RANK" : "its communicator's");
	}
}

/* Ranks that ended, with evidence: not running, readable. */
#define FOR_ENDED(t, i, r)                                                              \
	for (int i = 0; i < (t)->nranks; i++)                                           \
		for (const struct rt_vw_rank *r = &(t)->ranks[i]; r; r = NULL)          \
			if (r->readable && r->state != RT_S_RUNNING)

/* Ranks that ended, with evidence, and did not crash in teardown. */
#define FOR_ENDED_TRAINING(t, i, r) FOR_ENDED(t, i, r) if (!r->teardown_crash)

static void d_killed(struct rt_vw_trace *t, const struct detector *d)
{
	FOR_ENDED_TRAINING(t, i, r)
		if (r->signo && !r->interrupted)
			emit_about(t, d, r->meta.rank, " was killed by signal %d%s%s", r->signo,
				   r->died_in[0] ? " inside " : "", r->died_in);
}

/* The whole job stopped from outside (hang.c): no failure of its own, and
 * nothing known of what came next; the verdict's reason unless a rank's
 * evidence gives a more basic one. */
static void d_interrupted(struct rt_vw_trace *t, const struct detector *d)
{
	int s = t->interrupted;
	char why[300];

	if (!s)
		return;
	snprintf(why, sizeof(why), "job interrupted: every rank was stopped by signal %d (%s), sent "
		 "from outside (by the user or a scheduler, through the launcher), not by a failure "
		 "of its own; what it would have done next is not in the trace", s,
		 s == SIGINT ? "SIGINT" : s == SIGTERM ? "SIGTERM" : "SIGHUP");
	emit(t, d, -1, "%s", why);
	if (!t->inconclusive[0])
		snprintf(t->inconclusive, sizeof(t->inconclusive), "%s", why);
}

static void d_died_inside(struct rt_vw_trace *t, const struct detector *d)
{
	FOR_ENDED_TRAINING(t, i, r)
		if (!r->signo && r->died_in[0] && rt_vw_evidence_complete(t, i))
			emit_about(t, d, r->meta.rank, " died inside %s (the call never returned)",
			     r->died_in);
}

static bool died_inside(const struct rt_vw_trace *t, int i)
{
	return t->ranks[i].died_in[0] && rt_vw_evidence_complete(t, i);
}

static void d_exit_status(struct rt_vw_trace *t, const struct detector *d)
{
	FOR_ENDED_TRAINING(t, i, r)
		if (!r->signo && !died_inside(t, i) && r->exit_seen && r->exit_status > 0)
			emit_about(t, d, r->meta.rank, " exited with status %d%s%s", r->exit_status,
				   r->first_error[0] ? "; first error: " : "", r->first_error);
}

static void d_no_end(struct rt_vw_trace *t, const struct detector *d)
{
	FOR_ENDED_TRAINING(t, i, r)
		if (!r->signo && !died_inside(t, i) && !r->exit_seen && rt_vw_evidence_complete(t, i))
			emit_about(t, d, r->meta.rank, " has no recorded end (killed with SIGKILL?); "
			     "last event at +%.3f s", (double)(r->last_ts - r->first_ts) / 1e9);
}

/* Ended abnormally after training finished: named, not a crash. */
static void d_teardown(struct rt_vw_trace *t, const struct detector *d)
{
	FOR_ENDED(t, i, r)
		if (r->teardown_crash) {
			char end[160];

			rt_vw_rank_end(r, end, sizeof(end));
			emit_about(t, d, r->meta.rank, " crashed in teardown, after training finished "
			     "(%s after %s; no collective or probe report followed)", end,
			     r->teardown_how == 1 ? "destroy_process_group began" :
			     "the program's main code returned");
		}
}

static void d_unknown_frees(struct rt_vw_trace *t, const struct detector *d)
{
	FOR_ENDED(t, i, r)
		if (r->unknown_frees)
			emit_about(t, d, r->meta.rank, " freed %" PRIu64 " pointer(s) it never "
			     "allocated (allocated before tracing, or invalid)", r->unknown_frees);
}

static void d_discarded(struct rt_vw_trace *t, const struct detector *d)
{
	FOR_ENDED(t, i, r)
		if (r->discarded)
			emit_about(t, d, r->meta.rank, ": %" PRIu64 " events discarded (size cap)",
			     r->discarded);
}

static void d_incomplete(struct rt_vw_trace *t, const struct detector *d)
{
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].completeness != RT_C_COMPLETE && t->ranks[i].completeness != RT_C_LIVE)
			emit(t, d, t->ranks[i].meta.rank, "%s: %s", t->ranks[i].name,
			     t->ranks[i].incomplete);
}

static void d_missing(struct rt_vw_trace *t, const struct detector *d)
{
	if (t->nmissing)
		emit(t, d, -1, "%s", t->inconclusive);
}

/* what to do next, for the detectors that share it */
#define ADV_ROOT "the trainer called the unwrapped module, so FSDP never gathered the " \
	"parameters (what transformers 4.53.0 did; fixed by PR 39177): train the FSDP-wrapped " \
	"model; `ranktrace params DIR` lists each parameter, `ranktrace diff GOOD DIR` compares " \
	"with a good run"
#define ADV_DEVICE "bind each rank to its own GPU before building the model: " \
	"torch.cuda.set_device(int(os.environ[\"LOCAL_RANK\"])); `ranktrace params DIR` shows " \
	"where each parameter lives"
#define ADV_CRASH "read the rank's last lines of output; `ranktrace report DIR -o " \
	"report.html` shows its timeline up to the end"

static const struct detector detectors[] = {
	{ "root-forward-unwrapped", 8, RT_V_SKIPPED_FSDP_ROOT, d_root_unwrapped,
	  "a rank called a module the FSDP root wraps while no root forward ran, and crashed "
	  "(the probe's direct evidence; parameter placement supports it)",
	  RT_VW_ERROR, ADV_ROOT },
	{ "unwrapped-call", 34, RT_V_HEALTHY, d_unwrapped_survived,
	  "a rank called a module the FSDP root wraps while no root forward ran, and finished",
	  RT_VW_WARNING, ADV_ROOT },
	{ "root-forward-probe", 9, RT_V_SKIPPED_FSDP_ROOT, d_root_probe,
	  "every rank crashed, the probe saw no FSDP root forward and parameters at freed storage",
	  RT_VW_ERROR, ADV_ROOT },
	{ "root-forward-nccl", 10, RT_V_SKIPPED_FSDP_ROOT, d_root_nccl,
	  "every rank crashed after its init broadcasts without an all-gather (no probe needed)",
	  RT_VW_ERROR, ADV_ROOT },
	{ "injected-faults", 30, RT_V_HEALTHY, d_faults, "faults a plan injected fired",
	  RT_VW_WARNING, NULL },
	{ "params-other-device", 7, RT_V_DEVICE_MISPLACEMENT, d_params_misplaced,
	  "a parameter on cuda:N whose data lies in another device's allocation",
	  RT_VW_ERROR, ADV_DEVICE },
	{ "params-meta-later", 58, RT_V_HEALTHY, d_params_meta_later,
	  "parameters arrived on meta and were materialised later",
	  RT_VW_NOTE, NULL },
	{ "params-still-meta", 35, RT_V_HEALTHY, d_params_still_meta,
	  "a crashed rank still had parameters on meta",
	  RT_VW_WARNING, "rank 0 must broadcast the weights: FSDP(sync_module_states=True)" },
	{ "shared-device", 5, RT_V_DEVICE_MISPLACEMENT, d_shared_device,
	  "several ranks on one device of one NCCL host",
	  RT_VW_ERROR, ADV_DEVICE },
	{ "other-device", 6, RT_V_DEVICE_MISPLACEMENT, d_other_device,
	  "a rank used a device other than LOCAL_RANK's (or its communicator's)",
	  RT_VW_ERROR, ADV_DEVICE },
	{ "killed", 40, RT_V_CRASHED, d_killed, "a rank was killed by a signal",
	  RT_VW_ERROR, ADV_CRASH },
	{ "interrupted", 39, RT_V_INCONCLUSIVE, d_interrupted,
	  "the whole job was stopped from outside (SIGINT, SIGTERM or SIGHUP to every rank)",
	  RT_VW_WARNING, "rerun it to the end; `ranktrace verdict --stall` tells whether it was "
	  "hung when it was stopped" },
	{ "died-inside", 40, RT_V_CRASHED, d_died_inside, "a rank died inside a call",
	  RT_VW_ERROR, ADV_CRASH },
	{ "exit-status", 45, RT_V_CRASHED, d_exit_status, "a rank exited with a non-zero status",
	  RT_VW_ERROR, ADV_CRASH },
	{ "no-end", 42, RT_V_CRASHED, d_no_end, "a rank's complete trace has no end record",
	  RT_VW_ERROR, ADV_CRASH },
	{ "crashed-in-teardown", 47, RT_V_HEALTHY, d_teardown,
	  "a rank ended abnormally in teardown, after training finished (not a crash of training)",
	  RT_VW_WARNING, "training finished: the verdict is the training's; if it repeats, read "
	  "the rank's last lines of output (gloo's teardown aborts a few % of CPU runs)" },
	{ "unknown-frees", 60, RT_V_HEALTHY, d_unknown_frees, "frees of pointers never allocated",
	  RT_VW_NOTE, NULL },
	{ "discarded", 55, RT_V_HEALTHY, d_discarded, "events discarded at the size cap",
	  RT_VW_WARNING, "rerun with a larger `ranktrace run --max-size`" },
	{ "incomplete", 50, RT_V_INCONCLUSIVE, d_incomplete, "a rank's trace is incomplete",
	  RT_VW_WARNING, NULL },
	{ "missing-ranks", 49, RT_V_INCONCLUSIVE, d_missing, "ranks of the job have no trace",
	  RT_VW_WARNING, NULL },
};

/* Per rank, from the latest placement of each parameter: how many are on
 * meta, how many at freed storage (the detectors read these). */
static void count_params(struct rt_vw_trace *t)
{
	for (int i = 0; i < t->nranks; i++) {
		struct rt_vw_rank *r = &t->ranks[i];

		r->params_meta = 0;
		for (uint32_t q = 0; q < r->nparams; q++) {
			r->params_meta += r->params[q].place == RT_P_META;
			r->params_freed += r->params[q].place == RT_P_FREED;
		}
	}
}

/* Severity, then rank (trace-wide first), then the order found. */
static void sort_findings(struct rt_vw_trace *t)
{
	for (int i = 1; i < t->nfindings; i++) {
		struct rt_vw_finding f = t->findings[i];
		int j = i;

		while (j > 0 && (t->findings[j - 1].severity > f.severity ||
				 (t->findings[j - 1].severity == f.severity &&
				  t->findings[j - 1].rank > f.rank))) {
			t->findings[j] = t->findings[j - 1];
			j--;
		}
		t->findings[j] = f;
	}
}

void rt_vw_analyse(struct rt_vw_trace *t)
{
	bool any_crashed = false;

	count_params(t);
	for (int i = 0; i < t->nranks; i++)
		t->ranks[i].teardown_crash = rt_vw_teardown_crash(&t->ranks[i]);
	for (size_t i = 0; i < sizeof(detectors) / sizeof(detectors[0]); i++)
		detectors[i].fn(t, &detectors[i]);
	rt_vw_straggler_detect(t); /* straggler.c: from device times */
	for (int i = 0; i < t->nranks; i++)
		any_crashed = any_crashed || (t->ranks[i].readable && crashed_training(&t->ranks[i]));
	sort_findings(t);
	rt_vw_decide(t, any_crashed);
}
