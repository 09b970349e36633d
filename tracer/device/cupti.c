/* SPDX-License-Identifier: MIT */
/* cupti.c - CUPTI as the second path: what interposition cannot see.
 *
 * `ranktrace run --cupti` sets CUDA_INJECTION64_PATH to libranktrace.so; the
 * CUDA driver then calls InitializeInjection() at cuInit. Only then is libcupti
 * loaded (dlopen: RANKTRACE_CUPTI_LIB, libcupti.so.13, libcupti.so, the
 * toolkit's), so the tracer loads and runs where there is no CUPTI at all.
 *
 * Callbacks: the driver functions of format/driver_api.def (CBIDs and
 * parameter structs come from the table's names: CUPTI_DRIVER_TRACE_CBID_<name>,
 * <name>_params), recorded at their exit as the same events interposition
 * records. A callback for a call the interposer is already recording on this
 * thread (it is inside a runtime or driver wrapper) is skipped; inside an NCCL
 * call (NCCL's own cudaMalloc/cuMem* through its static runtime) it is kept:
 * that memory is what CUPTI is for. The viewer counts an allocation reported
 * by two paths once.
 * Activity: CUPTI_ACTIVITY_KIND_MEMORY2 and MEMORY_POOL records, flushed at
 * exit and at a fatal signal outside CUDA (depth 0), as rt_cupti_mem events.
 * When another client holds CUPTI's one subscription (Kineto under
 * torch.profiler, Nsight), rt_cupti_state records "unavailable" and who it
 * likely is, and tracing goes on with interposition alone.
 *
 * The CUPTI functions are reached through rt_tr_cupti (a table filled from
 * libcupti, or by a test's fake). Not on any hot path: callbacks run only
 * for the enabled functions. Never exits; failures record why and return. */
#if __has_include(<cupti.h>)
#include <cupti.h>
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

#include "core.h"
#include "env.h"
#include "fields.h"
#include "identity.h"

#define BUF_BYTES (1u << 20)

/* The CUPTI functions used, from libcupti (or a test's fake of it). */
static struct {
	CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
	CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
				       CUpti_CallbackId);
	CUptiResult (*activity_enable)(CUpti_ActivityKind);
	CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
					  CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*flush)(uint32_t);
	CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*device_id)(CUcontext, uint32_t *);
} rt_tr_cupti;
static CUpti_SubscriberHandle subscriber;
static int active, flushing;
static RT_TLS int cb_ret;

/* One recorder per driver row, with the row's own parameter list, so its
 * field expressions read the parameters by name. */
#define RT_DRV(name, gpa, since, ptsz, role, ret, params, args, fail, dev, after, field_list) \
	static void rec_##name params                                                  \
	{                                                                              \
		struct rt_tr_call c;                                                   \
		if (!rt_tr_begin(&c, RT_ID_##name, RT_SIZE_##name, dev))               \
			return;                                                        \
		RT_TR_FIELDS(0, field_list)                                            \
		rt_tr_call_real(&c);                                                   \
		rt_tr_returned(&c);                                                    \
		c.ok = cb_ret == 0;                                                    \
		c.p = c.fields;                                                        \
		RT_TR_FIELDS(1, field_list)                                            \
		rt_tr_end(&c, cb_ret);                                                 \
	}
#include "driver_api.def"
#undef RT_DRV
#undef F
#undef O

/* p->a, p->b, ... from a row's argument list (up to 6) */
#define P1(a) p->a
#define P2(a, b) p->a, p->b
#define P3(a, b, c) p->a, p->b, p->c
#define P4(a, b, c, d) p->a, p->b, p->c, p->d
#define P5(a, b, c, d, e) p->a, p->b, p->c, p->d, p->e
#define P6(a, b, c, d, e, f) p->a, p->b, p->c, p->d, p->e, p->f
#define PICK(a1, a2, a3, a4, a5, a6, N, ...) N
#define PARGS(...) PICK(__VA_ARGS__, P6, P5, P4, P3, P2, P1, 0)(__VA_ARGS__)

/* The callback ids this file handles, and how each is recorded. */
#define RT_PTSZ_CASE_0(name, args)
#define RT_PTSZ_CASE_1(name, args)                                                     \
	case CUPTI_DRIVER_TRACE_CBID_##name##_ptsz: {                                  \
		const name##_ptsz_params *p = params;                                  \
		rec_##name(PARGS args);                                                \
		return true;                                                           \
	}
static bool record_driver(CUpti_CallbackId cbid, const void *params)
{
	switch (cbid) {
#define RT_DRV(name, gpa, since, ptsz, role, ret, prms, args, ...)                     \
	case CUPTI_DRIVER_TRACE_CBID_##name: {                                         \
		const name##_params *p = params;                                       \
		rec_##name(PARGS args);                                                \
		return true;                                                           \
	}                                                                              \
		RT_PTSZ_CASE_##ptsz(name, args)
#include "driver_api.def"
#undef RT_DRV
	default:
		return false;
	}
}

/* The interposer records the call in flight on this thread itself. */
static bool interposer_has_it(void)
{
	return rt_tr_depth == 2 && rt_tr_cur_id < RT_ID_COUNT &&
	       rt_events[rt_tr_cur_id].lib != RT_LIB_NCCL;
}

static void rt_tr_cupti_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			  const void *cbdata)
{
	const CUpti_CallbackData *cd = cbdata;
	int depth = rt_tr_depth, e = errno, dev = rt_tr_cur_dev;
	unsigned id = rt_tr_cur_id;
	uint32_t did;

	if (rt_tr_off || domain != CUPTI_CB_DOMAIN_DRIVER_API || !cd ||
	    cd->callbackSite != CUPTI_API_EXIT || depth == 1 || interposer_has_it())
		return;
	cb_ret = cd->functionReturnValue ? *(const int *)cd->functionReturnValue : 0;
	rt_tr_depth = 0; /* a call inside an NCCL call: record it at top level */
	/* the context's device: NCCL's threads set theirs through its static runtime */
	if (cd->context && rt_tr_cupti.device_id &&
	    rt_tr_cupti.device_id(cd->context, &did) == CUPTI_SUCCESS)
		rt_tr_cur_dev = (int)did;
	record_driver(cbid, cd->functionParams);
	rt_tr_cur_dev = dev;
	rt_tr_depth = depth;
	rt_tr_cur_id = id;
	errno = e;
}

/* ---- activity ---- */

static void buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = aligned_alloc(8, BUF_BYTES);
	*size = *buffer ? BUF_BYTES : 0;
	*max_records = 0;
}

static void rt_tr_cupti_buffer_done(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
			     size_t valid)
{
	CUpti_Activity *rec = NULL;

	while (buffer && rt_tr_cupti.next_record &&
	       rt_tr_cupti.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
		if (rec->kind == CUPTI_ACTIVITY_KIND_MEMORY2) {
			const CUpti_ActivityMemory4 *m = (const void *)rec;

			rt_tr_ev_rt_cupti_mem((int)m->memoryOperationType, (int)m->memoryKind,
					      (int)m->deviceId, (const void *)(uintptr_t)m->address,
					      m->bytes, 0);
		} else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMORY_POOL) {
			const CUpti_ActivityMemoryPool3 *m = (const void *)rec;

			rt_tr_ev_rt_cupti_mem((int)m->memoryPoolOperationType, 0, (int)m->deviceId,
					      (const void *)(uintptr_t)m->address, m->size, 1);
		}
	}
	free(buffer);
}

/* Flush CUPTI's buffers into the trace: at exit, and at a fatal signal that
 * did not arrive inside CUDA or the tracer (depth 0), once (registered with
 * core/life.c once subscribed). */
static void rt_tr_cupti_flush(bool from_signal)
{
	if (!active || !rt_tr_cupti.flush || (from_signal && rt_tr_depth != 0) ||
	    __atomic_exchange_n(&flushing, 1, __ATOMIC_ACQ_REL))
		return;
	rt_tr_cupti.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	__atomic_store_n(&flushing, 0, __ATOMIC_RELEASE);
}

/* ---- set-up ---- */

static int holder_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	static const char *const known[][2] = {
		{ "ToolsInjection", "Nsight Systems" }, { "libnsys", "Nsight Systems" },
		{ "ncu-injection", "Nsight Compute" }, { "libkineto", "Kineto (torch.profiler)" },
		{ "libtorch_cuda", "Kineto (torch.profiler)" },
	};
	const char **who = arg;

	(void)size;
	for (size_t i = 0; info->dlpi_name && i < sizeof(known) / sizeof(known[0]); i++)
		if (strstr(info->dlpi_name, known[i][0]) && !*who)
			*who = known[i][1];
	return 0;
}

/* Who likely holds CUPTI: Nsight's environment, then the loaded libraries. */
static const char *holder(void)
{
	const char *who = NULL;

	if (getenv("NSYS_PROFILING_SESSION_ID") || getenv("NSYS_LAUNCH_ID"))
		return "Nsight Systems";
	dl_iterate_phdr(holder_cb, &who);
	return who ? who : "an unknown CUPTI client";
}

#define SYM(field, name)                                                               \
	(rt_tr_cupti.field = (__typeof__(rt_tr_cupti.field))dlsym(h, name))

static const char *load_cupti(void)
{
	static const char *const names[] = { "libcupti.so.13", "libcupti.so",
					     "/usr/local/cuda/lib64/libcupti.so.13",
					     "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13" };
	const char *env = getenv(RT_ENV_NAME(CUPTI_LIB));
	void *h = env ? dlopen(env, RTLD_NOW | RTLD_LOCAL) : NULL;

	for (size_t i = 0; !h && !env && i < sizeof(names) / sizeof(names[0]); i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return NULL;
	SYM(subscribe, "cuptiSubscribe");
	SYM(enable_callback, "cuptiEnableCallback");
	SYM(activity_enable, "cuptiActivityEnable");
	SYM(register_callbacks, "cuptiActivityRegisterCallbacks");
	SYM(flush, "cuptiActivityFlushAll");
	SYM(next_record, "cuptiActivityGetNextRecord");
	SYM(device_id, "cuptiGetDeviceId");
	return rt_tr_cupti.subscribe && rt_tr_cupti.enable_callback && rt_tr_cupti.flush ?
		       (env ? env : "libcupti") : NULL;
}

/* Subscribe and enable; returns 0 or records why CUPTI is unavailable. */
static int rt_tr_cupti_start(void)
{
	char why[64];
	CUptiResult r;

	r = rt_tr_cupti.subscribe(&subscriber, (CUpti_CallbackFunc)rt_tr_cupti_callback, NULL);
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		snprintf(why, sizeof(why), "subscription held by %s", holder());
		rt_tr_ev_rt_cupti_state(2, why);
		return -EBUSY;
	}
	if (r != CUPTI_SUCCESS) {
		snprintf(why, sizeof(why), "cuptiSubscribe failed: %d", (int)r);
		rt_tr_ev_rt_cupti_state(2, why);
		return -EIO;
	}
#define RT_PTSZ_EN_0(name)
#define RT_PTSZ_EN_1(name)                                                             \
	rt_tr_cupti.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,         \
				    CUPTI_DRIVER_TRACE_CBID_##name##_ptsz);
#define RT_DRV(name, gpa, since, ptsz, ...)                                            \
	rt_tr_cupti.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,         \
				    CUPTI_DRIVER_TRACE_CBID_##name);                   \
	RT_PTSZ_EN_##ptsz(name)
#include "driver_api.def"
#undef RT_DRV
	if (rt_tr_cupti.register_callbacks && rt_tr_cupti.activity_enable &&
	    rt_tr_cupti.register_callbacks(buffer_requested, rt_tr_cupti_buffer_done) == CUPTI_SUCCESS) {
		rt_tr_cupti.activity_enable(CUPTI_ACTIVITY_KIND_MEMORY2);
		rt_tr_cupti.activity_enable(CUPTI_ACTIVITY_KIND_MEMORY_POOL);
	}
	active = 1;
	rt_tr_on_end_flush(rt_tr_cupti_flush);
	rt_tr_ev_rt_cupti_state(1, "subscribed: driver callbacks, MEMORY2, MEMORY_POOL");
	return 0;
}

/* The CUDA driver calls this at cuInit when CUDA_INJECTION64_PATH names
 * this library. 1: injection accepted (even when CUPTI is unavailable:
 * the program must run as it would). */
RT_EXPORT int InitializeInjection(void)
{
	static int done;

	if (rt_tr_off || __atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		return 1;
	if (!load_cupti()) {
		rt_tr_ev_rt_cupti_state(2, "libcupti not found (set RANKTRACE_CUPTI_LIB)");
		return 1;
	}
	rt_tr_cupti_start();
	return 1;
}

#else /* built without CUPTI's headers (tracer/CMakeLists.txt) */
#include "core.h"

RT_EXPORT int InitializeInjection(void)
{
	if (!rt_tr_off)
		rt_tr_ev_rt_cupti_state(2, "ranktrace was built without CUPTI's headers");
	return 1;
}
#endif
