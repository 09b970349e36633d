/* SPDX-License-Identifier: MIT */
/* test_metadata.c - viewer/read/trace_dir.c: a rank's metadata read with the
 * part every rank shares cached (rt_vw_read_metadata_cached) says what a
 * full read says; an env line read as the sscanf it replaced read it; the
 * schema's metadata declares every event and its payload sizes add up; a
 * rank directory's listing is taken again only while it holds, with the
 * locks its stream files showed as they were mapped. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "live.h"
#include "reader.h"
#include "schema.h"

static void write_file(const char *path, const uint8_t *buf, size_t n)
{
	FILE *f = fopen(path, "wb");

	cr_assert_not_null(f);
	cr_assert_eq(fwrite(buf, 1, n, f), n);
	fclose(f);
}

/* What every rank shares is read once (rt_vw_read_metadata_cached, the
 * load's): a cache primed by one rank's whole metadata gives each other
 * metadata the same result, facts and error as a reading without it: other
 * ranks, a cut anywhere (inside the env block, in the event declarations,
 * at every 997th byte), an env block left open before the shared part, and
 * the shared part changed. A cache that trusted the shared part alone would
 * call the cut and the open block whole. */
Test(schema, metadata_read_with_the_shared_part_cached_says_what_a_full_read_says)
{
	static char whole[1 << 16], buf[1 << 16];
	struct rt_trace_env env = { .hostname = "node0", .rank = 0, .world_size = 4, .pid = 7,
				    .rank_source = "env:RANK" };
	long n = rt_schema_tsdl(whole, sizeof(whole), &env), stream;
	char dir[] = "/tmp/rt-meta-XXXXXX", path[600], e1[512], e2[512];
	struct rt_vw_meta_cache c = { 0 };
	struct rt_vw_rank_meta a, b;

	cr_assert_gt(n, 0);
	stream = (long)(strstr(whole, "\nstream {") - whole);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/metadata", dir);
	write_file(path, (const uint8_t *)whole, (size_t)n);
	cr_assert_eq(rt_vw_read_metadata_cached(dir, &a, &c, e1, sizeof(e1)), 0, "%s", e1);
	cr_assert_not_null(c.tail, "the shared part is remembered");
	for (long cut = -4; cut < n; cut += cut < 0 ? 1 : 997) {
		long len = n;

		env.rank = 1 + (int)(cut & 3);
		env.pid = 100 + (int)cut;
		len = rt_schema_tsdl(buf, sizeof(buf), &env);
		if (cut == -4) /* the env block left open: its "};" gone */
			memcpy(strstr(buf, "\n};\n\nclock {"), "\n  \n", 4);
		else if (cut == -3) /* the shared part changed: one event fewer */
			len = (long)(strrchr(buf, '}') - buf) - 40;
		else if (cut >= 0 && cut < len)
			len = cut;
		write_file(path, (const uint8_t *)buf, (size_t)len);
		e1[0] = e2[0] = '\0';
		int r1 = rt_vw_read_metadata(dir, &a, e1, sizeof(e1));
		int r2 = rt_vw_read_metadata_cached(dir, &b, &c, e2, sizeof(e2));

		cr_assert_eq(r1, r2, "cut %ld (stream block at %ld): %d/%d %s | %s", cut, stream, r1, r2, e1, e2);
		cr_assert_str_eq(e1, e2, "cut %ld", cut);
		cr_assert_eq(memcmp(&a, &b, sizeof(a)), 0, "cut %ld: the same facts", cut);
		if (cut == -2 || cut == -1)
			cr_assert_eq(r2, 0, "another rank's whole metadata reads: %s", e2);
	}
	rt_vw_meta_cache_free(&c);
	unlink(path);
	rmdir(dir);
}

/* rt_vw_env_line reads an env or clock block's line as the sscanf it
 * replaced: the same count (2, 1, 0, -1 at the end of input) and the same
 * key and value, on the lines our writer makes, their edges (a key of 63
 * letters and of 64, a value of 127 bytes and of 128, no value, no '=',
 * white space of every kind) and 200,000 random lines of the bytes that
 * matter to it. */
static void same_as_sscanf(const char *line)
{
	char k1[64] = "", v1[128] = "", k2[64] = "", v2[128] = "";
	int want = sscanf(line, " %63[a-z_] = %127[^;\n];", k1, v1);
	int got = rt_vw_env_line(line, k2, v2);

	cr_assert_eq(got, want, "\"%s\": %d, sscanf %d", line, got, want);
	if (want >= 1)
		cr_assert_str_eq(k2, k1, "\"%s\"", line);
	if (want == 2)
		cr_assert_str_eq(v2, v1, "\"%s\"", line);
}

Test(schema, an_env_line_reads_as_sscanf_read_it)
{
	static const char *const lines[] = {
		"\trank = 3;", "\thostname = \"node0\";", "\toffset_s = -12;", "\tpython_probe_detail = \"\";",
		"", " ", "\t\v\f\r ", "=", "= 1;", "rank", "rank ", "rank =", "rank = ", "rank = ;",
		"rank=1", "rank\t=\t1", "Rank = 1;", "ra-nk = 1;", "rank1 = 2;", "_ = x", "rank = 1;2;",
		"rank : 1;", "\"rank\" = 1;", "rank = \"a;b\";", "}", "env {",
	};
	char line[400];
	uint64_t x = 88172645463325252ull;

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		same_as_sscanf(lines[i]);
	for (int klen = 62; klen <= 65; klen++)
		for (int vlen = 126; vlen <= 129; vlen++) {
			memset(line, 'k', (size_t)klen);
			memcpy(line + klen, " = ", 3);
			memset(line + klen + 3, 'v', (size_t)vlen);
			strcpy(line + klen + 3 + vlen, ";");
			same_as_sscanf(line);
		}
	for (int r = 0; r < 200000; r++) {
		static const char bytes[] = " \t\v\f\r=;_azAZ09\"{}-\x80\xff";
		size_t n = 0, len;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		len = x % 24;
		for (; n < len; n++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			line[n] = bytes[x % (sizeof(bytes) - 1)];
		}
		line[n] = '\0';
		same_as_sscanf(line);
	}
}

Test(schema, metadata_declares_every_event_and_fits)
{
	static char buf[1 << 16];
	struct rt_trace_env env = { .hostname = "host\"with\\quotes", .rank = 3, .world_size = 4 };
	long n = rt_schema_tsdl(buf, sizeof(buf), &env);

	cr_assert_gt(n, 0);
	for (unsigned id = 0; id < RT_ID_COUNT; id++) {
		char want[96];

		snprintf(want, sizeof(want), "name = \"%s\";\n\tid = %u;", rt_events[id].name, id);
		cr_assert(strstr(buf, want) != NULL, "event %s missing", rt_events[id].name);
	}
	cr_assert(strstr(buf, "hostname = \"host\\\"with\\\\quotes\";") != NULL, "hostname escaped");
	cr_assert(strstr(buf, "hex64 _stream;") != NULL, "keyword field names are escaped");
	cr_assert_eq(rt_schema_tsdl(buf, 100, &env), -1, "too small a buffer is an error");
}

/* The metadata is whole or it is damage: cut after its env block, inside
 * any block or string, between events, or with a NUL byte, babeltrace2
 * rejects it, and so does the reader (it was "complete"). */

Test(schema, payload_sizes_are_the_sum_of_their_fields)
{
	for (unsigned id = 0; id < RT_ID_COUNT; id++) {
		unsigned sum = 0;

		for (unsigned i = 0; i < rt_events[id].nfields; i++) {
			cr_assert_eq(rt_events[id].fields[i].offset, sum, "%s.%s", rt_events[id].name,
				     rt_events[id].fields[i].name);
			sum += (unsigned)rt_kind_size(rt_events[id].fields[i].kind);
		}
		cr_assert_eq(sum, rt_events[id].size, "%s", rt_events[id].name);
		cr_assert_leq(rt_events[id].size, RT_SIZE_MAX_PAYLOAD);
	}
}

/* The load's listing of a rank directory is taken again after the pass
 * (rt_vw_listing_holds) only while it still lists the directory: its times
 * unchanged, and already 3 s old when it was listed (a change in the
 * same tick of the file system's clock would not move them). A file made
 * since, or the modification time set back after it, is seen: the change
 * time moved. */
Test(metadata, a_listing_holds_only_while_the_directory_is_unchanged)
{
	char dir[] = "/tmp/rt-seen-XXXXXX", path[600], path2[600];
	struct rt_vw_listing l = { .n = -1 };
	struct timespec back[2];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/stream-1-1", dir);
	write_file(path, (const uint8_t *)"x", 1);
	cr_assert_eq(rt_vw_list_streams_seen(dir, &l), 1);
	cr_assert_str_eq(l.names[0], "stream-1-1");
	cr_assert_not(rt_vw_listing_holds(dir, &l), "listed in the tick it changed: not trusted");
	sleep(3);
	usleep(100 * 1000);
	cr_assert_eq(rt_vw_list_streams_seen(dir, &l), 1);
	cr_assert(rt_vw_listing_holds(dir, &l), "unchanged since a listing 3 s after its change");
	cr_assert_not(rt_vw_listing_holds(dir, NULL));
	snprintf(path2, sizeof(path2), "%s/stream-1-2", dir);
	write_file(path2, (const uint8_t *)"y", 1);
	cr_assert_not(rt_vw_listing_holds(dir, &l), "a file made since");
	back[0] = back[1] = l.mtime;
	cr_assert_eq(utimensat(AT_FDCWD, dir, back, 0), 0);
	cr_assert_not(rt_vw_listing_holds(dir, &l), "the modification time set back: the change time moved");
	rt_vw_listing_free(&l);
	cr_assert_eq(l.n, -1);
	unlink(path);
	unlink(path2);
	rmdir(dir);
}

/* The live state after the pass asks again only the stream files that a
 * writer held locked as the load mapped them: a tracer locks a file before
 * it names it and only ever releases the lock, so one seen unlocked stays
 * so (16,384 ranks: an open, a lock query and a close each saved). One held
 * is asked again: still held, the rank is alive; released, it is not. The
 * control: a lock taken later on the file seen unlocked (which no tracer
 * does) goes unseen, so the saving is real, and without the marks of a
 * listing that holds, every file is asked. */
Test(metadata, a_stream_seen_unlocked_as_mapped_is_not_asked_again)
{
	char dir[] = "/tmp/rt-lock-XXXXXX", rd[600], p1[700], p2[700], err[512];
	static const uint8_t page[4096] = { 1 };
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct rt_vw_rank_meta meta = { .pid = 7 };
	struct rt_vw_listing l = { .n = -1 };
	struct rt_vw_cursor *c1, *c2;
	struct rt_vw_live live;
	int hold2, hold1;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(rd, sizeof(rd), "%s/rank-00000", dir);
	cr_assert_eq(mkdir(rd, 0700), 0);
	snprintf(p1, sizeof(p1), "%s/stream-7-7", rd);
	snprintf(p2, sizeof(p2), "%s/stream-7-8", rd);
	write_file(p1, page, sizeof(page));
	write_file(p2, page, sizeof(page));
	hold2 = open(p2, O_RDWR | O_CLOEXEC); /* a live writer's lock (another open file description) */
	cr_assert_geq(hold2, 0);
	cr_assert_eq(fcntl(hold2, F_OFD_SETLK, &fl), 0);
	sleep(3);
	usleep(100 * 1000);
	cr_assert_eq(rt_vw_list_streams_seen(rd, &l), 2);
	c1 = rt_vw_cursor_open(p1, err, sizeof(err));
	c2 = rt_vw_cursor_open(p2, err, sizeof(err));
	cr_assert(c1 && c2, "%s", err);
	cr_assert_str_eq(rt_vw_cursor_unlocked_file(c1), "stream-7-7");
	cr_assert_null(rt_vw_cursor_unlocked_file(c2), "held by the writer as it was mapped");
	rt_vw_listing_unlocked(&l, rt_vw_cursor_unlocked_file(c1));
	rt_vw_listing_unlocked(&l, rt_vw_cursor_unlocked_file(c2));
	cr_assert(l.unlocked && l.unlocked[0] && !l.unlocked[1]);
	cr_assert(rt_vw_listing_holds(rd, &l));
	rt_vw_live_ask(dir, "rank-00000", &meta, true, &l, &live);
	cr_assert(live.locked, "the file held as mapped is asked again: still held");
	cr_assert_eq(live.own, 2);
	close(hold2);
	rt_vw_live_ask(dir, "rank-00000", &meta, true, &l, &live);
	cr_assert_not(live.locked, "released since: the writer is gone");
	hold1 = open(p1, O_RDWR | O_CLOEXEC);
	cr_assert_geq(hold1, 0);
	cr_assert_eq(fcntl(hold1, F_OFD_SETLK, &fl), 0);
	rt_vw_live_ask(dir, "rank-00000", &meta, true, &l, &live);
	cr_assert_not(live.locked, "the file seen unlocked is not asked again");
	rt_vw_live_ask(dir, "rank-00000", &meta, true, NULL, &live);
	cr_assert(live.locked, "without the listing every file is asked");
	close(hold1);
	rt_vw_cursor_close(c1);
	rt_vw_cursor_close(c2);
	rt_vw_listing_free(&l);
	cr_assert_null(l.unlocked);
	unlink(p1);
	unlink(p2);
	rmdir(rd);
	rmdir(dir);
}
