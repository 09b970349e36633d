/* SPDX-License-Identifier: MIT */
/* test_memory.c - the rank model's memory (viewer/model/memory.c) on events built
 * in memory: an allocation seen by the runtime and the driver path counts
 * once, VMM physical bytes belong to the handle's device, a pointer inside a
 * mapped range resolves to its mapping, mappings and handles end as the
 * driver ends them. */
#include <criterion/criterion.h>
#include <string.h>

#include "model_int.h"

#define MiB (1ull << 20)

static struct rt_vw_matcher *m;
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
	{
		struct rt_vw_sink to = rt_vw_matcher_sink(m);

		rt_vw_on_event(m->t, &to, 0, &e);
	}
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

/* The reference: every live slot's range, in slot order. */
static struct rt_vw_alloc *scan_holding(struct rt_vw_alloc_map *mp, uint64_t p)
{
	for (size_t j = 0; j < mp->cap; j++)
		if (mp->slots[j].used == 1 && p >= mp->slots[j].ptr &&
		    p < mp->slots[j].ptr + mp->slots[j].size)
			return &mp->slots[j];
	return NULL;
}

static unsigned rnd_state = 12345;

static unsigned rnd(void)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return rnd_state >> 8;
}

#define HB 0x7f0000000000ull

static void probe_all(struct rt_vw_alloc_map *mp, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t p = HB + (uint64_t)(rnd() % 24000) * 4096 + rnd() % 4200;

		cr_assert_eq(rt_vw_map_holding(mp, p), scan_holding(mp, p), "pointer %#llx",
			     (unsigned long long)p);
	}
}

static void drop_random(struct rt_vw_alloc_map *mp, size_t down_to)
{
	while (mp->live > down_to) {
		struct rt_vw_alloc *a = &mp->slots[rnd() % mp->cap];

		if (a->used == 1)
			rt_vw_map_drop(mp, a, rnd() % 2);
	}
}

/* The sorted index of live ranges answers as the scan of every slot: empty
 * ranges, a base allocated again larger, over 8192 live (the scan answers)
 * and back under 2048 (indexed again), overlapping ranges (the scan). */
Test(memory, holding_lookup_answers_as_the_scan_of_every_slot)
{
	struct rt_vw_alloc_map *mp = r->live;

	for (int i = 0; i < 3000; i++)
		rt_vw_map_put(mp, HB + (uint64_t)(rnd() % 24000) * 4096, rnd() % 4097, 0);
	drop_random(mp, 2000);
	cr_assert_eq(mp->ix_state, 0);
	cr_assert(mp->nix > 1000);
	probe_all(mp, 4000);
	for (int i = 0; i < 20000; i++) /* many bases come again, some larger: overlaps */
		rt_vw_map_put(mp, HB + (uint64_t)(rnd() % 24000) * 4096, rnd() % 4097, 1);
	cr_assert_neq(mp->ix_state, 0);
	probe_all(mp, 4000);
	drop_random(mp, 0);
	cr_assert_eq(mp->ix_state, 0, "nothing live: indexed again");
	for (int i = 0; i < 12000; i++) /* disjoint, over 8192 live */
		rt_vw_map_put(mp, HB + (uint64_t)i * 4096 * 2, 4096, 0);
	cr_assert_eq(mp->ix_state, 1);
	probe_all(mp, 4000);
	drop_random(mp, 2000);
	cr_assert_eq(mp->ix_state, 0, "back under 2048 live: indexed again");
	cr_assert_eq(mp->nix, mp->live);
	probe_all(mp, 4000);
	rt_vw_map_put(mp, HB + 4096 * 2 + 100, 10, 0); /* inside or beside one: maybe overlapping */
	rt_vw_map_put(mp, HB + 4096 * 4 + 100, 10, 0);
	rt_vw_map_put(mp, HB + 100, 10000, 0);
	cr_assert_eq(mp->ix_state, 2, "overlapping ranges: the scan answers");
	probe_all(mp, 4000);
}
