/* SPDX-License-Identifier: MIT */
/* test_reader.c - the native reader decodes what the schema says, and on cut
 * or flipped bytes reports the file and offset instead of crashing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "encode.h"
#include "reader.h"

#define PKT 4096

/* One event through the format's encoder (compact header). */
static size_t put_event(uint8_t *p, unsigned id, uint32_t ts, uint64_t dur, int16_t ret,
			int8_t dev, const void *fields)
{
	uint8_t *q = rt_fmt_event_common(rt_fmt_event_header(p, id, ts, ts), dur, ret, dev);

	memcpy(q, fields, rt_events[id].size);
	return (size_t)(q - p) + rt_events[id].size;
}

/* One packet: cudaSetDevice(1), cudaMalloc(ptr, 4096) ok, then a pending
 * ncclAllReduce (the process died in it). Returns the file size. */
static size_t make_stream(uint8_t *buf)
{
	struct rt_fmt_packet h = { NULL, 1000000, 1000000, 0, PKT, 0, 42, 43 };
	uint8_t f[96] = { 0 };
	size_t off = RT_PACKET_HEADER_BYTES;

	memset(buf, 0, PKT);
	rt_fmt_put_field(f, RT_K_I32, 1, NULL); /* device */
	off += put_event(buf + off, RT_ID_cudaSetDevice, 1000100, 50, 0, 0, f);
	rt_fmt_put_field(rt_fmt_put_field(f, RT_K_PTR, 0x7f0000001000ull, NULL), RT_K_U64, 4096, NULL);
	off += put_event(buf + off, RT_ID_cudaMalloc, 1000200, 70, 0, 1, f);
	memset(f, 0, sizeof(f));
	off += put_event(buf + off, RT_ID_ncclAllReduce, 1000300, RT_DUR_PENDING, 0, 1, f);
	h.content_bytes = off;
	rt_fmt_packet_put(buf, &h);
	return PKT;
}

static void write_file(const char *path, const uint8_t *buf, size_t n)
{
	FILE *f = fopen(path, "wb");

	cr_assert_not_null(f);
	cr_assert_eq(fwrite(buf, 1, n, f), n);
	fclose(f);
}

struct seen {
	unsigned ids[16];
	int n;
	bool last_pending;
	int64_t malloc_size;
};

static int collect(const struct rt_vw_event *e, void *arg)
{
	struct seen *s = arg;

	if (s->n < 16)
		s->ids[s->n++] = e->id;
	s->last_pending = e->pending;
	if (e->id == RT_ID_cudaMalloc)
		s->malloc_size = rt_field_get(e->id, e->fields, rt_field_index(e->id, "size"));
	return 0;
}

Test(reader, decodes_events_and_marks_a_call_that_never_returned)
{
	uint8_t buf[PKT];
	char path[] = "/tmp/rt-reader-XXXXXX", err[512] = "";
	struct seen s = { 0 };
	struct rt_vw_stream_info info;
	int fd = mkstemp(path);

	close(fd);
	write_file(path, buf, make_stream(buf));
	cr_assert_eq(rt_vw_read_stream(path, collect, &s, &info, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.n, 3);
	cr_assert_eq(s.ids[0], RT_ID_cudaSetDevice);
	cr_assert_eq(s.ids[1], RT_ID_cudaMalloc);
	cr_assert_eq(s.malloc_size, 4096);
	cr_assert(s.last_pending, "the all-reduce never returned");
	cr_assert_eq(info.pid, 42);
	unlink(path);
}

/* The pace of the packet being read: its records' bytes over its begin to
 * end time (the parallel pass sizes its first window by it); none before a
 * packet is read, nor for a packet of one instant. */
Test(reader, the_pace_is_the_current_packets_bytes_over_its_span)
{
	uint8_t buf[PKT];
	char path[] = "/tmp/rt-reader-XXXXXX", err[512] = "";
	struct rt_fmt_packet h;
	struct rt_vw_cursor *c;
	struct rt_vw_event e;
	uint64_t bytes = 0, ns = 0;
	int fd = mkstemp(path);

	close(fd);
	make_stream(buf);
	cr_assert(rt_fmt_packet_get(buf, &h));
	write_file(path, buf, PKT); /* begin == end: one instant */
	c = rt_vw_cursor_open(path, err, sizeof(err));
	cr_assert_not_null(c, "%s", err);
	cr_expect_not(rt_vw_cursor_pace(c, &bytes, &ns), "nothing read yet");
	cr_assert_eq(rt_vw_cursor_next(c, &e), 1);
	cr_expect_not(rt_vw_cursor_pace(c, &bytes, &ns), "a packet of one instant");
	rt_vw_cursor_close(c);
	h.ts_end = h.ts_begin + 400;
	rt_fmt_packet_put(buf, &h);
	write_file(path, buf, PKT);
	c = rt_vw_cursor_open(path, err, sizeof(err));
	cr_assert_not_null(c, "%s", err);
	cr_assert_eq(rt_vw_cursor_next(c, &e), 1);
	cr_assert(rt_vw_cursor_pace(c, &bytes, &ns));
	cr_expect_eq(bytes, h.content_bytes - RT_PACKET_HEADER_BYTES);
	cr_expect_eq(ns, 400);
	rt_vw_cursor_close(c);
	unlink(path);
}

/* Field fid of event id set to v in the fields f (little-endian, its width). */
static void set_field(uint8_t *f, unsigned id, unsigned fid, uint64_t v)
{
	for (int k = 0; k < rt_events[id].nfields; k++)
		if (rt_events[id].fields[k].fid == fid)
			for (size_t b = 0; b < rt_kind_size(rt_events[id].fields[k].kind); b++)
				f[rt_events[id].fields[k].offset + b] = (uint8_t)(v >> (8 * b));
}

/* Only a call is written pending (the wrapper, before the real call): a
 * tracer record (rt_dev_coll...) whose duration reads "pending" is damage,
 * not a call the rank died in ("ranks 0-3 died inside rt_dev_coll" beside
 * their clean exits). */
Test(reader, a_tracer_record_is_never_a_pending_call)
{
	struct rt_fmt_packet h = { NULL, 1000000, 1000000, 0, PKT, 0, 42, 43 };
	uint8_t buf[PKT], f[96] = { 0 };
	char path[] = "/tmp/rt-reader-XXXXXX", err[512] = "";
	struct seen s = { 0 };
	size_t off = RT_PACKET_HEADER_BYTES;
	int fd = mkstemp(path);

	close(fd);
	memset(buf, 0, PKT);
	set_field(f, RT_ID_rt_dev_coll, RT_FN_dev_phase, RT_DEV_STARTED);
	set_field(f, RT_ID_rt_dev_coll, RT_FN_source, RT_DEV_SRC_PLUGIN);
	off += put_event(buf + off, RT_ID_rt_dev_coll, 1000100, RT_DUR_PENDING, 0, 0, f);
	h.content_bytes = off;
	rt_fmt_packet_put(buf, &h);
	write_file(path, buf, PKT);
	cr_assert_eq(rt_vw_read_stream(path, collect, &s, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.n, 1);
	cr_expect_not(s.last_pending, "rt_dev_coll read as a call that never returned");
	unlink(path);
}

Test(reader, cut_files_report_file_and_offset)
{
	uint8_t buf[PKT];
	char path[] = "/tmp/rt-reader-XXXXXX", err[512];
	int fd = mkstemp(path);
	size_t n = make_stream(buf);

	close(fd);
	for (size_t cut = 1; cut < n; cut += 7) {
		int rc;

		write_file(path, buf, cut);
		err[0] = '\0';
		rc = rt_vw_read_stream(path, NULL, NULL, NULL, err, sizeof(err));
		cr_assert_eq(rc, -1, "a file cut at %zu bytes must be an error", cut);
		cr_assert(strstr(err, path) && strstr(err, "offset"), "cut %zu: %s", cut, err);
	}
	unlink(path);
}

/* Writers before files were made whole before use could leave, when killed,
 * a packet extended but never written: the end of the stream, not damage. */
Test(reader, a_trailing_packet_never_written_is_the_end)
{
	uint8_t buf[3 * PKT] __attribute__((aligned(16))); /* packet times: one 16-byte store */
	char path[] = "/tmp/rt-reader-XXXXXX", err[512] = "";
	struct seen s = { 0 };
	int fd = mkstemp(path);
	size_t n = make_stream(buf);

	close(fd);
	memset(buf + n, 0, 2 * PKT);
	write_file(path, buf, n + 2 * PKT);
	cr_assert_eq(rt_vw_read_stream(path, collect, &s, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.n, 3);
	buf[n + PKT + 100] = 1; /* not all zero: damage after all */
	write_file(path, buf, n + 2 * PKT);
	cr_assert_eq(rt_vw_read_stream(path, NULL, NULL, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "bad packet magic") != NULL, "%s", err);
	unlink(path);
}

/* Packets prepared ahead and never used (RT_TS_UNUSED) hold no events and
 * their discarded counter is not the stream's. */
Test(reader, unused_packets_hold_no_events_and_keep_the_counter)
{
	uint8_t buf[2 * PKT];
	char path[] = "/tmp/rt-reader-XXXXXX", err[512] = "";
	struct seen s = { 0 };
	struct rt_vw_stream_info info;
	int fd = mkstemp(path);
	size_t n = make_stream(buf);

	close(fd);
	rt_fmt_packet_set_discarded(buf, 5);
	memcpy(buf + n, buf, RT_PACKET_HEADER_BYTES);
	memset(buf + n + RT_PACKET_HEADER_BYTES, 0, PKT - RT_PACKET_HEADER_BYTES);
	rt_fmt_packet_set_times(buf + n, RT_TS_UNUSED, RT_TS_UNUSED); /* prepared, never used */
	rt_fmt_packet_set_content(buf + n, RT_PACKET_HEADER_BYTES);
	rt_fmt_packet_set_discarded(buf + n, 0);
	write_file(path, buf, 2 * PKT);
	cr_assert_eq(rt_vw_read_stream(path, collect, &s, &info, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.n, 3);
	cr_assert_eq(info.packets, 2);
	cr_assert_eq(info.discarded, 5);
	unlink(path);
}

/* A stream written as several files (chunks; a flight recorder reuses them
 * in turn) reads as one, in time order, whatever the file numbers say; a
 * damaged file in the middle is reported after the rest has been read. */
Test(reader, a_stream_of_several_files_reads_in_time_order)
{
	uint8_t early[PKT] __attribute__((aligned(16))), late[PKT] __attribute__((aligned(16))), bad[PKT];
	char dir[] = "/tmp/rt-chain-XXXXXX", path[600], err[512] = "";
	char *names[] = { "stream-42-43", "stream-42-43.1", "stream-42-43.2" };
	uint64_t ts_late = 5000000;
	struct rt_vw_cursor *c;
	struct rt_vw_event e;
	uint64_t first = 0, last = 0;
	int n = 0, rc;

	cr_assert_not_null(mkdtemp(dir));
	make_stream(early);
	make_stream(late);
	rt_fmt_packet_set_times(late, ts_late, ts_late);
	make_stream(bad);
	bad[RT_PACKET_HEADER_BYTES + 20] ^= 0xff; /* inside its first event */
	memset(bad, 0, 4);                        /* and no magic: damaged */
	bad[0] = 1;
	snprintf(path, sizeof(path), "%s/%s", dir, names[0]);
	write_file(path, late, PKT);  /* file 0 holds the later events */
	snprintf(path, sizeof(path), "%s/%s", dir, names[1]);
	write_file(path, early, PKT); /* file 1 the earlier ones */
	c = rt_vw_cursor_open_chain(dir, names, 2, NULL, err, sizeof(err));
	cr_assert_not_null(c, "%s", err);
	while ((rc = rt_vw_cursor_next(c, &e)) == 1) {
		if (!n++)
			first = e.ts;
		cr_assert_geq(e.ts, last, "events in time order");
		last = e.ts;
	}
	cr_assert_eq(rc, 0);
	cr_assert_eq(n, 6);
	cr_assert_lt(first, ts_late);
	rt_vw_cursor_close(c);
	snprintf(path, sizeof(path), "%s/%s", dir, names[2]);
	write_file(path, bad, PKT);
	c = rt_vw_cursor_open_chain(dir, names, 3, NULL, err, sizeof(err));
	cr_assert_not_null(c, "%s", err);
	for (n = 0; (rc = rt_vw_cursor_next(c, &e)) == 1; n++)
		;
	cr_assert_eq(rc, -1, "the damaged file is reported");
	cr_assert_eq(n, 6, "the other files' events are all read");
	cr_assert(strstr(rt_vw_cursor_error(c), names[2]) != NULL, "%s", rt_vw_cursor_error(c));
	rt_vw_cursor_close(c);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
	cr_assert_eq(rt_vw_stream_base_len("stream-42-43.12"), 12);
	cr_assert_eq(rt_vw_stream_base_len("stream-42-43"), 12);
}

/* Zeros where a packet should start end the stream only as one packet
 * never written; a longer zero tail (a sparse or zero-filled file) is damage,
 * told without reading it: an 8 GiB sparse tail was scanned (> 20 s). */
Test(reader, a_zero_tail_longer_than_a_packet_is_damage_found_without_reading_it, .timeout = 30)
{
	static const off_t tails[] = { 64ll << 20, 8ll << 30 };
	uint8_t buf[PKT];
	char path[] = "/tmp/rt-reader-XXXXXX", err[512];
	struct seen s;
	int fd = mkstemp(path);
	size_t n = make_stream(buf);

	close(fd);
	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		struct timespec a, b;

		write_file(path, buf, n);
		cr_assert_eq(truncate(path, (off_t)n + tails[i]), 0);
		memset(&s, 0, sizeof(s));
		err[0] = '\0';
		clock_gettime(CLOCK_MONOTONIC, &a);
		cr_assert_eq(rt_vw_read_stream(path, collect, &s, NULL, err, sizeof(err)), -1,
			     "a %lld-byte zero tail is damage", (long long)tails[i]);
		clock_gettime(CLOCK_MONOTONIC, &b);
		cr_assert(strstr(err, "zeros where a packet should start") && strstr(err, "offset 4096"),
			  "%s", err);
		cr_assert_eq(s.n, 3, "the events before it are read");
		cr_assert_lt((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000, 1000,
			     "told without reading the tail");
	}
	unlink(path);
}

/* Packets are 4 KiB at least (writers make 8 KiB and more): a file of
 * 80-byte ones is damage, not millions of reads through a large file. */
Test(reader, packets_under_4_KiB_are_damage)
{
	uint8_t buf[3 * RT_PACKET_HEADER_BYTES];
	struct rt_fmt_packet h = { NULL, 1000000, 1000000, RT_PACKET_HEADER_BYTES, RT_PACKET_HEADER_BYTES,
				   0, 42, 43 };
	char path[] = "/tmp/rt-reader-XXXXXX", err[512] = "";
	int fd = mkstemp(path);

	close(fd);
	for (int i = 0; i < 3; i++)
		rt_fmt_packet_put(buf + i * RT_PACKET_HEADER_BYTES, &h);
	write_file(path, buf, sizeof(buf));
	cr_assert_eq(rt_vw_read_stream(path, NULL, NULL, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "offset 0: packet sizes out of bounds (packet 80"), "%s", err);
	unlink(path);
}

/* A stream file is published whole: an empty one (ext4 after a power loss)
 * lost its events and says so. */
Test(reader, an_empty_stream_file_is_damage)
{
	char path[] = "/tmp/rt-reader-XXXXXX", err[512] = "";
	int fd = mkstemp(path);

	close(fd);
	cr_assert_eq(rt_vw_read_stream(path, NULL, NULL, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, path) && strstr(err, "empty (0 bytes)"), "%s", err);
	unlink(path);
}

/* Files .0 .1 .3 of a stream: .2 is lost (the writer removes only its
 * newest, unused file), reported once the others are read; so is a file
 * of the chain that cannot be opened, even the first in time. */
Test(reader, a_missing_or_unopenable_file_of_a_stream_is_damage)
{
	uint8_t buf[PKT] __attribute__((aligned(16)));
	char dir[] = "/tmp/rt-chain-XXXXXX", path[600], err[512] = "";
	char *names[] = { "stream-42-43", "stream-42-43.1", "stream-42-43.3" };
	struct rt_vw_cursor *c;
	struct rt_vw_event e;
	int n, rc;

	cr_assert_not_null(mkdtemp(dir));
	for (int i = 0; i < 3; i++) {
		make_stream(buf);
		rt_fmt_packet_set_times(buf, 1000000 + 10000000ull * (uint64_t)i,
					1000000 + 10000000ull * (uint64_t)i);
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		write_file(path, buf, PKT);
	}
	c = rt_vw_cursor_open_chain(dir, names, 3, NULL, err, sizeof(err));
	cr_assert_not_null(c, "%s", err);
	for (n = 0; (rc = rt_vw_cursor_next(c, &e)) == 1; n++)
		;
	cr_assert_eq(n, 9, "every file present is read");
	cr_assert_eq(rc, -1, "the lost file is reported");
	cr_assert(strstr(rt_vw_cursor_error(c), "stream-42-43.2: missing"), "%s", rt_vw_cursor_error(c));
	rt_vw_cursor_close(c);
	/* the earliest file emptied: the cursor opens on the next, and says so */
	snprintf(path, sizeof(path), "%s/%s", dir, names[0]);
	cr_assert_eq(truncate(path, 0), 0);
	c = rt_vw_cursor_open_chain(dir, names, 2, NULL, err, sizeof(err));
	cr_assert_not_null(c, "%s", err);
	for (n = 0; (rc = rt_vw_cursor_next(c, &e)) == 1; n++)
		;
	cr_assert_eq(n, 3);
	cr_assert_eq(rc, -1);
	cr_assert(strstr(rt_vw_cursor_error(c), "stream-42-43: offset 0: empty"), "%s", rt_vw_cursor_error(c));
	rt_vw_cursor_close(c);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* A stream file that is a directory, a FIFO or a symlink is listed (and
 * its reader reports it), never skipped without a word. */
Test(reader, stream_files_of_any_type_are_listed)
{
	char dir[] = "/tmp/rt-list-XXXXXX", path[600], err[512], **names;
	const char *kinds[] = { "stream-1-1", "stream-1-2", "stream-1-3", "stream-1-4" };
	int n;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, kinds[0]);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, kinds[1]);
	cr_assert_eq(mkfifo(path, 0600), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, kinds[2]);
	cr_assert_eq(symlink("/dev/zero", path), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, kinds[3]);
	write_file(path, (const uint8_t *)"", 0);
	n = rt_vw_list_streams(dir, &names);
	cr_assert_eq(n, 4);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		cr_assert_null(rt_vw_cursor_open(path, err, sizeof(err)), "%s opens", names[i]);
		cr_assert(strstr(err, names[i]), "%s", err);
	}
	rt_vw_free_names(names, n);
	for (int i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, kinds[i]);
		if (i)
			unlink(path);
		else
			rmdir(path);
	}
	rmdir(dir);
}

Test(reader, flipped_bytes_never_crash)
{
	uint8_t buf[PKT], bad[PKT];
	char path[] = "/tmp/rt-reader-XXXXXX", err[512];
	int fd = mkstemp(path);
	size_t n = make_stream(buf);
	struct seen s;

	close(fd);
	srand(1);
	for (int round = 0; round < 2000; round++) {
		memcpy(bad, buf, n);
		for (int k = 0; k < 1 + round % 4; k++)
			bad[(size_t)rand() % 200] ^= (uint8_t)(1u << (rand() % 8));
		write_file(path, bad, n);
		memset(&s, 0, sizeof(s));
		if (rt_vw_read_stream(path, collect, &s, NULL, err, sizeof(err)) != 0)
			cr_assert(strstr(err, "offset") != NULL, "%s", err);
	}
	unlink(path);
}

Test(schema, metadata_cut_anywhere_or_with_a_nul_is_damage)
{
	static char buf[1 << 16];
	struct rt_trace_env env = { .hostname = "h\"{q", .rank = 2, .world_size = 4, .pid = 7,
				    .rank_source = "env:RANK" };
	long n = rt_schema_tsdl(buf, sizeof(buf), &env);
	char dir[] = "/tmp/rt-meta-XXXXXX", path[600], err[512];
	const char *env_end = strstr(buf, "\nenv {");
	struct rt_vw_rank_meta m;
	long last = (long)(strrchr(buf, ';') - buf); /* the final "};" */
	long cuts[] = { 0, 0, 0, 0, n / 2, last - 1, last };

	cr_assert_gt(n, 0);
	cr_assert_not_null(env_end);
	cuts[0] = (long)(strstr(env_end, "};\n") - buf) + 3;              /* after env */
	cuts[1] = (long)(strstr(buf, "\nstream {") - buf) + 1;            /* after clock */
	cuts[2] = (long)(strstr(buf, "\nevent {") - buf) + 1;             /* no event */
	cuts[3] = (long)(strstr(buf + n / 2, "\nevent {") - buf) + 1;     /* half the events */
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/metadata", dir);
	write_file(path, (const uint8_t *)buf, (size_t)n);
	cr_assert_eq(rt_vw_read_metadata(dir, &m, err, sizeof(err)), 0, "whole: %s", err);
	cr_assert_eq(m.rank, 2);
	cr_assert_str_eq(m.hostname, "h\\\"{q", "the escaped hostname as written");
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		write_file(path, (const uint8_t *)buf, (size_t)cuts[i]);
		err[0] = '\0';
		cr_assert_eq(rt_vw_read_metadata(dir, &m, err, sizeof(err)), -1, "cut at %ld of %ld", cuts[i], n);
		cr_assert(strstr(err, "metadata"), "%s", err);
	}
	buf[n - 100] = '\0';
	write_file(path, (const uint8_t *)buf, (size_t)n);
	cr_assert_eq(rt_vw_read_metadata(dir, &m, err, sizeof(err)), -1);
	cr_assert(strstr(err, "a NUL byte at offset"), "%s", err);
	unlink(path);
	rmdir(dir);
}

/* Events are only appended: a trace of an older tracer (no event_count in
 * its env block, fewer events) still reads; ours, cut between two event
 * blocks, does not. */
Test(schema, an_older_tracers_metadata_with_fewer_events_reads)
{
	static char buf[1 << 16];
	struct rt_trace_env env = { .hostname = "h", .rank = 1, .world_size = 2, .pid = 9,
				    .rank_source = "env:RANK" };
	long n = rt_schema_tsdl(buf, sizeof(buf), &env);
	char dir[] = "/tmp/rt-meta-XXXXXX", path[600], err[512];
	struct rt_vw_rank_meta m;
	char *count = strstr(buf, "\tevent_count = ");
	long two_short;

	cr_assert_gt(n, 0);
	cr_assert_not_null(count, "the env block says how many events follow");
	two_short = (long)(strrchr(buf, '\n') - buf); /* after the final "};" */
	for (int k = 0; k < 3; k++) /* back over the last two event blocks */
		while (--two_short > 0 && strncmp(buf + two_short, "\nevent {", 8))
			;
	two_short++;
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/metadata", dir);
	write_file(path, (const uint8_t *)buf, (size_t)two_short);
	cr_assert_eq(rt_vw_read_metadata(dir, &m, err, sizeof(err)), -1, "ours, cut: damage");
	cr_assert(strstr(err, "its env block"), "%s", err);
	memset(count, ' ', strcspn(count, "\n")); /* as an older tracer wrote it */
	write_file(path, (const uint8_t *)buf, (size_t)two_short);
	err[0] = '\0';
	cr_assert_eq(rt_vw_read_metadata(dir, &m, err, sizeof(err)), 0, "older: %s", err);
	cr_assert_eq(m.rank, 1);
	unlink(path);
	rmdir(dir);
}

/* The live-rank contract: a writer holds an OFD write lock on its stream
 * file while it lives; the kernel drops it when the process ends, killed or
 * not. The reader tests it without signals. */
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

static pid_t lock_in_child(const char *path, int ready[2])
{
	pid_t pid = fork();

	if (pid == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd = open(path, O_RDWR);

		close(ready[0]);
		if (fd < 0 || fcntl(fd, F_OFD_SETLK, &fl) != 0)
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	return pid;
}

Test(reader, a_live_writer_lock_tells_running_and_its_end_tells_dead)
{
	char path[] = "/tmp/rt-lock-XXXXXX", c;
	int fd = mkstemp(path), ready[2];
	pid_t pid;
	int status;

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(rt_vw_stream_locked(path), 0, "nobody writes it yet");
	cr_assert_eq(pipe(ready), 0);
	pid = lock_in_child(path, ready);
	cr_assert_gt(pid, 0);
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 1, "the child took the lock");
	cr_assert_eq(rt_vw_stream_locked(path), 1, "a live writer holds it: running");
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	cr_assert_eq(rt_vw_stream_locked(path), 0, "killed: the kernel released it");
	cr_assert_lt(rt_vw_stream_locked("/nonexistent/stream-1-1"), 0, "cannot test: -errno");
	close(ready[0]);
	unlink(path);
}
