/* SPDX-License-Identifier: MIT */
/* export.c - what the renderers share: escaping for a terminal (one of a
 * few buffers), bytes and device lists as every output writes them, which
 * calls are collectives, where the trace starts.
 *
 * Both exports stream the events again (rt_vw_foreach) and write as they go;
 * what they draw besides the events comes from the model (device memory
 * over time, communicator sizes): they keep no tables of their own beyond
 * open flow arrows and, for the report, a bounded sample of spans.
 * Every string from a trace is escaped for its output (JSON through util's
 * writer, text and HTML through util/escape.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_int.h"
#include "escape.h"

/* A collective (not point-to-point): what flows link across ranks. */
bool rt_vw_is_coll(unsigned id)
{
	int k = rt_vw_coll_kind(id);

	return rt_ck_is_collective(k);
}

uint64_t rt_vw_trace_start(const struct rt_vw_trace *t)
{
	uint64_t t0 = UINT64_MAX;

	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].readable && t->ranks[i].events && t->ranks[i].first_ts < t0)
			t0 = t->ranks[i].first_ts;
	return t0 == UINT64_MAX ? 0 : t0;
}

const char *rt_vw_esc(const char *s)
{
	static char bufs[8][4 * 4096 + 16]; /* the longest string: a path, escaped */
	static unsigned next;

	return rt_esc_text(bufs[next++ % 8], sizeof(bufs[0]), s);
}

void rt_vw_devices_str(uint64_t mask, char *out, size_t n)
{
	size_t len = 0;

	out[0] = '\0';
	for (int d = 0; d < RT_VW_MAX_DEV && len < n - 4; d++)
		if (mask & (1ull << d))
			len += (size_t)snprintf(out + len, n - len, "%s%d", len ? "," : "", d);
	if (!len)
		snprintf(out, n, "-");
}

void rt_vw_human_bytes(char *out, size_t n, uint64_t b)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int i = 0;

	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(out, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}
