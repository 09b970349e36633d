/* SPDX-License-Identifier: MIT */
/* detectors.c - findings and the verdict, from the finished rank models.
 *
 * Runs once after the pass. Each finding has a severity (lower is more
 * important, the sort key) and a failure signature; the verdict is the
 * signature of the most important finding, or healthy. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_int.h"

static void vadd(struct rt_vw_trace *t, int rank, int severity, enum rt_vw_verdict sigv,
		 const char *fmt, va_list ap)
{
	struct rt_vw_finding *f;

	f = realloc(t->findings, sizeof(*f) * (size_t)(t->nfindings + 1));
	if (!f)
		return;
	t->findings = f;
	f = &t->findings[t->nfindings++];
	f->severity = severity;
	f->signature = sigv;
	f->rank = rank;
	vsnprintf(f->text, sizeof(f->text), fmt, ap);
}

void rt_vw_add_finding(struct rt_vw_trace *t, int severity, enum rt_vw_verdict sigv,
			const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vadd(t, -1, severity, sigv, fmt, ap);
	va_end(ap);
}

void rt_vw_add_rank_finding(struct rt_vw_trace *t, int rank, int severity, enum rt_vw_verdict sigv,
			     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vadd(t, rank, severity, sigv, fmt, ap);
	va_end(ap);
}


/* The host as NCCL tells ranks apart (NCCL_HOSTID, else the hostname):
 * "one rank per device" holds per NCCL host, so ranks given distinct
 * NCCL_HOSTIDs may share a GPU (they talk over NCCL's network transport). */
static const char *nccl_host(const struct rt_vw_rank *r)
{
	return r->meta.nccl_host[0] ? r->meta.nccl_host : r->meta.hostname;
}

/* ---- findings and verdict ---- */

bool rt_vw_crashed(const struct rt_vw_rank *r)
{
	if (r->state == RT_S_RUNNING) /* alive: not dead, whatever its trace lacks */
		return false;
	return r->signo || (r->exit_seen && r->exit_status > 0) || r->died_in[0] ||
	       (!r->exit_seen && r->readable);
}

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

static int cmp_finding(const void *a, const void *b)
{
	const struct rt_vw_finding *x = a, *y = b;

	return x->severity - y->severity;
}

void rt_vw_analyse(struct rt_vw_trace *t)
{
	int idx[1024], k;
	bool all_crashed = true, any_crashed = false, all_bcast_no_ag = true;
	char list[256];

	for (int i = 0; i < t->nranks; i++) {
		struct rt_vw_rank *r = &t->ranks[i];

		if (!r->readable)
			continue;
		if (!end_evidence(t, i)) /* "no all-gather" needs every rank's whole run */
			all_bcast_no_ag = false;
		if (rt_vw_crashed(r))
			any_crashed = true;
		else
			all_crashed = false;
		if (!(r->broadcasts_before_allgather > 0 && r->colls[RT_CK_AllGather] == 0))
			all_bcast_no_ag = false;
	}
	/* FSDP root forward never ran: inferred from NCCL alone, confirmed by the
	 * probe when it reported (no root forward, parameters with freed storage) */
	{
		bool probed = true, confirmed = true;
		uint64_t freed = 0;

		for (int i = 0; i < t->nranks; i++) {
			const struct rt_vw_rank *r = &t->ranks[i];
			uint64_t f = 0;

			if (!r->readable)
				continue;
			for (uint32_t q = 0; q < r->nparams; q++)
				f += r->params[q].place == RT_P_FREED;
			freed += f;
			if (!r->params_reported)
				probed = false;
			else if (r->fsdp_root_forwards || !f)
				confirmed = false;
		}
		for (int i = 0; i < t->nranks; i++)
			if (!end_evidence(t, i)) {
				probed = false;
				confirmed = false;
			}
		if (probed && confirmed && all_crashed && t->nranks > 0)
			rt_vw_add_finding(t, 9, RT_V_SKIPPED_FSDP_ROOT,
				    "FSDP root forward never ran (probe): no rank ran the root forward, "
				    "%llu parameter views across ranks point at storage FSDP freed, and every "
				    "rank crashed", (unsigned long long)freed);
		else if (all_crashed && all_bcast_no_ag && t->nranks > 0 && (!probed || confirmed))
			rt_vw_add_finding(t, 10, RT_V_SKIPPED_FSDP_ROOT,
				    "FSDP root forward never ran: every rank did its init broadcasts "
				    "(sync_module_states) but no all-gather followed, and every rank crashed "
				    "(the trainer called the unwrapped module; cf. transformers 4.53.0)");
	}
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		uint64_t meta = 0;

		if (r->faults)
			rt_vw_add_rank_finding(t, r->meta.rank, 30, RT_V_HEALTHY, "rank %d: %llu injected fault%s fired (first: %s)",
				    r->meta.rank, (unsigned long long)r->faults, r->faults == 1 ? "" : "s",
				    r->first_fault);
		if (r->params_misplaced)
			rt_vw_add_rank_finding(t, r->meta.rank, 7, RT_V_DEVICE_MISPLACEMENT,
				    "rank %d: %llu parameter report%s point into memory of another device",
				    r->meta.rank, (unsigned long long)r->params_misplaced,
				    r->params_misplaced == 1 ? "" : "s");
		for (uint32_t q = 0; q < r->nparams; q++) {
			meta += r->params[q].place == RT_P_META;
			((struct rt_vw_rank *)r)->params_freed += r->params[q].place == RT_P_FREED;
		}
		((struct rt_vw_rank *)r)->params_meta = meta;
		if (r->params_ever_meta && !meta)
			rt_vw_add_rank_finding(t, r->meta.rank, 58, RT_V_HEALTHY, "rank %d: %llu parameter%s arrived on meta "
				    "(cpu_ram_efficient_loading) and were materialised later",
				    r->meta.rank, (unsigned long long)r->params_ever_meta,
				    r->params_ever_meta == 1 ? "" : "s");
		if (meta && rt_vw_crashed(r))
			rt_vw_add_rank_finding(t, r->meta.rank, 35, RT_V_HEALTHY, "rank %d: %llu parameter%s still on meta when it "
				    "ended (never materialised: cpu_ram_efficient_loading without the "
				    "sync_module_states broadcast?)", r->meta.rank, (unsigned long long)meta,
				    meta == 1 ? "" : "s");
	}
	/* several ranks on one device of one host */
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
			if (j < i)
				first = false;
			if (k < 1024)
				idx[k++] = j;
		}
		if (k > 1 && first) {
			list_ranks(list, sizeof(list), t, idx, k);
			rt_vw_add_finding(t, 5, RT_V_DEVICE_MISPLACEMENT,
				    "ranks %s all use device %d on host %s (NCCL allows one rank per "
				    "device: \"Duplicate GPU detected\")%s",
				    list, a->init_device, nccl_host(a),
				    a->init_ret ? "; their communicator init failed" : "");
		}
	}
	/* a rank working on a device other than its own */
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		int expect = r->meta.local_rank >= 0 ? r->meta.local_rank : r->comm_device;
		uint64_t others;

		if (expect < 0 || expect >= RT_VW_MAX_DEV || !r->readable || r->dup_of >= 0)
			continue;
		others = r->devices_used & ~(1ull << expect);
		if (!others)
			continue;
		for (int d = 0; d < RT_VW_MAX_DEV; d++)
			if (others & (1ull << d)) {
				rt_vw_add_rank_finding(t, r->meta.rank, 6, RT_V_DEVICE_MISPLACEMENT,
					    "rank %d used device %d, expected device %d (%s)", r->meta.rank,
					    d, expect, r->meta.local_rank >= 0 ? "LOCAL_RANK" : "its communicator's");
				break;
			}
	}
	/* how ranks ended */
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		if (!r->readable || r->state == RT_S_RUNNING)
			continue;
		if (r->signo)
			rt_vw_add_rank_finding(t, r->meta.rank, 40, RT_V_CRASHED, "rank %d was killed by signal %d%s%s", r->meta.rank,
				    r->signo, r->died_in[0] ? " inside " : "", r->died_in);
		else if (r->died_in[0] && rt_vw_evidence_complete(t, i))
			rt_vw_add_rank_finding(t, r->meta.rank, 40, RT_V_CRASHED, "rank %d died inside %s (the call never returned)",
				    r->meta.rank, r->died_in);
		else if (r->exit_seen && r->exit_status > 0)
			rt_vw_add_rank_finding(t, r->meta.rank, 45, RT_V_CRASHED, "rank %d exited with status %d%s%s", r->meta.rank,
				    r->exit_status, r->first_error[0] ? "; first error: " : "",
				    r->first_error);
		else if (!r->exit_seen && rt_vw_evidence_complete(t, i))
			rt_vw_add_rank_finding(t, r->meta.rank, 42, RT_V_CRASHED, "rank %d has no recorded end (killed with SIGKILL?); "
				    "last event at +%.3f s", r->meta.rank,
				    (double)(r->last_ts - r->first_ts) / 1e9);
		if (r->unknown_frees)
			rt_vw_add_rank_finding(t, r->meta.rank, 60, RT_V_HEALTHY, "rank %d freed %" PRIu64 " pointer(s) it never "
				    "allocated (allocated before tracing, or invalid)", r->meta.rank,
				    r->unknown_frees);
		if (r->discarded)
			rt_vw_add_rank_finding(t, r->meta.rank, 55, RT_V_HEALTHY, "rank %d: %" PRIu64 " events discarded (size cap)",
				    r->meta.rank, r->discarded);
	}
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].completeness != RT_C_COMPLETE && t->ranks[i].completeness != RT_C_LIVE)
			rt_vw_add_rank_finding(t, t->ranks[i].meta.rank, 50, RT_V_INCONCLUSIVE, "%s: %s", t->ranks[i].name,
					  t->ranks[i].incomplete);
	if (t->nmissing)
		rt_vw_add_finding(t, 49, RT_V_INCONCLUSIVE, "%s", t->inconclusive);
	if (t->nfindings > 1)
		qsort(t->findings, (size_t)t->nfindings, sizeof(*t->findings), cmp_finding);
	rt_vw_decide(t, any_crashed);
}
