/* SPDX-License-Identifier: MIT */
/* fields.h - F() and O() for recorders that expand a row's field list twice:
 * interpose/wrappers.c (interposition), device/cupti.c (CUPTI callbacks) and
 * core/events.c (the tracer's own events) write the same
 * events from the same .def rows, so they share one expansion.
 *
 * Each expansion is RT_TR_FIELDS(phase, field_list), with `struct rt_tr_call
 * c` in scope. Phase 0 (before the call) writes F() fields and zero-fills O()
 * fields; phase 1 (after it) skips F() fields and writes O() fields when the
 * call succeeded (c.ok). The phase is a constant: the compiler drops the dead
 * branch of each. Include once per file, after core.h. Also here: the
 * helpers the rows' field and device expressions are written with (DEREF,
 * DPTR, DEV_CUR, DEV_ARG), the same for both recorders. */
#ifndef RT_TR_FIELDS_H
#define RT_TR_FIELDS_H

#define DEV_CUR rt_tr_cur_dev
#define DEV_ARG(x) (x)
/* An out-parameter after a successful call; NULL-safe, as a tracer must be. */
#define DEREF(p) ((p) ? *(p) : 0)
/* A CUdeviceptr (an integer) recorded as a pointer */
#define DPTR(x) ((const void *)(uintptr_t)(x))

#define F(k, n, e)                                                                     \
	if (rt_phase == 0)                                                             \
		rt_tr_put_##k(&c, (e));                                                \
	else                                                                           \
		c.p += RT_SZ_##k;
#define O(k, n, e)                                                                     \
	if (rt_phase == 0)                                                             \
		rt_tr_put_zero(&c, RT_SZ_##k);                                         \
	else if (c.ok)                                                                 \
		rt_tr_put_##k(&c, (e));                                                \
	else                                                                           \
		c.p += RT_SZ_##k;
/* One expansion of a row's fields in phase 0 or 1 (a block of its own). */
#define RT_TR_FIELDS(phase, field_list)                                                \
	{                                                                              \
		const int rt_phase __attribute__((unused)) = (phase);                  \
		field_list                                                             \
	}

#endif
