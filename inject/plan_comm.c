/* SPDX-License-Identifier: MIT */
/* plan_comm.c - the fault plan's comm= selector (plan.h): which
 * communicators a rule's calls must be on, by how they were made, parsed
 * once (plan.c calls it for the key) and matched per call by the engine
 * against what the host says of the call's communicator. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "plan_int.h"

static bool number(const char *s, uint64_t *v)
{
	char *e;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &e, 10);
	return !*e && errno != ERANGE && *v <= INT_MAX;
}

/* 0xID: the identity a trace shows. */
static bool identity(const char *v, struct rt_inj_rule *r)
{
	uint64_t n;
	char *e;

	if (v[0] != '0' || (v[1] != 'x' && v[1] != 'X') || !v[2] || strchr(v + 2, '-'))
		return false;
	errno = 0;
	n = strtoull(v + 2, &e, 16);
	if (*e || errno == ERANGE || !n)
		return false;
	r->comm_sel = RT_INJ_COMM_ID;
	r->comm_arg = (int64_t)n;
	return true;
}

int rt_inj_parse_comm(const char *v, struct rt_inj_rule *r, size_t *at, char *msg, size_t n)
{
	static const struct { const char *word; enum rt_inj_comm_sel sel; } words[] = {
		{ "init", RT_INJ_COMM_INIT }, { "split", RT_INJ_COMM_SPLIT },
		{ "color", RT_INJ_COMM_COLOR }, { "shrink", RT_INJ_COMM_SHRINK },
	};
	uint64_t k = 0;

	*at = 0;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t len = strlen(words[i].word);
		const char *p = v + len;

		if (strncmp(v, words[i].word, len))
			continue;
		*at = len;
		r->comm_sel = words[i].sel;
		if (!*p && words[i].sel != RT_INJ_COMM_COLOR)
			return 0;
		if (words[i].sel == RT_INJ_COMM_SHRINK)
			snprintf(msg, n, "comm=shrink takes no number");
		else if (words[i].sel == RT_INJ_COMM_COLOR && !number(p, &k))
			snprintf(msg, n, "comm=colorC needs a split's color (0 or more)");
		else if (words[i].sel != RT_INJ_COMM_COLOR && (!number(p, &k) || k == 0))
			snprintf(msg, n, "comm=%sN counts the rank's %s calls from 1", words[i].word,
				 words[i].word);
		else {
			r->comm_arg = (int64_t)k;
			return 0;
		}
		return -1;
	}
	if (identity(v, r))
		return 0;
	snprintf(msg, n, "comm= is how the communicator was made: init, initN, split, splitN, "
		 "colorC, shrink, or its id 0x... (as `ranktrace view` prints it)");
	return -1;
}

bool rt_inj_comm_matches(const struct rt_inj_rule *r, const struct rt_inj_comm *c)
{
	if (r->comm_sel == RT_INJ_COMM_ANY)
		return true;
	if (!c)
		return false;
	switch (r->comm_sel) {
	case RT_INJ_COMM_INIT:
		return c->how == RT_INJ_MADE_INIT && (!r->comm_arg || c->ordinal == r->comm_arg);
	case RT_INJ_COMM_SPLIT:
		return c->how == RT_INJ_MADE_SPLIT && (!r->comm_arg || c->ordinal == r->comm_arg);
	case RT_INJ_COMM_COLOR:
		return c->how == RT_INJ_MADE_SPLIT && c->color == r->comm_arg;
	case RT_INJ_COMM_SHRINK:
		return c->how == RT_INJ_MADE_SHRINK;
	default:
		return c->id == (uint64_t)r->comm_arg;
	}
}
