/* SPDX-License-Identifier: MIT */
/* store_int.h - what the store's files share and nothing outside uses:
 * chunk files (chunk.c), the helper's queue (prep.c), the stop state. */
#ifndef RT_TR_STORE_INT_H
#define RT_TR_STORE_INT_H

#include "identity.h"
#include "store.h"

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
void rt_tr_stream_release(struct rt_tr_stream *s);
void rt_tr_lttng_stream_init(struct rt_tr_stream *s);

/* chunk.c: stream files */
int rt_tr_chunk_make(struct rt_tr_stream *s, struct rt_tr_chunk *ch);
void rt_tr_fd_slot_wait(int ms);
void rt_tr_chunk_recycle(struct rt_tr_chunk *ch, uint64_t discarded);
void rt_tr_chunk_trim(const struct rt_tr_stream *s, const struct rt_tr_chunk *ch, uint64_t keep);
void rt_tr_chunk_drop(const struct rt_tr_stream *s, struct rt_tr_chunk *ch, bool remove);
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
void rt_tr_prep_register(struct rt_tr_stream *s);
bool rt_tr_prep_unregister(struct rt_tr_stream *s);
void rt_tr_prep_ask(struct rt_tr_stream *s);
int rt_tr_prep_take(struct rt_tr_stream *s, struct rt_tr_chunk *ch);
void rt_tr_prep_retire(struct rt_tr_stream *s, struct rt_tr_chunk *ch);
void rt_tr_prep_after_fork(void);

#endif
