/* SPDX-License-Identifier: MIT */
/* model_int.h - the viewer's parts, shared between its files only: the live
 * allocation map (alloc_map.c), the collective matcher (matcher.c), the rank
 * model (model.c), the merge (merge.c) and the detectors (detectors.c).
 * Not for the CLI: it sees model.h. */
#ifndef RT_MODEL_INT_H
#define RT_MODEL_INT_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* ---- live allocation map (alloc_map.c) ---- */

struct alloc {
	uint64_t ptr, size;
	int8_t dev;   /* -1: host memory */
	uint8_t used; /* 0 empty, 1 live, 2 deleted, 3 ghost (freed, other paths' free pending) */
	uint8_t kind; /* RT_VW_ALLOC, RT_VW_MAPPING (memory.c) */
	uint8_t paths; /* RT_VW_PATH_* that reported it */
	uint64_t handle; /* a mapping's physical handle */
	uint16_t api; /* event id of the call that made it (params.c shows it) */
	/* allocated again before the free we saw: another thread's free and
	 * this allocation a few ns apart on clocks of different cores; frees
	 * owed before this entry ends */
	uint8_t again;
};

enum { RT_VW_ALLOC, RT_VW_MAPPING };
enum { RT_VW_PATH_RUNTIME = 1, RT_VW_PATH_DRIVER = 2 };

/* ix: the live ranges [lo, hi) sorted by lo, kept in step with the slots
 * (alloc_map.c) while they are disjoint and few; ix_state says why not. */
struct rt_vw_range {
	uint64_t lo, hi;
};

struct rt_vw_alloc_map {
	struct alloc *slots;
	size_t cap, live, used;
	struct rt_vw_range *ix;
	size_t nix, ixcap;
	int ix_state; /* 0 in step, 1 off: too many live, 2 off: ranges overlap */
};

/* ---- collective matcher (matcher.c) ---- */

/* What ranks must agree on for one collective (16 bytes: the parallel
 * pass logs one per collective). */
struct sig {
	uint8_t kind, dtype, op, seen;
	int32_t root;
	uint64_t count;
};

#define CBUCKETS 4096

struct centry;

/* One stream being read: its cursor, its current event, its rank (merge.c). */
struct rt_vw_src {
	struct rt_vw_cursor *c;
	struct rt_vw_event e;
	int rank;
};
bool rt_vw_src_first(struct rt_vw_trace *t, struct rt_vw_src *s);
bool rt_vw_src_next(struct rt_vw_trace *t, struct rt_vw_src *s);

/* parallel.c: the model's pass, ranks on rt_vw_jobs threads (0: one per
 * core); what crosses ranks is logged by rt_vw_defer_* (true: logged, the
 * caller stops) and replayed into the matcher in one order. */
extern int rt_vw_jobs;
struct sig;
struct matcher;
int rt_vw_parallel_pass(struct rt_vw_trace *t, struct matcher *m, struct rt_vw_src *srcs, int nsrc);
bool rt_vw_defer_learn(uint64_t id, int nranks, bool local);
bool rt_vw_defer_join(uint64_t id);
bool rt_vw_defer_match(uint64_t comm, uint32_t seq, const struct sig *s);

struct matcher {
	/* read by every rank job while the replay changes the rest: alone on
	 * its cache line, however the matcher is aligned */
	struct rt_vw_trace *t;
	char pad_[64 - sizeof(struct rt_vw_trace *)];
	struct centry *buckets[CBUCKETS];
	size_t open, open_peak;
	bool mismatch_reported;
};

struct alloc *rt_vw_map_put(struct rt_vw_alloc_map *m, uint64_t ptr, uint64_t size, int dev);
struct alloc *rt_vw_map_find(struct rt_vw_alloc_map *m, uint64_t ptr);
struct alloc *rt_vw_map_find_ghost(struct rt_vw_alloc_map *m, uint64_t ptr);
/* Remove a live entry; ghost: keep it findable by rt_vw_map_find_ghost. */
void rt_vw_map_drop(struct rt_vw_alloc_map *m, struct alloc *a, bool ghost);
/* The live allocation whose [ptr, ptr+size) holds p; of several (ranges
 * that overlap), the one with the highest base. By the sorted index when it
 * is in step, else by a scan of the slots. */
struct alloc *rt_vw_map_holding(struct rt_vw_alloc_map *m, uint64_t p);
/* An empty map on cache lines of its own (ranks' maps change on several
 * threads: rt_vw_parallel_pass); free() frees it. */
struct rt_vw_alloc_map *rt_vw_map_new(void);
void rt_vw_map_free(struct rt_vw_alloc_map *m);
/* memory.c: allocation events of every path, VMM */
void rt_vw_memory_alloc(struct rt_vw_rank *r, const struct rt_vw_event *e, uint64_t size, bool host);
void rt_vw_memory_free(struct rt_vw_rank *r, const struct rt_vw_event *e);
bool rt_vw_memory_driver_event(struct rt_vw_rank *r, const struct rt_vw_event *e);
void rt_vw_memory_free_rank(struct rt_vw_rank *r);
/* Communicator id has nranks ranks (from an init event; the first wins);
 * local: ncclCommInitAll made it, every one of its ranks is in the process
 * that logged it (one rank directory), none elsewhere. */
void rt_vw_comm_learn(struct matcher *m, uint64_t id, int nranks, bool local);
/* One more rank joined split communicator id. */
void rt_vw_comm_join(struct matcher *m, uint64_t id);
/* Rank r's device dev changed (memory.c): note it when keeping memory. */
void rt_vw_mem_note(struct rt_vw_rank *r, int dev);
void rt_vw_add_finding(struct rt_vw_trace *t, int severity, enum rt_vw_verdict sigv,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A finding about one rank (view --rank N shows it only for N). */
void rt_vw_add_rank_finding(struct rt_vw_trace *t, int rank, int severity, enum rt_vw_verdict sigv,
			     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The matcher's rule for "the same collective" (kind, count, datatype, op
 * where it has one, root), for calls a rank made (diff.c). */
bool rt_vw_same_call(const struct rt_vw_call_sig *a, const struct rt_vw_call_sig *b);
void rt_vw_match(struct matcher *m, int ri, uint64_t comm_id, uint32_t seq, struct sig s);
void rt_vw_matcher_finish(struct matcher *m);
void rt_vw_on_event(struct matcher *m, int ri, const struct rt_vw_event *e);
/* After the last event: completeness, open collectives, liveness, the
 * detectors and the verdict (merge.c; the unit tests call it too). */
void rt_vw_model_finish(struct matcher *m);
void rt_vw_analyse(struct rt_vw_trace *t);
bool rt_vw_crashed(const struct rt_vw_rank *r);
/* params.c: a parameter report at the rank's current report point */
void rt_vw_param_record(struct rt_vw_rank *r, struct rt_vw_param *p,
			const struct rt_vw_placement *pl);
void rt_vw_param_marker(struct rt_vw_rank *r, const struct rt_vw_event *e);
/* root.c: unwrapped-module calls, the teardown marker (true: it was one),
 * training work after teardown began */
void rt_vw_unwrapped_event(struct rt_vw_rank *r, const struct rt_vw_event *e);
bool rt_vw_teardown_marker(struct rt_vw_rank *r, const struct rt_vw_event *e);
void rt_vw_teardown_activity(struct rt_vw_rank *r, const struct rt_vw_event *e);
/* After the pass (the detectors): did r crash in teardown, after training
 * finished? What its parameters showed when the unwrapped module ran. */
bool rt_vw_teardown_crash(const struct rt_vw_rank *r);
void rt_vw_unwrapped_support(const struct rt_vw_rank *r, uint64_t *freed, uint64_t *views);
void rt_vw_describe_unwrapped(const struct rt_vw_trace *t, const int *idx, int k, char *out,
			      size_t n);
/* rt_param_shape: kept for the next rt_param of the rank (params.c) */
void rt_vw_param_shape(struct rt_vw_rank *r, const struct rt_vw_event *e);
/* The shape waiting for parameter name's report, if any; clears it. */
struct rt_vw_shape rt_vw_take_shape(struct rt_vw_rank *r, const char *name);

/* ---- completeness and verdict rules (completeness.c) ---- */

/* Per rank and for the trace: state (locks), duplicates, missing ranks,
 * completeness and the first reason a verdict would guess. After the merge,
 * before rt_vw_matcher_finish. */
void rt_vw_completeness(struct rt_vw_trace *t, const struct matcher *m);
/* May a finding rest on what rank ri's trace lacks? */
bool rt_vw_evidence_complete(const struct rt_vw_trace *t, int ri);
bool rt_vw_all_evidence_complete(const struct rt_vw_trace *t);
/* The verdict from the sorted findings, the hang and the completeness. */
void rt_vw_decide(struct rt_vw_trace *t, bool any_crashed);

/* ---- live jobs (hang.c) ---- */

/* Per event: open calls, collective sequences entered, last return. */
void rt_vw_track_calls(struct rt_vw_rank *r, const struct rt_vw_event *e);
/* A job interrupted from outside: every readable rank ended by SIGINT,
 * SIGTERM or SIGHUP (t->interrupted, each rank's interrupted). After
 * rt_vw_completeness, before rt_vw_matcher_finish ("never called" does not
 * rest on a rank stopped before it got there). */
void rt_vw_interruption(struct rt_vw_trace *t);
/* Ages of open calls, idle time, hung or not, the laggard analysis and its
 * findings; an interrupted job as it stood when it was stopped. After
 * rt_vw_completeness and rt_vw_interruption. */
void rt_vw_liveness(struct rt_vw_trace *t);

/* The time an event takes effect, for ordering events of different threads:
 * an allocation's pointer exists from its return (begin + duration), a free
 * acts from its begin. Ordering by begin alone put another thread's
 * cudaMalloc that returned an address before the cudaFree that released it
 * whenever the malloc began first: a false "freed a pointer it never
 * allocated". Within one thread the key stays in call order. */
/* Times at or past RT_VW_TS_LIMIT are no clock's (2^62 ns is 146 years of
 * CLOCK_MONOTONIC, and the format reserves it for packets never used): an
 * event there, or ending there, cannot be ordered and is damage
 * (rt_vw_src_first). Below it, ts + dur cannot overflow. */
#define RT_VW_TS_LIMIT RT_TS_UNUSED

static inline bool rt_vw_ts_orderable(const struct rt_vw_event *e)
{
	return e->ts < RT_VW_TS_LIMIT && (e->pending || e->dur < RT_VW_TS_LIMIT - e->ts);
}

static inline uint64_t rt_vw_order_ts(const struct rt_vw_event *e)
{
	bool alloc = rt_events[e->id].role == RT_R_ALLOC || rt_drv_role[e->id] == RT_DRV_ALLOC ||
		     rt_drv_role[e->id] == RT_DRV_ALLOC_HOST;

	return alloc && !e->pending ? e->ts + e->dur : e->ts;
}

#endif
