/* SPDX-License-Identifier: MIT */
/* test_probe.c - the probe API of include/ranktrace.h (tracer/interpose/probe.c):
 * each call records the tracer's event of the same signature with what it
 * was given; a shape keeps six dimensions, each saturated to 32 bits.
 *
 * probe.c is compiled here alone; this file is its host, defining the
 * rt_tr_ev_* it records through (format/record.h) and logging each. */
#include <criterion/criterion.h>
#include <stdio.h>

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
	/* shape: six dims kept, each saturated to 32 bits, ndim to a byte */
	rt_param_shape("w", 8, dims);
	cr_assert_str_eq(probe_log, "shape w 8 [32 0 4294967295 4 5 6]");
	rt_param_shape("w", 300, NULL);
	cr_assert_str_eq(probe_log, "shape w 255 [0 0 0 0 0 0]");
	rt_param_shape("w", -2, dims);
	cr_assert_str_eq(probe_log, "shape w 0 [0 0 0 0 0 0]");
}
