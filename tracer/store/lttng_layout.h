/* SPDX-License-Identifier: MIT */
/* lttng_layout.h - one packed struct per event, generated from the call
 * tables: the native record's fields part (schema.h) seen as named members,
 * so the LTTng provider (lttng_tp.h) reads field `n` as rt_p->n whatever its
 * offset. Members are byte arrays of the native sizes (RT_SZ_*), read with
 * the little helpers below: the record is byte-aligned. Pure declarations. */
#ifndef RT_LTTNG_LAYOUT_H
#define RT_LTTNG_LAYOUT_H

#include <stdint.h>
#include <string.h>

#include "schema.h"

#define F(k, n, e) uint8_t n[RT_SZ_##k];
#define O(k, n, e) uint8_t n[RT_SZ_##k];
#define RT_API(name, ret, params, args, fail, dev, after, fields, role, errors) \
	struct rt_lt_lay_##name { fields } __attribute__((packed));
#define RT_EVENT(name, params, fields) struct rt_lt_lay_##name { fields } __attribute__((packed));
#define RT_DRV(name, gpa, since, ptsz, role, ret, params, args, fail, dev, after, fields) \
	struct rt_lt_lay_##name { fields } __attribute__((packed));
#include "cuda_api.def"
#include "nccl_api.def"
#include "driver_api.def"
#include "events.def"
#undef RT_API
#undef RT_EVENT
#undef RT_DRV
#undef F
#undef O

/* The layouts must add up to the sizes the writer uses. */
#define RT_API(name, ...) _Static_assert(sizeof(struct rt_lt_lay_##name) == RT_SIZE_##name, #name);
#define RT_EVENT(name, ...) _Static_assert(sizeof(struct rt_lt_lay_##name) == RT_SIZE_##name, #name);
#define RT_DRV(name, ...) _Static_assert(sizeof(struct rt_lt_lay_##name) == RT_SIZE_##name, #name);
#include "cuda_api.def"
#include "nccl_api.def"
#include "driver_api.def"
#include "events.def"
#undef RT_API
#undef RT_EVENT
#undef RT_DRV

static inline uint64_t rt_lt_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t rt_lt_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* What libranktrace.so finds in libranktrace-lttng.so (dlsym). */
#define RT_LTTNG_PROVIDER_SONAME "libranktrace-lttng.so"
typedef void (*rt_lttng_emit_fn)(unsigned id, const uint8_t *fields, uint64_t dur, int ret,
				 int dev);
typedef void (*rt_lttng_identity_fn)(int rank, int local_rank, int world_size, int pid,
				     int rank_pid, const char *source, const char *host,
				     const char *run_id);

#endif
