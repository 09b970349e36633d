/* SPDX-License-Identifier: MIT */
/* schema.h - the event schema: ids, sizes, field descriptors, trace layout.
 *
 * The one contract between the tracer (writer), the CTF metadata and the
 * viewer (reader). Everything here is expanded from format/cuda_api.def,
 * format/nccl_api.def and format/events.def; nothing is written twice.
 *
 * On-disk layout of one event (little-endian, byte-aligned):
 *   header   id:u16, then ts:u32 (compact) -- or, when id == 0xffff,
 *            id:u32, ts:u64 (extended; used when the 32-bit delta would wrap)
 *   common   dur_ns:u40 (RT_DUR_PENDING while the call has not returned),
 *            ret:i16 (the call's result), cur_dev:i8 (device it ran on)
 *   fields   as declared, each of a fixed size
 * A packet starts with RT_PACKET_HEADER_BYTES of header and context. */
#ifndef RT_SCHEMA_H
#define RT_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_SCHEMA_VERSION 1
#define RT_CTF_MAGIC 0xC1FC1FC1u
#define RT_DUR_PENDING 0xffffffffffull /* 40 bits: the call never returned */
#define RT_DUR_MAX (RT_DUR_PENDING - 1)
#define RT_COMMON_BYTES 8
#define RT_HEADER_COMPACT_BYTES 6
#define RT_HEADER_EXTENDED_BYTES 14
#define RT_EXTENDED_ID 0xffffu

/* packet header (32 bytes) + packet context (48 bytes) */
#define RT_PACKET_HEADER_BYTES 80
#define RT_PKT_OFF_TS_BEGIN 32
#define RT_PKT_OFF_TS_END 40
#define RT_PKT_OFF_CONTENT 48
#define RT_PKT_OFF_SIZE 56
#define RT_PKT_OFF_DISCARDED 64
#define RT_PKT_OFF_PID 72
#define RT_PKT_OFF_TID 76
/* timestamp_begin and timestamp_end of a packet prepared ahead and not used
 * yet (no events): later than any real time, so readers (babeltrace2 sorts
 * the packets of a stream's files by timestamp_begin) place it last. */
#define RT_TS_UNUSED (1ull << 62)

/* The smallest trace the writer makes (a thread's first file), and the
 * smallest flight recorder (RT_RING_FILES files of 16 KiB per thread). */
#define RT_MIN_TRACE_BYTES (32u << 10)
#define RT_RING_FILES 8
#define RT_MIN_RING_BYTES (RT_RING_FILES * (16u << 10))

/* Why tracing stopped early (rt_trace_stop's reason): X(id, word, prose). */
#define RT_STOP_REASONS(X)                                                             \
	X(NONE, "none", "not stopped")                                                 \
	X(CAP, "capped", "size cap reached")                                           \
	X(RESERVE, "reserve", "free-space reserve reached")                            \
	X(DISK_FULL, "disk-full", "disk full")                                         \
	X(QUOTA, "quota", "disk quota exceeded")                                       \
	X(IO_ERROR, "io-error", "I/O error on the trace file")                         \
	X(RING, "ring", "flight recorder: older events overwritten")
enum rt_stop_reason {
#define RT_X(id, word, prose) RT_STOP_##id,
	RT_STOP_REASONS(RT_X)
#undef RT_X
	RT_STOP_COUNT_
};
/* "disk-full"..., and the prose ("disk full"); NULL past the table */
const char *rt_stop_word(unsigned reason);
const char *rt_stop_prose(unsigned reason);

/* Why a collective's device record was not kept (rt_dev_drop's
 * drop_reason): X(id, word, prose). Values are recorded: never reordered. */
#define RT_DROP_REASONS(X)                                                             \
	X(NONE, "none", "kept")                                                        \
	X(POOL, "pool-full", "the profiler plugin's pool of records was full")         \
	X(QUEUE, "queue-full", "the CUDA-event queue of its thread and device was full") \
	X(GROUP, "group-cut", "its group launched more collectives than the source keeps") \
	X(PENDING, "pending-error", "an error of the program's was pending (an event of ours would have taken it)") \
	X(CAPTURE, "captured", "its stream was being captured into a CUDA graph")      \
	X(UNBOUND, "unbound", "the plugin's report could not be tied to its call")     \
	X(NO_EVENTS, "no-events", "the source could not make or record its CUDA events")
enum rt_drop_reason {
#define RT_X(id, word, prose) RT_DROP_##id,
	RT_DROP_REASONS(RT_X)
#undef RT_X
	RT_DROP_COUNT_
};
/* "pool-full"..., and the prose; NULL past the table */
const char *rt_drop_word(unsigned reason);
const char *rt_drop_prose(unsigned reason);

/* rt_dev_coll's phase and rt_dev_coll/rt_dev_source's source. */
enum { RT_DEV_STARTED = 1, RT_DEV_COMPLETED = 2 };
enum { RT_DEV_SRC_NONE, RT_DEV_SRC_PLUGIN, RT_DEV_SRC_EVENT };
/* The CUDA-event source's poll period (tracer/device/devqueue.c): its times are the
 * poller's, late by up to one period plus its thread's scheduling. */
#define RT_DEV_EVENT_POLL_NS 500000

enum rt_kind { RT_K_PTR, RT_K_U64, RT_K_U32, RT_K_I32, RT_K_U8, RT_K_I8, RT_K_STR };
#define RT_SZ_PTR 8
#define RT_SZ_U64 8
#define RT_SZ_U32 4
#define RT_SZ_I32 4
#define RT_SZ_U8 1
#define RT_SZ_I8 1
#define RT_SZ_STR 64 /* NUL-padded UTF-8, for names in probe events */

enum rt_lib { RT_LIB_CUDA, RT_LIB_NCCL, RT_LIB_TRACER, RT_LIB_DRIVER };

/* Field names (format/fields.def): code reads a field as RT_FN_name. */
enum rt_fname {
#define RT_FIELD(n, doc) RT_FN_##n,
#include "fields.def"
#undef RT_FIELD
	RT_FN_COUNT
};

/* What a call means: the role column of the call tables, ROLE(what, arg).
 * X(name, what the role promises); enum rt_role RT_R_name, rt_role_names. */
#define RT_ROLES(X)                                                                      \
	X(NONE, "tracer events")                                                          \
	X(SET_DEVICE, "binds the thread's device (field device)")                         \
	X(GET_DEVICE, "reads the thread's device")                                        \
	X(ALLOC, "arg DEVICE or HOST; fields ptr, size (or pitch * height)")              \
	X(FREE, "arg DEVICE or HOST; field ptr")                                          \
	X(COPY, "fields dst, src, count: devices resolved from allocations")              \
	X(COPY_PEER, "fields dst_device, src_device")                                     \
	X(MEMSET, "sets device memory")                                                   \
	X(STREAM_CREATE, "a CUDA stream is made")                                         \
	X(STREAM_DESTROY, "a CUDA stream ends")                                           \
	X(DEVICE_RESET, "the device is reset")                                            \
	X(MEM_INFO, "reads free and total device memory")                                 \
	X(QUERY, "reads state, changes nothing")                                          \
	X(UNIQUE_ID, "makes an NCCL unique id")                                           \
	X(COMM_INIT, "one rank joins: fields comm_id, nranks, rank")                      \
	X(COMM_INIT_ALL, "one process makes all ranks: comm_id, nranks")                  \
	X(COMM_SPLIT, "fields parent_id, color, key, comm_id")                            \
	X(COMM_END, "a communicator ends")                                                \
	X(COLL, "arg the kind; fields comm_id, seq, count, datatype...")                  \
	X(P2P, "arg Send or Recv; fields comm_id, seq, peer...")                          \
	X(GROUP, "NCCL group start or end")                                               \
	X(VMM_CREATE, "driver: physical memory made on a device (field device)")          \
	X(VMM_RELEASE, "driver: physical memory released")                                \
	X(VMM_MAP, "driver: a handle mapped into a reserved range")                       \
	X(VMM_UNMAP, "driver: a range unmapped")                                          \
	X(CTX, "driver: a context made current (field device)")                           \
	X(COMM_SHRINK, "fields parent_id, nexcluded, comm_id: the parent's other ranks")  \
	X(COMM_REVOKE, "a communicator's operations end, no new one (it is destroyed later)") \
	X(COMM_FINALIZE, "a communicator's operations complete (destroy follows)")
enum rt_role {
#define RT_ROLE_ENUM(n, doc) RT_R_##n,
	RT_ROLES(RT_ROLE_ENUM)
#undef RT_ROLE_ENUM
	RT_R_COUNT
};
extern const char *const rt_role_names[RT_R_COUNT]; /* "ALLOC", "COMM_INIT"... */

/* How a communicator was made (rt_comm's field how): recorded in traces, so
 * rows are only appended. X(name, the call that makes it so). */
#define RT_COMM_HOWS(X)                                                                  \
	X(UNKNOWN, "?")                                                                   \
	X(INIT, "ncclCommInitRank")                                                       \
	X(INIT_CONFIG, "ncclCommInitRankConfig")                                          \
	X(INIT_SCALABLE, "ncclCommInitRankScalable")                                      \
	X(INIT_ALL, "ncclCommInitAll")                                                    \
	X(SPLIT, "ncclCommSplit")                                                         \
	X(SHRINK, "ncclCommShrink")
enum rt_comm_how {
#define RT_COMM_HOW_ENUM(n, call) RT_COMM_##n,
	RT_COMM_HOWS(RT_COMM_HOW_ENUM)
#undef RT_COMM_HOW_ENUM
	RT_COMM_HOW_COUNT
};
extern const char *const rt_comm_how_calls[RT_COMM_HOW_COUNT]; /* "ncclCommSplit"... */

/* Collective kinds (RT_COLL_KIND in nccl_api.def), in output order. */
enum rt_coll_kind {
#define RT_API(...)
#define RT_COLL_KIND(k, label, p2p, root, op, view, colour) RT_CK_##k,
#include "nccl_api.def"
#undef RT_COLL_KIND
#undef RT_API
	RT_CK_COUNT
};
extern const char *const rt_coll_names[RT_CK_COUNT];
extern const char *const rt_coll_colours[RT_CK_COUNT]; /* "": none of its own */

/* The columns of a kind (nccl_api.def): every rule about kinds reads these. */
struct rt_coll_info {
	const char *label; /* "AG" */
	uint8_t p2p, root, op;
	uint8_t view;      /* position in `ranktrace view`'s column, 0: none */
};
extern const struct rt_coll_info rt_coll_info[RT_CK_COUNT];

/* A collective across ranks (a kind, not point to point). */
static inline int rt_ck_is_collective(int k)
{
	return k >= 0 && k < RT_CK_COUNT && !rt_coll_info[k].p2p;
}

/* Point to point (Send, Recv): field peer instead of a root. */
static inline int rt_ck_is_p2p(int k)
{
	return k >= 0 && k < RT_CK_COUNT && rt_coll_info[k].p2p;
}

/* The kind has a root (Broadcast, Reduce) / a reduction op every rank must agree on. */
static inline int rt_ck_has_root(int k)
{
	return k >= 0 && k < RT_CK_COUNT && rt_coll_info[k].root;
}

static inline int rt_ck_has_op(int k)
{
	return k >= 0 && k < RT_CK_COUNT && rt_coll_info[k].op;
}

/* The role column's arg: memory kind, or a collective kind (>= 0). */
enum rt_role_arg { RT_A_NONE = -1, RT_A_DEVICE = -2, RT_A_HOST = -3,
#define RT_API(...)
#define RT_COLL_KIND(k, label, p2p, root, op, view, colour) RT_A_##k = RT_CK_##k,
#include "nccl_api.def"
#undef RT_COLL_KIND
#undef RT_API
};

enum rt_event_id {
#define RT_API(name, ...) RT_ID_##name,
#define RT_EVENT(name, ...) RT_ID_##name,
#define RT_DRV(name, ...) RT_ID_##name,
#include "cuda_api.def"
	RT_ID_FIRST_NCCL,
	RT_ID_NCCL_BASE = RT_ID_FIRST_NCCL - 1,
#include "nccl_api.def"
	RT_ID_FIRST_DRIVER,
	RT_ID_DRIVER_BASE = RT_ID_FIRST_DRIVER - 1,
#include "driver_api.def"
	RT_ID_FIRST_TRACER,
	RT_ID_TRACER_BASE = RT_ID_FIRST_TRACER - 1,
#include "events.def" /* then every row added since, functions too */
#undef RT_API
#undef RT_EVENT
#undef RT_DRV
	RT_ID_COUNT
};

/* Payload bytes (after the common part) of each event, at compile time. */
enum rt_event_size {
#define F(k, n, e) +RT_SZ_##k
#define O(k, n, e) +RT_SZ_##k
#define RT_API(name, ret, params, args, fail, dev, after, fields, role, errors) RT_SIZE_##name = 0 fields,
#define RT_EVENT(name, params, fields) RT_SIZE_##name = 0 fields,
#define RT_DRV(name, gpa, since, ptsz, role, ret, params, args, fail, dev, after, fields) \
	RT_SIZE_##name = 0 fields,
#include "cuda_api.def"
#include "nccl_api.def"
#include "driver_api.def"
#include "events.def"
#undef RT_API
#undef RT_EVENT
#undef RT_DRV
#undef F
#undef O
	RT_SIZE_MAX_PAYLOAD = 136 /* the largest: rt_unwrapped_call, two names and a count */
};

#define RT_EVENT_MAX_BYTES (RT_HEADER_EXTENDED_BYTES + RT_COMMON_BYTES + RT_SIZE_MAX_PAYLOAD)

struct rt_field {
	const char *name;
	uint8_t kind;
	uint8_t offset; /* from the start of the fields */
	uint8_t fid;    /* enum rt_fname */
};

struct rt_event_desc {
	const char *name;
	uint8_t lib;
	uint8_t nfields;
	uint16_t size; /* payload bytes after the common part */
	const struct rt_field *fields;
	uint8_t role;  /* enum rt_role */
	int8_t arg;    /* enum rt_role_arg */
	const char *const *errors; /* NULL-terminated: beyond the library's common ones */
};

/* Indexed by enum rt_event_id (dense: CUDA ids, then NCCL from
 * RT_ID_FIRST_NCCL, the driver's, the tracer's own from RT_ID_FIRST_TRACER,
 * with every row added since among them, functions too: events.def). */
extern const struct rt_event_desc rt_events[RT_ID_COUNT];

/* An NCCL call on a communicator handle (the fault plan's comm=): an
 * operation, a query or an end of one, the parent of a split or shrink. Not
 * inits (their handle is an out-argument) nor groups. The tracer's wrappers
 * pick the argument by the same roles (tracer/interpose/wrappers.c). */
static inline bool rt_id_on_comm(unsigned id)
{
	unsigned role = rt_events[id].role;

	return rt_events[id].lib == RT_LIB_NCCL &&
	       (role == RT_R_COLL || role == RT_R_P2P || role == RT_R_COMM_SPLIT ||
		role == RT_R_COMM_SHRINK || role == RT_R_COMM_END || role == RT_R_COMM_REVOKE ||
		role == RT_R_COMM_FINALIZE || role == RT_R_QUERY);
}

/* An interposed function, not one of the tracer's own events (whose ids
 * are not one range: functions added later follow the events). */
static inline bool rt_id_is_api(unsigned id)
{
	return id < RT_ID_COUNT && rt_events[id].lib != RT_LIB_TRACER;
}

size_t rt_kind_size(enum rt_kind k);

/* What a driver call means to the memory model (driver_api.def's role
 * column, in the one role vocabulary: RT_R_*, arg RT_A_DEVICE/RT_A_HOST),
 * indexed by event id; role RT_R_NONE for every other event. A column of
 * its own: the viewer models driver memory apart from the runtime's. */
struct rt_role_cell {
	uint8_t role; /* enum rt_role */
	int8_t arg;   /* enum rt_role_arg, when role is not RT_R_NONE */
};
extern const struct rt_role_cell rt_drv_role[RT_ID_COUNT];

/* Field index by name in an event, or -1 (for tools reading user input). */
int rt_field_index(unsigned id, const char *name);

/* Where field f is in event id: its index, or -1 (filled at start-up). */
extern int8_t rt_field_at[RT_ID_COUNT][RT_FN_COUNT];

/* The errors every function of library lib may return (NULL-terminated),
 * and NVIDIA's name of a result code (NULL when unknown). */
extern const char *const *const rt_errors_common[RT_LIB_DRIVER + 1]; /* [RT_LIB_TRACER]: NULL */
const char *rt_result_name(unsigned lib, int64_t code);
/* The value of NVIDIA's error name for library lib, or -1. */
int64_t rt_result_value(unsigned lib, const char *name);

/* The collective kind of an event id (ROLE(COLL|P2P, kind)), or -1. */
static inline int rt_coll_kind_of(unsigned id)
{
	return (rt_events[id].role == RT_R_COLL || rt_events[id].role == RT_R_P2P) ? rt_events[id].arg : -1;
}

/* Read field i of an event's payload (fields part) as an integer. */
static inline int64_t rt_field_get(unsigned id, const uint8_t *fields, int i)
{
	const struct rt_field *f = &rt_events[id].fields[i];
	const uint8_t *p = fields + f->offset;

	switch (f->kind) {
	case RT_K_PTR: case RT_K_U64: { uint64_t v; __builtin_memcpy(&v, p, 8); return (int64_t)v; }
	case RT_K_U32: { uint32_t v; __builtin_memcpy(&v, p, 4); return v; }
	case RT_K_I32: { int32_t v; __builtin_memcpy(&v, p, 4); return v; }
	case RT_K_U8: return *p;
	case RT_K_STR: return 0;
	default: return (int8_t)*p;
	}
}

/* Field f (enum rt_fname) of event id, or 0 when the event has none. */
static inline int64_t rt_field_value(unsigned id, const uint8_t *fields, int f)
{
	int i = rt_field_at[id][f];

	return i < 0 ? 0 : rt_field_get(id, fields, i);
}

/* Field i as a string (RT_K_STR), copied NUL-terminated into out[65]. */
static inline const char *rt_field_str(unsigned id, const uint8_t *fields, int i, char out[65])
{
	__builtin_memcpy(out, fields + rt_events[id].fields[i].offset, 64);
	out[64] = '\0';
	return out;
}

/* String field f (enum rt_fname) of event id, "" when the event has none. */
static inline const char *rt_field_text(unsigned id, const uint8_t *fields, int f, char out[65])
{
	int i = rt_field_at[id][f];

	if (i < 0 || rt_events[id].fields[i].kind != RT_K_STR) {
		out[0] = '\0';
		return out;
	}
	return rt_field_str(id, fields, i, out);
}

/* Element types (format/dtypes.def). ncclDataType_t value v: bytes of one
 * element and NCCL's name, 0 / NULL when unknown. */
unsigned rt_nccl_dtype_size(int64_t v);
const char *rt_nccl_dtype_name(int64_t v);

/* The probe's dtype codes (rt_param's dtype) and device types (devtype). */
enum rt_probe_dtype {
#define RT_PROBE_DTYPE(n, bytes) RT_PDT_##n,
#include "dtypes.def"
#undef RT_PROBE_DTYPE
	RT_PDT_COUNT
};
enum rt_probe_dev {
#define RT_PROBE_DEV(n) RT_PDEV_##n,
#include "dtypes.def"
#undef RT_PROBE_DEV
	RT_PDEV_COUNT
};
/* "bfloat16", bytes of one element: "?" / 0 for a code the table lacks */
const char *rt_probe_dtype_name(unsigned code);
unsigned rt_probe_dtype_size(unsigned code);
extern const char *const rt_probe_dev_names[RT_PDEV_COUNT]; /* "cuda", "cpu", "meta" */
/* rt_param_dtensor's placement codes other than a shard (>= 0: the tensor
 * dimension a mesh dimension shards) */
enum rt_probe_place {
#define RT_PROBE_PLACE(n, code) RT_PLACE_CODE_##n = code,
#include "dtypes.def"
#undef RT_PROBE_PLACE
};
/* "replicate", "partial", "other" for a code below 0, NULL otherwise */
const char *rt_probe_place_name(int code);

/* The failure points of ranktrace's probes (format/points.def). */
enum rt_point_id {
#define RT_POINT(id, name, reached, who) RT_POINT_##id,
#include "points.def"
#undef RT_POINT
	RT_POINT_COUNT
};
struct rt_point_info {
	const char *name, *reached, *declared_by;
};
extern const struct rt_point_info rt_points[RT_POINT_COUNT];
/* The point named name, or NULL: a program's own. */
const struct rt_point_info *rt_point_find(const char *name);
/* The target of a fault plan's spec as written (an rt_inj_rule's spec): a
 * preset's (format/presets.def: "skip-fsdp-root" -> "fsdp.root_forward"),
 * else the spec up to its first ':'. snprintf's result. */
int rt_spec_target(const char *spec, char *out, size_t n);

/* Trace-wide facts written into the CTF metadata `env` block. */
/* The PyTorch probe in a rank's Python process, as its metadata records it
 * (env python_probe, with python_probe_detail): tracer/interpose/pyboot.c
 * loads it once Python's runtime is up. */
enum rt_probe_state {
	RT_PROBE_NONE = 0,    /* no Python in the process (or a trace from before) */
	RT_PROBE_LOADED = 1,  /* the probe installed */
	RT_PROBE_OFF = 2,     /* RANKTRACE_PROBE=0: turned off on purpose */
	RT_PROBE_FAILED = 3,  /* its import or installation raised (detail: the exception) */
	RT_PROBE_MISSING = 4, /* Python ran the program without it (detail: why) */
};

struct rt_trace_env {
	char hostname[64];
	char nccl_host[64];      /* NCCL's host identity: NCCL_HOSTID, else empty (= hostname) */
	int pid;
	int rank, local_rank, world_size;
	int attempt;             /* the launcher's restart count (TORCHELASTIC_RESTART_COUNT) */
	int probe;               /* enum rt_probe_state */
	const char *probe_detail;
	const char *rank_source; /* "env:RANK", "env:SLURM_PROCID", "nccl", "pid" */
	int64_t clock_offset_s;  /* wall clock = monotonic + offset */
	int64_t clock_offset_ns;
	uint8_t uuid[16];        /* this trace (rank) */
	char clock_uuid[40];     /* the host's boot_id: one clock domain per boot */
	uint64_t packet_bytes;   /* the largest packet (packets grow from 8 KiB) */
	uint64_t ring_bytes;     /* flight recorder: per-thread size kept, 0: off */
	uint64_t max_bytes;      /* size cap per rank process, 0: none */
	int64_t min_free;        /* free space kept on the trace filesystem, -1: default */
	int file_records;        /* 1: every stream file is whole (no packet left zero) and
				  * begins with rt_stream_file (the writer since issue 28) */
};

/* Write the CTF 1.8 TSDL metadata for this schema. Returns the length, or
 * -1 when buf is too small. */
long rt_schema_tsdl(char *buf, size_t n, const struct rt_trace_env *env);

#endif
