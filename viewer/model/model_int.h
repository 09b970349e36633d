/* SPDX-License-Identifier: MIT */
/* model_int.h - the model's parts, shared between the viewer's files that
 * build or finish the model: loading (load.c), sources and merge (merge.c),
 * the pass (parallel.c), the rank model (model.c, memory.c, alloc_map.c,
 * params.c, root.c, rank.c), the matcher (matcher.c), completeness
 * (completeness.c), liveness (hang.c), the findings and detectors
 * (findings.c, detectors.c), and diff.c (the matcher's "same collective"
 * rule); the unit tests (model_rig.h, trace_rig.h, test_parallel.c,
 * test_memory.c) and fuzz_parallel feed events through it. Not for the CLI
 * or the exports: they see model.h.
 *
 * The data flow: load.c -> merge.c (sources) -> parallel.c -> model.c (per
 * rank) -> struct rt_vw_sink -> matcher.c; then load.c's rt_vw_model_finish:
 * each rank's live state (read/live.c) -> the analyses' table (analyses.c:
 * completeness.c, hang.c, matcher.c, detectors.c, ... the verdict). */
#ifndef RT_MODEL_INT_H
#define RT_MODEL_INT_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "model.h"

/* ---- live allocation map (alloc_map.c) ---- */

struct rt_vw_alloc {
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
	struct rt_vw_alloc *slots;
	size_t cap, live, used;
	struct rt_vw_range *ix;
	size_t nix, ixcap;
	int ix_state; /* 0 in step, 1 off: too many live, 2 off: ranges overlap */
};

/* ---- what crosses ranks: model.c hands it to a sink ---- */

/* What ranks must agree on for one collective (16 bytes: the parallel
 * pass logs one per collective; seen is the matcher's, and the log's kind
 * of record while logged). */
struct rt_vw_sig {
	uint8_t kind, dtype, op, seen;
	int32_t root;
	uint64_t count;
};

/* Where a rank's model puts what concerns other ranks: a communicator's
 * size learned from an init (local: ncclCommInitAll made it, all its ranks
 * are in the process that logged it), one more rank joining a split
 * communicator, a collective to match (rank index ri, communicator,
 * sequence; sequence 0: the rank's first collective an injected skip left
 * unnumbered on that communicator, nothing to match). Two sinks: the
 * matcher itself (rt_vw_matcher_sink: one thread in time order, the unit
 * tests) and a rank's log in the parallel pass (load/logs.c), replayed
 * into the matcher in one order. */
struct rt_vw_sink {
	void (*learn)(void *ctx, uint64_t comm, int nranks, bool local);
	void (*join)(void *ctx, uint64_t comm);
	void (*match)(void *ctx, int ri, uint64_t comm, uint32_t seq, const struct rt_vw_sig *s);
	void *ctx;
};

/* model.c: one event of rank index ri into its model; what crosses ranks
 * goes to `to`. Touches t->ranks[ri] only (and reads t->flags). */
void rt_vw_on_event(struct rt_vw_trace *t, const struct rt_vw_sink *to, int ri,
		    const struct rt_vw_event *e);

/* ---- the streams of a trace (merge.c) ---- */

/* One stream being read: its cursor, its current event, its rank index. */
struct rt_vw_src {
	struct rt_vw_cursor *c;
	struct rt_vw_event e;
	int rank;
};
/* A source's first or next event (false: it ended; its damage and
 * discarded count are noted on its rank). */
bool rt_vw_src_first(struct rt_vw_trace *t, struct rt_vw_src *s);
bool rt_vw_src_next(struct rt_vw_trace *t, struct rt_vw_src *s);
/* A cursor on every stream of every readable rank of t (grouped by rank);
 * each rank's read error noted on it. */
int rt_vw_open_sources(struct rt_vw_trace *t, struct rt_vw_src **out, int *nout);
void rt_vw_close_sources(struct rt_vw_src *srcs, int nsrc);
/* evidence.c: r's evidence lists (r->lists), taken zeroed at the first
 * entry; NULL when out of memory (r->lists_lost: the pass fails, as when a
 * log's record is lost). */
struct rt_vw_rank_lists *rt_vw_rank_lists(struct rt_vw_rank *r);
/* merge.c: pages of paused cursors dropped in batches (MADV_DONTNEED): a
 * madvise of a process on several threads is a TLB shootdown on the other
 * cores each. rt_vw_dontneed_init asks for a pidfd of this process
 * (process_madvise); rt_vw_dontneed_add keeps a range, dropping the batch
 * first when full; rt_vw_dontneed_flush drops what it keeps (a range must
 * stay its cursor's, paused, till then); rt_vw_dontneed_fini closes the pidfd.
 * Not thread-safe: one lock around all. pidfd -1 before init. */
#define RT_VW_DONTNEED_BATCH 256
struct rt_vw_dontneed {
	struct iovec rel[RT_VW_DONTNEED_BATCH];
	int n, pidfd; /* pidfd < 0: no process_madvise, one madvise each */
};
void rt_vw_dontneed_init(struct rt_vw_dontneed *d);
void rt_vw_dontneed_add(struct rt_vw_dontneed *d, void *addr, size_t len);
void rt_vw_dontneed_flush(struct rt_vw_dontneed *d);
void rt_vw_dontneed_fini(struct rt_vw_dontneed *d);
/* A rank's first read error, kept (ranks are read on several threads). */
void rt_vw_note_damage(struct rt_vw_trace *t, int ri, const char *msg);

/* ---- collective matcher (matcher.c) ---- */

#define RT_VW_CBUCKETS 4096

struct rt_vw_centry;

struct rt_vw_matcher {
	struct rt_vw_trace *t;
	struct rt_vw_centry *buckets[RT_VW_CBUCKETS];
	size_t open, open_peak;
	bool mismatch_reported;
};

/* The sink that hands everything to m at once. */
struct rt_vw_sink rt_vw_matcher_sink(struct rt_vw_matcher *m);
/* Communicator id has nranks ranks (from an init event; the first wins);
 * local as in struct rt_vw_sink. */
void rt_vw_comm_learn(struct rt_vw_matcher *m, uint64_t id, int nranks, bool local);
/* One more rank joined split communicator id. */
void rt_vw_comm_join(struct rt_vw_matcher *m, uint64_t id);
void rt_vw_match(struct rt_vw_matcher *m, int ri, uint64_t comm_id, uint32_t seq, struct rt_vw_sig s);
/* The matcher's rule for "the same collective" (kind, count, datatype, op
 * where it has one, root), for calls a rank made (diff.c). */
bool rt_vw_same_call(const struct rt_vw_call_sig *a, const struct rt_vw_call_sig *b);
/* Collectives some ranks reached and others did not; frees the entries. */
void rt_vw_matcher_finish(struct rt_vw_matcher *m);

/* ---- the pass (parallel.c) ---- */

/* Every event of srcs through the rank models, ranks on rt_vw_jobs threads
 * (0: one per core), each into its rank's log; the logs replayed into m in
 * one order. 0, or -1 out of memory. */
extern int rt_vw_jobs;
int rt_vw_parallel_pass(struct rt_vw_trace *t, struct rt_vw_matcher *m, struct rt_vw_src *srcs, int nsrc);
/* What may run once every rank job is done, on the threads the last
 * replays leave free (they alone still run: the matcher's): once(arg) on
 * one thread, and each(arg, lo, hi) over [0, n) in chunks of
 * RT_VW_FANOUT_CHUNK, beside it. Neither may touch the matcher, nor a
 * rank's fields it writes (skip_matched). All done when the pass returns,
 * failed or not. */
struct rt_vw_after_read {
	void (*once)(void *arg);
	void (*each)(void *arg, int lo, int hi);
	int n;
	void *arg;
};
/* Tests: true, the pass runs its round 0 though the streams' first packets
 * could set its first window (parallel.c): the same model either way. */
extern bool rt_vw_pass_no_peek;
/* Tests: the rounds cut short so far, every pass of the process together
 * (rt_vw_pass_check_window: a round that would log too many records). */
extern unsigned long rt_vw_pass_cuts;
int rt_vw_parallel_pass_then(struct rt_vw_trace *t, struct rt_vw_matcher *m, struct rt_vw_src *srcs, int nsrc,
			     const struct rt_vw_after_read *after);
/* fanout.c: fn(arg, slot, lo, hi) on the chunks of ranks [lo, hi) of
 * [0, n), RT_VW_FANOUT_CHUNK ranks each, taken in order by slots threads (slot: which,
 * 0..slots-1, for per-thread state); returns when all are done. How many
 * slots n ranks get: rt_vw_fanout_slots (rt_vw_jobs, or one per core). */
#define RT_VW_FANOUT_MAX 64   /* threads at most */
#define RT_VW_FANOUT_CHUNK 32 /* ranks a thread takes at a time */
int rt_vw_fanout_slots(int n);
/* Threads for units of work: rt_vw_jobs (--jobs, RANKTRACE_JOBS), else one
 * per core, never more than units, at least 1 (the pass's and fanout's). */
int rt_vw_job_count(long units);
void rt_vw_fanout(int n, int slots, void (*fn)(void *arg, int slot, int lo, int hi), void *arg);

/* ---- allocation map (alloc_map.c), memory (memory.c), rank details ---- */

struct rt_vw_alloc *rt_vw_map_put(struct rt_vw_alloc_map *m, uint64_t ptr, uint64_t size, int dev);
struct rt_vw_alloc *rt_vw_map_find(struct rt_vw_alloc_map *m, uint64_t ptr);
struct rt_vw_alloc *rt_vw_map_find_ghost(struct rt_vw_alloc_map *m, uint64_t ptr);
/* Remove a live entry; ghost: keep it findable by rt_vw_map_find_ghost. */
void rt_vw_map_drop(struct rt_vw_alloc_map *m, struct rt_vw_alloc *a, bool ghost);
/* The live allocation whose [ptr, ptr+size) holds p; of several (ranges
 * that overlap), the one with the highest base. By the sorted index when it
 * is in step, else by a scan of the slots. */
struct rt_vw_alloc *rt_vw_map_holding(struct rt_vw_alloc_map *m, uint64_t p);
/* An empty map on cache lines of its own (ranks' maps change on several
 * threads: rt_vw_parallel_pass); free() frees it. */
struct rt_vw_alloc_map *rt_vw_map_new(void);
void rt_vw_map_free(struct rt_vw_alloc_map *m);
/* memory.c: allocation events of every path, VMM */
void rt_vw_memory_alloc(struct rt_vw_rank *r, const struct rt_vw_event *e, uint64_t size, bool host);
void rt_vw_memory_free(struct rt_vw_rank *r, const struct rt_vw_event *e);
bool rt_vw_memory_driver_event(struct rt_vw_rank *r, const struct rt_vw_event *e);
void rt_vw_memory_free_rank(struct rt_vw_rank *r);
/* Rank r's device dev changed (memory.c): note it when keeping memory. */
void rt_vw_mem_note(struct rt_vw_rank *r, int dev);
/* findings.c: a finding of kind about rank (global; -1: about several or
 * the trace), appended to t->findings; NULL out of memory (the setters
 * below take NULL and do nothing). */
struct rt_vw_finding *rt_vw_finding_add(struct rt_vw_trace *t, enum rt_finding_kind kind, int rank);
/* One more rank the finding names (f->ranks). */
void rt_vw_finding_rank(struct rt_vw_finding *f, int rank);
/* Its named values (format/findings.def), by type: a text that is empty,
 * a flag that is false, a call that is none are not set. */
void rt_vw_fv_int(struct rt_vw_finding *f, enum rt_fvalue name, int64_t v);
void rt_vw_fv_real(struct rt_vw_finding *f, enum rt_fvalue name, double v);
void rt_vw_fv_text(struct rt_vw_finding *f, enum rt_fvalue name, const char *v);
void rt_vw_fv_flag(struct rt_vw_finding *f, enum rt_fvalue name, bool v);
void rt_vw_fv_call(struct rt_vw_finding *f, enum rt_fvalue name, struct rt_vw_callref c);
void rt_vw_fv_end(struct rt_vw_finding *f, enum rt_fvalue name, const struct rt_vw_rank *r);
/* One more rank's evidence (zeroed but rank, role; no call), NULL out of memory. */
struct rt_vw_evidence *rt_vw_finding_ev(struct rt_vw_finding *f, int rank, enum rt_vw_ev_role role);
/* An open call as a finding names it (NULL: none). */
struct rt_vw_callref rt_vw_callref_of(const struct rt_vw_open_call *o);
void rt_vw_findings_free(struct rt_vw_trace *t);
/* After the last event (load.c; the unit tests call it too): the models'
 * last step, the live state of every rank's processes (live: one per rank,
 * in t's order, as a test hands it in; NULL: the system asked, read/live.c),
 * then the analyses: completeness, open collectives, liveness, the
 * detectors and the verdict. rt_vw_model_finish(m) is
 * rt_vw_model_finish_live(m, NULL). */
void rt_vw_model_finish(struct rt_vw_matcher *m);
void rt_vw_model_finish_live(struct rt_vw_matcher *m, const struct rt_vw_live *live);
/* The two halves of rt_vw_model_finish: each rank's last step and live
 * state, ranks [lo, hi) (no matcher: it may run beside the last replays,
 * rt_vw_after_read), then what needs the matcher done. */
void rt_vw_model_finish_ranks(struct rt_vw_trace *t, int lo, int hi);
void rt_vw_model_finish_after(struct rt_vw_matcher *m);
/* analyses.c: every analysis in the table's order; the table's own check
 * (every input made by a row above its reader: 0, or -1 and *bad the
 * row's name) and its rows' names (NULL past the last). */
void rt_vw_analyse(struct rt_vw_trace *t, struct rt_vw_matcher *m);
int rt_vw_analyses_check(const char **bad);
const char *rt_vw_analysis_name(size_t i);
/* detectors.c: the table detectors; verdict.c: the findings sorted, the
 * verdict decided from them */
void rt_vw_detect(struct rt_vw_trace *t);
/* rank.c: did r crash (a signal, an exit status > 0, death inside a call,
 * no recorded end)? Not when alive or stopped with the whole job. */
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
/* After the rank's last event (params.c): how many of its parameters are
 * on meta and at freed storage, from the latest placement of each. */
void rt_vw_params_count(struct rt_vw_rank *r);
/* rt_param_shape: kept for the next rt_param of the rank (params.c) */
void rt_vw_param_shape(struct rt_vw_rank *r, const struct rt_vw_event *e);
/* The shape waiting for parameter name's report, if any; clears it. */
struct rt_vw_shape rt_vw_take_shape(struct rt_vw_rank *r, const char *name);
/* evidence.c: a DTensor layout (kept for the next rt_param, as a shape is),
 * the exception that left an unwrapped call and its message, an optimizer
 * step, a fault plan's rule at a process's end */
void rt_vw_evidence_event(struct rt_vw_rank *r, const struct rt_vw_event *e);
/* The layout waiting for parameter name's report, if any; clears it. */
struct rt_vw_layout rt_vw_take_layout(struct rt_vw_rank *r, const char *name);

/* ---- completeness and verdict rules (completeness.c) ---- */

/* Per rank and for the trace: state (locks), duplicates, missing ranks,
 * completeness and the first reason a verdict would guess. After the merge,
 * before rt_vw_matcher_finish. */
void rt_vw_completeness(struct rt_vw_trace *t, const struct rt_vw_matcher *m);
/* May a finding rest on what rank ri's trace lacks? */
bool rt_vw_evidence_complete(const struct rt_vw_trace *t, int ri);
bool rt_vw_all_evidence_complete(const struct rt_vw_trace *t);
void rt_vw_decide(struct rt_vw_trace *t);

/* ---- live jobs (hang.c) ---- */

/* Per event: open calls, collective sequences entered, last return. */
/* Is record id one the tracer writes as the process ends (signal, fault rule
 * counts, exit, trace stop), no activity of the program? */
bool rt_vw_ending_record(int id);
void rt_vw_track_calls(struct rt_vw_rank *r, const struct rt_vw_event *e);
/* A job interrupted from outside: every readable rank ended by SIGINT,
 * SIGTERM or SIGHUP (t->interrupted, each rank's interrupted). After
 * rt_vw_completeness, before rt_vw_matcher_finish ("never called" does not
 * rest on a rank stopped before it got there). */
void rt_vw_interruption(struct rt_vw_trace *t);
/* Ages of open calls, idle time, hung or not, the laggard analysis and its
 * findings; an interrupted job as it stood when it was stopped. After
 * rt_vw_completeness and rt_vw_interruption. devhang.c: the finding of a
 * job ended by the NCCL watchdog on a collective no device completed. */
void rt_vw_liveness(struct rt_vw_trace *t);
void rt_vw_dev_watchdog(struct rt_vw_trace *t);
/* rank.c: what a live rank is inside (hang.c tracks it; hang.c and devhang.c
 * read it) */
bool rt_vw_frozen(const struct rt_vw_rank *r);
uint32_t rt_vw_entered_seq(const struct rt_vw_rank *r, uint64_t comm);
const struct rt_vw_open_call *rt_vw_oldest_open(const struct rt_vw_rank *r);
/* Rank r's open calls and last return as they stood at time at (its clock),
 * before its own end: a call entered before at that returned after it was
 * open then, one entered after was not yet made. False, r unchanged, when a
 * thread returned from more calls since than the model keeps (RT_VW_RECENT,
 * past its newest long call): what it was inside then is not known. */
bool rt_vw_calls_at(struct rt_vw_rank *r, uint64_t at);

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
	bool alloc = rt_events[e->id].role == RT_R_ALLOC || rt_drv_role[e->id].role == RT_R_ALLOC;

	return alloc && !e->pending ? e->ts + e->dur : e->ts;
}

#endif
