/* SPDX-License-Identifier: MIT */
/* tracer.h - internals of libranktrace.so shared by its files; the hot path.
 *
 * Every interposed call goes: rt_tr_begin (reserve and write the event with
 * its arguments, dur_ns = RT_DUR_PENDING, commit) -> the real function ->
 * rt_tr_end (fill in result, duration and out-arguments in place, commit).
 * A rank that dies inside a call therefore leaves that call in its trace,
 * marked as never returned.
 *
 * The inline functions here take no lock, allocate nothing and format no
 * string. The slow paths (first event of a thread, packet switch, size cap)
 * live in writer.c. All state is per thread, except the read-mostly
 * process configuration. */
#ifndef RT_TRACER_H
#define RT_TRACER_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "encode.h"
#include "inject.h"
#include "record.h"
#include "schema.h"

#define RT_EXPORT __attribute__((visibility("default")))
#define RT_TLS __thread __attribute__((tls_model("initial-exec")))
#define rt_unlikely(x) __builtin_expect(!!(x), 0)
/* The hot path, inlined into every wrapper whatever the compiler's size
 * heuristics say: a call it makes costs more than the work it does. */
#define RT_TR_HOT static inline __attribute__((always_inline))

/* One stream file ("chunk", writer.c/chunk.c): created aside, sized, mapped
 * and formatted as packets marked unused (RT_TS_UNUSED) before it appears
 * in the rank directory, so that at every instant every file a reader can
 * see is a valid CTF stream file. Held by its mapping alone: no descriptor
 * stays open (own.c); dev and ino prove the file when it is reopened. */
struct rt_tr_chunk {
	uint8_t *base;      /* the whole file, mapped shared; NULL: none */
	uint64_t size;
	uint64_t dev, ino;  /* the file's identity */
	uint32_t pkt_bytes; /* size of each of its packets */
	uint32_t seq;       /* file stream-PID-TID (0) or stream-PID-TID.SEQ */
};

#define RT_TR_RING_CHUNKS RT_RING_FILES

/* States of a stream's next chunk (prep.c prepares it ahead). */
enum { RT_TR_NEXT_IDLE, RT_TR_NEXT_ASKED, RT_TR_NEXT_BUSY, RT_TR_NEXT_READY, RT_TR_NEXT_FAILED };

/* One thread's stream: CTF stream files written one mmap'd packet at a time.
 * In "scratch" mode (tracing stopped, or failed) events are written into
 * buf and forgotten, so callers need no special case. The hot fields come
 * first; the rest is touched once per packet or chunk. */
struct rt_tr_stream {
	uint8_t *pkt;   /* current packet (mapped), or buf in scratch mode */
	uint8_t *pos;   /* next free byte */
	uint8_t *end;   /* end of the packet, less room kept for rt_trace_stop */
	uint64_t last_ts;
	uint64_t events;
	uint64_t discarded;
	uint8_t *last_real_pkt; /* newest mapped packet: discarded events are counted there */
	struct rt_tr_chunk cur;  /* being written */
	struct rt_tr_chunk prev; /* the one before: may hold a record in flight */
	struct rt_tr_chunk next; /* prepared ahead (next_state READY) */
	int next_state;          /* RT_TR_NEXT_*, atomic; futex word while BUSY */
	int next_err;            /* -errno when FAILED */
	struct rt_tr_chunk retired; /* to unmap and close, by the helper */
	int retired_full;
	uint32_t nchunks;        /* chunk files made for this stream */
	uint32_t seq_next;       /* next file name suffix to try */
	uint32_t ring_used, ring_cur; /* flight recorder: slots filled, slot in use */
	struct rt_tr_chunk ring[RT_TR_RING_CHUNKS];
	struct rt_tr_stream *reg_next; /* registry of streams (prep.c, under rt_tr_lock) */
	bool orphan;                   /* its thread ended while the helper worked for it */
	pid_t pid;
	pid_t tid;
	bool scratch;
	uint8_t buf[RT_PACKET_HEADER_BYTES + 2 * RT_EVENT_MAX_BYTES];
};

/* One call being recorded. Held in registers by the inlined hot path:
 * pkt and end save reloading the stream after the field stores (byte
 * stores may alias anything, so the compiler could not keep them). */
struct rt_tr_call {
	struct rt_tr_stream *s;
	uint8_t *common;  /* dur_ns, ret, cur_dev */
	uint8_t *fields;  /* first field */
	uint8_t *p;       /* field cursor */
	uint8_t *rec;     /* where the record begins (header) */
	uint8_t *pkt;     /* the packet the entry record is in */
	uint8_t *end;     /* where the entry record ends */
	unsigned id;
	uint64_t t0;
	int errno_out;
	bool ok;
};

/* Process-wide, read-mostly. */
extern int rt_tr_off;          /* 1: pass everything through untouched */
extern pid_t rt_tr_pid;        /* our pid, updated after fork */
extern int rt_tr_clock_tsc;    /* 1: timestamps from the TSC */
extern uint64_t rt_tr_tsc0, rt_tr_mono0, rt_tr_tsc_mult; /* ns = mono0 + (tsc-tsc0)*mult>>32 */

/* Per thread, the hot path's state in one block: one address (the GOT's
 * offset of the block from the thread pointer) reaches all of it, where
 * separate variables cost a GOT load each. Named by the macros below. */
struct rt_tr_thread {
	int depth;    /* 0 outside, 1 in tracer code, 2 in the real function */
	int cur_dev;
	unsigned cur_id; /* the event rt_tr_begin last started (cupti.c) */
	struct rt_tr_stream *stream;
	/* This thread's errno (what __errno_location() returns, which is a
	 * call): set with stream, so valid wherever a record is being written. */
	int *errno_p;
};
extern RT_TLS struct rt_tr_thread rt_tr_th;
#define rt_tr_depth (rt_tr_th.depth)
#define rt_tr_cur_dev (rt_tr_th.cur_dev)
#define rt_tr_cur_id (rt_tr_th.cur_id)
#define rt_tr_stream_tls (rt_tr_th.stream)
#define rt_tr_errno_p (rt_tr_th.errno_p)

/* lttng_backend.c: RANKTRACE_BACKEND=lttng. rt_tr_lttng_emit is NULL unless
 * the LTTng-UST provider is loaded: then every finished record goes to it. */
extern bool rt_tr_lttng_wanted;
extern void (*rt_tr_lttng_emit)(unsigned id, const uint8_t *fields, uint64_t dur, int ret, int dev);
/* 1: also emit the call when it starts, dur_ns = RT_DUR_PENDING (as the
 * native record is before the call returns): NCCL calls by default */
extern uint8_t rt_tr_lttng_entry[RT_ID_COUNT];
void rt_tr_lttng_configure(void);
int rt_tr_lttng_setup(void);
void rt_tr_lttng_stream_init(struct rt_tr_stream *s);

/* writer.c: slow paths; they leave errno as they found it */
struct rt_tr_stream *rt_tr_stream_open(void);
struct rt_tr_stream *rt_tr_stream_for_signal(void);
void rt_tr_stream_next(struct rt_tr_stream *s, uint64_t now, unsigned need);
uint64_t rt_tr_clock_slow(void);
void rt_tr_calibrate_clock(void);
bool rt_tr_process_traced(void);
/* tracer.c */
void *rt_tr_resolve(const char *name, enum rt_lib lib);
void rt_tr_warn_once(int *flag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rt_tr_saw_device(int device);
/* driver.c: driver entry points; the table wrappers.c generates from
 * format/driver_api.def */
struct rt_tr_proc {
	const char *gpa;      /* name asked of cuGetProcAddress */
	int since;            /* first cudaVersion with this ABI */
	unsigned id;
	void *wrapper, **real;
	void *wrapper_ptsz, **real_ptsz; /* per-thread default stream twin, or NULL */
};
extern const struct rt_tr_proc rt_tr_procs[];
extern const unsigned rt_tr_nprocs;
int rt_tr_drv_learn_ctx(const void *ctx, int dev);
int rt_tr_drv_ctx_device(const void *ctx);
int rt_tr_drv_learn_pool(const void *pool, int dev);
int rt_tr_drv_pool_device(const void *pool);
/* cupti.c: flush CUPTI's activity buffers (at exit; at SIGTERM outside CUDA) */
void rt_tr_cupti_flush(bool from_signal);
void rt_tr_install_signal_handlers(void);
/* comms.c */
uint64_t rt_tr_id_hash(const void *unique_id);
void rt_tr_comm_new(const void *comm, uint64_t id, int nranks, int rank);
void rt_tr_comm_init_all(const void *comms, int ndev, const int *devlist);
void rt_tr_comm_split(const void *parent, int color, const void *newcomm);
void rt_tr_comm_forget(const void *comm);
uint64_t rt_tr_comm_id(const void *comm);
int rt_tr_comm_count(const void *comm);
uint32_t rt_tr_coll_seq(const void *comm);
uint32_t rt_tr_p2p_seq(const void *comm);
int rt_tr_comm_device(const void *comm);
/* device.c: a collective took its number on this thread */
void rt_tr_dev_enqueued(uint64_t comm_id, uint32_t seq, int dev);
int rt_tr_dev_last(uint64_t *comm_id, uint32_t *seq);
/* devevents.c: device-side start and completion from CUDA events (the
 * fallback source). The hooks of format/nccl_api.def: a collective's stream
 * field (before the call; returns the stream), its after-hook; the group
 * calls' device column (returns the current device) and ncclGroupEnd's
 * after-hook. The devdelay fault's stream delay moves the start behind it. */
const void *rt_tr_devev_before(const void *stream);
void rt_tr_devev_after(const void *comm, const void *stream);
int rt_tr_devev_group(int step);
void rt_tr_devev_group_done(void);
void rt_tr_devev_delayed(const void *stream);
bool rt_tr_devev_plugin_ok(void);
void rt_tr_devev_drain(void);
/* writer.c: metadata */
int rt_tr_write_metadata(const char *dir, bool replace);
void rt_tr_stream_forget_inherited(void);
void rt_tr_stream_release(struct rt_tr_stream *s);
void rt_tr_stream_note_stop(struct rt_tr_stream *s);
extern uint8_t rt_tr_trace_uuid[16];
/* chunk.c: stream files */
int rt_tr_chunk_make(struct rt_tr_stream *s, struct rt_tr_chunk *ch);
void rt_tr_fd_slot_wait(int ms);
void rt_tr_chunk_recycle(struct rt_tr_chunk *ch, uint64_t discarded);
void rt_tr_chunk_trim(const struct rt_tr_stream *s, const struct rt_tr_chunk *ch, uint64_t keep);
void rt_tr_chunk_drop(const struct rt_tr_stream *s, struct rt_tr_chunk *ch, bool remove);
void rt_tr_chunk_forget_process(void);
uint64_t rt_tr_bytes_used(void);
int rt_tr_stopped(void);
void rt_tr_stop_process(int err);
int rt_tr_stop_error(void);
int rt_tr_stop_reason_of(int err);
int rt_tr_stop_errno(int err);
#define RT_TR_E_RESERVE 4096 /* -RT_TR_E_RESERVE: the free-space reserve is reached */
#define RT_TR_E_FSIZE 4097   /* -RT_TR_E_FSIZE: the file would pass RLIMIT_FSIZE */
#define RT_TR_E_FDS 4098     /* -RT_TR_E_FDS: the descriptor budget is in use (chunk.c) */
/* own.c: the program's descriptors and signals stay its own */
struct rt_tr_quiet {
	sigset_t old, before;
	bool on;
};
void rt_tr_quiet_begin(struct rt_tr_quiet *q);
void rt_tr_quiet_end(struct rt_tr_quiet *q, int err);
int rt_tr_fd_lift(int fd);
bool rt_tr_fd_is(int fd, uint64_t dev, uint64_t ino);
extern RT_TLS bool rt_tr_fds_private; /* this thread has its own descriptor table */
/* prep.c: the helper thread that prepares chunks ahead */
extern pthread_mutex_t rt_tr_lock;
void rt_tr_prep_register(struct rt_tr_stream *s);
bool rt_tr_prep_unregister(struct rt_tr_stream *s);
void rt_tr_prep_start(void);
void rt_tr_prep_ask(struct rt_tr_stream *s);
int rt_tr_prep_take(struct rt_tr_stream *s, struct rt_tr_chunk *ch);
void rt_tr_prep_retire(struct rt_tr_stream *s, struct rt_tr_chunk *ch);
void rt_tr_prep_after_fork(void);
void rt_tr_prep_at_exit(void);
void rt_tr_prep_fork_prepare(void);
void rt_tr_prep_fork_parent(void);
/* host.c: the rank learned from NCCL reaches the directory, metadata, trace */
void rt_tr_rank_from_nccl(int rank, int nranks);
void rt_tr_host_init(void);
/* wrappers.c: tracer events, rt_tr_ev_<name> (format/record.h) */
/* inject/: rt_inj_* (inject/inject.h) */

static inline uint64_t rt_tr_now(void)
{
#if defined(__x86_64__)
	if (rt_tr_clock_tsc) {
		uint32_t lo, hi;

		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		return rt_tr_mono0 +
		       (uint64_t)(((unsigned __int128)((((uint64_t)hi << 32) | lo) - rt_tr_tsc0) *
				   rt_tr_tsc_mult) >> 32);
	}
#endif
	return rt_tr_clock_slow();
}

/* Both packet timestamps in one store: a process killed at any instruction
 * leaves either the old pair or the new one (x86-64: one SSE store; arm64:
 * one stp). Elsewhere two stores, begin first. */
static inline void rt_tr_put_ts_pair(uint8_t *pkt, uint64_t begin, uint64_t end)
{
	rt_fmt_packet_set_times(pkt, begin, end); /* format/encode.h */
}

static inline void rt_tr_put_PTR(struct rt_tr_call *c, const void *v)
{
	uint64_t u = (uint64_t)(uintptr_t)v;

	memcpy(c->p, &u, 8);
	c->p += 8;
}

static inline void rt_tr_put_U64(struct rt_tr_call *c, uint64_t v)
{
	memcpy(c->p, &v, 8);
	c->p += 8;
}

static inline void rt_tr_put_U32(struct rt_tr_call *c, uint32_t v)
{
	memcpy(c->p, &v, 4);
	c->p += 4;
}

static inline void rt_tr_put_I32(struct rt_tr_call *c, int32_t v)
{
	memcpy(c->p, &v, 4);
	c->p += 4;
}

static inline void rt_tr_put_U8(struct rt_tr_call *c, uint8_t v)
{
	*c->p++ = v;
}

static inline void rt_tr_put_I8(struct rt_tr_call *c, int8_t v)
{
	*c->p++ = (uint8_t)v;
}

static inline void rt_tr_put_STR(struct rt_tr_call *c, const char *s)
{
	size_t n = 0;

	while (n < RT_SZ_STR - 1 && s && s[n])
		n++;
	memcpy(c->p, s ? s : "", n);
	memset(c->p + n, 0, RT_SZ_STR - n);
	c->p += RT_SZ_STR;
}

static inline void rt_tr_put_zero(struct rt_tr_call *c, unsigned n)
{
	memset(c->p, 0, n);
	c->p += n;
}

static inline void rt_tr_commit(struct rt_tr_stream *s, uint64_t ts)
{
	rt_fmt_packet_commit(s->pkt, (uint64_t)(s->pos - s->pkt), ts);
}

/* Start recording event `id` with `payload` field bytes. False: do not
 * record (tracing off, or a call nested inside one being recorded).
 * errno: untouched (the slow paths restore it). */
RT_TR_HOT bool rt_tr_begin(struct rt_tr_call *c, unsigned id, unsigned payload, int dev)
{
	struct rt_tr_stream *s;
	unsigned need = RT_HEADER_EXTENDED_BYTES + RT_COMMON_BYTES + payload;
	uint64_t now, last;
	uint8_t *p, *q;

	if (rt_tr_depth || rt_tr_off)
		return false;
	rt_tr_depth = 1;
	s = rt_tr_stream_tls;
	if (rt_unlikely(!s || s->pid != rt_tr_pid))
		s = rt_tr_stream_open();
	now = rt_tr_now();
	last = s->last_ts;
	if (now < last)
		now = last;
	if (rt_unlikely(s->pos + need > s->end)) {
		rt_tr_stream_next(s, now, need);
		last = s->last_ts;
	}
	p = s->pos;
	c->pkt = s->pkt;
	/* own the cache lines the next records go to before they are written:
	 * a lock in the real function would otherwise wait for their misses */
	__builtin_prefetch(p + 256, 1, 3);
	q = rt_fmt_event_begin(p, id, now, last, rt_fmt_common_word(RT_DUR_PENDING, 0, dev));
	s->last_ts = now;
	rt_tr_cur_id = id;
	c->fields = c->p = q + RT_COMMON_BYTES;
	c->end = c->fields + payload;
	s->pos = c->end;
	c->s = s;
	c->rec = p;
	c->id = id;
	c->t0 = now;
	c->common = q;
	return true;
}

/* The entry record is complete: make it visible, then call the real thing. */
RT_TR_HOT void rt_tr_call_real(struct rt_tr_call *c)
{
	/* the packet and position rt_tr_begin left: nothing records meanwhile
	 * (depth 1) */
	rt_fmt_packet_commit(c->pkt, (uint64_t)(c->end - c->pkt), c->t0);
	c->s->events++;
	if (rt_unlikely(rt_tr_lttng_emit != NULL) && rt_tr_lttng_entry[c->id]) {
		int e = *rt_tr_errno_p;

		rt_tr_lttng_emit(c->id, c->fields, RT_DUR_PENDING, 0, (int8_t)c->common[7]);
		*rt_tr_errno_p = e;
	}
	rt_tr_depth = 2;
}

/* The real function returned: keep its errno for rt_tr_end to restore
 * (after-hooks, the injector, tracer events may change it meanwhile). */
RT_TR_HOT void rt_tr_returned(struct rt_tr_call *c)
{
	c->errno_out = *rt_tr_errno_p;
	rt_tr_depth = 1;
}

/* Fill in duration and result; commit. Restores the real call's errno. */
RT_TR_HOT void rt_tr_end(struct rt_tr_call *c, long ret)
{
	uint64_t now = rt_tr_now(), dur;
	int16_t r16 = ret > INT16_MAX ? INT16_MAX : ret < INT16_MIN ? INT16_MIN : (int16_t)ret;

	if (now < c->t0)
		now = c->t0;
	dur = now - c->t0;
	if (dur > RT_DUR_MAX)
		dur = RT_DUR_MAX;
	rt_fmt_event_result(c->common, dur, r16);
	rt_tr_commit(c->s, now); /* last_ts stays the header's: compact deltas decode from it */
	if (rt_unlikely(rt_tr_lttng_emit != NULL)) {
		rt_tr_lttng_emit(c->id, c->fields, dur, r16, (int8_t)c->common[7]);
		c->s->pos = c->rec; /* records nest LIFO: free this one's room */
	}
	rt_tr_depth = 0;
	*rt_tr_errno_p = c->errno_out;
}

#endif
