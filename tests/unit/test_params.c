/* SPDX-License-Identifier: MIT */
/* test_params.c - the model's record of parameters (viewer/model/params.c) on
 * events built in memory: a shape goes with the next report of its name, and
 * elements, shape and the parameter's own bytes are each rank's at each report
 * point, apart from the bytes of the storage it lies in (FSDP's flat shard). */
#include "trace_rig.h"

static struct rig g;

static void setup(void)
{
	rig_init(&g, 2, 0, "/nonexistent/ranktrace-params");
}

static void teardown(void)
{
	rig_free(&g);
}

TestSuite(params, .init = setup, .fini = teardown);

static void point(int ri, int pt)
{
	RIG_OK(&g, ri, rt_marker, -1, RT_FN_name, RT_VW_PARAMS_MARKER, RT_FN_value, U(pt + 1));
}

static void shape2(int ri, const char *name, int ndim, uint64_t d0, uint64_t d1)
{
	RIG_OK(&g, ri, rt_param_shape, -1, RT_FN_name, name, RT_FN_ndim, U(ndim), RT_FN_dim0, d0,
	       RT_FN_dim1, d1);
}

/* A cpu tensor: elements, storage bytes, data pointer; dtype float32. */
static void cpu_param(int ri, const char *name, uint64_t numel, uint64_t storage, uint64_t ptr)
{
	RIG_OK(&g, ri, rt_param, -1, RT_FN_name, name, RT_FN_devtype, U(1), RT_FN_device, U(-1),
	       RT_FN_dtype, U(0), RT_FN_numel, numel, RT_FN_bytes, storage, RT_FN_ptr, ptr);
}

static const struct rt_vw_param *param(int ri, const char *name)
{
	const struct rt_vw_param *p = rt_vw_find_param(&g.t->ranks[ri], name);

	cr_assert_not_null(p, "rank %d has no %s", ri, name);
	return p;
}

static const char *shape_of(const struct rt_vw_placement *pl)
{
	static char s[96];

	rt_vw_shape_str(&pl->shape, s, sizeof(s));
	return s;
}

Test(params, a_shape_goes_with_the_next_report_of_its_name_only)
{
	shape2(0, "w", 2, 64, 32);
	cpu_param(0, "w", 2048, 8192, 0x1000);
	cr_assert_str_eq(shape_of(&param(0, "w")->last), "[64, 32]");
	shape2(0, "w", 2, 64, 32);
	cpu_param(0, "b", 32, 128, 0x3000); /* another name: the shape is not its */
	cr_assert_str_eq(shape_of(&param(0, "b")->last), "-");
	cpu_param(0, "w", 2048, 8192, 0x1000); /* and the waiting shape is gone */
	cr_assert_str_eq(shape_of(&param(0, "w")->last), "-");
	cr_assert_null(rt_vw_find_param(&g.t->ranks[1], "w"), "rank 1 reported nothing");
}

/* use_orig_params=True after wrapping: each rank's parameter is a 1-D view of
 * its part of the flat shard (0 elements on a rank that holds none of it). */
static void orig_params_views(void)
{
	for (int ri = 0; ri < 2; ri++) {
		point(ri, RT_PP_WRAP);
		shape2(ri, "embed.weight", 2, 64, 32);
		cpu_param(ri, "embed.weight", 2048, 8192, 0x10000 * (ri + 1));
		point(ri, RT_PP_FIRST_FORWARD);
	}
	shape2(0, "embed.weight", 1, 2048, 0);
	cpu_param(0, "embed.weight", 2048, 20608, 0x90000);
	shape2(1, "embed.weight", 1, 0, 0);
	cpu_param(1, "embed.weight", 0, 0, 0);
}

Test(params, elements_shape_and_own_bytes_are_each_ranks_at_each_point)
{
	const struct rt_vw_placement *from, *pl;
	int from_at;

	orig_params_views();
	for (int ri = 0; ri < 2; ri++) {
		pl = rt_vw_param_at(param(ri, "embed.weight"), RT_PP_WRAP, &from, &from_at);
		cr_assert_eq(pl->numel, 2048, "rank %d as wrapped", ri);
		cr_assert_str_eq(shape_of(pl), "[64, 32]");
		cr_assert_eq(rt_vw_param_bytes(pl), 8192);
		cr_assert_eq(pl->bytes, 8192);
	}
	pl = rt_vw_param_at(param(0, "embed.weight"), RT_VW_AT_LAST, &from, &from_at);
	cr_assert_eq(pl->numel, 2048);
	cr_assert_str_eq(shape_of(pl), "[2048]", "a 1-D view: \"'weight' must be 2-D\"");
	cr_assert_eq(rt_vw_param_bytes(pl), 8192, "its own bytes");
	cr_assert_eq(pl->bytes, 20608, "the storage it lies in: the flat shard");
	pl = rt_vw_param_at(param(1, "embed.weight"), RT_VW_AT_LAST, &from, &from_at);
	cr_assert_eq(pl->numel, 0, "rank 1 holds none of it");
	cr_assert_str_eq(shape_of(pl), "[0]");
	cr_assert_eq(rt_vw_param_bytes(pl), 0);
	pl = rt_vw_param_at(param(1, "embed.weight"), RT_PP_FIRST_FORWARD, &from, &from_at);
	cr_assert_eq(pl->numel, 0, "--at first-forward on rank 1");
}

Test(params, change_of_place_is_named_with_its_point)
{
	const struct rt_vw_placement *from, *pl;
	int from_at = -1;

	point(0, RT_PP_WRAP);
	RIG_OK(&g, 0, rt_param, -1, RT_FN_name, "w", RT_FN_devtype, U(2), RT_FN_device, U(-1),
	       RT_FN_dtype, U(0), RT_FN_numel, U(16), RT_FN_bytes, U(0), RT_FN_ptr, U(0));
	point(0, RT_PP_FIRST_FORWARD);
	cpu_param(0, "w", 16, 64, 0x2000);
	pl = rt_vw_param_at(param(0, "w"), RT_VW_AT_LAST, &from, &from_at);
	cr_assert_eq(pl->place, RT_P_CPU);
	cr_assert_not_null(from);
	cr_assert_eq(from->place, RT_P_META);
	cr_assert_eq(from_at, RT_PP_FIRST_FORWARD);
	pl = rt_vw_param_at(param(0, "w"), RT_PP_WRAP, &from, &from_at);
	cr_assert_eq(pl->place, RT_P_META);
	cr_assert_null(from, "nothing came before wrap");
}

Test(params, own_bytes_follow_the_dtype)
{
	struct rt_vw_placement pl = { .numel = 1000, .dtype = 2 /* bfloat16 */ };

	cr_assert_eq(rt_vw_param_bytes(&pl), 2000);
	pl.dtype = 3; /* float64 */
	cr_assert_eq(rt_vw_param_bytes(&pl), 8000);
	pl.dtype = 200;
	cr_assert_eq(rt_vw_param_bytes(&pl), -1, "unknown dtype: unknown size");
	cr_assert_str_eq(rt_vw_dtype_name(200), "?");
}

Test(params, shapes_read_as_pytorch_prints_them)
{
	struct rt_vw_shape s = { .known = true, .ndim = 0 };
	char out[96];

	rt_vw_shape_str(&s, out, sizeof(out));
	cr_assert_str_eq(out, "[]", "a scalar");
	s = (struct rt_vw_shape){ .known = true, .ndim = 7, .dim = { 1, 2, 3, 4, 5, 6 } };
	rt_vw_shape_str(&s, out, sizeof(out));
	cr_assert_str_eq(out, "[1, 2, 3, 4, 5, 6, ...]", "the first six of seven");
	rt_vw_shape_str(&s, out, 8);
	cr_assert_str_eq(out, "[1, 2, ", "cut to the room given");
}
