/* SPDX-License-Identifier: MIT */
/* view_json.c - `ranktrace view --json`: schema ranktrace.view/1
 * (docs/json.md, each object a table there, checked both ways by
 * test_json_docs.sh). A view of the report (report.c) written through
 * util/'s JSON writer, every key from format/json_keys.def. */
#include <math.h>
#include <stdio.h>

#include "comms.h"
#include "export.h"
#include "finding_say.h"
#include "json.h"
#include "json_keys.h"
#include "view.h"

/* A map of device (as a string key) to bytes, devices with a non-zero value. */
static void device_map(struct rt_json *w, const char *key, const uint64_t *v)
{
	rt_json_obj(w, key);
	for (int d = 0; d < RT_VW_MAX_DEV; d++)
		if (v[d]) {
			char dev[8];

			snprintf(dev, sizeof(dev), "%d", d);
			rt_json_uint(w, dev, v[d]);
		}
	rt_json_end(w);
}

/* Where the rank's device memory came from: the driver path and CUPTI. */
static void rank_memory(struct rt_json *w, const struct rt_vw_rank *r)
{
	rt_json_arr(w, RT_JK(devices));
	for (int d = 0; d < RT_VW_MAX_DEV; d++)
		if (r->devices_used & (1ull << d))
			rt_json_int(w, NULL, d);
	rt_json_end(w);
	device_map(w, RT_JK(peak_device_bytes), r->dev_peak);
	device_map(w, RT_JK(device_bytes), r->dev_bytes);
	rt_json_obj(w, RT_JK(driver));
	rt_json_uint(w, RT_JK(allocations), r->drv_allocs);
	rt_json_uint(w, RT_JK(bytes), r->drv_bytes);
	rt_json_uint(w, RT_JK(vmm_handles), r->vmm_handles);
	rt_json_uint(w, RT_JK(vmm_maps), r->vmm_maps);
	rt_json_uint(w, RT_JK(seen_twice), r->dup_allocs);
	rt_json_end(w);
	rt_json_obj(w, RT_JK(cupti));
	rt_json_str(w, RT_JK(state), r->cupti == 1 ? "active" : r->cupti == 2 ? "unavailable" : "off");
	rt_json_str(w, RT_JK(detail), r->cupti_detail);
	rt_json_uint(w, RT_JK(memory_records), r->cupti_records);
	rt_json_uint(w, RT_JK(allocated_bytes), r->cupti_alloc_bytes);
	rt_json_end(w);
}

/* Calls and the probe's counts. */
static void rank_counts(struct rt_json *w, const struct rt_vw_rank *r)
{
	rt_json_uint(w, RT_JK(allocations), r->allocs);
	rt_json_uint(w, RT_JK(frees), r->frees);
	rt_json_uint(w, RT_JK(failed_allocations), r->failed_allocs);
	rt_json_obj(w, RT_JK(collectives));
	for (int k = 0; k < RT_CK_COUNT; k++)
		rt_json_uint(w, rt_coll_names[k], r->colls[k]);
	rt_json_end(w);
	rt_json_uint(w, RT_JK(streams_created), r->streams_created);
	rt_json_uint(w, RT_JK(errors), r->errors);
	rt_json_uint(w, RT_JK(fsdp_root_forwards), r->fsdp_root_forwards);
	rt_json_obj(w, RT_JK(params));
	rt_json_uint(w, RT_JK(reported), r->params_reported);
	rt_json_uint(w, RT_JK(storage_freed), r->params_freed);
	rt_json_uint(w, RT_JK(meta), r->params_meta);
	rt_json_uint(w, RT_JK(ever_meta), r->params_ever_meta);
	rt_json_uint(w, RT_JK(distinct), r->nparams);
	rt_json_end(w);
	rt_json_uint(w, RT_JK(faults), r->faults);
}

/* How the trace of the rank ends: its end, an early stop, damage. */
static void rank_end(struct rt_json *w, const struct rt_vw_report_rank *row)
{
	const struct rt_vw_rank *r = row->r;

	rt_json_str(w, RT_JK(end), row->end);
	if (r->stopped) {
		rt_json_obj(w, RT_JK(trace_stop));
		rt_json_str(w, RT_JK(reason), rt_stop_word(r->stop_reason) ?: "unknown");
		rt_json_uint(w, RT_JK(at_event), r->stop_events);
		rt_json_end(w);
	} else {
		rt_json_null(w, RT_JK(trace_stop));
	}
	rt_json_uint(w, RT_JK(ring_bytes), r->meta.ring_bytes);
	rt_json_nstr(w, RT_JK(damaged), r->damaged);
}

/* A rank's completeness, state, open calls and idle time. */
static void rank_live(struct rt_json *w, const struct rt_vw_report_rank *row)
{
	const struct rt_vw_rank *r = row->r;

	rt_json_str(w, RT_JK(completeness), rt_vw_completeness_names[r->completeness]);
	rt_json_nstr(w, RT_JK(incomplete), row->incomplete);
	rt_json_str(w, RT_JK(state), rt_vw_state_names[r->state]);
	rt_json_fixed(w, RT_JK(idle_s), r->idle_s >= 0 ? r->idle_s : NAN, 3);
	rt_json_arr(w, RT_JK(open_calls));
	for (int k = 0; k < r->nopen; k++) {
		const struct rt_vw_open_call *o = &r->open[k];

		rt_json_obj(w, NULL);
		rt_json_str(w, RT_JK(call), rt_events[o->id].name);
		rt_json_uint(w, RT_JK(tid), o->tid);
		if (o->comm_id) {
			rt_json_strf(w, RT_JK(comm), "%016llx", (unsigned long long)o->comm_id);
			rt_json_uint(w, RT_JK(seq), o->seq);
		}
		rt_json_fixed(w, RT_JK(age_s), o->age_s >= 0 ? o->age_s : NAN, 3);
		rt_json_end(w);
	}
	rt_json_end(w);
}

/* The probe's evidence of a skipped FSDP root and of teardown. */
static void rank_probe(struct rt_json *w, const struct rt_vw_rank *r)
{
	rt_json_obj(w, RT_JK(unwrapped));
	rt_json_uint(w, RT_JK(calls), r->unwrapped_calls);
	rt_json_uint(w, RT_JK(root_forwards_before), r->root_forwards_before_unwrapped);
	rt_json_arr(w, RT_JK(sites));
	for (int i = 0; i < r->nunwrapped; i++) {
		rt_json_obj(w, NULL);
		rt_json_str(w, RT_JK(module), r->lists->unwrapped[i].module);
		rt_json_str(w, RT_JK(caller), r->lists->unwrapped[i].caller);
		rt_json_uint(w, RT_JK(calls), r->lists->unwrapped[i].calls);
		rt_json_end(w);
	}
	rt_json_end(w);
	rt_json_end(w);
	rt_json_obj(w, RT_JK(teardown));
	rt_json_str(w, RT_JK(began), r->teardown_how == 1 ? "destroy_process_group" :
				     r->teardown_how == 2 ? "exit" : NULL);
	rt_json_bool(w, RT_JK(crashed), r->teardown_crash);
	rt_json_end(w);
}

static void rank_json(struct rt_json *w, const struct rt_vw_report_rank *row)
{
	const struct rt_vw_rank *r = row->r;

	rt_json_obj(w, NULL);
	rt_json_int(w, RT_JK(rank), r->meta.rank);
	rt_json_str(w, RT_JK(dir), r->name);
	rt_json_str(w, RT_JK(host), r->meta.hostname);
	rt_json_int(w, RT_JK(local_rank), r->meta.local_rank);
	rt_json_str(w, RT_JK(rank_source), r->meta.rank_source);
	rt_json_uint(w, RT_JK(events), r->events);
	rt_json_uint(w, RT_JK(discarded), r->discarded);
	rank_memory(w, r);
	rank_counts(w, r);
	rank_end(w, row);
	rank_live(w, row);
	rank_probe(w, r);
	rt_json_end(w);
}

/* "values": a finding's named values (format/findings.def's RT_FVALUE
 * rows), numbers as numbers, flags as true, calls, signal-less texts and
 * endings as they read in its sentence. */
static void values_json(struct rt_json *w, const struct rt_vw_finding *f)
{
	rt_json_obj(w, RT_JK(values));
	for (int j = 0; j < f->nvals; j++) {
		const struct rt_vw_fval *v = &f->vals[j];
		const char *name = rt_fvalues[v->name].name;
		char s[200];
		struct rt_vw_sb b;

		switch (rt_fvalues[v->name].type) {
		case RT_FT_INT:
		case RT_FT_SIGNAL: rt_json_int(w, name, v->v.i); break;
		case RT_FT_REAL0:
		case RT_FT_REAL1:
		case RT_FT_REAL3: rt_json_fixed(w, name, v->v.d, 3); break;
		case RT_FT_FLAG: rt_json_bool(w, name, v->v.i != 0); break;
		case RT_FT_TRACE: break;
		default:
			b = rt_vw_sb_init(s, sizeof(s));
			rt_vw_say_value(&b, v);
			rt_json_str(w, name, s);
		}
	}
	rt_json_end(w);
}

/* "evidence": what each rank a finding is about several shows (a hang's
 * waiting ranks, who never entered or never made what the others wait
 * in, whose device started it): its role, the call it is inside and for
 * how long, a Send or Recv it waits in or never made with its peer. */
static void evidence_json(struct rt_json *w, const struct rt_vw_finding *f)
{
	rt_json_arr(w, RT_JK(evidence));
	for (int i = 0; i < f->nev; i++) {
		const struct rt_vw_evidence *e = &f->ev[i];
		bool p2p = e->op.id < RT_ID_COUNT, last = e->role == RT_EV_NEVER_ENTERED ||
			   e->role == RT_EV_NEVER_ENQUEUED || e->role == RT_EV_NEVER_MADE;
		char s[96];
		struct rt_vw_sb b = rt_vw_sb_init(s, sizeof(s));

		rt_json_obj(w, NULL);
		rt_json_int(w, RT_JK(rank), e->rank);
		rt_json_str(w, RT_JK(role), rt_vw_ev_role_names[e->role]);
		rt_vw_say_call(&b, e->call);
		rt_json_str(w, RT_JK(inside), e->call.id < RT_ID_COUNT ? s : NULL);
		if (e->frozen)
			rt_json_fixed(w, RT_JK(secs), e->secs, 3);
		else
			rt_json_null(w, RT_JK(secs));
		b = rt_vw_sb_init(s, sizeof(s));
		rt_vw_say_call(&b, e->op);
		rt_json_str(w, RT_JK(op), p2p ? s : NULL);
		if (p2p) {
			rt_json_int(w, RT_JK(peer), e->peer);
			rt_json_strf(w, RT_JK(comm), "%016llx", (unsigned long long)e->comm);
		} else {
			rt_json_null(w, RT_JK(peer));
			rt_json_null(w, RT_JK(comm));
		}
		if (last)
			rt_json_uint(w, RT_JK(last_seq), e->last_seq);
		else
			rt_json_null(w, RT_JK(last_seq));
		rt_json_end(w);
	}
	rt_json_end(w);
}

/* "members": the global ranks of a finding's communicator, or null where
 * the trace does not say them (no rt_comm records). */
static void members_json(struct rt_json *w, const struct rt_vw_trace *t, uint64_t comm)
{
	int m[RT_VW_FINDING_RANKS], n = rt_vw_comm_members(t, comm, m, RT_VW_FINDING_RANKS);

	if (!n) {
		rt_json_null(w, RT_JK(members));
		return;
	}
	rt_json_arr(w, RT_JK(members));
	for (int i = 0; i < n; i++)
		rt_json_int(w, NULL, m[i]);
	rt_json_end(w);
}

/* "findings": every finding about the ranks shown, with its level,
 * detector, advice, ranks and collective. */
static void findings_json(struct rt_json *w, const struct rt_vw_report *rp)
{
	const struct rt_vw_trace *t = rp->t;

	rt_json_arr(w, RT_JK(findings));
	rt_json_lines(w, 2, true);
	for (int i = 0; i < t->nfindings; i++) {
		const struct rt_vw_finding *f = &t->findings[i];
		const struct rt_finding_info *k = &rt_findings[f->kind];
		char text[RT_VW_FINDING_TEXT];

		if (rp->only >= 0 && f->rank >= 0 && f->rank != rp->only)
			continue;
		rt_vw_finding_text(t, f, text, sizeof(text));
		rt_json_obj(w, NULL);
		rt_json_str(w, RT_JK(signature), rt_verdicts[k->verdict].word);
		rt_json_int(w, RT_JK(rank), f->rank);
		rt_json_str(w, RT_JK(level), rt_level_names[k->level]);
		rt_json_str(w, RT_JK(id), k->id);
		rt_json_str(w, RT_JK(text), text);
		rt_json_str(w, RT_JK(advice), k->advice);
		rt_json_arr(w, RT_JK(ranks));
		for (int j = 0; j < f->nranks && j < RT_VW_FINDING_RANKS; j++)
			rt_json_int(w, NULL, f->ranks[j]);
		rt_json_end(w);
		if (f->coll.comm) {
			rt_json_strf(w, RT_JK(comm), "%016llx", (unsigned long long)f->coll.comm);
			rt_json_uint(w, RT_JK(seq), f->coll.seq);
			members_json(w, t, f->coll.comm);
		} else {
			rt_json_null(w, RT_JK(comm));
			rt_json_null(w, RT_JK(seq));
			rt_json_null(w, RT_JK(members));
		}
		values_json(w, f);
		evidence_json(w, f);
		rt_json_end(w);
	}
	rt_json_end(w);
}

/* "diagnosis": the findings as text view shows them with --all (collapsed). */
static void diagnosis_json(struct rt_json *w, const struct rt_vw_report *rp)
{
	rt_json_arr(w, RT_JK(diagnosis));
	rt_json_lines(w, 2, true);
	for (int k = 0; k < rp->ndiag; k++) {
		const struct rt_vw_diag *g = &rp->diag[k];

		rt_json_obj(w, NULL);
		rt_json_str(w, RT_JK(level), rt_level_names[g->level]);
		rt_json_str(w, RT_JK(text), g->text);
		rt_json_arr(w, RT_JK(ranks));
		for (int i = 0; i < g->nranks; i++)
			rt_json_int(w, NULL, g->ranks[i]);
		rt_json_end(w);
		rt_json_int(w, RT_JK(finding), g->first);
		rt_json_end(w);
	}
	rt_json_end(w);
}

/* The trace as a whole: verdict, completeness, world, liveness. */
static void trace_json(struct rt_json *w, const struct rt_vw_report *rp)
{
	const struct rt_vw_trace *t = rp->t;

	rt_json_str(w, RT_JK(schema), RT_JSCHEMA(view));
	rt_json_str(w, RT_JK(dir), t->dir);
	rt_json_str(w, RT_JK(verdict), rt_verdicts[t->verdict].word);
	rt_json_uint(w, RT_JK(events), t->events);
	rt_json_str(w, RT_JK(completeness), rt_vw_completeness_names[t->completeness]);
	rt_json_nstr(w, RT_JK(inconclusive), rp->why);
	rt_json_int(w, RT_JK(world_size), t->world_size);
	rt_json_arr(w, RT_JK(missing_ranks));
	for (int k = 0; k < t->nmissing; k++)
		rt_json_int(w, NULL, t->missing[k]);
	rt_json_end(w);
	rt_json_int(w, RT_JK(duplicate_ranks), t->duplicates);
	rt_json_int(w, RT_JK(running), t->running);
	rt_json_bool(w, RT_JK(hung), t->hung);
	rt_json_fixed(w, RT_JK(stall_s), (double)t->stall_ns / 1e9, 3);
	rt_json_nstr(w, RT_JK(laggard), rp->laggard);
}

int rt_vw_view_json(FILE *f, const struct rt_vw_report *rp)
{
	struct rt_json w;

	rt_json_init(&w, f, false);
	rt_json_obj(&w, NULL);
	trace_json(&w, rp);
	rt_vw_device_json(&w, rp->t);
	rt_json_arr(&w, RT_JK(ranks));
	rt_json_lines(&w, 2, true);
	for (int i = 0; i < rp->nranks; i++)
		rank_json(&w, &rp->ranks[i]);
	rt_json_end(&w);
	rt_vw_comms_json(&w, rp->t, rp->only);
	findings_json(&w, rp);
	diagnosis_json(&w, rp);
	rt_json_end(&w);
	return rt_json_finish(&w);
}
