/* SPDX-License-Identifier: MIT */
/* plan_int.h - what plan.c (the parser) and list.c (the tables, --list)
 * share inside inject/. */
#ifndef RT_INJ_PLAN_INT_H
#define RT_INJ_PLAN_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "plan.h"

/* format/actions.def, indexed by enum rt_inj_action (0: none). */
struct rt_inj_action_info {
	bool value, calls, points;
	const char *usage, *doc;
};
extern const struct rt_inj_action_info rt_inj_actions[RT_INJ_NACTIONS];

/* A preset's parameters (params: "N", "R@SEQ") fill its expansion's %s in order. */
struct rt_inj_preset {
	const char *name, *params, *expansion, *doc;
};
extern const struct rt_inj_preset rt_inj_presets[];
extern const size_t rt_inj_npresets;

/* plan_comm.c: comm=VALUE into r: 0, or -1 with the message, and where in
 * VALUE the mistake is (*at). */
int rt_inj_parse_comm(const char *v, struct rt_inj_rule *r, size_t *at, char *msg, size_t n);

/* plan_file.c: how long a named pipe waits for its writer (tests shorten it) */
extern int rt_inj_plan_pipe_wait_ms;

#endif
