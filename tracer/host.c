/* SPDX-License-Identifier: MIT */
/* host.c - what the tracer provides to its neighbours: the injector's three
 * questions (inject/inject.h) and the rank learned from NCCL.
 *
 * Keeps the dependencies one-way: rank.c knows identities and directories
 * only, writer.c knows files only, inject/ knows neither; this file is where
 * they meet. The injector's rank comes from NCCL once known, else from the
 * launcher's environment, parsed once at start-up (rt_tr_host_init). */
#include <stdlib.h>

#include "rank.h"
#include "tracer.h"

static int env_rank = -1;

/* Once, from the constructor, before the fault plan is read. */
void rt_tr_host_init(void)
{
	struct rt_tr_rank_info r;

	rt_tr_rank_parse((const char *(*)(const char *))getenv, &r);
	env_rank = r.rank;
}

int rt_inj_host_rank(void)
{
	return rt_tr_rank.rank >= 0 ? rt_tr_rank.rank : env_rank;
}

void *rt_inj_host_resolve(const char *name, int lib)
{
	return rt_tr_resolve(name, (enum rt_lib)lib);
}

void rt_inj_host_warn(int *flag, const char *msg)
{
	rt_tr_warn_once(flag, "%s", msg);
}

void rt_tr_rank_from_nccl(int rank, int nranks)
{
	if (rt_tr_lttng_wanted) { /* no rank directory: the event says it */
		if (rt_tr_rank.rank >= 0 || rank < 0)
			return;
		rt_tr_rank.rank = rank;
		rt_tr_rank.world_size = nranks;
		rt_tr_rank.source = "nccl";
		rt_tr_ev_rt_rank(rank, nranks);
		return;
	}
	if (!rt_tr_rank_learn(rank, nranks))
		return;
	rt_tr_write_metadata(rt_tr_rank.dir, true);
	rt_tr_ev_rt_rank(rank, nranks);
}
