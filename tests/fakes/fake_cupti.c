/* SPDX-License-Identifier: MIT */
/* fake_cupti.c - a stand-in libcupti for tests on machines without a GPU:
 * the CUPTI functions tracer/device/cupti.c uses, with NVIDIA's prototypes
 * (cupti.h), plus fake_cupti_* calls that let a test fire synthesized driver
 * callbacks and queue synthesized activity records. FAKE_CUPTI_TAKEN=1 makes
 * cuptiSubscribe answer as CUPTI does when another client holds it. */
#include <cupti.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define SLOT 256 /* bytes per queued record, >= every record type used */

static CUpti_CallbackFunc callback;
static void *userdata;
static CUpti_BuffersCallbackRequestFunc requested;
static CUpti_BuffersCallbackCompleteFunc completed;
static int enabled_callbacks, enabled_kinds;
static unsigned char queue[64][SLOT];
static int queued;

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *ud)
{
	if (getenv("FAKE_CUPTI_TAKEN"))
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	callback = cb;
	userdata = ud;
	*sub = (CUpti_SubscriberHandle)&callback;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle sub,
				       CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	if (!sub || domain != CUPTI_CB_DOMAIN_DRIVER_API || cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	enabled_callbacks += enable ? 1 : -1;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	enabled_kinds |= 1 << (kind == CUPTI_ACTIVITY_KIND_MEMORY2 ? 0 : kind == CUPTI_ACTIVITY_KIND_MEMORY_POOL ? 1 : 2);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
						  CUpti_BuffersCallbackCompleteFunc done)
{
	requested = req;
	completed = done;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	uint8_t *buf;
	size_t size, max;

	if (!queued || !requested || !completed)
		return CUPTI_SUCCESS;
	requested(&buf, &size, &max);
	if (!buf || size < (size_t)queued * SLOT)
		return CUPTI_ERROR_INVALID_PARAMETER;
	memcpy(buf, queue, (size_t)queued * SLOT);
	completed(NULL, 0, buf, size, (size_t)queued * SLOT);
	queued = 0;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **rec)
{
	uint8_t *next = *rec ? (uint8_t *)*rec + SLOT : buffer;

	if (next + SLOT > buffer + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*rec = (CUpti_Activity *)next;
	return CUPTI_SUCCESS;
}

/* ---- test side ---- */

/* A fake context is its device + 1. */
EXPORT CUptiResult cuptiGetDeviceId(CUcontext ctx, uint32_t *id)
{
	if (!ctx || !id)
		return CUPTI_ERROR_INVALID_CONTEXT;
	*id = (uint32_t)((uintptr_t)ctx - 1);
	return CUPTI_SUCCESS;
}

/* Fire a driver callback (enter, then exit) with these parameters and
 * result, in the context of device `dev` (-1: no context). */
EXPORT void fake_cupti_fire(CUpti_CallbackId cbid, const char *name, const void *params, CUresult ret,
			    int dev)
{
	CUpti_CallbackData d = { .callbackSite = CUPTI_API_ENTER, .functionName = name,
				 .functionParams = params, .functionReturnValue = &ret,
				 .context = dev >= 0 ? (CUcontext)(uintptr_t)(dev + 1) : NULL };

	if (!callback)
		return;
	callback(userdata, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
	d.callbackSite = CUPTI_API_EXIT;
	callback(userdata, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
}

/* A driver function with CUPTI attached, as the real driver behaves: the
 * tracer's cuMemAlloc_v2 wrapper finds this one as the next definition (the
 * test loads this library RTLD_GLOBAL) and its callback fires inside the
 * interposed call, which must not be recorded twice. */
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	cuMemAlloc_v2_params p = { .dptr = dptr, .bytesize = bytesize };

	*dptr = 0x7c0000000000ull;
	fake_cupti_fire(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2", &p, CUDA_SUCCESS, 3);
	return CUDA_SUCCESS;
}

EXPORT void fake_cupti_queue_memory(int op, int device, uint64_t address, uint64_t bytes)
{
	CUpti_ActivityMemory4 m = { .kind = CUPTI_ACTIVITY_KIND_MEMORY2,
				    .memoryOperationType = (CUpti_ActivityMemoryOperationType)op,
				    .memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
				    .address = address, .bytes = bytes, .deviceId = (uint32_t)device };

	if (queued < 64)
		memcpy(queue[queued++], &m, sizeof(m));
}

EXPORT void fake_cupti_queue_pool(int op, int device, uint64_t address, uint64_t size)
{
	CUpti_ActivityMemoryPool3 m = { .kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL,
					.memoryPoolOperationType = (CUpti_ActivityMemoryPoolOperationType)op,
					.deviceId = (uint32_t)device, .address = address, .size = size };

	if (queued < 64)
		memcpy(queue[queued++], &m, sizeof(m));
}

EXPORT int fake_cupti_enabled(int *kinds)
{
	*kinds = enabled_kinds;
	return enabled_callbacks;
}
