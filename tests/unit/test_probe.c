/* SPDX-License-Identifier: MIT */
/* test_probe.c - the probe API of include/ranktrace.h (tracer/interpose/probe.c):
 * each call records the tracer's event of the same signature with what it
 * was given; a shape keeps six dimensions, each saturated to 32 bits; a
 * DTensor layout three mesh dimensions, placements as bytes; an exception's
 * message is cut into two name-sized parts (126 bytes).
 *
 * probe.c is compiled here alone; this file is its host, defining the
 * rt_tr_ev_* it records through (format/record.h) and logging each. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "ranktrace.h"
#include "record.h"

static char probe_log[512];

void rt_tr_ev_rt_param(const char *name, int devtype, int device, int dtype, uint64_t numel,
		       uint64_t bytes, const void *ptr)
{
	snprintf(probe_log, sizeof(probe_log), "param %s %d %d %d %llu %llu %p", name, devtype, device,
		 dtype, (unsigned long long)numel, (unsigned long long)bytes, ptr);
}

void rt_tr_ev_rt_param_shape(const char *name, int ndim, uint32_t d0, uint32_t d1, uint32_t d2,
			     uint32_t d3, uint32_t d4, uint32_t d5)
{
	snprintf(probe_log, sizeof(probe_log), "shape %s %d [%u %u %u %u %u %u]", name, ndim, d0, d1,
		 d2, d3, d4, d5);
}

void rt_tr_ev_rt_fsdp_forward(int phase, int units)
{
	snprintf(probe_log, sizeof(probe_log), "fsdp_forward %d %d", phase, units);
}

void rt_tr_ev_rt_marker(const char *name, int64_t value)
{
	snprintf(probe_log, sizeof(probe_log), "marker %s %lld", name, (long long)value);
}

void rt_tr_ev_rt_unwrapped_call(const char *module, const char *caller, uint64_t calls)
{
	snprintf(probe_log, sizeof(probe_log), "unwrapped %s %s %llu", module, caller,
		 (unsigned long long)calls);
}

void rt_tr_ev_rt_param_dtensor(const char *name, int mesh_ndim, uint32_t m0, uint32_t m1,
			       uint32_t m2, int p0, int p1, int p2, int ndim, uint32_t d0,
			       uint32_t d1, uint32_t d2, uint32_t d3, uint32_t d4, uint32_t d5)
{
	snprintf(probe_log, sizeof(probe_log), "dtensor %s %d [%u %u %u] [%d %d %d] %d [%u %u %u %u %u %u]",
		 name, mesh_ndim, m0, m1, m2, p0, p1, p2, ndim, d0, d1, d2, d3, d4, d5);
}

static char exc_head[200];

void rt_tr_ev_rt_exception(const char *module, const char *type)
{
	snprintf(exc_head, sizeof(exc_head), "exception %s %s", module, type);
}

void rt_tr_ev_rt_exception_text(const char *msg0, const char *msg1)
{
	snprintf(probe_log, sizeof(probe_log), "%s [%s|%s]", exc_head, msg0, msg1);
}

void rt_tr_ev_rt_optim_step(uint64_t step, uint64_t params, uint64_t sharded, uint64_t synced,
			    uint64_t reductions)
{
	snprintf(probe_log, sizeof(probe_log), "optim %llu %llu %llu %llu %llu",
		 (unsigned long long)step, (unsigned long long)params, (unsigned long long)sharded,
		 (unsigned long long)synced, (unsigned long long)reductions);
}

Test(probe, dtensor_layouts_keep_three_mesh_dims_and_placements_as_bytes)
{
	int64_t mesh[4] = { 2, 4, 8, 16 }, local[2] = { 128, 32 };
	int places[4] = { 0, RT_PLACE_REPLICATE, 300, -50 };

	rt_param_dtensor("w", 1, mesh, places, 2, local);
	cr_assert_str_eq(probe_log, "dtensor w 1 [2 0 0] [0 0 0] 2 [128 32 0 0 0 0]");
	/* a shard's dimension saturates at 127, an unknown negative code reads other */
	rt_param_dtensor("w", 4, mesh, places, 2, local);
	cr_assert_str_eq(probe_log, "dtensor w 4 [2 4 8] [0 -1 127] 2 [128 32 0 0 0 0]");
	places[2] = -50;
	rt_param_dtensor("w", 3, mesh, places, 0, NULL);
	cr_assert_str_eq(probe_log, "dtensor w 3 [2 4 8] [0 -1 -3] 0 [0 0 0 0 0 0]");
}

Test(probe, an_exception_message_is_cut_into_two_parts)
{
	char msg[300];

	rt_exception("model.embed_tokens (Embedding)", "RuntimeError", "'weight' must be 2-D");
	cr_assert_str_eq(probe_log, "exception model.embed_tokens (Embedding) RuntimeError "
		"['weight' must be 2-D|]");
	for (int i = 0; i < 299; i++)
		msg[i] = (char)('a' + i % 26);
	msg[299] = '\0';
	rt_exception("m", "E", msg);
	/* 63 + 63 bytes kept, the rest dropped */
	cr_assert_str_eq(strchr(probe_log, '['), "[abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk|"
		"lmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuv]");
	rt_exception("m", "E", NULL);
	cr_assert_str_eq(probe_log, "exception m E [|]");
}

Test(probe, calls_are_recorded_as_given)
{
	int64_t dims[8] = { 32, -1, 5000000000LL, 4, 5, 6, 7, 8 };

	rt_param("w", 0, 3, 7, 512, 2048, (void *)0x1000);
	cr_assert_str_eq(probe_log, "param w 0 3 7 512 2048 0x1000");
	rt_fsdp_forward(1, 4);
	cr_assert_str_eq(probe_log, "fsdp_forward 1 4");
	rt_marker("step", 12);
	cr_assert_str_eq(probe_log, "marker step 12");
	rt_unwrapped_call("LlamaForCausalLM", "trainer.py:3837", 2);
	cr_assert_str_eq(probe_log, "unwrapped LlamaForCausalLM trainer.py:3837 2");
	rt_optim_step(4, 21, 0, 21, 3);
	cr_assert_str_eq(probe_log, "optim 4 21 0 21 3");
	/* shape: six dims kept, each saturated to 32 bits, ndim to a byte */
	rt_param_shape("w", 8, dims);
	cr_assert_str_eq(probe_log, "shape w 8 [32 0 4294967295 4 5 6]");
	rt_param_shape("w", 300, NULL);
	cr_assert_str_eq(probe_log, "shape w 255 [0 0 0 0 0 0]");
	rt_param_shape("w", -2, dims);
	cr_assert_str_eq(probe_log, "shape w 0 [0 0 0 0 0 0]");
}
