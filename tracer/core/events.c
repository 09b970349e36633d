/* SPDX-License-Identifier: MIT */
/* events.c - the tracer's own events (exit, signal, rank known, rt_fault,
 * the probe's reports, device-side collectives...), one function each,
 * rt_tr_ev_<name>() (format/record.h), generated here from format/events.def.
 *
 * Each records its event on the calling thread's stream through the hot
 * path, like a call that returns at once. Any thread, any depth; no lock, no
 * allocation (but a thread's first event opens its stream: life.c). */
#include "core.h"
#include "fields.h"

/* Tracer events: recorded at depth 0 (exit), 2 (a signal inside a real
 * call) or 1 (from a wrapper's after-hook); depth is restored after. */
#define RT_EVENT(name, params, field_list)                                             \
	void rt_tr_ev_##name params;                                                   \
	void rt_tr_ev_##name params                                                    \
	{                                                                              \
		int depth = rt_tr_depth;                                               \
		struct rt_tr_call c;                                                   \
		if (rt_tr_off)                                                         \
			return;                                                        \
		rt_tr_depth = 0;                                                       \
		if (!rt_tr_begin(&c, RT_ID_##name, RT_SIZE_##name, rt_tr_cur_dev)) {   \
			rt_tr_depth = depth;                                           \
			return;                                                        \
		}                                                                      \
		RT_TR_FIELDS(0, field_list)                                            \
		rt_tr_call_real(&c);                                                   \
		rt_tr_returned(&c);                                                    \
		rt_tr_end(&c, 0);                                                      \
		rt_tr_depth = depth;                                                   \
	}
#define RT_API(...)
#include "events.def"
#undef RT_EVENT
#undef RT_API
