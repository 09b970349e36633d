/* SPDX-License-Identifier: MIT */
/* model.h - what a trace directory says: per-rank model, cross-rank findings,
 * verdict. The viewer's public face: the CLI (cli/cli.h), the exports
 * (export.h), diff (diff.h) and the fuzzers read a trace through it.
 * rt_vw_load (load.c) builds it in one streaming pass (parallel.c: each
 * rank's events through model.c, what crosses ranks to matcher.c), then the
 * detectors; memory grows with live allocations and open collectives, not
 * with the number of events. */
#ifndef RT_VW_MODEL_H
#define RT_VW_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "finding.h"
#include "live.h"
#include "reader.h"

#define RT_VW_MAX_DEV 64

/* Collective kinds: enum rt_coll_kind and rt_coll_names (format/schema.h). */

/* The collective kind of an NCCL event id, or -1 for anything else. */
int rt_vw_coll_kind(unsigned id);

/* One collective as a rank called it: what diff compares. */
struct rt_vw_call_sig {
	uint8_t kind, dtype, op;
	int32_t root;
	uint64_t count;
	uint64_t comm_id;
	uint32_t seq;
};

struct rt_vw_bt2;       /* read_bt2.h */
struct rt_vw_devlog;    /* device.h */
struct rt_vw_rank_comms; /* comms.h */
struct rt_vw_straggle;  /* device.h */
struct rt_vw_hosts;     /* device.h */
struct rt_vw_alloc_map; /* alloc_map.c */
struct rt_vw_vmm;       /* memory.c */

/* How much of a rank's run its trace holds (completeness.c). The order is
 * the trace's: its completeness is the worst of its ranks'. */
enum rt_vw_completeness { RT_C_COMPLETE, RT_C_CAPPED, RT_C_DAMAGED, RT_C_MISSING, RT_C_LIVE,
			  RT_C_COUNT };
extern const char *const rt_vw_completeness_names[RT_C_COUNT];
/* Why a rank's trace is not complete: still running (its stream file
 * locked), damaged (a read error), no readable event, another directory
 * claims its rank, the writer stopped (rt_trace_stop: size cap, disk full),
 * events discarded. */
enum rt_vw_why_incomplete { RT_I_NONE, RT_I_LIVE, RT_I_DAMAGED, RT_I_EMPTY, RT_I_DUPLICATE,
			    RT_I_STOPPED, RT_I_CAPPED };
/* Why the verdict would be a guess: nothing; ranks missing; a rank's trace
 * (t->why_rank); the job was interrupted. */
enum rt_vw_why { RT_W_NONE, RT_W_MISSING, RT_W_RANK, RT_W_INTERRUPTED, RT_W_PROBE };

/* How a rank's main process is now: from its stream files' locks (held by a
 * live writer) and its end record. */
enum rt_vw_state { RT_S_RUNNING, RT_S_EXITED, RT_S_KILLED, RT_S_VANISHED, RT_S_UNKNOWN,
		   RT_S_COUNT };
extern const char *const rt_vw_state_names[RT_S_COUNT];

/* A call a rank's main process is inside (entered, not returned). */
struct rt_vw_open_call {
	unsigned id;
	uint32_t tid;
	uint64_t ts;       /* entry, the rank's clock */
	uint64_t comm_id;  /* collectives: communicator and sequence */
	uint32_t seq;
	double age_s;      /* how long it has been inside, when live (else -1) */
};

/* A reported tensor's shape (rt_param_shape before its rt_param): ndim may
 * exceed RT_VW_MAX_DIMS, the first ones are kept. */
#define RT_VW_MAX_DIMS 6
struct rt_vw_shape {
	bool known;       /* false: the report came without a shape */
	uint8_t ndim;
	uint32_t dim[RT_VW_MAX_DIMS];
};

#define RT_VW_MAX_OPEN 8

/* The newest calls a thread of a rank returned from (model/calls.c), kept so
 * that an interrupted job is judged as it stood at its first stop (hang.c):
 * a call that returned after that moment was still open then. Besides the
 * newest RT_VW_RECENT, the newest that lasted RT_VW_LONG_CALL_NS or more
 * (the wait a hung rank returned from when its peer was gone, past the
 * probe's reports and the calls that followed it). */
#define RT_VW_RECENT 8
#define RT_VW_LONG_CALL_NS 100000000ull
struct rt_vw_returned {
	uint64_t ts, end;  /* entry and return, the rank's clock */
	uint64_t comm_id;  /* collectives: communicator and sequence */
	uint32_t seq;
	uint16_t id;
};
struct rt_vw_thread_calls {
	uint32_t tid;
	bool main;         /* of the rank's main process (its open calls count) */
	uint64_t n;        /* calls it returned from; the newest RT_VW_RECENT kept */
	struct rt_vw_returned call[RT_VW_RECENT]; /* ring: the next at n % RT_VW_RECENT */
	struct rt_vw_returned lng; /* its newest long call (end 0: none) */
	uint64_t lng_prev;         /* the end of the call before it (0: none) */
};

/* A DTensor parameter's layout (rt_param_dtensor before its rt_param): its
 * device mesh (ndim, the first 3 sizes), per mesh dimension its placement
 * (the tensor dimension it shards, or RT_PLACE_CODE_*: format/schema.h),
 * and the local shard's shape. */
struct rt_vw_layout {
	bool known;       /* false: not a DTensor (or an older probe) */
	uint8_t mesh_ndim;
	uint32_t mesh[3];
	int8_t place[3];
	struct rt_vw_shape local;
};

/* A module the FSDP root wraps, called while no root forward ran (the
 * probe's rt_unwrapped_call): from which caller, how often, first when. */
#define RT_VW_MAX_UNWRAPPED 8
struct rt_vw_unwrapped {
	char module[65], caller[65];
	uint64_t calls, ts;
};
/* The exception that left an unwrapped call (the probe's rt_exception and
 * rt_exception_text), whatever the program did with it: caught or not. */
#define RT_VW_MAX_EXC 4
struct rt_vw_exception {
	char module[65], type[65], message[127];
	uint32_t tid;
	bool has_text;
	uint64_t ts;
};
/* The optimizer's steps (the probe's rt_optim_step, at the 1st, 2nd, 4th,
 * ...): the highest step reported, and at the latest report the parameters
 * it updated, sharded and synchronised among them, and the reductions the
 * program asked torch.distributed for so far. */
struct rt_vw_optim {
	uint64_t steps, params, sharded, synced, reductions;
};
/* A fault plan's rule as the rank's processes ended (rt_inj_rule): its
 * index, spec as written and what it targets, the calls or passes it
 * counted and how often it fired, summed over the rank's processes. */
#define RT_VW_MAX_RULES 16
struct rt_vw_rule {
	int rule;
	char spec[65], target[65]; /* target: a preset's (format/presets.def), or the spec's */
	uint64_t seen, fired;
};
/* A rank's lists of the probe's evidence and the plan's rules, out of its
 * rank's line (rt_vw_rank_lists): 4.8 KB a rank, of which a trace of
 * 16,384 ranks without the probe used none, yet it spread each rank's
 * fields over three pages (the rank table, 8.7 KB a rank, faulted in whole). */
struct rt_vw_rank_lists {
	struct rt_vw_unwrapped unwrapped[RT_VW_MAX_UNWRAPPED];
	struct rt_vw_exception exc[RT_VW_MAX_EXC];
	struct rt_vw_rule rules[RT_VW_MAX_RULES];
};
/* rt_marker names the probe reserves: report points (below), teardown. */
#define RT_VW_TEARDOWN_MARKER "rt.teardown"
#define RT_VW_STALL_DEFAULT_NS 30000000000ull

struct rt_vw_rank {
	char name[64];               /* rank-00003 */
	struct rt_vw_rank_meta meta;
	bool readable;
	char damaged[512];           /* first error reading it, if any */
	uint64_t events, discarded;
	uint64_t api_events;         /* of them, interposed calls (CUDA, NCCL, driver) */
	uint64_t first_ts, last_ts;
	/* memory */
	struct rt_vw_alloc_map *live;
	uint64_t dev_bytes[RT_VW_MAX_DEV], dev_peak[RT_VW_MAX_DEV];
	struct rt_vw_mem_change *mem; /* device memory over time (RT_VW_KEEP_MEMORY) */
	uint32_t nmem, mem_cap;
	uint64_t cur_ts;             /* time of the event being modelled */
	bool keep_mem;
	uint64_t host_bytes, host_peak;
	uint64_t allocs, frees, unknown_frees, failed_allocs;
	/* driver path (memory.c): allocations and bytes through the driver (cuMemAlloc*,
	 * cuMemCreate), VMM handles created and ranges mapped, allocations a second
	 * path reported again (counted once) */
	uint64_t drv_allocs, drv_bytes, vmm_handles, vmm_maps, dup_allocs;
	/* CUPTI (run --cupti): state 0 not asked, 1 subscribed, 2 unavailable (detail
	 * says why or who holds it); its memory activity records, bytes allocated */
	uint8_t cupti;
	char cupti_detail[65];
	uint64_t cupti_records, cupti_alloc_bytes;
	struct rt_vw_vmm *vmm;
	/* devices */
	uint64_t devices_used;       /* bit d: allocated on, copied on or communicated on d */
	int comm_device;             /* device at the first successful ncclCommInitRank, or -1 */
	int init_device;             /* device at the first ncclCommInitRank call, or -1 */
	bool multi_device;           /* it made a ncclCommInitAll communicator: drives several devices */
	int init_ret;                /* its result */
	/* collectives */
	uint64_t colls[RT_CK_COUNT];
	uint64_t streams_created;
	uint64_t broadcasts_before_allgather;
	struct rt_vw_call_sig *calls; /* in order, capped (RT_VW_MAX_CALLS) */
	uint32_t ncalls, calls_cap;
	/* errors and end */
	uint64_t errors;
	char first_error[200], last_error[200]; /* "ncclAllGather returned ncclSystemError" */
	bool exit_seen;
	int exit_status, signo;
	bool died;                   /* inside a call that never returned: */
	uint16_t died_id;            /* its event id (the last in time) */
	/* probe events: parameters (latest placement of each), FSDP forwards,
	 * markers, injected faults */
	uint64_t fsdp_root_forwards, params_reported, params_freed, params_meta, faults, markers;
	/* the first communicator an injected skip left a collective short on
	 * (its call recorded with sequence 0): as the rank model saw it, and as
	 * the matcher has seen it so far in the replay's order (the model hands
	 * it over as a collective of sequence 0: the matcher, reading the
	 * model's field, saw it or not as the rank jobs ran ahead) */
	uint64_t skipped_comm, skip_matched;
	struct rt_vw_param *params;  /* latest report per parameter name */
	uint32_t nparams, params_cap;
	uint64_t params_misplaced;   /* data in an allocation of another device */
	uint64_t params_ever_meta;   /* distinct parameters reported on meta at some point */
	char first_fault[160];
	/* the probe's direct evidence of a skipped FSDP root (root.c): calls of a
	 * module the root wraps while no root forward ran, per (module, caller),
	 * in the order first seen (lists->unwrapped); root forwards before the
	 * first of them */
	struct rt_vw_rank_lists *lists; /* NULL until the first of its lists' entries */
	bool lists_lost;             /* out of memory for them: the pass fails */
	int nunwrapped;
	uint64_t unwrapped_calls, root_forwards_before_unwrapped;
	/* the probe's further evidence (evidence.c): the exceptions that left
	 * those calls (lists->exc), the optimizer's steps; the fault plan's rules
	 * as its processes ended (lists->rules), and the rules an rt_fault says
	 * fired (bit: index) */
	int nexc;
	struct rt_vw_optim optim;
	int nrules;
	uint64_t rules_fired;
	/* teardown (root.c): when the main process began it after training
	 * (rt_marker "rt.teardown" 1|2), whether training work (a collective, a
	 * probe report) came after, and whether the rank's abnormal end falls
	 * in it (set by the detectors: "crashed in teardown") */
	uint64_t teardown_ts;
	uint8_t teardown_how;        /* the marker's value: 1 destroy_process_group, 2 exit */
	bool active_after_teardown, teardown_crash;
	/* completeness and liveness (completeness.c, hang.c) */
	enum rt_vw_completeness completeness;
	uint8_t incomplete;          /* why, when not complete: enum rt_vw_why_incomplete */
	enum rt_vw_state state;
	int dup_of;                  /* another directory claims this rank: its index, else -1 */
	bool stopped;                /* an rt_trace_stop record: tracing stopped early */
	unsigned stop_reason;        /* enum rt_stop_reason (format/schema.h) */
	uint64_t stop_events;        /* events its stream had recorded then */
	struct rt_vw_open_call open[RT_VW_MAX_OPEN]; /* main process, one per thread */
	int nopen;
	uint64_t last_done_ts;       /* end of the last call that returned */
	struct rt_vw_thread_calls *threads; /* per thread, its newest returned calls */
	int nthreads, threads_cap, last_thread;
	bool threads_lost;           /* out of memory: a thread's calls not kept */
	uint64_t signal_ts;          /* its main process's stop or fault signal record */
	uint64_t judged_ts;          /* ended: the moment its calls are judged at (hang.c) */
	double idle_s;               /* live: seconds since last_done_ts, else -1 */
	bool interrupted;            /* stopped from outside with the whole job (hang.c) */
	struct rt_vw_entered { uint64_t comm_id; uint32_t seq; } *entered; /* highest seq, */
	int nentered, entered_cap;   /* per communicator it entered any collective on */
	uint8_t param_point;         /* report point now (params.c: rt_marker "rt.params") */
	char shape_for[65];          /* an rt_param_shape waiting for this name's rt_param */
	struct rt_vw_shape shape_next;
	char layout_for[65];         /* an rt_param_dtensor waiting likewise */
	struct rt_vw_layout layout_next;
	struct rt_vw_param_change *changes; /* placement changes in time order (params.c) */
	uint32_t nchanges, changes_cap;
	struct rt_vw_devlog *dev;    /* collectives on the device (device.c), or NULL */
	struct rt_vw_rank_comms *rcomms; /* communicators, Send/Recv, groups (comms.c), or NULL */
	/* what the system said of its processes after the pass (read/live.c,
	 * asked by load/load.c): the analyses' LIVE input, never asked by them */
	struct rt_vw_live sys;
	struct rt_vw_listing listed; /* its stream files as the load opened them (merge.c) */
};

enum rt_vw_place { RT_P_CUDA, RT_P_CPU, RT_P_META, RT_P_FREED, RT_P_WRONG_DEVICE, RT_P_COUNT };
extern const char *const rt_vw_place_names[RT_P_COUNT]; /* cuda, cpu, meta, storage-freed, ... */

/* Where the probe reports placements: the module handed to FSDP (as loaded),
 * the first forward of the top-level module, FSDP root forwards. A program
 * announces the point with rt_marker("rt.params", point + 1); reports before
 * any announcement count as wrap. */
enum rt_vw_param_point { RT_PP_WRAP, RT_PP_FIRST_FORWARD, RT_PP_ROOT_FORWARD, RT_PP_COUNT };
extern const char *const rt_vw_param_point_names[RT_PP_COUNT]; /* wrap, first-forward, ... */
#define RT_VW_PARAMS_MARKER "rt.params"

/* One report of one parameter, and the live allocation its data pointer fell in. */
struct rt_vw_placement {
	bool seen, in_alloc;
	struct rt_vw_shape shape;
	struct rt_vw_layout layout;
	uint8_t place;    /* enum rt_vw_place */
	int8_t device;    /* the tensor's device index (cuda), -1 otherwise */
	uint8_t dtype;    /* the probe's code: rt_vw_dtype_name() */
	int8_t alloc_dev; /* the allocation's device, -1 host memory */
	uint16_t alloc_call; /* event id of the call that made it */
	uint64_t numel, bytes, ptr, alloc_base, alloc_size, ts; /* bytes: its storage's */
};

/* A parameter's placement changed (Perfetto shows these as instants). */
struct rt_vw_param_change {
	uint64_t ts;
	uint32_t param;   /* index in the rank's params */
	uint8_t point;    /* enum rt_vw_param_point */
	uint8_t from, to; /* enum rt_vw_place */
	int8_t from_dev, to_dev;
};

struct rt_vw_param {
	char name[65];
	uint8_t place;    /* enum rt_vw_place, latest */
	bool was_meta;
	int8_t device;
	uint64_t numel, bytes;
	struct rt_vw_placement at[RT_PP_COUNT]; /* the first report at each point */
	struct rt_vw_placement last, before;    /* latest; the one before its last change */
	uint8_t changed_at;                     /* point of the last change (before.seen) */
};

/* An rt_fault event as the plan spec that fired: "cudaMalloc:error=cudaErrorMemoryAllocation",
 * "fsdp.root_forward:bypass" (NVIDIA's names for error codes). snprintf's result. */
int rt_vw_fault_spec(const struct rt_vw_event *e, char *out, size_t n);

/* params.c */
const char *rt_vw_dtype_name(unsigned code);
/* Bytes of one element of the probe's dtype code, 0 when unknown. */
unsigned rt_vw_dtype_size(unsigned code);
/* The parameter's own bytes at a report (elements x element size; not the
 * storage it lies in), or -1 when its dtype is unknown. */
int64_t rt_vw_param_bytes(const struct rt_vw_placement *pl);
/* "[32, 64]", "[]" (a scalar), "-" (no shape reported); snprintf's result. */
int rt_vw_shape_str(const struct rt_vw_shape *s, char *out, size_t n);
/* "Shard(0)", "Replicate()", "Partial()", "?" for mesh dimension i of l. */
int rt_vw_place_str(const struct rt_vw_layout *l, int i, char *out, size_t n);
/* "cuda:1", "cpu", "meta", "storage freed", "-" (never reported); snprintf's result. */
int rt_vw_placement_str(const struct rt_vw_placement *pl, char *out, size_t n);
/* Every parameter name of t (matching glob, if not NULL), in the order the
 * ranks first reported them; out->v points into the model (free(out->v) only).
 * 0, or -1 out of memory. */
struct rt_vw_trace;
struct rt_vw_names {
	const char **v;
	size_t n;
};
int rt_vw_param_names(const struct rt_vw_trace *t, const char *glob, struct rt_vw_names *out);
/* The report of p shown for point at (RT_PP_WRAP, RT_PP_FIRST_FORWARD, or
 * RT_VW_AT_LAST: the latest), and the change of place that led to it:
 * *from (NULL when none) at point *from_at. params, report and diff read
 * the same. */
#define RT_VW_AT_LAST RT_PP_COUNT
const struct rt_vw_placement *rt_vw_param_at(const struct rt_vw_param *p, int at,
					     const struct rt_vw_placement **from, int *from_at);
/* Rank r's record of parameter name, or NULL. */
const struct rt_vw_param *rt_vw_find_param(const struct rt_vw_rank *r, const char *name);
/* render/diagnosis.c: findings as view and report show them. Identical
 * findings about single ranks become one ("ranks 0-3 exited with status 1");
 * notes are counted in *hidden and left out unless all; only_rank >= 0 keeps
 * that rank's and the trace-wide ones. Returns the number of groups in *out
 * (free() it), -1 out of memory. */
#define RT_VW_DIAG_RANKS 1024
struct rt_vw_diag {
	int first;               /* index in t->findings of the first of the group */
	enum rt_level level;
	int nranks, ranks[RT_VW_DIAG_RANKS];
	char text[480];
};
int rt_vw_diagnose(const struct rt_vw_trace *t, int only_rank, bool all, struct rt_vw_diag **out,
		   int *hidden);
/* completeness.c: did rank r's Python run without the PyTorch probe (its
 * import failed, or it never loaded; not RANKTRACE_PROBE=0)? */
bool rt_vw_probe_missing(const struct rt_vw_rank *r);
/* detect_end.c: the rank index whose own failure (a non-zero exit, a
 * signal other than a launcher's SIGTERM, death inside a call) ended
 * first, or -1. */
int rt_vw_first_failure(const struct rt_vw_trace *t);
/* What to do next: the advice of the most important group that has one, or NULL. */
const char *rt_vw_diag_advice(const struct rt_vw_trace *t, const struct rt_vw_diag *g, int n);

/* One line about a rank's parameters; true when something is wrong with them. */
bool rt_vw_placement_summary(const struct rt_vw_rank *r, char *out, size_t n);

#define RT_VW_MAX_CALLS (1u << 20)

/* Verdicts: enum rt_verdict and rt_verdicts (format/findings.h). */

/* One change of a rank's device memory, kept with RT_VW_KEEP_MEMORY: after
 * the rank's ev-th event (1-based, in the rank's own merged order, the order
 * rt_vw_foreach replays), device dev holds bytes. What the exports draw. */
struct rt_vw_mem_change {
	uint64_t ev, ts, bytes;
	int dev;
};

/* A communicator: its size from its init events, or for a split, the
 * number of ranks that joined it. */
struct rt_vw_comm {
	uint64_t id;
	int nranks;
	bool split;
	bool local; /* ncclCommInitAll: all its ranks in one process */
};

/* The finding's sentence (render/finding_text.c), cut to n
 * (RT_VW_FINDING_TEXT for the one outputs show). A subject finding says
 * what its rank did: its body follows "rank N" (the diagnosis puts "ranks
 * 0-3" before the body of several alike); else the body is the sentence. */
void rt_vw_finding_text(const struct rt_vw_trace *t, const struct rt_vw_finding *f, char *out,
			size_t n);
bool rt_vw_finding_subject(const struct rt_vw_finding *f);
/* several: the body said of several ranks alike ("ranks 0-3 are alive",
 * "were killed"), its verbs agreeing with them. */
void rt_vw_finding_body(const struct rt_vw_trace *t, const struct rt_vw_finding *f, char *out,
			size_t n, bool several);
/* The laggard analysis of a hang as view --json's "laggard" says it (the
 * hang finding's sentence after "hung: "), or "" when there is none. */
void rt_vw_laggard_text(const struct rt_vw_trace *t, char *out, size_t n);

/* How an earlier attempt of an elastic job ended (load.c): the rank whose
 * own failure came first (-1: none) and how (signal, death inside a call,
 * exit status), else in words (why: "its verdict hung", "no readable
 * trace: ..."). */
struct rt_vw_attempt_end {
	int attempt, rank, status, signo;
	bool died;
	uint16_t died_id;
	char why[300];
};

struct rt_vw_trace {
	char dir[4096];              /* the directory read: DIR, or DIR/attempt-N */
	/* elastic attempts (load.c): the attempt read (0 without attempts), how
	 * many DIR holds (1 without attempts), and how the earlier ones ended */
	int attempt, nattempts;
	struct rt_vw_attempt_end *earlier;
	int nearlier;
	int nranks;
	struct rt_vw_rank *ranks;
	struct rt_vw_finding *findings;
	int nfindings;
	enum rt_verdict verdict;
	uint64_t events;
	int damaged;         /* ranks with a read error */
	/* the first cross-rank collective divergence, for diff */
	bool diverged;
	uint64_t div_comm;
	uint32_t div_seq;
	unsigned flags;
	struct rt_vw_comm *comms;    /* every communicator seen */
	int ncomms, comms_cap;
	int *comm_slots;             /* comms by id (matcher.c's hash), or NULL */
	size_t comm_mask;
	struct rt_vw_comm_index *cindex; /* communicators across ranks (comm_index.c), or NULL */
	/* completeness (completeness.c): the worst of the ranks', ranks the
	 * metadata or a communicator expects but no directory holds, and why a
	 * verdict would be a guess (empty when the evidence is complete) */
	enum rt_vw_completeness completeness;
	int world_size;              /* largest of metadata world sizes and communicator sizes */
	int *missing;
	int nmissing;
	int duplicates;              /* directories claiming a rank another one claims */
	/* why a verdict would be a guess, from the verdict's stage (verdict.c;
	 * render: rt_vw_inconclusive_text): RT_W_NONE when the evidence is
	 * complete; a missing rank; rank index why_rank's trace; an interruption */
	uint8_t why;                 /* enum rt_vw_why */
	int why_rank;
	/* live jobs (hang.c) */
	uint64_t stall_ns;           /* --stall: no call returned for this long = hung */
	int running;                 /* ranks whose process is alive */
	bool hung;
	int interrupted;             /* every rank stopped by this signal (INT, TERM, HUP), else 0 */
	uint64_t stop_rt_ns;         /* interrupted: the first rank's stop, real time (hang.c) */
	struct rt_vw_bt2 *lttng; /* an LTTng trace, read at load (read_bt2.c); else NULL */
	struct rt_vw_straggle *straggle; /* stragglers from device times (straggler.c) */
	bool straggle_done;
	struct rt_vw_hosts *hosts;       /* hosts and their clocks (hosts.c) */
	bool hosts_done;
};

/* Read and analyse a trace directory. Returns NULL with err set when it
 * holds no readable rank at all. RT_VW_KEEP_CALLS keeps each rank's list of
 * collectives (for diff; memory then grows with them). */
#define RT_VW_KEEP_CALLS 1u
/* RT_VW_KEEP_MEMORY keeps each rank's device memory over time (exports). */
#define RT_VW_KEEP_MEMORY 4u
struct rt_vw_trace *rt_vw_load(const char *dir, unsigned flags, char *err, size_t errlen);
/* Elastic jobs (torchrun --max-restarts): attempt N > 0 of DIR is
 * DIR/attempt-N, attempt 0 DIR itself. rt_vw_load and rt_vw_load_stall read
 * the last attempt; this one attempt (RT_VW_LAST_ATTEMPT: the last), each
 * earlier attempt's ending kept in t->earlier. */
#define RT_VW_LAST_ATTEMPT (-1)
struct rt_vw_trace *rt_vw_load_attempt(const char *dir, unsigned flags, uint64_t stall_ns,
				       int attempt, char *err, size_t errlen);
/* The same with --stall: a live job none of whose calls returned for
 * stall_ns is hung (0: RT_VW_STALL_DEFAULT_NS). */
struct rt_vw_trace *rt_vw_load_stall(const char *dir, unsigned flags, uint64_t stall_ns, char *err,
				     size_t errlen);
void rt_vw_free(struct rt_vw_trace *t);

/* The size of communicator id (its init's nranks, or the ranks that joined a
 * split), or the trace's rank count when it is unknown. */
int rt_vw_comm_size(const struct rt_vw_trace *t, uint64_t id);

/* The rank number r's directory says when r is not readable
 * (rank-00002), its metadata's otherwise; -1 when unknown (rank-p123). */
int rt_vw_rank_number(const struct rt_vw_rank *r);
/* Why rank index ri's trace is not complete, in words (render/finding_say.c:
 * "rank 1 trace damaged: ..."), "" when it is; why the verdict would be a
 * guess, "" when it would not. */
void rt_vw_incomplete_text(const struct rt_vw_trace *t, int ri, char *out, size_t n);
void rt_vw_inconclusive_text(const struct rt_vw_trace *t, char *out, size_t n);
/* The ranks whose Python ran without the PyTorch probe, in words ("ranks
 * 0-1 ran Python without the ranktrace probe (why): ..."); false, out "",
 * when there are none (run's warning, the inconclusive reason). */
bool rt_vw_probe_missing_text(const struct rt_vw_trace *t, char *out, size_t n);

/* How rank r ended, in one short phrase every output uses ("exit 0",
 * "signal 9 in ncclAllReduce", "died in ncclAllReduce", "returned", ...). */
void rt_vw_rank_end(const struct rt_vw_rank *r, char *out, size_t n);

/* Threads the model's pass reads ranks on (0, the default: one per core).
 * The result does not depend on it. */
void rt_vw_set_jobs(int n);

/* Every event of t's readable ranks again, merged by time (for exports). */
int rt_vw_foreach(const struct rt_vw_trace *t,
		  void (*fn)(void *arg, int rank, const struct rt_vw_event *e), void *arg);

/* The live allocation (at the end of the trace) holding ptr: its base,
 * size, device (-1 host), whether it is a VMM mapping (cuMemMap of handle)
 * and which paths reported it (1 runtime, 2 driver). False if none. */
struct rt_vw_alloc_info {
	uint64_t base, size, handle;
	int device;
	bool mapping;
	unsigned paths;
};
bool rt_vw_alloc_at(const struct rt_vw_rank *r, uint64_t ptr, struct rt_vw_alloc_info *out);

/* Rank index by rank number, or -1. */
int rt_vw_rank_index(const struct rt_vw_trace *t, int rank);

#endif
