/* SPDX-License-Identifier: MIT */
/* test_chain.c - a stream of several files read as one (viewer/read/chain.c),
 * and what a writer that accounts for its files promises (metadata env
 * file_records: every file whole and begun by rt_stream_file, the count of
 * the records before it): records lost (zero-filled files, packets, pages;
 * a packet's records cut) are damage naming the file and offset; zeros where
 * nothing was written yet, a thread's id reused, a flight recorder's files
 * and traces of writers that promised nothing read as before.
 *
 * Each case builds a 3-file stream in memory with format/encode.h (two 8 KiB
 * packets a file, the first packet's records spanning its two pages), damages
 * it one way, and reads it through rt_vw_cursor_open_chain. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "encode.h"
#include "reader.h"

#define PKT 8192
#define FILES 3
#define PER_PACKET 300 /* cudaSetDevice records: 18 bytes each, 5.4 KiB */

static uint8_t files[FILES][2 * PKT] __attribute__((aligned(16)));
static const char *const names[FILES] = { "stream-42-43", "stream-42-43.1", "stream-42-43.2" };

static uint8_t *record(uint8_t *p, unsigned id, uint64_t ts, uint64_t last)
{
	return rt_fmt_event_common(rt_fmt_event_header(p, id, ts, last), 10, 0, 0);
}

/* Packet k of file f at time t0: the file's rt_stream_file first when k is
 * 0 (before: the events the stream wrote before the file, rt_stream_file
 * records not counted), then PER_PACKET events. */
static void packet(int f, int k, uint64_t t0, uint64_t before)
{
	uint8_t *base = files[f] + k * PKT, *p = base + RT_PACKET_HEADER_BYTES, *q;
	struct rt_fmt_packet h = { NULL, t0, t0, 0, PKT, 0, 42, 43 };
	uint64_t ts = t0;

	memset(base, 0, PKT);
	if (k == 0) {
		q = record(p, RT_ID_rt_stream_file, ts, ts);
		rt_fmt_put_field(rt_fmt_put_field(q, RT_K_U32, (uint64_t)f, NULL), RT_K_U64, before, NULL);
		p = q + rt_events[RT_ID_rt_stream_file].size;
	}
	for (int i = 0; i < PER_PACKET; i++, ts += 100) {
		q = record(p, RT_ID_cudaSetDevice, ts + 100, ts);
		p = rt_fmt_put_field(q, RT_K_I32, 1, NULL);
	}
	h.ts_end = ts;
	h.content_bytes = (uint64_t)(p - base);
	rt_fmt_packet_put(base, &h);
}

static void build(void)
{
	for (int f = 0; f < FILES; f++)
		for (int k = 0; k < 2; k++)
			packet(f, k, 1000000 + (uint64_t)(2 * f + k) * 1000000,
			       (uint64_t)f * 2 * PER_PACKET);
}

enum damage {
	NONE, ZERO_FILE1, ZERO_PACKET, ZERO_PAGE, CUT_RECORDS, WRONG_FILE_NO, NOT_FIRST,
	ZERO_SHORT_TAIL, ZERO_UNWRITTEN, TID_REUSED,
};

static void damage(enum damage d)
{
	uint8_t *p;

	switch (d) {
	case ZERO_FILE1: /* a whole file lost from the page cache */
		memset(files[1], 0, sizeof(files[1]));
		break;
	case ZERO_PACKET: /* file 0's second packet */
		memset(files[0] + PKT, 0, PKT);
		break;
	case ZERO_PAGE: /* the second page of file 1's first packet: inside its records */
		memset(files[1] + 4096, 0, 4096);
		break;
	case CUT_RECORDS: /* file 0's second packet says it holds none (an older page) */
		rt_fmt_packet_set_content(files[0] + PKT, RT_PACKET_HEADER_BYTES);
		break;
	case WRONG_FILE_NO: /* file 2 says it is file 1 */
		p = files[2] + RT_PACKET_HEADER_BYTES + RT_HEADER_COMPACT_BYTES + RT_COMMON_BYTES;
		rt_fmt_put32(p, 1);
		break;
	case NOT_FIRST: /* file 1 begins with another record */
		files[1][RT_PACKET_HEADER_BYTES] = (uint8_t)RT_ID_cudaSetDevice;
		break;
	case ZERO_SHORT_TAIL: /* the last 300 bytes of file 2's last packet's records */
		p = files[2] + PKT;
		memset(p + rt_fmt_get64(p + 48) / 8 - 300, 0, 300);
		break;
	case ZERO_UNWRITTEN: /* past the records of the last packet: never written */
		p = files[2] + PKT;
		memset(p + 6144, 0, PKT - 6144);
		break;
	case TID_REUSED: /* file 2 is another thread's first (same pid and tid) */
		packet(2, 0, 5000000, 0);
		break;
	case NONE:
		break;
	}
}

struct read_result {
	int rc;      /* 0: all read, -1: damage */
	int records; /* events delivered */
	char err[512];
};

/* The files written in dir (a template, made a directory) and opened as one
 * stream; chain_remove removes them. */
static struct rt_vw_cursor *chain_open(char *dir, const struct rt_vw_rank_meta *m)
{
	char path[600], err[512] = "";
	struct rt_vw_cursor *c;

	cr_assert_not_null(mkdtemp(dir));
	for (int f = 0; f < FILES; f++) {
		FILE *o;

		snprintf(path, sizeof(path), "%s/%s", dir, names[f]);
		o = fopen(path, "wb");
		cr_assert_not_null(o);
		cr_assert_eq(fwrite(files[f], 1, sizeof(files[f]), o), sizeof(files[f]));
		fclose(o);
	}
	c = rt_vw_cursor_open_chain(dir, (char *const *)names, FILES, m, err, sizeof(err));
	cr_assert_not_null(c, "%s", err);
	return c;
}

static void chain_remove(const char *dir)
{
	char path[600];

	for (int f = 0; f < FILES; f++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[f]);
		unlink(path);
	}
	rmdir(dir);
}

static struct read_result read_chain(const struct rt_vw_rank_meta *m)
{
	char dir[] = "/tmp/rt-chain-XXXXXX";
	struct read_result r = { 0 };
	struct rt_vw_cursor *c = chain_open(dir, m);
	struct rt_vw_event e;

	while ((r.rc = rt_vw_cursor_next(c, &e)) == 1)
		r.records++;
	snprintf(r.err, sizeof(r.err), "%s", r.rc < 0 ? rt_vw_cursor_error(c) : "");
	rt_vw_cursor_close(c);
	chain_remove(dir);
	return r;
}

struct chain_case {
	enum damage damage;
	bool promised;    /* the metadata's file_records */
	bool ring;        /* a flight recorder's files */
	int rc;
	char where[32];   /* in the error: "FILE: offset N" */
	char why[64];     /* and this */
};

ParameterizedTestParameters(chain, lost_is_told_from_never_written)
{
	static struct chain_case cases[] = {
		{ NONE, true, false, 0, "", "" },
		{ ZERO_FILE1, true, false, -1, "stream-42-43.1: offset 0:", "zeros where a packet" },
		{ ZERO_PACKET, true, false, -1, "stream-42-43: offset 8192:", "zeros where a packet" },
		{ ZERO_PAGE, true, false, -1, "stream-42-43.1: offset 4096:", "a page of zeros" },
		{ CUT_RECORDS, true, false, -1, "stream-42-43.1: offset 80:", "wrote 600 events before this file, 300 were read" },
		{ WRONG_FILE_NO, true, false, -1, "stream-42-43.2: offset 80:", "file .1 in file .2" },
		{ NOT_FIRST, true, false, -1, "stream-42-43.1: offset 80:", "not rt_stream_file" },
		{ ZERO_SHORT_TAIL, true, false, -1, "stream-42-43.2: offset", "after its packet's end" },
		{ ZERO_UNWRITTEN, true, false, 0, "", "" },
		{ TID_REUSED, true, false, 0, "", "" },
		/* a flight recorder's files reuse their records: only zeros count */
		{ CUT_RECORDS, true, true, 0, "", "" },
		{ ZERO_FILE1, true, true, -1, "stream-42-43.1: offset 0:", "zeros where a packet" },
		/* a writer that promised nothing: zeros at a file's end are its end */
		{ ZERO_FILE1, false, false, 0, "", "" },
		{ ZERO_PACKET, false, false, 0, "", "" },
	};

	return cr_make_param_array(struct chain_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct chain_case *t, chain, lost_is_told_from_never_written)
{
	struct rt_vw_rank_meta m = { .file_records = t->promised, .ring_bytes = t->ring ? 1 << 20 : 0 };
	struct read_result r;

	build();
	damage(t->damage);
	r = read_chain(&m);
	cr_assert_eq(r.rc, t->rc, "damage %d: rc %d (%s)", t->damage, r.rc, r.err);
	if (t->rc == 0 && t->damage == NONE)
		cr_assert_eq(r.records, FILES * 2 * PER_PACKET, "every event read, no rt_stream_file "
			     "(the store's bookkeeping) among them (%d)", r.records);
	if (t->rc < 0) {
		cr_assert(strstr(r.err, t->where), "damage %d: '%s' not in: %s", t->damage, t->where,
			  r.err);
		cr_assert(strstr(r.err, t->why), "damage %d: '%s' not in: %s", t->damage, t->why, r.err);
	}
}

/* The same files without a rank's metadata (NULL) read as a writer that
 * promised nothing: a zeroed file is the stream's end there, as before. */
Test(chain, no_metadata_promises_nothing)
{
	struct read_result r;

	build();
	damage(ZERO_FILE1);
	r = read_chain(NULL);
	cr_assert_eq(r.rc, 0, "%s", r.err);
	cr_assert_eq(r.records, 2 * 2 * PER_PACKET, "files 0 and 2 read (%d)", r.records);
}

/* rt_vw_cursor_peek: the first file's first packet as it was mapped, before
 * any read (the parallel pass plans its first window from it), and the pace
 * the read then finds in that same packet; reading on into later files
 * changes nothing. A first packet header that is not one (zeros, a bad
 * magic) peeks nothing, and the read still says what it finds there. */
Test(chain, the_first_files_first_packet_is_peeked_before_a_read)
{
	struct rt_vw_rank_meta m = { .file_records = true };
	char dir[] = "/tmp/rt-chain-XXXXXX";
	uint64_t ts = 0, bytes = 0, ns = 0, pb = 0, pns = 0;
	struct rt_vw_cursor *c;
	struct rt_vw_event e;
	struct rt_fmt_packet h;
	int rc;

	build();
	cr_assert(rt_fmt_packet_get(files[0], &h));
	c = chain_open(dir, &m);
	cr_assert(rt_vw_cursor_peek(c, &ts, &bytes, &ns), "a used first packet is peeked");
	cr_expect_eq(ts, h.ts_begin);
	cr_expect_eq(bytes, h.content_bytes - RT_PACKET_HEADER_BYTES);
	cr_expect_eq(ns, h.ts_end - h.ts_begin);
	cr_expect_eq(rt_vw_cursor_info(c)->packets, 0, "peeking reads no packet");
	cr_assert_eq(rt_vw_cursor_next(c, &e), 1);
	cr_assert(rt_vw_cursor_pace(c, &pb, &pns));
	cr_expect(pb == bytes && pns == ns, "the read's pace %llu/%llu, the peek's %llu/%llu",
		  (unsigned long long)pb, (unsigned long long)pns, (unsigned long long)bytes,
		  (unsigned long long)ns);
	while (rt_vw_cursor_next(c, &e) == 1)
		;
	cr_assert(rt_vw_cursor_peek(c, &ts, &bytes, &ns));
	cr_expect_eq(ts, h.ts_begin, "the first file's, after the third was read");
	rt_vw_cursor_close(c);
	chain_remove(dir);

	/* file 0's first packet header: zeros (lost), then a bad magic */
	for (int k = 0; k < 2; k++) {
		char d2[] = "/tmp/rt-chain-XXXXXX";

		build();
		if (k == 0)
			memset(files[0], 0, RT_PACKET_HEADER_BYTES);
		else
			rt_fmt_put32(files[0], 0xdeadbeefu);
		c = chain_open(d2, &m);
		cr_expect_not(rt_vw_cursor_peek(c, &ts, &bytes, &ns), "case %d: no packet to plan by", k);
		while ((rc = rt_vw_cursor_next(c, &e)) == 1)
			;
		cr_expect_eq(rc, -1, "case %d: the read reports it", k);
		cr_expect(strstr(rt_vw_cursor_error(c), "stream-42-43: offset 0:") &&
			  strstr(rt_vw_cursor_error(c), k == 0 ? "zeros where a packet" : "bad packet magic"),
			  "case %d: %s", k, rt_vw_cursor_error(c));
		rt_vw_cursor_close(c);
		chain_remove(d2);
	}
}
