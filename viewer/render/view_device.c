/* SPDX-License-Identifier: MIT */
/* view_device.c - view's device section: where device-side times come
 * from, each rank's collectives enqueued / started / completed on the
 * device, and the straggler analysis (analyse/straggler.c), as text and as
 * the "device" member of view --json. Reads the model only. */
#include <stdio.h>

#include "device.h"
#include "export.h"

static const char *source_name(unsigned s)
{
	return s == RT_DEV_SRC_PLUGIN ? "nccl-profiler-plugin" : s == RT_DEV_SRC_EVENT ? "cuda-events"
											: "none";
}

void rt_vw_device_text(FILE *f, const struct rt_vw_trace *t, int only_rank)
{
	const struct rt_vw_straggle *s = t->straggle;

	if (!rt_vw_dev_any(t))
		return;
	fprintf(f, "\ncollectives on the device (enqueued/started/completed, last into, mean lateness):\n");
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_devlog *d = t->ranks[i].dev;

		if (!d || (only_rank >= 0 && t->ranks[i].meta.rank != only_rank))
			continue;
		fprintf(f, "  rank %-4d %llu/%llu/%llu (%s)", t->ranks[i].meta.rank,
		          (unsigned long long)d->enqueued, (unsigned long long)d->started,
		          (unsigned long long)d->completed, source_name(d->source));
		if (s && s->colls && i < s->nranks)
			fprintf(f, "  last into %llu of %llu, %.2f ms late on average",
			          (unsigned long long)s->r[i].last, (unsigned long long)s->colls,
			          s->r[i].late_ns / 1e6);
		fprintf(f, "\n");
	}
	if (s && s->colls)
		fprintf(f, "  stragglers: %s (the others waited %.2f ms per collective on average)\n",
		          s->straggler >= 0 ? "one, see the findings" : "none", s->wait_ns / 1e6);
}

static void print_straggle_json(FILE *f, const struct rt_vw_straggle *s)
{
	if (!s || !s->colls) {
		fprintf(f, "null");
		return;
	}
	fprintf(f, "{\"collectives\": %llu, \"mean_wait_ms\": %.3f, \"noise_ms\": %.3f, \"straggler\": ",
	          (unsigned long long)s->colls, s->wait_ns / 1e6, s->noise_ns / 1e6);
	if (s->straggler >= 0)
		fprintf(f, "%d", s->r[s->straggler].rank);
	else
		fprintf(f, "null");
	fprintf(f, ", \"ranks\": [");
	for (int i = 0; i < s->nranks; i++)
		fprintf(f, "%s{\"rank\": %d, \"last\": %llu, \"share\": %.4f, \"mean_late_ms\": %.3f}",
		          i ? ", " : "", s->r[i].rank, (unsigned long long)s->r[i].last,
		          (double)s->r[i].last / (double)s->colls, s->r[i].late_ns / 1e6);
	fprintf(f, "]}");
}

/* ", \"device\": {...}", only for a trace with device-side records (older
 * traces read as before) */
void rt_vw_device_json(FILE *f, const struct rt_vw_trace *t)
{
	if (!rt_vw_dev_any(t))
		return;
	fprintf(f, ", \"device\": {\"ranks\": [");
	for (int i = 0, first = 1; i < t->nranks; i++) {
		const struct rt_vw_devlog *d = t->ranks[i].dev;

		if (!d)
			continue;
		fprintf(f, "%s{\"rank\": %d, \"source\": \"%s\", \"plugin_version\": %d, \"enqueued\": %llu, "
		          "\"started\": %llu, \"completed\": %llu, \"unmatched\": %llu}",
		          first ? "" : ", ", t->ranks[i].meta.rank, source_name(d->source), d->version,
		          (unsigned long long)d->enqueued, (unsigned long long)d->started,
		          (unsigned long long)d->completed, (unsigned long long)d->unbound);
		first = 0;
	}
	fprintf(f, "], \"stragglers\": ");
	print_straggle_json(f, t->straggle);
	fprintf(f, "}");
}
