/* SPDX-License-Identifier: MIT */
/* test_diff.c - two traces built in memory compared (viewer/analyse/diff.c): the
 * decisive difference is the first of root forwards per rank, unwrapped-module
 * calls, parameter placement, shapes, then collectives; collectives are "the same" by the
 * matcher's rule (dtype and op count); no limit on the ranks compared. */
#include "diff.h"
#include "trace_rig.h"

static struct rig A, B;
static struct rt_vw_diff d;

static void both(int n)
{
	rig_init(&A, n, RT_VW_KEEP_CALLS, "/nonexistent/A");
	rig_init(&B, n, RT_VW_KEEP_CALLS, "/nonexistent/B");
}

static void teardown(void)
{
	rt_vw_diff_free(&d);
	if (A.t)
		rig_free(&A);
	if (B.t)
		rig_free(&B);
	A = B = (struct rig){ 0 };
}

TestSuite(diff, .fini = teardown);

static void compare(void)
{
	rig_finish(&A);
	rig_finish(&B);
	cr_assert_eq(rt_vw_diff(A.t, B.t, &d), 0);
}

/* Rank ri's parameter name on device devtype (0 cuda on its own device,
 * 1 cpu), storage bytes (0: freed), shape d0 x d1 (d1 0: 1-D). */
static void param(struct rig *g, int ri, const char *name, int devtype, uint64_t storage,
		  uint64_t d0, uint64_t d1)
{
	RIG_OK(g, ri, rt_param_shape, -1, RT_FN_name, name, RT_FN_ndim, U(d1 ? 2 : 1), RT_FN_dim0, d0,
	       RT_FN_dim1, d1);
	RIG_OK(g, ri, rt_param, -1, RT_FN_name, name, RT_FN_devtype, U(devtype), RT_FN_device,
	       U(devtype ? -1 : ri), RT_FN_dtype, U(0), RT_FN_numel, d0 * (d1 ? d1 : 1),
	       RT_FN_bytes, storage, RT_FN_ptr, U(storage ? 0x1000 : 0));
}

static void root_forwards(struct rig *g, int ri, int n)
{
	for (int k = 0; k < n; k++) {
		RIG_OK(g, ri, rt_fsdp_forward, -1, RT_FN_phase, U(0), RT_FN_units, U(3));
		RIG_OK(g, ri, rt_fsdp_forward, -1, RT_FN_phase, U(1), RT_FN_units, U(3));
	}
}

static void all_reduce(struct rig *g, int ri, uint64_t count, int dtype, int op)
{
	RIG_OK(g, ri, ncclAllReduce, ri, RT_FN_comm_id, U(0), RT_FN_seq, U(0), RT_FN_count, count,
	       RT_FN_datatype, U(dtype), RT_FN_op, U(op));
}

static void exit_status(struct rig *g, int ri, int status)
{
	RIG_OK(g, ri, rt_exit, -1, RT_FN_status, U(status));
}

/* 4.52.4 against 4.53.0 on CPU (real PyTorch, issue 18): no collective, the
 * same placements at the latest report; only the root forwards differ. */
Test(diff, root_forwards_per_rank_lead)
{
	char pa[200], pb[200];

	both(2);
	for (int ri = 0; ri < 2; ri++) {
		root_forwards(&A, ri, 3);
		param(&A, ri, "embed.weight", 1, 0, 64, 32);
		param(&B, ri, "embed.weight", 1, 0, 64, 32);
		exit_status(&A, ri, 0);
		exit_status(&B, ri, 1);
	}
	compare();
	cr_assert(d.count_differs[RT_VW_DC_fsdp_root_forwards]);
	cr_assert_eq(d.decisive, RT_VW_DC_fsdp_root_forwards);
	cr_assert_str_eq(rt_vw_diff_section_id(d.decisive), "fsdp_root_forwards");
	rt_vw_diff_count_phrase(&d, RT_VW_DC_fsdp_root_forwards, 0, pa, sizeof(pa));
	rt_vw_diff_count_phrase(&d, RT_VW_DC_fsdp_root_forwards, 1, pb, sizeof(pb));
	cr_assert_str_eq(pa, "3 on every rank");
	cr_assert_str_eq(pb, "0 on every rank");
	cr_assert_eq(d.nparams, 1);
	cr_assert_eq(d.nparams_differ, 0, "placement and shape alike");
	cr_assert_eq(d.ranks[0].count[RT_VW_DC_fsdp_root_forwards][0], 3);
	cr_assert_eq(d.ranks[1].count[RT_VW_DC_fsdp_root_forwards][1], 0);
	cr_assert_not(d.ranks[0].calls_differ);
	cr_assert_str_eq(d.ranks[1].end_b, "exit 1");
	cr_assert_not(d.same_verdict);
}

/* The probe's direct evidence: in B the Trainer called the unwrapped module. */
Test(diff, unwrapped_module_calls_are_compared_after_the_root_forwards)
{
	char pb[200];

	both(2);
	for (int ri = 0; ri < 2; ri++) {
		root_forwards(&A, ri, 2);
		root_forwards(&B, ri, 2);
		RIG_OK(&B, ri, rt_unwrapped_call, -1, RT_FN_module, "embed_tokens", RT_FN_caller,
		       "trainer.py:3791 compute_loss", RT_FN_calls, U(ri + 1));
	}
	compare();
	cr_assert_not(d.count_differs[RT_VW_DC_fsdp_root_forwards]);
	cr_assert(d.count_differs[RT_VW_DC_unwrapped_calls]);
	cr_assert_eq(d.decisive, RT_VW_DC_unwrapped_calls);
	cr_assert_str_eq(rt_vw_diff_section_id(d.decisive), "unwrapped_calls");
	rt_vw_diff_count_phrase(&d, RT_VW_DC_unwrapped_calls, 1, pb, sizeof(pb));
	cr_assert_str_eq(pb, "rank 0 1, rank 1 2");
}

Test(diff, placement_decides_when_the_counts_agree)
{
	both(2);
	for (int ri = 0; ri < 2; ri++) {
		param(&A, ri, "w", 0, 4096, 32, 32);
		param(&B, ri, "w", 0, 0, 32, 32);
		param(&A, ri, "b", 0, 128, 32, 0);
		param(&B, ri, "b", 0, 0, 32, 0);
	}
	compare();
	cr_assert_eq(d.decisive, RT_VW_DS_PLACEMENT);
	cr_assert_eq(d.placement_differ, 2);
	cr_assert_eq(d.shape_differ, 0);
	cr_assert_eq(d.nplace_kinds, 1, "both parameters differ the same way");
	cr_assert_str_eq(d.place_kinds[0].a, "cuda:N");
	cr_assert_str_eq(d.place_kinds[0].b, "storage freed on every rank");
	cr_assert_str_eq(d.place_kinds[0].example, "w");
	cr_assert_eq(d.place_kinds[0].n, 2);
}

/* use_orig_params=True views: 1-D where the module expects 2-D. */
Test(diff, shapes_differ_by_dimensions)
{
	both(2);
	for (int ri = 0; ri < 2; ri++) {
		param(&A, ri, "embed.weight", 1, 8192, 64, 32);
		param(&B, ri, "embed.weight", 1, 8192, ri ? 0 : 2048, 0);
		param(&A, ri, "head.weight", 1, 8192, 64, 32);
		param(&B, ri, "head.weight", 1, 8192, ri ? 2048 : 0, 0);
	}
	compare();
	cr_assert_eq(d.decisive, RT_VW_DS_SHAPES);
	cr_assert_eq(d.shape_differ, 2);
	cr_assert_eq(d.nshape_kinds, 1, "grouped by dimensions: 2-D in A, 1-D in B");
	cr_assert_str_eq(d.shape_kinds[0].key_b, "1-D on every rank");
	cr_assert_str_eq(d.shape_kinds[0].a, "[64, 32] on every rank");
	cr_assert_str_eq(d.shape_kinds[0].b, "rank 0 [2048], rank 1 [0]");
	cr_assert(d.params[0].shape && !d.params[0].placement);
}

Test(diff, a_trace_without_shapes_does_not_differ_in_shape)
{
	both(1);
	param(&A, 0, "w", 0, 4096, 32, 32);
	RIG_OK(&B, 0, rt_param, -1, RT_FN_name, "w", RT_FN_devtype, U(0), RT_FN_device, U(0),
	       RT_FN_dtype, U(0), RT_FN_numel, U(1024), RT_FN_bytes, U(4096), RT_FN_ptr, U(0x1000));
	compare();
	cr_assert_eq(d.shape_differ, 0);
	cr_assert_eq(d.decisive, RT_VW_DS_NONE);
}

/* The rule cmd_diff.c once wrote by hand compared kind, count and root only. */
Test(diff, collectives_differ_by_dtype_and_op_as_the_matcher_says)
{
	both(3);
	for (int ri = 0; ri < 3; ri++) {
		all_reduce(&A, ri, 128, 7 /* float32 */, 0 /* sum */);
		all_reduce(&B, ri, 128, ri == 1 ? 9 /* bfloat16 */ : 7, ri == 2 ? 2 /* max */ : 0);
		all_reduce(&A, ri, 64, 7, 0);
		all_reduce(&B, ri, 64, 7, 0);
	}
	compare();
	cr_assert_eq(d.decisive, RT_VW_DS_COLLECTIVES);
	cr_assert_not(d.ranks[0].calls_differ);
	cr_assert_eq(d.ranks[0].same_calls, 2);
	cr_assert(d.ranks[1].calls_differ, "another dtype");
	cr_assert(d.ranks[2].calls_differ, "another op");
	cr_assert_eq(d.ranks[1].same_calls, 0);
	cr_assert_eq(d.ranks[1].next_b->dtype, 9);
}

Test(diff, more_than_64_ranks_are_all_compared)
{
	both(100);
	for (int ri = 0; ri < 100; ri++) {
		param(&A, ri, "w", 0, 4096, 32, 32);
		param(&B, ri, "w", 0, ri == 99 ? 0 : 4096, 32, 32);
	}
	compare();
	cr_assert_eq(d.nranks, 100);
	cr_assert_eq(d.placement_differ, 1, "rank 99's placement counts");
	cr_assert_str_eq(d.place_kinds[0].b, "ranks 0-98 cuda:N, rank 99 storage freed");
}

Test(diff, ranks_and_parameters_of_one_trace_only)
{
	rig_init(&A, 2, RT_VW_KEEP_CALLS, "/nonexistent/A");
	rig_init(&B, 3, RT_VW_KEEP_CALLS, "/nonexistent/B");
	for (int ri = 0; ri < 2; ri++) {
		param(&A, ri, "w", 1, 4096, 32, 32);
		param(&B, ri, "w", 1, 4096, 32, 32);
		exit_status(&A, ri, 0);
		exit_status(&B, ri, 0);
	}
	param(&B, 2, "w", 1, 4096, 32, 32);
	param(&B, 2, "extra", 1, 64, 16, 0);
	exit_status(&B, 2, 0);
	compare();
	cr_assert_eq(d.nranks, 3);
	cr_assert_null(d.ranks[2].a);
	cr_assert_eq(d.ranks[2].rank, 2);
	cr_assert_eq(d.nparams, 2, "B's own parameter compared too");
	cr_assert_eq(d.placement_differ, 1, "w: cpu on every rank of each (rank 2: the ranks section)");
	cr_assert_str_eq(d.params[0].name, "extra");
	cr_assert_str_eq(d.params[0].place_a, "not reported on every rank");
	cr_assert_eq(d.decisive, RT_VW_DS_PLACEMENT);
}
