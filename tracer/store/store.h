/* SPDX-License-Identifier: MIT */
/* store.h - where records go: each thread's stream, written one record at a
 * time through reserve (rt_tr_reserve: room at the stream's position, or the
 * switch, rt_tr_stream_next, when the packet is full), the record written
 * (rt_tr_wrote) and commit (rt_tr_commit: the packet's size and end time, in
 * one store each). Behind them, the sink chosen once at start: the native
 * writer's mmap'd CTF files (writer.c, chunk.c, helper thread prep.c), or
 * LTTng (lttng_sink.c: records handed on, rt_tr_unwrite). Also the rank
 * directory's metadata file (metadata.c).
 *
 * The hot path (core/core.h) sees struct rt_tr_stream and the inline
 * functions here; the files, packets and helper behind them are the store's
 * own (store_int.h). Uses identity/ and base/. */
#ifndef RT_TR_STORE_H
#define RT_TR_STORE_H

#include <pthread.h>

#include "base.h"
#include "encode.h"
#include "schema.h"

struct rt_tr_stream;
void rt_tr_stream_next(struct rt_tr_stream *s, uint64_t now, unsigned need);
/* Is s's thread inside rt_tr_stream_next (its stream between packets or
 * files)? For a signal handler on that thread: nothing may be recorded. */
bool rt_tr_stream_switching(const struct rt_tr_stream *s);

/* A thread's stream as the hot path sees it: where the next record goes.
 * The store's own state follows it (store_int.h: struct rt_tr_wstream). */
struct rt_tr_stream {
	uint8_t *pkt;     /* the packet records go to now (its size and end time) */
	uint8_t *pos;     /* where the next record goes */
	uint8_t *end;     /* the end of the room for records in this packet */
	uint64_t last_ts; /* the newest record's time: times never go back */
	uint64_t events;  /* records written */
	pid_t pid;        /* the process it is for (a forked child's is not its own) */
};

/* Reserve: room for a record of at most `need` bytes at time *now (raised
 * to the stream's newest time), switching to the next packet (or file) when
 * this one is full. Returns where the record goes; *last: the newest time
 * before it (a compact header is a delta from it). */
RT_TR_HOT uint8_t *rt_tr_reserve(struct rt_tr_stream *s, unsigned need, uint64_t *now,
				 uint64_t *last)
{
	*last = s->last_ts;
	if (*now < *last)
		*now = *last;
	if (rt_unlikely(s->pos + need > s->end)) {
		rt_tr_stream_next(s, *now, need); /* the switch */
		*last = s->last_ts;
	}
	return s->pos;
}

/* The reserved record was written: it ends at end, its time is now. */
RT_TR_HOT void rt_tr_wrote(struct rt_tr_stream *s, uint8_t *end, uint64_t now)
{
	s->last_ts = now;
	s->pos = end;
}

/* Commit: the records of packet pkt up to end are complete, the last of
 * them at ts (the packet's size and end time: one store each). */
RT_TR_HOT void rt_tr_commit(uint8_t *pkt, const uint8_t *end, uint64_t ts)
{
	rt_fmt_packet_commit(pkt, (uint64_t)(end - pkt), ts);
}

/* A sink that hands records on (LTTng) frees the room of the newest one,
 * at rec, once it is handed on: records nest LIFO. */
RT_TR_HOT void rt_tr_unwrite(struct rt_tr_stream *s, uint8_t *rec)
{
	s->pos = rec;
}

/* ---- writer.c: streams; the slow paths leave errno as they found it ---- */

/* This thread's stream, opened at its first event (or again in a forked
 * child). setup_err: the process set-up's result (core/life.c): 0, or why
 * the process has no trace (it then continues untraced, one warning). */
struct rt_tr_stream *rt_tr_stream_open(int setup_err);
/* For a fatal-signal handler: a stream allocated ahead, opened with system
 * calls only; NULL when there is none. */
struct rt_tr_stream *rt_tr_stream_for_signal(void);
/* At exit or thread end: a stream that has not said why tracing stopped
 * says it now. */
void rt_tr_stream_note_stop(struct rt_tr_stream *s);
/* Fork child: the parent's streams are forgotten (files untouched); its
 * own are fork-PID-TID files in the rank directory, never stream-PID-TID:
 * a forked child is not its parent's rank (a viewer reads a rank's
 * stream-* files; babeltrace2 reads them all). */
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
