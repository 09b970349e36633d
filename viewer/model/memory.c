/* SPDX-License-Identifier: MIT */
/* memory.c - a rank's device and host bytes from allocation events of every
 * path: the runtime (cudaMalloc...), the driver (cuMemAlloc..., also when
 * called through cuGetProcAddress pointers) and driver virtual memory
 * (cuMemCreate + cuMemMap).
 *
 * One allocation is counted once. An allocation seen by two paths (the
 * runtime's cudaMalloc and the driver's cuMemAlloc it makes, both reported
 * by CUPTI, or by interposition and CUPTI) arrives as a second alloc at a
 * live base from another path: it only marks the entry (dup_allocs). The
 * first free of either path returns the bytes and leaves a ghost entry, so
 * the other path's free of the same base is absorbed, not "unknown".
 *
 * VMM: physical bytes belong to the device of the handle, counted from
 * cuMemCreate until the handle is released and no longer mapped (as the
 * driver frees it). A cuMemMap puts its range in the live map as a mapping
 * of that handle (device = the handle's), bytes not counted again, so a
 * pointer inside a mapped range resolves to its mapping (copies, parameter
 * placement, rt_vw_alloc_at). Which event does what comes from the call
 * tables: the runtime's by event id, the driver's by driver_api.def's role. */
#include "model_int.h"
#include "rt_util.h"

/* One physical allocation (cuMemCreate) of a rank. */
struct vmm_handle {
	uint64_t handle, size;
	int8_t dev;
	bool released;
	uint32_t mapped;
	struct vmm_handle *next;
};

struct rt_vw_vmm {
	struct vmm_handle *handles;
};

static unsigned path_of(unsigned id)
{
	return rt_events[id].lib == RT_LIB_DRIVER ? RT_VW_PATH_DRIVER : RT_VW_PATH_RUNTIME;
}

static void use_device(struct rt_vw_rank *r, int dev)
{
	if (dev >= 0 && dev < RT_VW_MAX_DEV)
		r->devices_used |= 1ull << dev;
}

static void count(struct rt_vw_rank *r, uint64_t size, int dev)
{
	if (dev < 0) {
		r->host_bytes += size;
		if (r->host_bytes > r->host_peak)
			r->host_peak = r->host_bytes;
	} else if (dev < RT_VW_MAX_DEV) {
		r->dev_bytes[dev] += size;
		if (r->dev_bytes[dev] > r->dev_peak[dev])
			r->dev_peak[dev] = r->dev_bytes[dev];
		use_device(r, dev);
		rt_vw_mem_note(r, dev);
	}
}

static void uncount(struct rt_vw_rank *r, uint64_t size, int dev)
{
	if (dev < 0)
		r->host_bytes -= size;
	else if (dev < RT_VW_MAX_DEV) {
		r->dev_bytes[dev] -= size;
		rt_vw_mem_note(r, dev);
	}
}

void rt_vw_memory_alloc(struct rt_vw_rank *r, const struct rt_vw_event *e, uint64_t size, bool host)
{
	uint64_t ptr = (uint64_t)rt_vw_fld(e, RT_FN_ptr);
	unsigned path = path_of(e->id);
	int dev = host ? -1 : e->dev;
	struct rt_vw_alloc *a;
	uint8_t again = 0;

	if (e->pending)
		return;
	if (e->ret != 0) {
		r->failed_allocs++;
		return;
	}
	a = rt_vw_map_find(r->live, ptr);
	if (a && a->kind == RT_VW_ALLOC && !(a->paths & path)) {
		a->paths |= (uint8_t)path; /* the same allocation, seen by another path */
		r->dup_allocs++;
		return;
	}
	if (a) { /* allocated again without a free we saw (yet) */
		uncount(r, a->kind == RT_VW_ALLOC ? a->size : 0, a->dev);
		again = a->kind == RT_VW_ALLOC && a->again < UINT8_MAX ? a->again + 1 : 0;
	}
	r->allocs++;
	if (path == RT_VW_PATH_DRIVER) {
		r->drv_allocs++;
		r->drv_bytes += size;
	}
	a = rt_vw_map_put(r->live, ptr, size, dev);
	if (a) {
		a->again = again;
		a->kind = RT_VW_ALLOC;
		a->paths = (uint8_t)path;
		a->api = (uint16_t)e->id;
	}
	count(r, size, dev);
}

void rt_vw_memory_free(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	uint64_t ptr = (uint64_t)rt_vw_fld(e, RT_FN_ptr);
	unsigned path = path_of(e->id);
	struct rt_vw_alloc *a;

	if (e->pending || e->ret != 0 || ptr == 0)
		return;
	a = rt_vw_map_find(r->live, ptr);
	if (!a || a->kind != RT_VW_ALLOC) {
		a = rt_vw_map_find_ghost(r->live, ptr);
		if (a && (a->paths & path))
			a->paths &= (uint8_t)~path; /* the other path's free of a freed allocation */
		else
			r->unknown_frees++;
		return;
	}
	r->frees++;
	if (a->again) { /* the free owed by an earlier allocation at this address */
		a->again--;
		return;
	}
	uncount(r, a->size, a->dev);
	a->paths &= (uint8_t)~path;
	rt_vw_map_drop(r->live, a, a->paths != 0);
}

static struct vmm_handle *handle_of(struct rt_vw_rank *r, uint64_t h)
{
	for (struct vmm_handle *v = r->vmm ? r->vmm->handles : NULL; v; v = v->next)
		if (v->handle == h)
			return v;
	return NULL;
}

static void handle_forget(struct rt_vw_rank *r, struct vmm_handle *v)
{
	for (struct vmm_handle **l = &r->vmm->handles; *l; l = &(*l)->next)
		if (*l == v) {
			*l = v->next;
			break;
		}
	uncount(r, v->size, v->dev);
	free(v);
}

static void vmm_create(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	struct vmm_handle *v;

	if (e->pending)
		return;
	if (e->ret != 0) {
		r->failed_allocs++;
		return;
	}
	if (!r->vmm && !(r->vmm = calloc(1, sizeof(*r->vmm))))
		return;
	if (!(v = calloc(1, sizeof(*v))))
		return;
	v->handle = (uint64_t)rt_vw_fld(e, RT_FN_handle);
	v->size = (uint64_t)rt_vw_fld(e, RT_FN_size);
	v->dev = (int8_t)rt_vw_fld(e, RT_FN_device);
	v->next = r->vmm->handles;
	r->vmm->handles = v;
	r->allocs++;
	r->drv_allocs++;
	r->drv_bytes += v->size;
	r->vmm_handles++;
	count(r, v->size, v->dev);
}

static void vmm_release(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	struct vmm_handle *v;

	if (e->pending || e->ret != 0)
		return;
	v = handle_of(r, (uint64_t)rt_vw_fld(e, RT_FN_handle));
	if (!v || v->released) {
		r->unknown_frees++;
		return;
	}
	r->frees++;
	v->released = true;
	if (!v->mapped)
		handle_forget(r, v);
}

static void vmm_map(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	struct vmm_handle *v;
	struct rt_vw_alloc *a;

	if (e->pending || e->ret != 0)
		return;
	v = handle_of(r, (uint64_t)rt_vw_fld(e, RT_FN_handle));
	a = rt_vw_map_put(r->live, (uint64_t)rt_vw_fld(e, RT_FN_ptr), (uint64_t)rt_vw_fld(e, RT_FN_size),
			  v ? v->dev : e->dev);
	if (!a)
		return;
	a->kind = RT_VW_MAPPING;
	a->api = (uint16_t)e->id;
	a->paths = RT_VW_PATH_DRIVER;
	a->handle = v ? v->handle : 0;
	r->vmm_maps++;
	if (v)
		v->mapped++;
	use_device(r, a->dev);
}

/* Every mapping inside [ptr, ptr+size), adjacent from ptr. */
static void vmm_unmap(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	uint64_t cur = (uint64_t)rt_vw_fld(e, RT_FN_ptr), end = cur + (uint64_t)rt_vw_fld(e, RT_FN_size);
	struct rt_vw_alloc *a;

	if (e->pending || e->ret != 0)
		return;
	while (cur < end && (a = rt_vw_map_find(r->live, cur)) && a->kind == RT_VW_MAPPING) {
		struct vmm_handle *v = handle_of(r, a->handle);

		cur += a->size ? a->size : end - cur;
		if (v && --v->mapped == 0 && v->released)
			handle_forget(r, v);
		rt_vw_map_drop(r->live, a, false);
	}
}

/* CUPTI's state and activity records: a cross-check beside the allocation
 * map (records arrive when CUPTI flushes, not when memory changed). */
static void cupti_event(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	if (e->id == RT_ID_rt_cupti_state) {
		int s = (int)rt_vw_fld(e, RT_FN_state);

		if (r->cupti != 1 || s == 1) { /* one process subscribed: the rank has CUPTI */
			r->cupti = (uint8_t)s;
			rt_field_text(e->id, e->fields, RT_FN_detail, r->cupti_detail);
		}
		return;
	}
	r->cupti_records++;
	if (rt_vw_fld(e, RT_FN_pool) == 0 && rt_vw_fld(e, RT_FN_op) == 1)
		r->cupti_alloc_bytes += (uint64_t)rt_vw_fld(e, RT_FN_bytes);
}

bool rt_vw_memory_driver_event(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	if (e->id == RT_ID_rt_cupti_state || e->id == RT_ID_rt_cupti_mem) {
		cupti_event(r, e);
		return true;
	}
	switch (rt_drv_role[e->id].role) {
	case RT_R_ALLOC:
		rt_vw_memory_alloc(r, e, (uint64_t)rt_vw_fld(e, RT_FN_size),
				   rt_drv_role[e->id].arg == RT_A_HOST);
		return true;
	case RT_R_FREE: rt_vw_memory_free(r, e); return true;
	case RT_R_VMM_CREATE: vmm_create(r, e); return true;
	case RT_R_VMM_RELEASE: vmm_release(r, e); return true;
	case RT_R_VMM_MAP: vmm_map(r, e); return true;
	case RT_R_VMM_UNMAP: vmm_unmap(r, e); return true;
	case RT_R_CTX:
		if (!e->pending && e->ret == 0)
			use_device(r, (int)rt_vw_fld(e, RT_FN_device));
		return true;
	default:
		return rt_events[e->id].lib == RT_LIB_DRIVER;
	}
}

void rt_vw_memory_free_rank(struct rt_vw_rank *r)
{
	if (!r->vmm)
		return;
	while (r->vmm->handles) {
		struct vmm_handle *v = r->vmm->handles;

		r->vmm->handles = v->next;
		free(v);
	}
	free(r->vmm);
	r->vmm = NULL;
}

bool rt_vw_alloc_at(const struct rt_vw_rank *r, uint64_t ptr, struct rt_vw_alloc_info *out)
{
	const struct rt_vw_alloc_map *m = r->live;
	const struct rt_vw_alloc *a = ptr && m ? rt_vw_map_find((struct rt_vw_alloc_map *)m, ptr) : NULL;

	if (!a && ptr && m)
		a = rt_vw_map_holding((struct rt_vw_alloc_map *)m, ptr);
	if (!a)
		return false;
	*out = (struct rt_vw_alloc_info){ .base = a->ptr, .size = a->size, .device = a->dev,
					  .mapping = a->kind == RT_VW_MAPPING, .handle = a->handle,
					  .paths = a->paths };
	return true;
}

void rt_vw_mem_note(struct rt_vw_rank *r, int dev)
{
	if (!r->keep_mem || dev < 0 || dev >= RT_VW_MAX_DEV)
		return;
	if (!RT_GROW(r->mem, r->nmem, r->mem_cap, 256, UINT32_MAX))
		return;
	r->mem[r->nmem++] = (struct rt_vw_mem_change){ r->events, r->cur_ts, r->dev_bytes[dev], dev };
}
