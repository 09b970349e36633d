/* SPDX-License-Identifier: MIT */
/* fuzz_reader.c - libFuzzer target: arbitrary bytes as a stream file (read
 * as an older writer's, and as one whose writer promised whole files begun
 * by rt_stream_file: viewer/read/chain.c), and as a trace's metadata,
 * through the viewer's readers, and its first line as an env line (read as
 * sscanf read it). Must never crash, hang or read out of bounds; errors
 * must name an offset. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"
#include "reader.h"

static char dir[64], stream[128], meta[128];

static int count(const struct rt_vw_event *e, void *arg)
{
	(*(uint64_t *)arg) += e->id + (uint64_t)e->ret;
	return 0;
}

static void put(const char *path, const uint8_t *data, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		abort();
	fwrite(data, 1, n, f);
	fclose(f);
}

/* The stream file again, as a writer that promised whole, counted files
 * wrote it (zeros are lost records, counts must add up). */
static void read_promised(uint64_t *sum)
{
	struct rt_vw_rank_meta m = { .file_records = true };
	char *names[] = { strrchr(stream, '/') + 1 }, rankdir[128], err[512] = "";
	struct rt_vw_cursor *c;
	struct rt_vw_event e;
	int rc;

	snprintf(rankdir, sizeof(rankdir), "%.*s", (int)(strrchr(stream, '/') - stream), stream);
	c = rt_vw_cursor_open_chain(rankdir, names, 1, &m, err, sizeof(err));
	if (!c)
		return;
	while ((rc = rt_vw_cursor_next(c, &e)) == 1)
		*sum += e.id;
	if (rc < 0 && !strstr(rt_vw_cursor_error(c), "offset"))
		abort(); /* every stream error names its offset */
	rt_vw_cursor_close(c);
}

/* The bytes' first line as an env line: rt_vw_env_line reads what the
 * sscanf it replaced read (parse_env, trace_dir.c). */
static void env_line_as_sscanf(const uint8_t *data, size_t size)
{
	char line[512], k1[64] = "", v1[128] = "", k2[64] = "", v2[128] = "";
	size_t n = size < sizeof(line) - 1 ? size : sizeof(line) - 1;
	int want, got;

	memcpy(line, data, n);
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	want = sscanf(line, " %63[a-z_] = %127[^;\n];", k1, v1);
	got = rt_vw_env_line(line, k2, v2);
	if (got != want || (want >= 1 && strcmp(k1, k2)) || (want == 2 && strcmp(v1, v2)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	uint64_t sum = 0;
	struct rt_vw_rank_meta m;
	struct rt_vw_trace *t;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "%s/rt-fuzz-%d",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
		mkdir(dir, 0700);
		snprintf(stream, sizeof(stream), "%s/rank-00000", dir);
		mkdir(stream, 0700);
		snprintf(meta, sizeof(meta), "%s/rank-00000/metadata", dir);
		snprintf(stream, sizeof(stream), "%s/rank-00000/stream-1-1", dir);
	}
	env_line_as_sscanf(data, size);
	put(stream, data, size);
	err[0] = '\0';
	if (rt_vw_read_stream(stream, count, &sum, NULL, err, sizeof(err)) != 0 &&
	    !strstr(err, "offset"))
		abort(); /* every stream error names its offset */
	read_promised(&sum);
	/* the same bytes as metadata, then the whole trace through the model */
	put(meta, data, size);
	rt_vw_read_metadata(dir, &m, err, sizeof(err));
	t = rt_vw_load(dir, RT_VW_KEEP_CALLS, err, sizeof(err));
	rt_vw_free(t);
	return 0;
}
