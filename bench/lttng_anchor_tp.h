/* SPDX-License-Identifier: MIT */
/* lttng_anchor_tp.h - the anchor of bench/backends.sh: bare LTTng-UST
 * tracepoints with the payload of ranktrace's cudaMalloc and cudaFree events
 * (dur_ns, ret, cur_dev, then ptr and size / ptr), in the `ranktrace`
 * provider so that `ranktrace run --backend lttng` records them in the same
 * session configuration. Only bench/lttng_anchor.c includes it. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER ranktrace

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "lttng_anchor_tp.h"

#if !defined(RT_LTTNG_ANCHOR_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define RT_LTTNG_ANCHOR_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT(ranktrace, bench_anchor_malloc,
	LTTNG_UST_TP_ARGS(uint64_t, dur, int, ret, int, dev, const void *, ptr, uint64_t, size),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint64_t, dur_ns, dur)
			    lttng_ust_field_integer(int16_t, ret, ret)
			    lttng_ust_field_integer(int8_t, cur_dev, dev)
			    lttng_ust_field_integer_hex(uint64_t, ptr, (uintptr_t)ptr)
			    lttng_ust_field_integer(uint64_t, size, size)))

LTTNG_UST_TRACEPOINT_EVENT(ranktrace, bench_anchor_free,
	LTTNG_UST_TP_ARGS(uint64_t, dur, int, ret, int, dev, const void *, ptr),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint64_t, dur_ns, dur)
			    lttng_ust_field_integer(int16_t, ret, ret)
			    lttng_ust_field_integer(int8_t, cur_dev, dev)
			    lttng_ust_field_integer_hex(uint64_t, ptr, (uintptr_t)ptr)))

#endif

#include <lttng/tracepoint-event.h>
