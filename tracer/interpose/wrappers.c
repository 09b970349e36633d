/* SPDX-License-Identifier: MIT */
/* wrappers.c - every interposed function, generated here from
 * format/cuda_api.def, format/nccl_api.def and format/driver_api.def (the
 * tracer's own events, from format/events.def: core/events.c).
 *
 * Compiled against NVIDIA's cuda_runtime_api.h and nccl.h: a wrapper whose
 * prototype drifted from NVIDIA's fails to compile. Each wrapper resolves
 * the real function once (then cached process-wide), records the call
 * around it (core/core.h), and returns exactly what the real function returned,
 * with its errno. A call nested inside a recorded one, or made while tracing
 * is off, goes straight through.
 *
 * Field expressions are expanded twice with a constant phase (F() and O()
 * from fields.h, shared with cupti.c): phase 0 (before the call) evaluates
 * F() fields and zero-fills O() fields, phase 1 (after it) skips F() fields
 * and evaluates O() fields if the call succeeded. The compiler drops the dead
 * branch of each. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "core.h"
#include "device.h"
#include "fields.h"
#include "identity.h"
#include "inject.h"
#include "interpose.h"

#define DEV_COMM(comm) rt_tr_comm_device(comm)
/* cudaSetDevice's device, unless a fault plan redirects it (device=N) */
#define RT_INJ_DEV(d) (hit.action == RT_INJ_DEVICE ? (int)hit.arg : (d))

#define RT_LIB_OF(name) rt_events[RT_ID_##name].lib
/* The call's result, for the after column (an NCCL call in progress). */
#define RT_RET ((long)r)
/* Succeeded, or, an NCCL call on a non-blocking communicator, goes on in
 * the background (ncclInProgress): its after column and out-fields count. */
#define RT_OK(name, r) ((r) == 0 || (RT_LIB_OF(name) == RT_LIB_NCCL && (long)(r) == ncclInProgress))

/* The communicator an NCCL call is on, for the fault plan's comm= (inject/):
 * by the row's role, the ncclComm_t argument of an operation, a query, an
 * end, or the parent of a split or shrink; none for inits and groups (and
 * for every CUDA call). inject/plan.c accepts comm= on the same roles
 * (rt_id_on_comm, format/schema.h). */
#define RT_COMM_ARG_UNIQUE_ID NULL
#define RT_COMM_ARG_COMM_INIT NULL
#define RT_COMM_ARG_COMM_INIT_ALL NULL
#define RT_COMM_ARG_GROUP NULL
#define RT_COMM_ARG_COMM_SPLIT comm
#define RT_COMM_ARG_COMM_SHRINK comm
#define RT_COMM_ARG_COMM_END comm
#define RT_COMM_ARG_COMM_REVOKE comm
#define RT_COMM_ARG_COMM_FINALIZE comm
#define RT_COMM_ARG_COLL comm
#define RT_COMM_ARG_P2P comm
#define RT_COMM_ARG_QUERY comm
#define ROLE(what, arg) RT_COMM_ARG_##what
#define RT_API(name, ret, params, args, fail, dev, after, field_list, role, errors)    \
	static inline const void *rt_comm_arg_##name params                          \
	{                                                                              \
		return (const void *)(role);                                           \
	}
#include "nccl_api.def"
#include "events.def" /* NCCL functions interposed later */
#undef RT_API
#undef ROLE

/* The wrapper, in two parts. The exported function is the common case:
 * the real function known, the call routed to the fast path (no fault rule
 * for it, the native store: rt_tr_route, set once at start-up); it records
 * the call around it into the native store, or, when tracing is off or the
 * call is nested in a recorded one, calls straight through (one load and
 * three well-predicted branches). Everything else (the first call, which
 * resolves the real function; a fault plan with rules for this call; the
 * LTTng sink) takes the general path, rt_slow_SYM. An injected fault either
 * replaces the call (error, skip, hang, abort, kill) or runs around it
 * (delay, device, corrupt). */
#define RT_API(name, ret, params, args, fail, dev, after, field_list, role, errors)    \
	RT_WRAPPER(name, name, ret, params, args, fail, dev, after, field_list)
/* sym: the exported symbol; name: the call (event id, fault rules). A
 * driver function's _ptsz twin records as the function itself. */
#define RT_WRAPPER(sym, name, ret, params, args, fail, dev, after, field_list)         \
	static ret(*real_##sym) params;                                                \
	RT_SLOW_PATH(sym, name, ret, params, args, fail, dev, after, field_list)       \
	RT_EXPORT ret sym params                                                       \
	{                                                                              \
		ret(*real) params = __atomic_load_n(&real_##sym, __ATOMIC_RELAXED);    \
		const struct rt_inj_hit hit __attribute__((unused)) = { 0 };          \
		struct rt_tr_call c;                                                   \
		ret r;                                                                 \
		if (rt_unlikely(!real) || rt_unlikely(rt_tr_route[RT_ID_##name]))     \
			return rt_slow_##sym args;                                     \
		if (!rt_tr_begin(&c, RT_ID_##name, RT_SIZE_##name, dev))               \
			return real args;                                              \
		RT_TR_FIELDS(0, field_list)                                            \
		rt_tr_call_real_native(&c);                                            \
		r = real args;                                                         \
		rt_tr_returned(&c);                                                    \
		c.ok = RT_OK(name, r);                                                 \
		if (c.ok)                                                              \
			(void)(after);                                                 \
		c.p = c.common + RT_COMMON_BYTES; /* c.fields: kept in no register */  \
		RT_TR_FIELDS(1, field_list)                                            \
		rt_tr_end_native(&c, (long)r);                                         \
		return r;                                                              \
	}
/* The general path: resolution, fault rules, tracing on or off, any sink. */
#define RT_SLOW_PATH(sym, name, ret, params, args, fail, dev, after, field_list)       \
	__attribute__((noinline, cold)) static ret rt_slow_##sym params                \
	{                                                                              \
		ret(*real) params = __atomic_load_n(&real_##sym, __ATOMIC_RELAXED);    \
		struct rt_tr_call c;                                                   \
		struct rt_inj_hit hit;                                                 \
		bool traced, replaced = false;                                         \
		ret r = fail;                                                          \
		if (rt_unlikely(!real)) {                                              \
			real = (ret(*) params)rt_tr_resolve(#sym, RT_LIB_OF(name));    \
			if (!real)                                                     \
				return fail;                                           \
			__atomic_store_n(&real_##sym, real, __ATOMIC_RELAXED);         \
		}                                                                      \
		hit.action = 0;                                                        \
		if (rt_unlikely(rt_inj_active) && rt_inj_api[RT_ID_##name] && !rt_tr_depth) \
			rt_inj_check(RT_ID_##name, RT_COMM_OF(name, args), &hit);      \
		traced = rt_tr_begin(&c, RT_ID_##name, RT_SIZE_##name, dev);           \
		if (!traced && !hit.action)                                            \
			return real args;                                              \
		if (traced) {                                                          \
			rt_tr_unnumbered = hit.action == RT_INJ_SKIP;                  \
			RT_TR_FIELDS(0, field_list)                                    \
			rt_tr_unnumbered = false;                                      \
			rt_tr_call_real(&c);                                           \
		}                                                                      \
		if (rt_unlikely(hit.action))                                           \
			r = (ret)rt_inj_before(&hit, RT_ID_##name,                     \
					       traced ? c.fields : NULL, &replaced);   \
		if (!replaced)                                                         \
			r = real args;                                                 \
		if (!traced)                                                           \
			return r;                                                      \
		rt_tr_returned(&c);                                                    \
		c.ok = RT_OK(name, r);                                                 \
		if (c.ok)                                                              \
			(void)(after);                                                 \
		c.p = c.fields;                                                        \
		RT_TR_FIELDS(1, field_list)                                            \
		if (rt_unlikely(hit.action))                                           \
			rt_inj_after(&hit, RT_ID_##name, c.fields, (long)r);           \
		rt_tr_end(&c, (long)r);                                                \
		return r;                                                              \
	}
#define RT_EVENT(name, params, fields)
#define RT_PTSZ_0(...)
#define RT_PTSZ_1(name, ...) RT_WRAPPER(name##_ptsz, name, __VA_ARGS__)
#define RT_DRV(name, gpa, since, ptsz, role, ret, params, args, fail, dev, after, field_list) \
	RT_WRAPPER(name, name, ret, params, args, fail, dev, after, field_list)        \
	RT_PTSZ_##ptsz(name, ret, params, args, fail, dev, after, field_list)
#define RT_COMM_OF(name, args) NULL
#include "cuda_api.def"
#include "driver_api.def"
#undef RT_COMM_OF
#define RT_COMM_OF(name, args) rt_comm_arg_##name args
#include "nccl_api.def"
#include "events.def" /* NCCL functions interposed later */
#undef RT_COMM_OF
#undef RT_EVENT
#undef RT_API
#undef RT_DRV

/* The CUresult names of the table are cuda.h's. */
#define RT_DRV_ERR(v, n) _Static_assert((v) == (n), #n " is not " #v " in cuda.h");
#include "errors.def"
#undef RT_DRV_ERR

/* The ncclDataType_t values of format/dtypes.def are nccl.h's. */
#define RT_NCCL_DTYPE(v, n, bytes) _Static_assert((v) == (n), #n " is not " #v " in nccl.h");
#include "dtypes.def"
#undef RT_NCCL_DTYPE

/* What cuGetProcAddress and cudaGetDriverEntryPoint* hand out instead of the
 * driver's own functions (tracer/driver.c): each wrapper with the slot its
 * real function is kept in. */
#define RT_PROC_PTSZ_0(name) NULL, NULL
#define RT_PROC_PTSZ_1(name) (void *)name##_ptsz, (void **)&real_##name##_ptsz
#define RT_DRV(name, gpa, since, ptsz, ...)                                            \
	{ #gpa, since, RT_ID_##name, (void *)name, (void **)&real_##name,              \
	  RT_PROC_PTSZ_##ptsz(name) },
const struct rt_tr_proc rt_tr_procs[] = {
#include "driver_api.def"
};
#undef RT_DRV
const unsigned rt_tr_nprocs = sizeof(rt_tr_procs) / sizeof(rt_tr_procs[0]);
