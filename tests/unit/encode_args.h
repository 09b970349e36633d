/* SPDX-License-Identifier: MIT */
/* encode_args.h - for the unit tests that build events in memory: encode an
 * event's fields given as (field number, value) pairs ending with -1 (a
 * string field's value is a const char *), through the format's encoder. */
#ifndef RT_TEST_ENCODE_ARGS_H
#define RT_TEST_ENCODE_ARGS_H
#include <criterion/criterion.h>
#include <stdarg.h>

#include "encode.h"

static inline void encode_args(uint8_t *fields, unsigned id, va_list ap)
{
	int f;

	while ((f = va_arg(ap, int)) >= 0) {
		int i = rt_field_at[id][f];
		const struct rt_field *fd;

		cr_assert_geq(i, 0, "%s has no field #%d", rt_events[id].name, f);
		fd = &rt_events[id].fields[i];
		if (fd->kind == RT_K_STR)
			rt_fmt_put_field(fields + fd->offset, RT_K_STR, 0, va_arg(ap, const char *));
		else
			rt_fmt_put_field(fields + fd->offset, (enum rt_kind)fd->kind, va_arg(ap, uint64_t), NULL);
	}
}
#endif
