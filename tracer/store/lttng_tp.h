/* SPDX-License-Identifier: MIT */
/* lttng_tp.h - the LTTng-UST tracepoint provider `ranktrace:*`, generated from
 * the call tables (cuda_api.def, nccl_api.def, events.def).
 *
 * One tracepoint per interposed function and per tracer event, with the same
 * name and the same fields, in the same order, as the native CTF writer
 * (tracer/schema.c): dur_ns, ret, cur_dev, then the table's fields. Every
 * tracepoint takes the record the wrapper already built (its fields part,
 * in the native layout, see schema.h) plus the common values, so the
 * wrappers stay the native ones and nothing is declared twice.
 *
 * One event exists only here: rt_identity, which carries what the native
 * writer puts in a rank's CTF metadata env block (rank, local rank, world
 * size, pid, rank source, hostname, run id), and rank_pid: the process whose
 * rank this is (a forked child is its parent's rank, as natively it writes
 * into its parent's rank directory).
 *
 * LTTng-UST reads this header several times (MULTI_READ); the layouts are
 * defined once in lttng_layout.h. Included only by lttng_provider.c, which
 * is built into libranktrace-lttng.so, the one object linked with
 * liblttng-ust. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER ranktrace

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "lttng_tp.h"

#if !defined(RT_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define RT_LTTNG_TP_H

#include <lttng/tracepoint.h>

#include "lttng_layout.h"

/* A field of the table as an LTTng-UST field, read from the record. */
#define RT_LT_FIELD_PTR(n) lttng_ust_field_integer_hex(uint64_t, n, rt_lt_u64(rt_p->n))
#define RT_LT_FIELD_U64(n) lttng_ust_field_integer(uint64_t, n, rt_lt_u64(rt_p->n))
#define RT_LT_FIELD_U32(n) lttng_ust_field_integer(uint32_t, n, rt_lt_u32(rt_p->n))
#define RT_LT_FIELD_I32(n) lttng_ust_field_integer(int32_t, n, (int32_t)rt_lt_u32(rt_p->n))
#define RT_LT_FIELD_U8(n) lttng_ust_field_integer(uint8_t, n, rt_p->n[0])
#define RT_LT_FIELD_I8(n) lttng_ust_field_integer(int8_t, n, (int8_t)rt_p->n[0])
#define RT_LT_FIELD_STR(n) lttng_ust_field_array_text(char, n, (const char *)rt_p->n, RT_SZ_STR)

#define F(k, n, e) RT_LT_FIELD_##k(n)
#define O(k, n, e) RT_LT_FIELD_##k(n)
#define RT_LT_EVENT(name, ...)                                                           \
	LTTNG_UST_TRACEPOINT_EVENT(ranktrace, name,                                     \
		LTTNG_UST_TP_ARGS(const struct rt_lt_lay_##name *, rt_p, uint64_t, dur,  \
				  int, ret, int, dev),                                  \
		LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint64_t, dur_ns, dur)      \
				    lttng_ust_field_integer(int16_t, ret, ret)          \
				    lttng_ust_field_integer(int8_t, cur_dev, dev)       \
				    __VA_ARGS__))
#define RT_API(name, ret, params, args, fail, dev, after, fields, role, errors) RT_LT_EVENT(name, fields)
#define RT_EVENT(name, params, fields) RT_LT_EVENT(name, fields)
#define RT_DRV(name, gpa, since, ptsz, role, ret, params, args, fail, dev, after, fields) \
	RT_LT_EVENT(name, fields)
#include "cuda_api.def"
#include "nccl_api.def"
#include "driver_api.def"
#include "events.def"
#undef RT_API
#undef RT_EVENT
#undef RT_DRV
#undef RT_LT_EVENT
#undef F
#undef O

LTTNG_UST_TRACEPOINT_EVENT(ranktrace, rt_identity,
	LTTNG_UST_TP_ARGS(int, rank, int, local_rank, int, world_size, int, pid,
			  int, rank_pid, const char *, source, const char *, host,
			  const char *, run_id),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(int32_t, rank, rank)
			    lttng_ust_field_integer(int32_t, local_rank, local_rank)
			    lttng_ust_field_integer(int32_t, world_size, world_size)
			    lttng_ust_field_integer(int32_t, pid, pid)
			    lttng_ust_field_integer(int32_t, rank_pid, rank_pid)
			    lttng_ust_field_string(rank_source, source)
			    lttng_ust_field_string(hostname, host)
			    lttng_ust_field_string(run_id, run_id)))

#endif /* RT_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
