/* SPDX-License-Identifier: MIT */
/* test_devcheck.c - the reader checks device records as it checks host
 * records (viewer/read/devcheck.c, issue 28 item 3). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "encode.h"
#include "reader.h"

#define PKT 4096

/* One event through the format's encoder (compact header). */
static size_t put_event(uint8_t *p, unsigned id, uint32_t ts, const void *fields)
{
	uint8_t *q = rt_fmt_event_common(rt_fmt_event_header(p, id, ts, ts), 0, 0, 0);

	memcpy(q, fields, rt_events[id].size);
	return (size_t)(q - p) + rt_events[id].size;
}

/* Field fid of event id set to v in the fields f (little-endian, its width). */
static void set_field(uint8_t *f, unsigned id, unsigned fid, uint64_t v)
{
	for (int k = 0; k < rt_events[id].nfields; k++)
		if (rt_events[id].fields[k].fid == fid)
			for (size_t b = 0; b < rt_kind_size(rt_events[id].fields[k].kind); b++)
				f[rt_events[id].fields[k].offset + b] = (uint8_t)(v >> (8 * b));
}

/* A stream of n device records {phase, source, comm, seq} read (phase 0:
 * an rt_dev_drop, queue-full; 0x100: an rt_dev_coll of phase 0), its
 * packet ending at ts_end: 0, or -1 with err. */
static int read_dev(const uint64_t (*rec)[4], int n, uint64_t ts_end, char *err, size_t errlen)
{
	struct rt_fmt_packet h = { NULL, 1000000, ts_end, 0, PKT, 0, 42, 43 };
	uint8_t buf[PKT], f[96];
	char path[] = "/tmp/rt-reader-XXXXXX";
	size_t off = RT_PACKET_HEADER_BYTES;
	int fd = mkstemp(path), rc;
	FILE *f_out;

	close(fd);
	memset(buf, 0, PKT);
	for (int i = 0; i < n; i++) {
		unsigned id = rec[i][0] ? RT_ID_rt_dev_coll : RT_ID_rt_dev_drop;

		memset(f, 0, sizeof(f));
		if (rec[i][0])
			set_field(f, id, RT_FN_dev_phase, rec[i][0] & 0xff);
		else
			set_field(f, id, RT_FN_drop_reason, RT_DROP_QUEUE);
		set_field(f, id, RT_FN_source, rec[i][1]);
		set_field(f, id, RT_FN_comm_id, rec[i][2]);
		set_field(f, id, RT_FN_seq, rec[i][3]);
		off += put_event(buf + off, id, 1000100 + (uint32_t)i, f);
	}
	h.content_bytes = off;
	rt_fmt_packet_put(buf, &h);
	f_out = fopen(path, "wb");
	cr_assert_not_null(f_out);
	cr_assert_eq(fwrite(buf, 1, PKT, f_out), PKT);
	fclose(f_out);
	rc = rt_vw_read_stream(path, NULL, NULL, NULL, err, errlen);
	unlink(path);
	return rc;
}

/* Device records are checked as host records are (issue 28 item 3): a
 * phase or source no tracer writes, a packet whose end time is 2^64-1 (or
 * 2^62, which no clock reaches) are damage naming the offset (all read as complete and
 * healthy before); records of several queues out of order, and a drop, are
 * not (devcheck.c: why repeats are not checked either). */
Test(reader, nonsense_device_records_are_damage)
{
	const uint64_t ok[][4] = { { 1, 1, 7, 2 }, { 1, 1, 7, 1 }, { 2, 1, 7, 1 }, { 2, 1, 7, 2 },
				   { 0, 2, 7, 3 }, { 1, 2, 9, 1 } };
	const uint64_t phase0[][4] = { { 1, 1, 7, 1 }, { 0x100, 1, 7, 2 } };
	const uint64_t phase3[][4] = { { 3, 1, 7, 1 } };
	const uint64_t phase255[][4] = { { 255, 2, 7, 1 } };
	const uint64_t source0[][4] = { { 1, 0, 7, 1 } };
	const uint64_t source9[][4] = { { 2, 9, 7, 1 } };
	char err[512] = "";

	cr_expect_eq(read_dev(ok, 6, 2000000, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(read_dev(phase0, 2, 2000000, err, sizeof(err)), -1, "dev_phase 0 read");
	cr_expect(strstr(err, "dev_phase 0") && strstr(err, "offset"), "%s", err);
	cr_expect_eq(read_dev(phase3, 1, 2000000, err, sizeof(err)), -1, "dev_phase 3 read");
	cr_expect_eq(read_dev(phase255, 1, 2000000, err, sizeof(err)), -1, "dev_phase 255 read");
	cr_expect_eq(read_dev(source0, 1, 2000000, err, sizeof(err)), -1, "source 0 read");
	cr_expect(strstr(err, "source 0"), "%s", err);
	cr_expect_eq(read_dev(source9, 1, 2000000, err, sizeof(err)), -1, "source 9 read");
	cr_expect_eq(read_dev(ok, 6, UINT64_MAX, err, sizeof(err)), -1, "ts_end 2^64-1 read");
	cr_expect(strstr(err, "impossible packet end time"), "%s", err);
	cr_expect_eq(read_dev(ok, 6, 1ull << 62, err, sizeof(err)), -1, "ts_end 2^62 read");
}
