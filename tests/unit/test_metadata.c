/* SPDX-License-Identifier: MIT */
/* test_metadata.c - viewer/read/trace_dir.c: a rank's metadata read with the
 * part every rank shares cached (rt_vw_read_metadata_cached) says what a
 * full read says. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
