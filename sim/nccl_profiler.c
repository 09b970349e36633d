/* SPDX-License-Identifier: MIT */
/* nccl_profiler.c - the simulated NCCL loads and calls profiler plugins as
 * NCCL does.
 *
 * Once per process, at the first communicator: NCCL_PROFILER_PLUGIN names
 * the library (a path, or NAME for libnccl-profiler-NAME.so; unset:
 * libnccl-profiler.so, silently absent); the newest ncclProfiler_vN the
 * simulator knows (v5 as NCCL 2.28, else v4; SIMGPU_PROFILER_VERSION=4
 * loads as NCCL 2.26 would) is taken. Per communicator,
 * init (a failure disables the plugin for it, as NCCL does) and finalize.
 * Per collective (or Send/Recv: a P2P event, with its peer): the task's event
 * starts and stops where NCCL launches it (the plugin learns it was
 * enqueued), then one kernel channel starts
 * when the device starts the collective and stops (KernelChStop, then
 * stopEvent) when it completes; pTimer is the device clock (here
 * CLOCK_MONOTONIC, in ns). Events the plugin did not activate are not sent.
 *
 * Called from nccl.c only; thread-safety as nccl.c's. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nccl_profiler.h"

static int version;                 /* 5, 4, or 0: no plugin */
static const rt_nccl_profiler_v5_t *v5;
static const rt_nccl_profiler_v4_t *v4;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	const char *name = getenv("NCCL_PROFILER_PLUGIN");
	char path[4096];
	void *lib;

	if (name && (!*name || !strcmp(name, "none")))
		return;
	if (!name)
		snprintf(path, sizeof(path), "libnccl-profiler.so");
	else if (strchr(name, '/'))
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "libnccl-profiler-%s.so", name);
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		if (name)
			fprintf(stderr, "NCCL WARN PROFILER/Plugin: could not load %s: %s\n", path,
				dlerror());
		return;
	}
	/* SIMGPU_PROFILER_VERSION=4: load as NCCL 2.26/2.27 would (tests the fallback) */
	if (!getenv("SIMGPU_PROFILER_VERSION") || atoi(getenv("SIMGPU_PROFILER_VERSION")) >= 5)
		v5 = dlsym(lib, "ncclProfiler_v5");
	if (v5) {
		version = 5;
		return;
	}
	v4 = dlsym(lib, "ncclProfiler_v4");
	if (v4) {
		version = 4;
		return;
	}
	fprintf(stderr, "NCCL WARN PROFILER/Plugin: %s has no ncclProfiler_v5 or _v4\n", path);
	dlclose(lib);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sim_prof_init(struct sim_prof_comm *p, const char *name, int nranks, int rank)
{
	uint64_t comm_hash = 0xcbf29ce484222325ull; /* NCCL's commHash: here the segment's name */
	int mask = 0;
	ncclResult_t r = ncclInternalError;

	for (const char *c = name; *c; c++)
		comm_hash = (comm_hash ^ (unsigned char)*c) * 0x100000001b3ull;

	memset(p, 0, sizeof(*p));
	pthread_once(&once, load);
	if (version == 5)
		r = v5->init(&p->ctx, comm_hash, &mask, "", 1, nranks, rank, NULL);
	else if (version == 4)
		r = v4->init(&p->ctx, &mask, "", comm_hash, 1, nranks, rank, NULL);
	if (r != ncclSuccess)
		return;
	p->on = true;
	p->mask = mask;
	p->rank = rank;
}

void sim_prof_fini(struct sim_prof_comm *p)
{
	if (!p->on)
		return;
	if (version == 5)
		v5->finalize(p->ctx);
	else
		v4->finalize(p->ctx);
	p->on = false;
}

/* What an event says of its operation (a collective's, or a P2P's). */
struct prof_call {
	uint64_t seq;
	const char *func;
	const void *send;
	void *recv;
	size_t count;
	int peer;
};

/* A descriptor of either version (their members are named alike). */
#define FILL(d, type, k, ptimer)                                                       \
	do {                                                                           \
		if ((type) == RT_NCCL_PROFILE_COLL) {                                  \
			(d).coll.seqNumber = (k)->seq;                                 \
			(d).coll.func = (k)->func;                                     \
			(d).coll.sendBuff = (k)->send;                                 \
			(d).coll.recvBuff = (k)->recv;                                 \
			(d).coll.count = (k)->count;                                   \
			(d).coll.nChannels = 1;                                        \
		} else if ((type) == RT_NCCL_PROFILE_P2P) {                            \
			(d).p2p.func = (k)->func;                                      \
			(d).p2p.buff = (k)->recv ? (k)->recv : (void *)(k)->send;      \
			(d).p2p.count = (k)->count;                                    \
			(d).p2p.peer = (k)->peer;                                      \
			(d).p2p.nChannels = 1;                                         \
		} else {                                                               \
			(d).kernelCh.pTimer = (ptimer);                                \
		}                                                                      \
	} while (0)

static void *start_v5(struct sim_prof_comm *p, uint64_t type, void *parent,
		      const struct prof_call *k, uint64_t ptimer)
{
	struct rt_nccl_descr_v5 d = { .type = type, .parentObj = parent, .rank = p->rank };
	void *h = NULL;

	FILL(d, type, k, ptimer);
	v5->startEvent(p->ctx, &h, &d);
	return h;
}

static void *start_v4(struct sim_prof_comm *p, uint64_t type, void *parent,
		      const struct prof_call *k, uint64_t ptimer)
{
	struct rt_nccl_descr_v4 d = { .type = (uint8_t)type, .parentObj = parent, .rank = p->rank };
	void *h = NULL;

	FILL(d, type, k, ptimer);
	v4->startEvent(p->ctx, &h, &d);
	return h;
}

static void *start(struct sim_prof_comm *p, uint64_t type, void *parent,
		   const struct prof_call *k, uint64_t ptimer)
{
	return version == 5 ? start_v5(p, type, parent, k, ptimer)
			    : start_v4(p, type, parent, k, ptimer);
}

static void stop(void *h)
{
	if (h)
		(version == 5 ? v5->stopEvent : v4->stopEvent)(h);
}

void sim_prof_launch(struct sim_prof_comm *p, struct sim_prof_op *o, bool coll,
		     const char *func, const void *send, void *recv, size_t count, int peer)
{
	uint64_t type = coll ? RT_NCCL_PROFILE_COLL : RT_NCCL_PROFILE_P2P;
	struct prof_call k = { coll ? p->seq : 0, func, send, recv, count, peer };

	memset(o, 0, sizeof(*o));
	if (!p->on || !(p->mask & type))
		return;
	p->seq += coll;
	o->coll = start(p, type, NULL, &k, 0);
	o->comm = p;
	stop(o->coll); /* enqueued: NCCL stops the task's event at launch */
}

void sim_prof_device_start(struct sim_prof_op *o)
{
	if (!o->coll || o->chan || !(o->comm->mask & RT_NCCL_PROFILE_KERNEL_CH))
		return;
	o->chan = start(o->comm, RT_NCCL_PROFILE_KERNEL_CH, o->coll, &(struct prof_call){ 0 },
			now_ns());
}

void sim_prof_device_done(struct sim_prof_op *o)
{
	union rt_nccl_state_args a = { .kernelCh = { now_ns() } };

	if (!o->chan)
		return;
	(version == 5 ? v5->recordEventState : v4->recordEventState)(o->chan,
								     RT_NCCL_KERNEL_CH_STOP, &a);
	stop(o->chan);
	o->chan = o->coll = NULL;
}
