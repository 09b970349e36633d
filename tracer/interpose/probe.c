/* SPDX-License-Identifier: MIT */
/* probe.c - the probe API of include/ranktrace.h: what a program (or the
 * PyTorch probe, through ctypes) tells the trace: a parameter, its shape and
 * DTensor layout, the FSDP root forward, a marker, a call of the unwrapped
 * module and the exception that left it, the optimizer's steps.
 *
 * Each is one of the tracer's own events (format/events.def), recorded on
 * the calling thread through core/events.c: no lock, no allocation. The
 * failure points (rt_fault_point) are the injector's (inject/engine.c). */
#include <string.h>

#define RANKTRACE_IMPLEMENTATION
#include "ranktrace.h"
#include "core.h"

/* Each call records the tracer's own event of the same signature
 * (format/events.def, format/record.h): a parameter changed in one place
 * fails to compile here. */
#define RT_SAME_SIGNATURE(api, event) \
	_Static_assert(__builtin_types_compatible_p(__typeof__(api), __typeof__(event)), \
		       #api " differs from events.def's " #event)
RT_SAME_SIGNATURE(rt_param, rt_tr_ev_rt_param);
RT_SAME_SIGNATURE(rt_fsdp_forward, rt_tr_ev_rt_fsdp_forward);
RT_SAME_SIGNATURE(rt_marker, rt_tr_ev_rt_marker);
RT_SAME_SIGNATURE(rt_unwrapped_call, rt_tr_ev_rt_unwrapped_call);
RT_SAME_SIGNATURE(rt_optim_step, rt_tr_ev_rt_optim_step);
/* the placement codes a program passes are the ones the trace records */
_Static_assert(RT_PLACE_REPLICATE == RT_PLACE_CODE_replicate && RT_PLACE_PARTIAL ==
	       RT_PLACE_CODE_partial && RT_PLACE_OTHER == RT_PLACE_CODE_other,
	       "ranktrace.h's RT_PLACE_* differ from format/dtypes.def's RT_PROBE_PLACE");

RT_EXPORT void rt_param(const char *name, int devtype, int device, int dtype, uint64_t numel,
			uint64_t storage_bytes, const void *data)
{
	rt_tr_ev_rt_param(name, devtype, device, dtype, numel, storage_bytes, data);
}

/* The first n sizes into d, each saturated to 32 bits (records of fixed
 * size: format/events.def); the count saturated to a byte. */
static int sizes(const int64_t *dims, int ndim, uint32_t *d, int n)
{
	for (int i = 0; dims && i < ndim && i < n; i++)
		d[i] = dims[i] < 0 ? 0 : dims[i] > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)dims[i];
	return ndim < 0 ? 0 : ndim > 255 ? 255 : ndim;
}

RT_EXPORT void rt_param_shape(const char *name, int ndim, const int64_t *dims)
{
	uint32_t d[RT_PARAM_MAX_DIMS] = { 0 };

	ndim = sizes(dims, ndim, d, RT_PARAM_MAX_DIMS);
	rt_tr_ev_rt_param_shape(name, ndim, d[0], d[1], d[2], d[3], d[4], d[5]);
}

/* A placement as a byte: a shard's dimension (up to 127), RT_PLACE_*. */
static int place(const int *placements, int i, int n)
{
	int p = placements && i < n ? placements[i] : 0;

	return p > 127 ? 127 : p < RT_PLACE_OTHER ? RT_PLACE_OTHER : p;
}

RT_EXPORT void rt_param_dtensor(const char *name, int mesh_ndim, const int64_t *mesh,
				const int *placements, int ndim, const int64_t *dims)
{
	uint32_t m[3] = { 0 }, d[RT_PARAM_MAX_DIMS] = { 0 };

	mesh_ndim = sizes(mesh, mesh_ndim, m, 3);
	ndim = sizes(dims, ndim, d, RT_PARAM_MAX_DIMS);
	rt_tr_ev_rt_param_dtensor(name, mesh_ndim, m[0], m[1], m[2], place(placements, 0, mesh_ndim),
				  place(placements, 1, mesh_ndim), place(placements, 2, mesh_ndim),
				  ndim, d[0], d[1], d[2], d[3], d[4], d[5]);
}

/* The message in two name-sized parts (RT_SZ_STR - 1 bytes each), in a
 * record of its own after the exception's (one record holds two names). */
RT_EXPORT void rt_exception(const char *module, const char *type, const char *message)
{
	char part[2][RT_SZ_STR] = { "", "" };
	size_t len = message ? strlen(message) : 0;

	for (int i = 0; i < 2 && (size_t)i * (RT_SZ_STR - 1) < len; i++) {
		size_t off = (size_t)i * (RT_SZ_STR - 1), n = len - off;

		if (n > RT_SZ_STR - 1)
			n = RT_SZ_STR - 1;
		memcpy(part[i], message + off, n);
		part[i][n] = '\0';
	}
	rt_tr_ev_rt_exception(module, type);
	rt_tr_ev_rt_exception_text(part[0], part[1]);
}

RT_EXPORT void rt_optim_step(uint64_t step, uint64_t params, uint64_t sharded, uint64_t synced,
			     uint64_t reductions)
{
	rt_tr_ev_rt_optim_step(step, params, sharded, synced, reductions);
}

RT_EXPORT void rt_fsdp_forward(int phase, int units)
{
	rt_tr_ev_rt_fsdp_forward(phase, units);
}

RT_EXPORT void rt_marker(const char *name, int64_t value)
{
	rt_tr_ev_rt_marker(name, value);
}

RT_EXPORT void rt_unwrapped_call(const char *module, const char *caller, uint64_t calls)
{
	rt_tr_ev_rt_unwrapped_call(module, caller, calls);
}
