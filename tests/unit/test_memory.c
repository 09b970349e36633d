/* SPDX-License-Identifier: MIT */
/* test_memory.c - the rank model's memory (viewer/memory.c) on events built
 * in memory: an allocation seen by the runtime and the driver path counts
 * once, VMM physical bytes belong to the handle's device, a pointer inside a
 * mapped range resolves to its mapping, mappings and handles end as the
 * driver ends them. */
#include <criterion/criterion.h>
#include <string.h>

#include "model_int.h"

#define MiB (1ull << 20)

static struct matcher *m;
static struct rt_vw_rank *r;

static void setup(void)
{
	m = calloc(1, sizeof(*m));
	m->t = calloc(1, sizeof(*m->t));
	m->t->nranks = 1;
	m->t->ranks = r = calloc(1, sizeof(*r));
	r->live = calloc(1, sizeof(*r->live));
	r->comm_device = r->init_device = -1;
}

static void teardown(void)
{
	rt_vw_free(m->t);
	free(m);
}

/* Feed one successful event: id on device dev, fields given as name/value
 * pairs (NULL-terminated). */
static void feed_ret(unsigned id, int dev, int ret, ...)
{
	uint8_t fields[RT_SIZE_MAX_PAYLOAD] = { 0 };
	struct rt_vw_event e = { .id = id, .dev = dev, .ret = ret, .fields = fields, .ts = 1 };
	const char *name;
	va_list ap;

	va_start(ap, ret);
	while ((name = va_arg(ap, const char *))) {
		uint64_t v = va_arg(ap, uint64_t);
		int i = rt_field_index(id, name);

		cr_assert_geq(i, 0, "%s has no field %s", rt_events[id].name, name);
		memcpy(fields + rt_events[id].fields[i].offset, &v, rt_kind_size(rt_events[id].fields[i].kind));
	}
	va_end(ap);
	rt_vw_on_event(m, 0, &e);
}

#define feed(id, dev, ...) feed_ret(id, dev, 0, __VA_ARGS__, NULL)
#define U(x) ((uint64_t)(x))

TestSuite(memory, .init = setup, .fini = teardown);

Test(memory, runtime_and_driver_report_one_allocation_counted_once)
{
	feed(RT_ID_cudaMalloc, 0, "ptr", U(0x7000000), "size", U(MiB));
	feed(RT_ID_cuMemAlloc_v2, 0, "ptr", U(0x7000000), "size", U(MiB));
	cr_assert_eq(r->dev_bytes[0], MiB);
	cr_assert_eq(r->dev_peak[0], MiB);
	cr_assert_eq(r->allocs, 1);
	cr_assert_eq(r->dup_allocs, 1);
	feed(RT_ID_cudaFree, 0, "ptr", U(0x7000000));
	feed(RT_ID_cuMemFree_v2, 0, "ptr", U(0x7000000));
	cr_assert_eq(r->dev_bytes[0], 0);
	cr_assert_eq(r->frees, 1);
	cr_assert_eq(r->unknown_frees, 0, "the driver's free of the same allocation is not unknown");
	feed(RT_ID_cuMemFree_v2, 0, "ptr", U(0x7000000));
	cr_assert_eq(r->unknown_frees, 1, "a third free is");
}

Test(memory, same_path_allocating_a_live_base_again_replaces_it)
{
	feed(RT_ID_cuMemAlloc_v2, 1, "ptr", U(0x9000000), "size", U(4 * MiB));
	feed(RT_ID_cuMemAlloc_v2, 1, "ptr", U(0x9000000), "size", U(2 * MiB));
	cr_assert_eq(r->dev_bytes[1], 2 * MiB);
	cr_assert_eq(r->drv_allocs, 2);
	cr_assert_eq(r->drv_bytes, 6 * MiB);
}

Test(memory, a_new_allocation_at_a_freed_base_ends_the_ghost)
{
	feed(RT_ID_cudaMalloc, 0, "ptr", U(0x5000000), "size", U(MiB));
	feed(RT_ID_cuMemAlloc_v2, 0, "ptr", U(0x5000000), "size", U(MiB));
	feed(RT_ID_cudaFree, 0, "ptr", U(0x5000000));
	feed(RT_ID_cudaMalloc, 0, "ptr", U(0x5000000), "size", U(3 * MiB));
	cr_assert_eq(r->dev_bytes[0], 3 * MiB);
	feed(RT_ID_cuMemFree_v2, 0, "ptr", U(0x5000000));
	cr_assert_eq(r->dev_bytes[0], 0, "the driver path freeing the new allocation frees it");
}

Test(memory, vmm_bytes_belong_to_the_handles_device_and_pointers_resolve_to_mappings)
{
	struct rt_vw_alloc_info ai;

	/* the thread's current device is 0; the physical memory is on device 3 */
	feed(RT_ID_cuMemCreate, 3, "handle", U(0x11), "size", U(2 * MiB), "device", U(3));
	feed(RT_ID_cuMemCreate, 3, "handle", U(0x12), "size", U(2 * MiB), "device", U(3));
	feed(RT_ID_cuMemAddressReserve, 0, "ptr", U(0x40000000), "size", U(8 * MiB));
	feed(RT_ID_cuMemMap, 0, "ptr", U(0x40000000), "size", U(2 * MiB), "handle", U(0x11));
	feed(RT_ID_cuMemMap, 0, "ptr", U(0x40200000), "size", U(2 * MiB), "handle", U(0x12));
	cr_assert_eq(r->dev_bytes[3], 4 * MiB, "mapped bytes are not counted again");
	cr_assert_eq(r->dev_bytes[0], 0);
	cr_assert(rt_vw_alloc_at(r, 0x40200000 + 4096, &ai));
	cr_assert_eq(ai.base, 0x40200000);
	cr_assert_eq(ai.size, 2 * MiB);
	cr_assert_eq(ai.device, 3);
	cr_assert(ai.mapping);
	cr_assert_eq(ai.handle, 0x12);
	cr_assert_not(rt_vw_alloc_at(r, 0x40400000, &ai), "reserved but unmapped");
	feed(RT_ID_cuMemRelease, 0, "handle", U(0x11));
	cr_assert_eq(r->dev_bytes[3], 4 * MiB, "released while mapped: still held");
	feed(RT_ID_cuMemUnmap, 0, "ptr", U(0x40000000), "size", U(4 * MiB));
	cr_assert_eq(r->dev_bytes[3], 2 * MiB, "unmapping the released handle frees it");
	cr_assert_not(rt_vw_alloc_at(r, 0x40200000 + 4096, &ai));
	feed(RT_ID_cuMemRelease, 0, "handle", U(0x12));
	cr_assert_eq(r->dev_bytes[3], 0);
	cr_assert_eq(r->dev_peak[3], 4 * MiB);
	cr_assert_eq(r->vmm_handles, 2);
	cr_assert_eq(r->vmm_maps, 2);
	cr_assert_eq(r->unknown_frees, 0);
}

Test(memory, failed_driver_allocations_count_nothing)
{
	feed_ret(RT_ID_cuMemCreate, 2, 2 /* CUDA_ERROR_OUT_OF_MEMORY */, "handle", U(0), "size",
		 U(2 * MiB), "device", U(2), NULL);
	feed_ret(RT_ID_cuMemAlloc_v2, 2, 2, "ptr", U(0), "size", U(MiB), NULL);
	cr_assert_eq(r->dev_bytes[2], 0);
	cr_assert_eq(r->failed_allocs, 2);
	cr_assert_eq(r->allocs, 0);
}

Test(memory, parameter_inside_a_mapping_on_another_device_is_misplaced)
{
	feed(RT_ID_cuMemCreate, 3, "handle", U(0x21), "size", U(2 * MiB), "device", U(3));
	feed(RT_ID_cuMemMap, 0, "ptr", U(0x80000000), "size", U(2 * MiB), "handle", U(0x21));
	feed(RT_ID_rt_param, 0, "devtype", U(0), "device", U(3), "numel", U(16), "bytes", U(64),
	     "ptr", U(0x80000000 + 512));
	cr_assert_eq(r->params_misplaced, 0);
	cr_assert_eq(r->params[0].last.alloc_base, 0x80000000, "the parameter's allocation is the mapping");
	cr_assert_eq(r->params[0].last.alloc_size, 2 * MiB);
	cr_assert_eq(r->params[0].last.alloc_dev, 3);
	cr_assert_eq(r->params[0].last.alloc_call, RT_ID_cuMemMap);
	feed(RT_ID_rt_param, 0, "devtype", U(0), "device", U(0), "numel", U(16), "bytes", U(64),
	     "ptr", U(0x80000000 + 512));
	cr_assert_eq(r->params_misplaced, 1, "cuda:0 tensor whose data is in device 3's mapping");
}
