/* SPDX-License-Identifier: MIT */
/* inject.h - the fault injector inside libranktrace.so, and the little it
 * needs from its host (the tracer).
 *
 * The tracer's wrappers ask rt_inj_check() per call (only when a plan is
 * active and the function has rules), act with rt_inj_before() and, after
 * a successful call, rt_inj_after(). The injector knows nothing of the
 * tracer's streams: it records what fired through format/record.h
 * (rt_tr_ev_rt_fault) and asks the host for three things below. */
#ifndef RT_INJ_INJECT_H
#define RT_INJ_INJECT_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "schema.h"

/* An injected fault chosen for this call. */
struct rt_inj_hit {
	int action;   /* enum rt_inj_action, 0: none */
	int rule;
	int64_t arg;
	uint64_t call;
};

extern int rt_inj_active;                    /* a plan is loaded */
extern uint8_t rt_inj_api[RT_ID_COUNT];      /* rules per interposed function */

/* Parse RANKTRACE_INJECT once; a bad plan warns once and injects nothing. */
void rt_inj_init(void);
/* The first rule of function id that fires on this call, on communicator
 * comm (NULL: the call has none), into *hit. */
void rt_inj_check(unsigned id, const void *comm, struct rt_inj_hit *hit);
/* Before the real call: act; *replaced when the call must not happen, with
 * the value to return. fields: the call's recorded fields, or NULL when it
 * is not recorded (devdelay reads the stream there). */
long rt_inj_before(const struct rt_inj_hit *hit, unsigned id, const uint8_t *fields,
		   bool *replaced);
/* After the real call: `corrupt` flips a bit of a collective's output;
 * fields are the call's recorded fields (format/schema.h). */
void rt_inj_after(const struct rt_inj_hit *hit, unsigned id, const uint8_t *fields, long ret);

/* At the end of a traced process (registered with the tracer's core): one
 * rt_inj_rule record per rule, with the calls it counted and the times it
 * fired here. Records only: safe in a fatal signal's handler (from_signal). */
void rt_inj_at_end(bool from_signal);

/* ---- provided by the host: libranktrace.so's base/base.c (resolve, warn),
 * identity/rank.c (rank), identity/comms.c (communicator) and
 * device/device.c (stream delay) ---- */
/* This process's rank: from NCCL once known, else from the launcher's
 * environment; -1 when unknown. */
int rt_inj_host_rank(void);
/* How communicator comm was made (comm=), into *c; false when it is not
 * known. */
bool rt_inj_host_comm(const void *comm, struct rt_inj_comm *c);
/* The real function `name` of library lib (enum rt_lib), or NULL. */
void *rt_inj_host_resolve(const char *name, int lib);
/* One warning on stderr, once per flag. */
void rt_inj_host_warn(int *flag, const char *msg);
/* Make stream wait ns on the device before the work enqueued next, without
 * blocking the caller (devdelay). 0, or -1 when it cannot. */
int rt_inj_host_stream_delay(uint64_t stream, int64_t ns);

#endif
