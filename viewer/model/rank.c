/* SPDX-License-Identifier: MIT */
/* rank.c - what one rank's model says of itself: how it ended (the words
 * every output uses), did it crash; and the collective kind of a call.
 *
 * Pure functions of one rank or one id: the model (model.c), the matcher's
 * and liveness passes (hang.c, devhang.c, root.c), the detectors and the
 * outputs call them. Calls nothing else of the viewer. Also what a rank is
 * inside when live: its oldest open call, the last sequence it entered per
 * communicator, whether it is in the stall analysis (hang.c tracks them). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_int.h"

/* The rank number a directory name says (rank-00002), or -1 (rank-p123). */
static int rank_of_name(const char *name)
{
	char *end;
	long v;

	if (strncmp(name, "rank-", 5) || name[5] < '0' || name[5] > '9')
		return -1;
	v = strtol(name + 5, &end, 10);
	return *end || v > 99999 ? -1 : (int)v;
}

int rt_vw_rank_number(const struct rt_vw_rank *r)
{
	return r->readable ? r->meta.rank : rank_of_name(r->name);
}

int rt_vw_rank_index(const struct rt_vw_trace *t, int rank)
{
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].meta.rank == rank)
			return i;
	return -1;
}

int rt_vw_coll_kind(unsigned id)
{
	return id < RT_ID_COUNT ? rt_coll_kind_of(id) : -1;
}

void rt_vw_rank_end(const struct rt_vw_rank *r, char *out, size_t n)
{
	if (!r->readable)
		snprintf(out, n, "unreadable");
	else if (r->state == RT_S_RUNNING && r->nopen)
		snprintf(out, n, "running, in %s %.0fs", rt_events[r->open[0].id].name, r->open[0].age_s);
	else if (r->state == RT_S_RUNNING)
		snprintf(out, n, "running");
	else if (r->signo)
		snprintf(out, n, "signal %d%s%s", r->signo, r->died ? " in " : "",
			 r->died ? rt_events[r->died_id].name : "");
	else if (r->exit_seen && r->exit_status >= 0)
		snprintf(out, n, "exit %d", r->exit_status);
	else if (r->exit_seen)
		snprintf(out, n, "returned");
	else if (r->died)
		snprintf(out, n, "%s in %s", r->completeness == RT_C_COMPLETE ? "died" : "trace ends",
			 rt_events[r->died_id].name);
	else if (r->stopped) /* its end came after the writer had to stop */
		snprintf(out, n, "trace incomplete: %s at event %" PRIu64,
			 rt_stop_prose(r->stop_reason) ? rt_stop_prose(r->stop_reason) : "stopped",
			 r->stop_events);
	else if (r->completeness == RT_C_CAPPED)
		snprintf(out, n, "trace capped");
	else if (r->completeness == RT_C_DAMAGED)
		snprintf(out, n, "trace damaged");
	else
		snprintf(out, n, "vanished (no end)");
}

bool rt_vw_crashed(const struct rt_vw_rank *r)
{
	if (r->state == RT_S_RUNNING) /* alive: not dead, whatever its trace lacks */
		return false;
	if (r->interrupted) /* stopped with the whole job from outside (hang.c) */
		return false;
	return r->signo || (r->exit_seen && r->exit_status > 0) || r->died ||
	       (!r->exit_seen && r->readable);
}

/* Alive, or stopped with the whole job: in the stall analysis. */
bool rt_vw_frozen(const struct rt_vw_rank *r)
{
	return r->state == RT_S_RUNNING || r->interrupted;
}
