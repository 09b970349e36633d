/* SPDX-License-Identifier: MIT */
/* probe.c - the probe API of include/ranktrace.h: what a program (or the
 * PyTorch probe, through ctypes) tells the trace: a parameter and its shape,
 * the FSDP root forward, a marker, a call of the unwrapped module.
 *
 * Each is one of the tracer's own events (format/events.def), recorded on
 * the calling thread through core/events.c: no lock, no allocation. The
 * failure points (rt_fault_point) are the injector's (inject/engine.c). */
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

RT_EXPORT void rt_param(const char *name, int devtype, int device, int dtype, uint64_t numel,
			uint64_t storage_bytes, const void *data)
{
	rt_tr_ev_rt_param(name, devtype, device, dtype, numel, storage_bytes, data);
}

/* The first RT_PARAM_MAX_DIMS sizes, each saturated to 32 bits (a record
 * of fixed size: format/events.def). */
RT_EXPORT void rt_param_shape(const char *name, int ndim, const int64_t *dims)
{
	uint32_t d[RT_PARAM_MAX_DIMS] = { 0 };

	for (int i = 0; dims && i < ndim && i < RT_PARAM_MAX_DIMS; i++)
		d[i] = dims[i] < 0 ? 0 : dims[i] > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)dims[i];
	rt_tr_ev_rt_param_shape(name, ndim < 0 ? 0 : ndim > 255 ? 255 : ndim, d[0], d[1], d[2], d[3],
				d[4], d[5]);
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
