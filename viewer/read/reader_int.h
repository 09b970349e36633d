/* SPDX-License-Identifier: MIT */
/* reader_int.h - the stream cursor, shared by reader.c (one file's packets
 * and records) and chain.c (a stream's files in order, and what they account
 * for); nothing else sees it. */
#ifndef RT_VW_READER_INT_H
#define RT_VW_READER_INT_H

#include "reader.h"

/* Zeros where a packet should start are the end of the stream only as a
 * packet never written (an old writer, killed after extending its file by
 * one): one packet, 256 KiB at most (tracer/store/chunk.c), 1 MiB with room.
 * More is a zero-filled or sparse file: damage, found without reading it.
 * A writer that promised whole files (file_records) leaves none: damage. */
#define RT_ZERO_TAIL_MAX ((size_t)1 << 20)
/* The smallest packet: writers make 8 KiB and more (tracer/store/chunk.c), the
 * tests 4 KiB. Smaller ones are damage, and no scan walks a file a few
 * bytes at a time (8 GiB of 80-byte packets: 100 million reads). */
#define RT_MIN_PACKET_BYTES 4096u

/* A cursor's texts are its own, taken as needed: a path, and messages only
 * on damage (16,384 ranks' cursors held 88 MB of fixed-size text). */
struct rt_vw_cursor {
	char *path;      /* the current file's */
	const uint8_t *base;
	size_t size;
	size_t pkt;      /* offset of the current packet */
	size_t content;  /* its content size in bytes (0: no packet loaded) */
	size_t psize;
	size_t off;      /* offset within the packet */
	size_t dropped;  /* the pages before it are dropped from memory */
	size_t drop_every; /* read bytes dropped at once (0: RT_DROP_BYTES) */
	uint64_t clock;
	uint32_t pid, tid;
	struct rt_vw_stream_info info;
	char *err;       /* why it failed (rt_vw_cursor_say), NULL while it has not */
	bool failed;
	const struct rt_vw_event *mem; /* rt_vw_cursor_mem: events already decoded */
	size_t mem_n, mem_i;
	/* the stream's further files (rt_vw_cursor_open_chain), in time order */
	char **chain;
	int nchain, ichain;
	char *first_err; /* a damaged file of the chain, reported at its end; NULL: none */
	/* what the writer promised (metadata env file_records, chain.c): no
	 * packet left zero, each file begun by rt_stream_file */
	bool unlocked;       /* no writer held the current file's lock when mapped */
	bool keep_mapped;    /* rt_vw_cursor_keep_mapped */
	bool ended;          /* ... and the stream ended: nothing more to read */
	bool ended_given;    /* its range was given (rt_vw_cursor_ended_range) */
	bool whole;
	bool counted;        /* ... and its counts add up (not a flight recorder's files) */
	uint64_t ts_begin, ts_end; /* the current packet's begin and end time */
	uint64_t file_no;    /* the current file's number (its name's .N) */
	bool file_begun;     /* a record of the current file was read */
	uint64_t rec_base;   /* events read before the stream (a tid reused) began */
	/* its first file's first packet as read when mapped (rt_vw_cursor_peek) */
	uint64_t peek_ts, peek_bytes, peek_ns;
	bool peek_tried, peeked;
};

/* reader.c: map path into c (read-only): 0, or -1 with err set */
int rt_vw_cursor_map(struct rt_vw_cursor *c, const char *path, char *err, size_t errlen);
/* reader.c: *slot (a cursor's err or first_err) says fmt, in a buffer of
 * RT_VW_SAY_BYTES taken on its first message; out of memory, a fixed text
 * that says so. rt_vw_cursor_unsay frees it. */
#define RT_VW_SAY_BYTES 512
void rt_vw_cursor_say(char **slot, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rt_vw_cursor_unsay(char **slot);
/* reader.c: c fails at byte `at` of its file: what */
int rt_vw_cursor_fail(struct rt_vw_cursor *c, size_t at, const char *what);
/* chain.c: the chain's next file becomes current (false: none left) */
bool rt_vw_chain_next_file(struct rt_vw_cursor *c);
/* chain.c: e, a record of the current file: what the writer promised holds
 * (a file begins with rt_stream_file, whose counts add up). 0, or -1 (c
 * failed, naming the file and offset). */
int rt_vw_chain_check(struct rt_vw_cursor *c, const struct rt_vw_event *e, size_t at);
/* devcheck.c: e, when a device record, holds what a tracer writes (its
 * phase, source, drop reason in range). 0, or -1 (c failed, naming the
 * file and offset). */
int rt_vw_dev_check(struct rt_vw_cursor *c, const struct rt_vw_event *e, size_t at);

#endif
