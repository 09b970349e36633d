/* SPDX-License-Identifier: MIT */
/* model.c - one rank's model, event by event: memory, devices,
 * communicator init, collectives, errors, parameters, how it ended.
 *
 * rt_vw_on_event is called for every event of one rank in that rank's time
 * order (parallel.c merges each rank's streams; ranks run on several
 * threads, each rank on one at a time). It updates the rank (live
 * allocation map, bytes per device, devices used, counters) and hands what
 * concerns other ranks (communicator sizes, collectives) to the sink it is
 * given (struct rt_vw_sink: the matcher, or parallel.c's per-rank log).
 * Nothing here looks at other ranks: that is the matcher's and the
 * detectors' job. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "device.h"
#include "model.h"
#include "model_int.h"
#include "rt_util.h"

/* ---- per-event model update ---- */

static void use_device(struct rt_vw_rank *r, int dev)
{
	if (dev >= 0 && dev < RT_VW_MAX_DEV)
		r->devices_used |= 1ull << dev;
}

/* Runtime allocations and frees; memory.c counts every path once. */
static void on_alloc(struct rt_vw_rank *r, const struct rt_vw_event *e, bool host)
{
	uint64_t size = (uint64_t)rt_vw_fld(e, RT_FN_size);

	if (rt_field_at[e->id][RT_FN_pitch] >= 0) /* cudaMallocPitch: pitch * height bytes */
		size = (uint64_t)rt_vw_fld(e, RT_FN_pitch) * (uint64_t)rt_vw_fld(e, RT_FN_height);
	rt_vw_memory_alloc(r, e, size, host);
}

static void on_free(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	rt_vw_memory_free(r, e);
}

/* The live allocation holding ptr: its base first, then (when scan) every
 * live allocation's range (rt_vw_map_holding). NULL if none. The tracer
 * records copy pointers; their devices are resolved here. */
static struct rt_vw_alloc *alloc_holding(struct rt_vw_rank *r, uint64_t ptr, bool scan)
{
	struct rt_vw_alloc *a = ptr ? rt_vw_map_find(r->live, ptr) : NULL;

	if (!a && ptr && scan)
		a = rt_vw_map_holding(r->live, ptr);
	return a;
}

static int device_of(struct rt_vw_rank *r, uint64_t ptr)
{
	/* copies are many: scan only small maps */
	struct rt_vw_alloc *a = alloc_holding(r, ptr, r->live->live < 4096);

	return a ? a->dev : -1;
}

/* The latest placement of each parameter; its pointer checked against the
 * rank's live allocations (tensor on cuda:N, data in device M's memory?). */
static void on_param(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	char name[65];
	int devtype = (int)rt_vw_fld(e, RT_FN_devtype), dev = (int)rt_vw_fld(e, RT_FN_device);
	uint64_t numel = (uint64_t)rt_vw_fld(e, RT_FN_numel), bytes = (uint64_t)rt_vw_fld(e, RT_FN_bytes);
	uint64_t ptr = (uint64_t)rt_vw_fld(e, RT_FN_ptr);
	struct rt_vw_param *p = NULL;
	uint8_t place;

	rt_field_text(e->id, e->fields, RT_FN_name, name);
	if (devtype == RT_PDEV_meta)
		place = RT_P_META;
	else if (numel > 0 && bytes == 0)
		place = RT_P_FREED;
	else if (devtype == RT_PDEV_cpu)
		place = RT_P_CPU;
	else
		place = RT_P_CUDA;
	if (place == RT_P_CUDA && ptr) {
		struct rt_vw_alloc *a = alloc_holding(r, ptr, true);

		if (a && a->dev >= 0 && a->dev != dev) {
			place = RT_P_WRONG_DEVICE;
			r->params_misplaced++;
		}
	}
	for (uint32_t i = 0; i < r->nparams; i++)
		if (!strcmp(r->params[i].name, name)) {
			p = &r->params[i];
			break;
		}
	if (!p) {
		if (!RT_GROW(r->params, r->nparams, r->params_cap, 64, UINT32_MAX))
			return;
		p = &r->params[r->nparams++];
		memset(p, 0, sizeof(*p)); /* realloc'd: was_meta read below */
		snprintf(p->name, sizeof(p->name), "%s", name);
	}
	if (place == RT_P_META && !p->was_meta) {
		p->was_meta = true;
		r->params_ever_meta++;
	}
	p->place = place;
	p->device = (int8_t)dev;
	p->numel = numel;
	p->bytes = bytes;
	r->params_reported++;
	{
		/* freed storage keeps a stale pointer: it falls in no allocation of its own */
		struct rt_vw_alloc *a = ptr && place != RT_P_FREED && place != RT_P_META ?
			alloc_holding(r, ptr, place != RT_P_CPU || r->live->live < 4096) : NULL;
		struct rt_vw_placement pl = {
			.shape = rt_vw_take_shape(r, name), .layout = rt_vw_take_layout(r, name), .place = place, .device = (int8_t)dev, .dtype = (uint8_t)rt_vw_fld(e, RT_FN_dtype),
			.numel = numel, .bytes = bytes, .ptr = ptr, .ts = e->ts, .in_alloc = a != NULL,
			.alloc_dev = a ? a->dev : -1, .alloc_call = a ? a->api : 0,
			.alloc_base = a ? a->ptr : 0, .alloc_size = a ? a->size : 0,
		};

		rt_vw_param_record(r, p, &pl);
	}
}

/* The actions as traces record them (rt_fault.action), from actions.def. */
enum { ACT_NONE,
#define RT_ACTION(E, nm, v, calls, points, usage, doc) ACT_##E,
#include "actions.def"
#undef RT_ACTION
};

int rt_vw_fault_spec(const struct rt_vw_event *e, char *out, size_t n)
{
	static const char *const acts[] = {
		"",
#define RT_ACTION(E, nm, v, calls, points, usage, doc) #nm,
#include "actions.def"
#undef RT_ACTION
	};
	char target[65];
	int a = (int)rt_vw_fld(e, RT_FN_action);
	int64_t arg = rt_vw_fld(e, RT_FN_arg);
	const char *code = NULL;

	rt_field_text(e->id, e->fields, RT_FN_target, target);
	if (a == ACT_ERROR && !strchr(target, '.')) /* a function: NVIDIA's name */
		for (unsigned id = 0; id < RT_ID_COUNT && !code; id++)
			if (!strcmp(rt_events[id].name, target))
				code = rt_result_name(rt_events[id].lib, arg);
	if (a <= 0 || a >= (int)(sizeof(acts) / sizeof(acts[0])))
		return snprintf(out, n, "%s:?", target);
	if (code)
		return snprintf(out, n, "%s:%s=%s", target, acts[a], code);
	if (a == ACT_ERROR || a == ACT_DEVICE || a == ACT_KILL)
		return snprintf(out, n, "%s:%s=%lld", target, acts[a], (long long)arg);
	if (a == ACT_DELAY || a == ACT_DEVDELAY)
		return snprintf(out, n, "%s:%s=%lldns", target, acts[a], (long long)arg);
	return snprintf(out, n, "%s:%s", target, acts[a]);
}

/* What every event says: counts, times, a call that never returned, errors. */
static void on_any(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	r->events++;
	r->api_events += rt_id_is_api(e->id);
	r->cur_ts = e->ts;
	rt_vw_track_calls(r, e);
	if (!r->first_ts || e->ts < r->first_ts)
		r->first_ts = e->ts;
	if (e->ts > r->last_ts)
		r->last_ts = e->ts;
	/* only the rank's main process decides how the rank ended */
	if (e->pending && (int)e->pid == r->meta.pid) {
		r->died = true;
		r->died_id = (uint16_t)e->id;
	}
	if (!e->pending && e->ret != 0 && rt_id_is_api(e->id)) {
		const char *code = rt_result_name(rt_events[e->id].lib, e->ret);
		char num[16];

		snprintf(num, sizeof(num), "%d", e->ret);
		r->errors++;
		/* NVIDIA's name for the code (ncclSystemError), the number if unknown */
		snprintf(r->last_error, sizeof(r->last_error), "%s returned %s", rt_events[e->id].name,
			 code ? code : num);
		if (!r->first_error[0])
			snprintf(r->first_error, sizeof(r->first_error), "%s", r->last_error);
	}
}

/* A call by its role in the call table: memory, devices, streams,
 * communicators. False: not one of these. */
static bool on_role(const struct rt_vw_sink *to, struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	switch (rt_events[e->id].role) {
	case RT_R_ALLOC:
		on_alloc(r, e, rt_events[e->id].arg == RT_A_HOST);
		return true;
	case RT_R_FREE:
		on_free(r, e);
		return true;
	case RT_R_COPY:
		use_device(r, e->dev);
		if (e->ret == 0 && !e->pending) {
			use_device(r, device_of(r, (uint64_t)rt_vw_fld(e, RT_FN_dst)));
			use_device(r, device_of(r, (uint64_t)rt_vw_fld(e, RT_FN_src)));
		}
		return true;
	case RT_R_COPY_PEER:
		if (e->ret == 0 && !e->pending) {
			use_device(r, (int)rt_vw_fld(e, RT_FN_dst_device));
			use_device(r, (int)rt_vw_fld(e, RT_FN_src_device));
		}
		return true;
	case RT_R_MEMSET:
		use_device(r, e->dev);
		return true;
	case RT_R_STREAM_CREATE:
		if (e->ret == 0 && !e->pending)
			r->streams_created++;
		return true;
	case RT_R_COMM_INIT:
		if (r->init_device < 0) {
			r->init_device = e->dev;
			r->init_ret = e->pending ? -1 : e->ret;
		}
		if (e->ret == 0 && !e->pending) {
			if (r->comm_device < 0)
				r->comm_device = e->dev;
			to->learn(to->ctx, (uint64_t)rt_vw_fld(e, RT_FN_comm_id),
				  (int)rt_vw_fld(e, RT_FN_nranks), false);
			use_device(r, e->dev);
		}
		return true;
	case RT_R_COMM_SPLIT: /* its size as NCCL counts it; else count who joins */
		if (e->ret != 0 || e->pending || !rt_vw_fld(e, RT_FN_comm_id))
			return true;
		if (rt_vw_fld(e, RT_FN_nranks) > 0)
			to->learn(to->ctx, (uint64_t)rt_vw_fld(e, RT_FN_comm_id),
				  (int)rt_vw_fld(e, RT_FN_nranks), false);
		else
			to->join(to->ctx, (uint64_t)rt_vw_fld(e, RT_FN_comm_id));
		return true;
	case RT_R_COMM_INIT_ALL: /* all its ranks are this process's devices */
		if (e->ret == 0 && !e->pending) {
			r->multi_device = true;
			to->learn(to->ctx, (uint64_t)rt_vw_fld(e, RT_FN_comm_id),
				  (int)rt_vw_fld(e, RT_FN_nranks), true);
		}
		return true;
	default:
		return false;
	}
}

/* The tracer's own events and the probe's. False: none of them. */
static bool on_tracer_event(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	switch (e->id) {
	case RT_ID_rt_param:
		on_param(r, e);
		return true;
	case RT_ID_rt_param_shape:
		rt_vw_param_shape(r, e);
		return true;
	case RT_ID_rt_fsdp_forward:
		if (rt_vw_fld(e, RT_FN_phase) == 0)
			r->fsdp_root_forwards++;
		return true;
	case RT_ID_rt_marker:
		r->markers++;
		if (!rt_vw_teardown_marker(r, e))
			rt_vw_param_marker(r, e);
		return true;
	case RT_ID_rt_unwrapped_call:
		rt_vw_unwrapped_event(r, e);
		return true;
	case RT_ID_rt_param_dtensor:
	case RT_ID_rt_exception:
	case RT_ID_rt_exception_text:
	case RT_ID_rt_optim_step:
	case RT_ID_rt_inj_rule:
		rt_vw_evidence_event(r, e);
		return true;
	case RT_ID_rt_fault:
		r->faults++;
		if (rt_vw_fld(e, RT_FN_rule) < 64)
			r->rules_fired |= 1ull << rt_vw_fld(e, RT_FN_rule);
		if (!r->first_fault[0]) {
			char spec[128];

			rt_vw_fault_spec(e, spec, sizeof(spec));
			snprintf(r->first_fault, sizeof(r->first_fault), "%s at call %lld", spec,
				 (long long)rt_vw_fld(e, RT_FN_call));
		}
		return true;
	case RT_ID_rt_exit:
		if ((int)e->pid == r->meta.pid) {
			r->exit_seen = true;
			r->exit_status = (int)rt_vw_fld(e, RT_FN_status);
		}
		return true;
	case RT_ID_rt_signal:
		if ((int)e->pid == r->meta.pid) {
			r->exit_seen = true;
			r->signo = (int)rt_vw_fld(e, RT_FN_signo);
			r->signal_ts = r->signal_ts ? r->signal_ts : e->ts;
		}
		return true;
	case RT_ID_rt_trace_stop: /* the writer stopped early: the first reason counts */
		if (!r->stopped) {
			r->stopped = true;
			r->stop_reason = (unsigned)rt_vw_fld(e, RT_FN_reason);
			r->stop_events = (uint64_t)rt_vw_fld(e, RT_FN_events);
		}
		return true;
	default:
		return rt_vw_memory_driver_event(r, e);
	}
}

/* A collective or point-to-point call: counted, kept for diff, matched. */
static void on_collective(const struct rt_vw_sink *to, unsigned flags, int ri, struct rt_vw_rank *r,
			  const struct rt_vw_event *e)
{
	int ck;

	ck = rt_vw_coll_kind(e->id);
	if (ck < 0)
		return;
	r->colls[ck]++;
	use_device(r, e->dev);
	if (ck == RT_CK_Broadcast && r->colls[RT_CK_AllGather] == 0)
		r->broadcasts_before_allgather++;
	{
		struct rt_vw_sig s = { .kind = (uint8_t)ck, .dtype = (uint8_t)rt_vw_fld(e, RT_FN_datatype),
				 .op = (uint8_t)rt_vw_fld(e, RT_FN_op), .root = (int32_t)rt_vw_fld(e, RT_FN_root),
				 .count = (uint64_t)rt_vw_fld(e, RT_FN_count) };
		uint64_t comm = (uint64_t)rt_vw_fld(e, RT_FN_comm_id);
		uint32_t seq = (uint32_t)rt_vw_fld(e, RT_FN_seq);

		if (rt_ck_is_p2p(ck))
			s.root = (int32_t)rt_vw_fld(e, RT_FN_peer);
		if ((flags & RT_VW_KEEP_CALLS) && r->ncalls < RT_VW_MAX_CALLS) {
			if (RT_GROW(r->calls, r->ncalls, r->calls_cap, 64, UINT32_MAX))
				r->calls[r->ncalls++] = (struct rt_vw_call_sig){ s.kind, s.dtype, s.op, s.root,
										 s.count, comm, seq };
		}
		/* seq 0: a call NCCL never numbered (an injected skip's); the
		 * first such communicator goes to the matcher in order */
		if (rt_ck_is_collective(ck) && comm && seq) {
			to->match(to->ctx, ri, comm, seq, &s);
		} else if (rt_ck_is_collective(ck) && comm && !r->skipped_comm) {
			r->skipped_comm = comm;
			to->match(to->ctx, ri, comm, 0, &s);
		}
	}
}

/* rt_comm: a communicator made (or being made) with its size, however it
 * was made: the matcher learns it. A non-blocking split's call returns
 * before NCCL knows its size (ncclInProgress: no comm_id, no nranks); its
 * record, written once the split is made, is the only word of its size. */
static void learn_comm(const struct rt_vw_sink *to, const struct rt_vw_event *e)
{
	uint64_t id = (uint64_t)rt_vw_fld(e, RT_FN_comm_id);
	int nranks = (int)rt_vw_fld(e, RT_FN_nranks);

	if (id && nranks > 0 && rt_vw_fld(e, RT_FN_state) != 2)
		to->learn(to->ctx, id, nranks, rt_vw_fld(e, RT_FN_how) == RT_COMM_INIT_ALL);
}

void rt_vw_on_event(struct rt_vw_trace *t, const struct rt_vw_sink *to, int ri,
		    const struct rt_vw_event *e)
{
	struct rt_vw_rank *r = &t->ranks[ri];

	r->keep_mem = (t->flags & RT_VW_KEEP_MEMORY) != 0;
	on_any(r, e);
	if (rt_vw_dev_event(r, e)) /* device.c: device-side records end here */
		return;
	if (e->id == RT_ID_rt_comm)
		learn_comm(to, e);
	if (rt_vw_comms_event(r, e)) /* comms.c: communicators, Send/Recv on the device */
		return;
	rt_vw_teardown_activity(r, e);
	if (!on_role(to, r, e) && !on_tracer_event(r, e))
		on_collective(to, t->flags, ri, r, e);
}
