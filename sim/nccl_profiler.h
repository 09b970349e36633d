/* SPDX-License-Identifier: MIT */
/* nccl_profiler.h - the simulated NCCL's side of NCCL profiler plugins
 * (nccl_profiler.c): per communicator a context, per collective the
 * collective event and its one kernel channel. */
#ifndef SIM_NCCL_PROFILER_H
#define SIM_NCCL_PROFILER_H

#include <stdbool.h>
#include <stdint.h>

#include "nccl_profiler_abi.h"

struct sim_prof_comm {
	bool on;   /* a plugin took this communicator */
	int mask;  /* the events it activated */
	int rank;
	void *ctx;
	uint64_t seq;  /* collectives launched: NCCL's seqNumber */
};

struct sim_prof_op {
	struct sim_prof_comm *comm;
	void *coll, *chan; /* handles: NULL when the plugin did not ask */
};

/* A communicator joined (loads the plugin at the first), or ends. */
void sim_prof_init(struct sim_prof_comm *p, const char *name, int nranks, int rank);
void sim_prof_fini(struct sim_prof_comm *p);
/* An op is launched (coll: a collective, else a Send or Recv with peer). */
void sim_prof_launch(struct sim_prof_comm *p, struct sim_prof_op *o, bool coll,
		     const char *func, const void *send, void *recv, size_t count, int peer);
/* The device starts it; the device completed it. */
void sim_prof_device_start(struct sim_prof_op *o);
void sim_prof_device_done(struct sim_prof_op *o);

#endif
