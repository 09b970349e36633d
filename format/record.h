/* SPDX-License-Identifier: MIT */
/* record.h - the tracer's own events as functions, generated from events.def.
 *
 * rt_tr_ev_<name>(params) records event <name> on the calling thread's
 * stream. libranktrace.so implements them (tracer/core/events.c); the tracer,
 * the injector and the probe API call them. A parameter added to events.def
 * changes the prototype here, so every caller fails to compile until it
 * passes it. */
#ifndef RT_RECORD_H
#define RT_RECORD_H

#include <stdint.h>

#define RT_API(...)
#define RT_EVENT(name, params, fields) void rt_tr_ev_##name params;
#include "events.def"
#undef RT_EVENT
#undef RT_API

#endif
