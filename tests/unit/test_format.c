/* SPDX-License-Identifier: MIT */
/* test_format.c - the call tables are consistent: what each role promises
 * (the fields its readers use) is there, every declared field name and every
 * error name is real. A table edit that breaks a reader fails here. */
#include <criterion/criterion.h>
#include <string.h>

#include "encode.h"
#include "schema.h"

static bool has(unsigned id, int f)
{
	return rt_field_at[id][f] >= 0;
}

Test(format, every_declared_field_is_used)
{
	for (int f = 0; f < RT_FN_COUNT; f++) {
		bool used = false;

		for (unsigned id = 0; id < RT_ID_COUNT && !used; id++)
			used = has(id, f);
		cr_expect(used, "field #%d of fields.def is in no event (renamed in a table only?)", f);
	}
}

Test(format, roles_carry_the_fields_their_readers_use)
{
	for (unsigned id = 0; id < RT_ID_COUNT; id++) {
		const struct rt_event_desc *d = &rt_events[id];

		if (!rt_id_is_api(id))
			continue;
		switch (d->role) {
		case RT_R_ALLOC:
			cr_expect(has(id, RT_FN_ptr) && (has(id, RT_FN_size) ||
							 (has(id, RT_FN_pitch) && has(id, RT_FN_height))),
				  "%s: an allocation needs ptr and size (or pitch, height)", d->name);
			cr_expect(d->arg == RT_A_DEVICE || d->arg == RT_A_HOST, "%s: DEVICE or HOST", d->name);
			break;
		case RT_R_FREE:
			cr_expect(has(id, RT_FN_ptr), "%s: a free needs ptr", d->name);
			break;
		case RT_R_COPY:
			cr_expect(has(id, RT_FN_dst) && has(id, RT_FN_src), "%s: dst, src", d->name);
			break;
		case RT_R_COPY_PEER:
			cr_expect(has(id, RT_FN_dst_device) && has(id, RT_FN_src_device), "%s", d->name);
			break;
		case RT_R_COMM_INIT: case RT_R_COMM_INIT_ALL:
			cr_expect(has(id, RT_FN_comm_id) && has(id, RT_FN_nranks), "%s", d->name);
			break;
		case RT_R_COMM_SPLIT:
			cr_expect(has(id, RT_FN_comm_id) && has(id, RT_FN_parent_id), "%s", d->name);
			break;
		case RT_R_COLL: case RT_R_P2P:
			cr_expect(d->arg >= 0 && d->arg < RT_CK_COUNT, "%s: a collective kind", d->name);
			cr_expect(has(id, RT_FN_comm_id) && has(id, RT_FN_seq) && has(id, RT_FN_count),
				  "%s: comm_id, seq, count", d->name);
			cr_expect(d->role == RT_R_COLL || has(id, RT_FN_peer), "%s: peer", d->name);
			break;
		case RT_R_SET_DEVICE:
			cr_expect(has(id, RT_FN_device), "%s: device", d->name);
			break;
		default:
			break;
		}
		/* driver calls have their own role column (rt_drv_role), same words */
		cr_expect(d->role != RT_R_NONE || d->lib == RT_LIB_DRIVER, "%s has no role", d->name);
	}
}

/* The driver table's role column speaks the same words as the runtime's. */
Test(format, driver_roles_are_roles)
{
	cr_expect_eq(rt_drv_role[RT_ID_cuMemAlloc_v2].role, RT_R_ALLOC);
	cr_expect_eq(rt_drv_role[RT_ID_cuMemAlloc_v2].arg, RT_A_DEVICE);
	cr_expect_eq(rt_drv_role[RT_ID_cuMemHostAlloc].role, RT_R_ALLOC);
	cr_expect_eq(rt_drv_role[RT_ID_cuMemHostAlloc].arg, RT_A_HOST);
	cr_expect_eq(rt_drv_role[RT_ID_cuMemFree_v2].role, RT_R_FREE);
	cr_expect_eq(rt_drv_role[RT_ID_cuCtxSetCurrent].role, RT_R_CTX);
	cr_expect_str_eq(rt_role_names[RT_R_VMM_MAP], "VMM_MAP");
	for (unsigned id = 0; id < RT_ID_COUNT; id++)
		cr_expect(rt_events[id].lib == RT_LIB_DRIVER || rt_drv_role[id].role == RT_R_NONE,
			  "%s: a driver role on a call of another library", rt_events[id].name);
}

Test(format, every_error_name_is_nvidias)
{
	for (unsigned id = 0; id < RT_ID_COUNT; id++)
		for (int i = 0; rt_id_is_api(id) && rt_events[id].errors && rt_events[id].errors[i]; i++)
			cr_expect(rt_result_value(rt_events[id].lib, rt_events[id].errors[i]) > 0,
				  "%s: %s is not one of NVIDIA's codes", rt_events[id].name,
				  rt_events[id].errors[i]);
	for (int l = 0; l < RT_LIB_TRACER; l++)
		for (int i = 0; rt_errors_common[l][i]; i++)
			cr_expect(rt_result_value((unsigned)l, rt_errors_common[l][i]) > 0, "%s",
				  rt_errors_common[l][i]);
	cr_expect_str_eq(rt_result_name(RT_LIB_NCCL, 2), "ncclSystemError");
	cr_expect_str_eq(rt_result_name(RT_LIB_CUDA, 2), "cudaErrorMemoryAllocation");
	cr_expect_null(rt_result_name(RT_LIB_NCCL, 99));
}

Test(format, collective_kinds_in_output_order)
{
	cr_expect_str_eq(rt_coll_names[RT_CK_AllReduce], "AllReduce");
	cr_expect_eq(rt_coll_kind_of(RT_ID_ncclBcast), RT_CK_Broadcast);
	cr_expect_eq(rt_coll_kind_of(RT_ID_ncclSend), RT_CK_Send);
	cr_expect_eq(rt_coll_kind_of(RT_ID_cudaMalloc), -1);
	cr_expect_eq(rt_coll_kind_of(RT_ID_rt_exit), -1);
}

/* The tracer's entry record (rt_fmt_event_begin, two overlapping stores)
 * is byte for byte what rt_fmt_event_header then rt_fmt_event_common
 * write: compact and extended headers, times whose bits 32-47 are set
 * (they land in the common part's bytes until its store), every device,
 * and nothing written past the common part. */
Test(format, entry_record_equals_header_then_common)
{
	static const uint64_t ts[] = { 0, 1, 0x12345678ull, 0xffffffffull, 0x0000abcd12345678ull,
				       0xffffffffffff0001ull, 0x7fffffffffffffffull };
	static const uint64_t back[] = { 0, 1, 0xfffffffeull, 0xffffffffull, 0x100000000ull };
	static const int devs[] = { 0, 3, -1, 127 };

	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
		for (size_t k = 0; k < sizeof(back) / sizeof(back[0]); k++)
			for (size_t d = 0; d < sizeof(devs) / sizeof(devs[0]); d++) {
				uint8_t a[64], b[64];
				uint64_t last = ts[i] - back[k];
				unsigned id = (unsigned)(i * 37 + d) % RT_ID_COUNT;
				uint64_t w = rt_fmt_common_word(RT_DUR_PENDING, 0, devs[d]);
				uint8_t *qa, *qb;

				memset(a, 0xa5, sizeof(a));
				memset(b, 0xa5, sizeof(b));
				qa = rt_fmt_event_header(a, id, ts[i], last);
				qa = rt_fmt_event_common(qa, RT_DUR_PENDING, 0, devs[d]) - RT_COMMON_BYTES;
				qb = rt_fmt_event_begin(b, id, ts[i], last, w);
				cr_assert_eq(qb - b, qa - a, "ts %#llx last %#llx: common part at %td, not %td",
					     (unsigned long long)ts[i], (unsigned long long)last, qb - b, qa - a);
				cr_assert_arr_eq(a, b, sizeof(a), "ts %#llx last %#llx dev %d: bytes differ",
						 (unsigned long long)ts[i], (unsigned long long)last, devs[d]);
			}
}
