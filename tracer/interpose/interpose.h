/* SPDX-License-Identifier: MIT */
/* interpose.h - the program's entry points into libranktrace.so: the
 * wrappers generated from the call tables (wrappers.c), the driver entry
 * points handed out by address (driver.c), start-up and exit (init.c), the
 * probe API of include/ranktrace.h (probe.c), the probe's loading into
 * Python (pyboot.c), and the calls of the tables'
 * rows that join several rooms (hooks.c).
 *
 * The top room: it uses every room below it (core/, device/, store/,
 * identity/, base/) and the injector (inject/inject.h); none uses it. */
#ifndef RT_TR_INTERPOSE_H
#define RT_TR_INTERPOSE_H

#include <stdint.h>

#include "base.h"
#include "schema.h"

/* init.c: per interposed function, 1 when its calls take the wrappers'
 * general path: a fault plan has rules for it, or the sink is not the
 * native store (LTTng). Set once at start-up, read by every call. */
extern uint8_t rt_tr_route[RT_ID_COUNT];

/* hooks.c: the collective's sequence number on comm (0: untracked), a
 * Send's (send 1) or Recv's on comm for peer; also handed to the device side */
uint32_t rt_tr_coll_seq(const void *comm, const void *send, const void *recv, uint64_t count);
uint32_t rt_tr_p2p_seq(const void *comm, int peer, int send, const void *buff, uint64_t count);
/* hooks.c: set by the wrappers' general path around the fields of a call an
 * injected skip replaces: NCCL never sees it, so it takes no sequence number
 * (numbered 0, as a peer NCCL refuses) and the next call takes the number
 * NCCL gives it */
extern RT_TLS bool rt_tr_unnumbered;
/* hooks.c: communicators made (rt_comm): by an init call with its rank (how:
 * enum rt_comm_how; ret 0, or ncclInProgress: being made), by
 * ncclCommInitAll, ncclCommSplit, ncclCommShrink (the new handle at *where,
 * NULL until NCCL wrote it); a poll of ncclCommGetAsyncError (state) */
void rt_tr_comm_made(const void *comm, uint64_t id, int nranks, int rank, int how, long ret);
void rt_tr_comm_init_all(const void *comms, int ndev, const int *devlist);
void rt_tr_comm_split_made(const void *parent, int color, int key, const void *where, long ret);
void rt_tr_comm_shrunk(const void *parent, const int *excl, int nexcl, const void *where, long ret);
void rt_tr_comm_polled(const void *comm, int state);
/* hooks.c: ncclGroupStart (+1) / ncclGroupEnd (-1) before the call (returns
 * the device column), ncclGroupEnd's after-hook */
int rt_tr_group_step(int step);
void rt_tr_group_done(long ret);

/* driver.c: the driver entry points cuGetProcAddress hands out, from the
 * table wrappers.c generates from format/driver_api.def */
struct rt_tr_proc {
	const char *gpa;      /* name asked of cuGetProcAddress */
	int since;            /* first cudaVersion with this ABI */
	unsigned id;
	void *wrapper, **real;
	void *wrapper_ptsz, **real_ptsz; /* per-thread default stream twin, or NULL */
};
extern const struct rt_tr_proc rt_tr_procs[];
extern const unsigned rt_tr_nprocs;

/* pyboot.c: from the constructor: in a Python process, the audit hook that
 * loads the PyTorch probe once Python starts the program */
void rt_tr_pyboot_init(void);

#endif
