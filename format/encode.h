/* SPDX-License-Identifier: MIT */
/* encode.h - the bytes of a packet and of one event, both directions.
 *
 * The layout of format/schema.h as functions: the writer side (the tracer's
 * hot path, bench/gen_trace.c, tests building events in memory) and the
 * reader side (viewer/read/reader.c) call these and nothing else knows an offset.
 * All inline, no allocation, no branch beyond the compact/extended header
 * choice; little-endian as the CTF metadata declares.
 *
 * Packet header (32 bytes): magic:u32, uuid[16], stream_id:u32, stream
 * instance:u64 (pid << 32 | tid). Context (48): ts_begin, ts_end,
 * content_size (bits), packet_size (bits), events_discarded:u64, pid, tid:u32.
 * Event: id:u16 + ts:u32, or id 0xffff + id:u32 + ts:u64; dur_ns:u40,
 * ret:i16, cur_dev:i8; then the fields. */
#ifndef RT_ENCODE_H
#define RT_ENCODE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "schema.h"

#define RT_PKT_OFF_MAGIC 0
#define RT_PKT_OFF_UUID 4
#define RT_PKT_OFF_STREAM_ID 20
#define RT_PKT_OFF_INSTANCE 24

static inline uint64_t rt_fmt_get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t rt_fmt_get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline void rt_fmt_put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static inline void rt_fmt_put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* ---- packets ---- */

struct rt_fmt_packet {
	const uint8_t *uuid;  /* 16 bytes, or NULL: zeros */
	uint64_t ts_begin, ts_end;
	uint64_t content_bytes, packet_bytes;
	uint64_t discarded;
	uint32_t pid, tid;
};

/* Write a packet's header and context (RT_PACKET_HEADER_BYTES at p). */
static inline void rt_fmt_packet_put(uint8_t *p, const struct rt_fmt_packet *h)
{
	rt_fmt_put32(p + RT_PKT_OFF_MAGIC, RT_CTF_MAGIC);
	if (h->uuid)
		memcpy(p + RT_PKT_OFF_UUID, h->uuid, 16);
	else
		memset(p + RT_PKT_OFF_UUID, 0, 16);
	rt_fmt_put32(p + RT_PKT_OFF_STREAM_ID, 0);
	rt_fmt_put64(p + RT_PKT_OFF_INSTANCE, ((uint64_t)h->pid << 32) | h->tid);
	rt_fmt_put64(p + RT_PKT_OFF_TS_BEGIN, h->ts_begin);
	rt_fmt_put64(p + RT_PKT_OFF_TS_END, h->ts_end);
	rt_fmt_put64(p + RT_PKT_OFF_CONTENT, h->content_bytes * 8);
	rt_fmt_put64(p + RT_PKT_OFF_SIZE, h->packet_bytes * 8);
	rt_fmt_put64(p + RT_PKT_OFF_DISCARDED, h->discarded);
	rt_fmt_put32(p + RT_PKT_OFF_PID, h->pid);
	rt_fmt_put32(p + RT_PKT_OFF_TID, h->tid);
}

/* Read one back; false when the magic is not ranktrace's (CTF) one. */
static inline bool rt_fmt_packet_get(const uint8_t *p, struct rt_fmt_packet *h)
{
	h->uuid = p + RT_PKT_OFF_UUID;
	h->ts_begin = rt_fmt_get64(p + RT_PKT_OFF_TS_BEGIN);
	h->ts_end = rt_fmt_get64(p + RT_PKT_OFF_TS_END);
	h->content_bytes = rt_fmt_get64(p + RT_PKT_OFF_CONTENT) / 8;
	h->packet_bytes = rt_fmt_get64(p + RT_PKT_OFF_SIZE) / 8;
	h->discarded = rt_fmt_get64(p + RT_PKT_OFF_DISCARDED);
	h->pid = rt_fmt_get32(p + RT_PKT_OFF_PID);
	h->tid = rt_fmt_get32(p + RT_PKT_OFF_TID);
	return rt_fmt_get32(p + RT_PKT_OFF_MAGIC) == RT_CTF_MAGIC;
}

static inline uint32_t rt_fmt_packet_magic(const uint8_t *p)
{
	return rt_fmt_get32(p + RT_PKT_OFF_MAGIC);
}

/* The hot path's commit: content ends at `content_bytes`, and the packet's
 * end time moves forward to ts. */
static inline void rt_fmt_packet_commit(uint8_t *p, uint64_t content_bytes, uint64_t ts)
{
	if (ts > rt_fmt_get64(p + RT_PKT_OFF_TS_END))
		rt_fmt_put64(p + RT_PKT_OFF_TS_END, ts);
	rt_fmt_put64(p + RT_PKT_OFF_CONTENT, content_bytes * 8);
}

/* A packet's content ends content_bytes from its start. */
static inline void rt_fmt_packet_set_content(uint8_t *p, uint64_t content_bytes)
{
	rt_fmt_put64(p + RT_PKT_OFF_CONTENT, content_bytes * 8);
}

static inline void rt_fmt_packet_set_discarded(uint8_t *p, uint64_t n)
{
	rt_fmt_put64(p + RT_PKT_OFF_DISCARDED, n);
}

/* Both packet timestamps in one store: a process killed at any instruction
 * leaves either the old pair or the new one (x86-64: one SSE store, the
 * packet 16-byte aligned; arm64: one stp). Elsewhere two stores, begin
 * first. */
static inline void rt_fmt_packet_set_times(uint8_t *pkt, uint64_t begin, uint64_t end)
{
#if defined(__x86_64__)
	__m128i v = _mm_set_epi64x((long long)end, (long long)begin);

	_mm_store_si128((__m128i *)(void *)(pkt + RT_PKT_OFF_TS_BEGIN), v);
#elif defined(__aarch64__)
	__asm__ volatile("stp %1, %2, [%0]" : : "r"(pkt + RT_PKT_OFF_TS_BEGIN), "r"(begin), "r"(end)
			 : "memory");
#else
	memcpy(pkt + RT_PKT_OFF_TS_BEGIN, &begin, 8);
	memcpy(pkt + RT_PKT_OFF_TS_END, &end, 8);
#endif
}

/* ---- events ---- */

/* The extended header: the full id and time, whatever came before. */
static inline uint8_t *rt_fmt_event_header_ext(uint8_t *p, unsigned id, uint64_t ts)
{
	uint16_t ext = RT_EXTENDED_ID;
	uint32_t id32 = id;

	memcpy(p, &ext, 2);
	memcpy(p + 2, &id32, 4);
	memcpy(p + 6, &ts, 8);
	return p + RT_HEADER_EXTENDED_BYTES;
}

/* Write event id's header at p for time ts, after an event at last_ts:
 * compact when the 32-bit delta cannot wrap, else extended. Returns where
 * the common part goes. */
static inline uint8_t *rt_fmt_event_header(uint8_t *p, unsigned id, uint64_t ts, uint64_t last_ts)
{
	if (ts - last_ts > 0xffffffffull)
		return rt_fmt_event_header_ext(p, id, ts);
	{
		uint16_t id16 = (uint16_t)id;
		uint32_t ts32 = (uint32_t)ts;

		memcpy(p, &id16, 2);
		memcpy(p + 2, &ts32, 4);
		return p + RT_HEADER_COMPACT_BYTES;
	}
}

/* The common part: duration (RT_DUR_PENDING: not returned), result, device.
 * Returns where the fields go. One 8-byte store (little-endian: dur in
 * bytes 0-4, ret in 5-6, dev in 7). */
static inline uint64_t rt_fmt_common_word(uint64_t dur, int16_t ret, int dev)
{
	return (dur & 0xffffffffffull) | (uint64_t)(uint16_t)ret << 40 |
	       (uint64_t)(uint8_t)(int8_t)dev << 56;
}

static inline uint8_t *rt_fmt_event_common(uint8_t *p, uint64_t dur, int16_t ret, int dev)
{
	rt_fmt_put64(p, rt_fmt_common_word(dur, ret, dev));
	return p + RT_COMMON_BYTES;
}

/* Fill in duration and result of a recorded call (its device stays), in
 * one store. */
static inline void rt_fmt_event_result(uint8_t *common, uint64_t dur, int16_t ret)
{
	rt_fmt_put64(common, rt_fmt_common_word(dur, ret, (int8_t)common[7]));
}

/* Header and common part together (the tracer's entry record): the same
 * bytes as rt_fmt_event_header then rt_fmt_event_common, in two stores
 * when the header is compact (the first also writes the common part's
 * first two bytes, which the second overwrites). Returns where the common
 * part went; the fields follow it. */
static inline uint8_t *rt_fmt_event_begin(uint8_t *p, unsigned id, uint64_t ts, uint64_t last_ts,
					  uint64_t common_word)
{
	uint8_t *q;

	if (__builtin_expect(ts - last_ts > 0xffffffffull, 0)) {
		q = rt_fmt_event_header_ext(p, id, ts);
	} else {
		/* ts's bits 32-47 land in bytes 6-7: the common part's, written next */
		rt_fmt_put64(p, (uint64_t)(uint16_t)id | ts << 16);
		q = p + RT_HEADER_COMPACT_BYTES;
	}
	rt_fmt_put64(q, common_word);
	return q;
}

/* A decoded event header. */
struct rt_fmt_header {
	unsigned id;
	bool extended;  /* ts is the full time; else its low 32 bits */
	uint64_t ts;
	unsigned bytes; /* header bytes */
};

/* Decode the header at p with `left` bytes available. -1 when cut short. */
static inline int rt_fmt_event_header_get(const uint8_t *p, size_t left, struct rt_fmt_header *h)
{
	uint16_t id16;

	if (left < 2)
		return -1;
	memcpy(&id16, p, 2);
	h->extended = id16 == RT_EXTENDED_ID;
	h->bytes = h->extended ? RT_HEADER_EXTENDED_BYTES : RT_HEADER_COMPACT_BYTES;
	if (left < h->bytes)
		return -1;
	h->id = h->extended ? rt_fmt_get32(p + 2) : id16;
	h->ts = h->extended ? rt_fmt_get64(p + 6) : rt_fmt_get32(p + 2);
	return 0;
}

/* Decode the common part at p. */
static inline void rt_fmt_event_common_get(const uint8_t *p, uint64_t *dur, int16_t *ret, int8_t *dev)
{
	*dur = 0;
	memcpy(dur, p, 5);
	memcpy(ret, p + 5, 2);
	*dev = (int8_t)p[7];
}

/* One field of kind k from an integer (a string for RT_K_STR: pass s). */
static inline uint8_t *rt_fmt_put_field(uint8_t *p, enum rt_kind k, uint64_t v, const char *s)
{
	size_t n = rt_kind_size(k);

	if (k == RT_K_STR) {
		size_t len = 0;

		while (len < RT_SZ_STR - 1 && s && s[len])
			len++;
		memcpy(p, s ? s : "", len);
		memset(p + len, 0, RT_SZ_STR - len);
	} else {
		memcpy(p, &v, n); /* little-endian: the low bytes */
	}
	return p + n;
}

#endif
