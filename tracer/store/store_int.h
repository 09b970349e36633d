/* SPDX-License-Identifier: MIT */
/* store_int.h - what the store's files share and nothing outside uses:
 * chunk files (chunk.c), the helper's queue (prep.c), the stop state. */
#ifndef RT_TR_STORE_INT_H
#define RT_TR_STORE_INT_H

#include "identity.h"
#include "store.h"

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
 * In "scratch" mode (tracing stopped, or failed; the LTTng sink's records)
 * events are written into buf, so callers need no special case. The hot
 * path's head comes first (h.pkt: the packet, or buf in scratch mode; h.end:
 * the end of the packet, less room kept for rt_trace_stop); the rest is
 * touched once per packet or chunk. */
struct rt_tr_wstream {
	struct rt_tr_stream h;
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
	struct rt_tr_wstream *reg_next; /* registry of streams (prep.c, under rt_tr_lock) */
	bool orphan;                   /* its thread ended while the helper worked for it */
	pid_t tid;
	bool scratch;
	volatile bool switching; /* stream_next at work (a handler on this thread sees it) */
	uint8_t buf[RT_PACKET_HEADER_BYTES + 2 * RT_EVENT_MAX_BYTES];
};

/* The store's stream behind the hot path's head (its first member). */
static inline struct rt_tr_wstream *rt_tr_ws(struct rt_tr_stream *s)
{
	return (struct rt_tr_wstream *)(void *)s;
}

/* States of a stream's next chunk (prep.c prepares it ahead). */
enum { RT_TR_NEXT_IDLE, RT_TR_NEXT_ASKED, RT_TR_NEXT_BUSY, RT_TR_NEXT_READY, RT_TR_NEXT_FAILED };

/* Both packet timestamps in one store: a process killed at any instruction
 * leaves either the old pair or the new one (x86-64: one SSE store; arm64:
 * one stp). Elsewhere two stores, begin first. */
static inline void rt_tr_put_ts_pair(uint8_t *pkt, uint64_t begin, uint64_t end)
{
	rt_fmt_packet_set_times(pkt, begin, end); /* format/encode.h */
}

/* writer.c */
extern bool rt_tr_fork_child; /* a forked child: its files are fork-PID-TID */
void rt_tr_stream_release(struct rt_tr_wstream *s);
void rt_tr_lttng_stream_init(struct rt_tr_wstream *s);

/* chunk.c: stream files */
int rt_tr_chunk_make(struct rt_tr_wstream *s, struct rt_tr_chunk *ch);
void rt_tr_fd_slot_wait(int ms);
void rt_tr_chunk_recycle(struct rt_tr_chunk *ch, uint64_t discarded);
void rt_tr_chunk_trim(const struct rt_tr_wstream *s, const struct rt_tr_chunk *ch, uint64_t keep);
void rt_tr_chunk_drop(const struct rt_tr_wstream *s, struct rt_tr_chunk *ch, bool remove);
void rt_tr_chunk_forget_process(void);
uint64_t rt_tr_bytes_used(void);
void rt_tr_stop_process(int err);
int rt_tr_stop_error(void);
int rt_tr_stop_reason_of(int err);
int rt_tr_stop_errno(int err);
#define RT_TR_E_RESERVE 4096 /* -RT_TR_E_RESERVE: the free-space reserve is reached */
#define RT_TR_E_FSIZE 4097   /* -RT_TR_E_FSIZE: the file would pass RLIMIT_FSIZE */
#define RT_TR_E_FDS 4098     /* -RT_TR_E_FDS: the descriptor budget is in use (chunk.c) */

/* prep.c: the helper thread */
void rt_tr_prep_register(struct rt_tr_wstream *s);
bool rt_tr_prep_unregister(struct rt_tr_wstream *s);
void rt_tr_prep_ask(struct rt_tr_wstream *s);
int rt_tr_prep_take(struct rt_tr_wstream *s, struct rt_tr_chunk *ch);
void rt_tr_prep_retire(struct rt_tr_wstream *s, struct rt_tr_chunk *ch);
void rt_tr_prep_after_fork(void);

#endif
