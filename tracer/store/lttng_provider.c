/* SPDX-License-Identifier: MIT */
/* lttng_provider.c - libranktrace-lttng.so: the `ranktrace:*` LTTng-UST
 * provider and the one entry point libranktrace.so calls into it.
 *
 * Only this object links liblttng-ust: libranktrace.so dlopens it when a run
 * asks for the LTTng backend (RANKTRACE_BACKEND=lttng), so the tracer still
 * loads and traces natively on machines without LTTng-UST. rt_lttng_emit()
 * is called from the wrappers' hot path with a record already built (no
 * allocation, no lock: LTTng-UST's ring buffer is lock-free and may be
 * used from signal handlers). Generated from the call tables through
 * lttng_tp.h; nothing here names a function. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_tp.h"

#define RT_EXPORT __attribute__((visibility("default")))

/* libranktrace.so checks that both sides were built from one table. */
RT_EXPORT const unsigned rt_lttng_schema_events = RT_ID_COUNT;

RT_EXPORT void rt_lttng_emit(unsigned id, const uint8_t *fields, uint64_t dur, int ret, int dev)
{
	switch (id) {
#define RT_LT_CASE(name)                                                                \
	case RT_ID_##name:                                                              \
		lttng_ust_tracepoint(ranktrace, name,                                   \
				     (const struct rt_lt_lay_##name *)(const void *)fields, \
				     dur, ret, dev);                                    \
		break;
#define RT_API(name, ...) RT_LT_CASE(name)
#define RT_EVENT(name, ...) RT_LT_CASE(name)
#define RT_DRV(name, ...) RT_LT_CASE(name)
#include "cuda_api.def"
#include "nccl_api.def"
#include "driver_api.def"
#include "events.def"
#undef RT_API
#undef RT_EVENT
#undef RT_DRV
	default:
		break;
	}
}

RT_EXPORT void rt_lttng_identity(int rank, int local_rank, int world_size, int pid, int rank_pid,
				 const char *source, const char *host, const char *run_id)
{
	lttng_ust_tracepoint(ranktrace, rt_identity, rank, local_rank, world_size, pid, rank_pid,
			     source ? source : "", host ? host : "", run_id ? run_id : "");
}
