/* SPDX-License-Identifier: MIT */
/* store.h - where records go: each thread's stream, written one record at a
 * time through reserve (the room at s->pos, or rt_tr_stream_next when the
 * packet is full: the switch), commit (rt_tr_commit: the packet's size and
 * end time, in one store each), and, behind them, the native writer's
 * mmap'd CTF files (writer.c, chunk.c, helper thread prep.c) or the LTTng
 * sink (lttng_sink.c). Also the rank directory's metadata file (metadata.c).
 *
 * The hot path (core/core.h) touches only the first fields of struct
 * rt_tr_stream and the inline functions here; everything else is the
 * store's own (store_int.h). Uses identity/ and base/. */
#ifndef RT_TR_STORE_H
#define RT_TR_STORE_H

#include <pthread.h>

#include "base.h"
#include "encode.h"
#include "schema.h"

/* One stream file ("chunk", writer.c/chunk.c): created aside, sized, mapped
 * and formatted as packets marked unused (RT_TS_UNUSED) before it appears
 * in the rank directory, so that at every instant every file a reader can
 * see is a valid CTF stream file. Held by its mapping alone: no descriptor
 * stays open (base/own.c); dev and ino prove the file when it is reopened. */
struct rt_tr_chunk {
	uint8_t *base;      /* the whole file, mapped shared; NULL: none */
	uint64_t size;
	uint64_t dev, ino;  /* the file's identity */
	uint32_t pkt_bytes; /* size of each of its packets */
	uint32_t seq;       /* file stream-PID-TID (0) or stream-PID-TID.SEQ */
};

#define RT_TR_RING_CHUNKS RT_RING_FILES

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

/* Commit: every byte up to s->pos is an event, the last of them at ts. */
static inline void rt_tr_commit(struct rt_tr_stream *s, uint64_t ts)
{
	rt_fmt_packet_commit(s->pkt, (uint64_t)(s->pos - s->pkt), ts);
}

/* ---- writer.c: streams; the slow paths leave errno as they found it ---- */

/* This thread's stream, opened at its first event (or again in a forked
 * child). setup_err: the process set-up's result (core/life.c): 0, or why
 * the process has no trace (it then continues untraced, one warning). */
struct rt_tr_stream *rt_tr_stream_open(int setup_err);
/* For a fatal-signal handler: a stream allocated ahead, opened with system
 * calls only; NULL when there is none. */
struct rt_tr_stream *rt_tr_stream_for_signal(void);
/* Switch: the packet is full; the next one (or a scratch buffer once
 * tracing has stopped), with room for `need` bytes at time now. */
void rt_tr_stream_next(struct rt_tr_stream *s, uint64_t now, unsigned need);
/* At exit or thread end: a stream that has not said why tracing stopped
 * says it now. */
void rt_tr_stream_note_stop(struct rt_tr_stream *s);
/* Fork child: the parent's streams are forgotten (files untouched). */
void rt_tr_stream_forget_inherited(void);
/* This process has its rank directory and metadata (set by core/life.c). */
bool rt_tr_process_traced(void);
void rt_tr_store_ready(void);
/* The store's process lock: process set-up and the registry of streams. */
extern pthread_mutex_t rt_tr_lock;
/* Tracing stopped (size cap, free-space reserve, disk full, I/O error):
 * its reason (RT_STOP_*), 0 while it goes on. */
int rt_tr_stopped(void);

/* ---- prep.c: the helper thread that makes files ahead ---- */

void rt_tr_prep_start(void); /* under rt_tr_lock, once set up */
void rt_tr_prep_at_exit(void);
void rt_tr_prep_fork_prepare(void);
void rt_tr_prep_fork_parent(void);

/* ---- metadata.c: DIR/rank-N/metadata ---- */

/* Write the metadata for the current rank identity; replace: atomically
 * replace an existing one (rank learned later). 0 or -errno. */
int rt_tr_write_metadata(const char *dir, bool replace);
extern uint8_t rt_tr_trace_uuid[16];

/* ---- lttng_sink.c: RANKTRACE_BACKEND=lttng ---- */

/* rt_tr_lttng_emit is NULL unless the LTTng-UST provider is loaded: then
 * every finished record goes to it. */
extern bool rt_tr_lttng_wanted;
extern void (*rt_tr_lttng_emit)(unsigned id, const uint8_t *fields, uint64_t dur, int ret, int dev);
/* 1: also emit the call when it starts, dur_ns = RT_DUR_PENDING (as the
 * native record is before the call returns): NCCL calls by default */
extern uint8_t rt_tr_lttng_entry[RT_ID_COUNT];
void rt_tr_lttng_configure(void);
int rt_tr_lttng_setup(void);

#endif
