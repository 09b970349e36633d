/* SPDX-License-Identifier: MIT */
/* fuzz_reader.c - libFuzzer target: arbitrary bytes as a stream file, and as
 * a trace's metadata, through the viewer's readers. Must never crash, hang
 * or read out of bounds; errors must name an offset. */
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
	put(stream, data, size);
	err[0] = '\0';
	if (rt_vw_read_stream(stream, count, &sum, NULL, err, sizeof(err)) != 0 &&
	    !strstr(err, "offset"))
		abort(); /* every stream error names its offset */
	/* the same bytes as metadata, then the whole trace through the model */
	put(meta, data, size);
	rt_vw_read_metadata(dir, &m, err, sizeof(err));
	t = rt_vw_load(dir, RT_VW_KEEP_CALLS, err, sizeof(err));
	rt_vw_free(t);
	return 0;
}
