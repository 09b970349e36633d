/* SPDX-License-Identifier: MIT */
/* view_device.c - view's device section: where device-side times come
 * from, each rank's collectives enqueued / started / completed on the
 * device, and the straggler analysis (analyse/straggler.c), as text and as
 * the "device" member of view --json. Reads the model only. */
#include <stdio.h>

#include "device.h"
#include "export.h"
#include "json.h"
#include "json_keys.h"

static const char *source_name(unsigned s)
{
	return s == RT_DEV_SRC_PLUGIN ? "nccl-profiler-plugin" : s == RT_DEV_SRC_EVENT ? "cuda-events"
											: "none";
}

/* "  rank 1 dropped 15904 device records (queue-full 15904), seqs
 * 4097-20000: their collectives' device times are not known" */
static void drops_text(FILE *f, const struct rt_vw_devlog *d)
{
	const char *sep = "";

	if (!d->ndrops)
		return;
	fprintf(f, "    dropped %llu device record%s (", (unsigned long long)d->ndrops,
		d->ndrops == 1 ? "" : "s");
	for (unsigned k = 0; k < RT_DROP_COUNT_; k++) {
		if (!d->drop_by[k])
			continue;
		fprintf(f, "%s%s %llu", sep, rt_drop_word(k), (unsigned long long)d->drop_by[k]);
		sep = ", ";
	}
	if (d->drop_hi)
		fprintf(f, "), seqs %u-%u", d->drop_lo, d->drop_hi);
	else
		fprintf(f, ")");
	fprintf(f, ": their collectives' device times are not known\n");
}

static void drops_json(struct rt_json *w, const struct rt_vw_devlog *d)
{
	rt_json_uint(w, RT_JK(dropped), d->ndrops);
	if (d->drop_hi) {
		rt_json_uint(w, RT_JK(dropped_first_seq), d->drop_lo);
		rt_json_uint(w, RT_JK(dropped_last_seq), d->drop_hi);
	} else {
		rt_json_null(w, RT_JK(dropped_first_seq));
		rt_json_null(w, RT_JK(dropped_last_seq));
	}
	rt_json_arr(w, RT_JK(drops));
	for (unsigned k = 0; k < RT_DROP_COUNT_; k++) {
		if (!d->drop_by[k])
			continue;
		rt_json_obj(w, NULL);
		rt_json_str(w, RT_JK(reason), rt_drop_word(k));
		rt_json_uint(w, RT_JK(count), d->drop_by[k]);
		rt_json_end(w);
	}
	rt_json_end(w);
}

void rt_vw_device_text(FILE *f, const struct rt_vw_trace *t, int only_rank)
{
	const struct rt_vw_straggle *s = t->straggle;

	if (!rt_vw_dev_any(t))
		return;
	fprintf(f, "\ncollectives on the device (enqueued/started/completed, last into, lateness):\n");
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_devlog *d = t->ranks[i].dev;

		if (!d || (only_rank >= 0 && t->ranks[i].meta.rank != only_rank))
			continue;
		fprintf(f, "  rank %-4d %llu/%llu/%llu (%s)", t->ranks[i].meta.rank,
		          (unsigned long long)d->enqueued, (unsigned long long)d->started,
		          (unsigned long long)d->completed, source_name(d->source));
		if (s && s->colls && i < s->nranks)
			fprintf(f, "  last into %llu of %llu, %.2f ms late (median; mean %.2f)",
			          (unsigned long long)s->r[i].last, (unsigned long long)s->colls,
			          s->r[i].median_ns / 1e6, s->r[i].late_ns / 1e6);
		fprintf(f, "\n");
		drops_text(f, d);
	}
	if (s && s->colls)
		fprintf(f, "  stragglers: %s (the others waited %.2f ms per collective on average)\n",
		          s->straggler >= 0 ? "one, see the findings" : "none", s->wait_ns / 1e6);
}

static void straggle_json(struct rt_json *w, const struct rt_vw_straggle *s)
{
	if (!s || !s->colls) {
		rt_json_null(w, RT_JK(stragglers));
		return;
	}
	rt_json_obj(w, RT_JK(stragglers));
	rt_json_uint(w, RT_JK(collectives), s->colls);
	rt_json_fixed(w, RT_JK(mean_wait_ms), s->wait_ns / 1e6, 3);
	rt_json_fixed(w, RT_JK(noise_ms), s->noise_ns / 1e6, 3);
	if (s->straggler >= 0)
		rt_json_int(w, RT_JK(straggler), s->r[s->straggler].rank);
	else
		rt_json_null(w, RT_JK(straggler));
	rt_json_arr(w, RT_JK(ranks));
	for (int i = 0; i < s->nranks; i++) {
		rt_json_obj(w, NULL);
		rt_json_int(w, RT_JK(rank), s->r[i].rank);
		rt_json_uint(w, RT_JK(last), s->r[i].last);
		rt_json_fixed(w, RT_JK(share), (double)s->r[i].last / (double)s->colls, 4);
		rt_json_fixed(w, RT_JK(mean_late_ms), s->r[i].late_ns / 1e6, 3);
		rt_json_fixed(w, RT_JK(median_late_ms), s->r[i].median_ns / 1e6, 3);
		rt_json_end(w);
	}
	rt_json_end(w);
	rt_json_end(w);
}

/* view --json's "device" member, only for a trace with device-side records
 * (older traces read as before) */
void rt_vw_device_json(struct rt_json *w, const struct rt_vw_trace *t)
{
	if (!rt_vw_dev_any(t))
		return;
	rt_json_obj(w, RT_JK(device));
	rt_json_arr(w, RT_JK(ranks));
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_devlog *d = t->ranks[i].dev;

		if (!d)
			continue;
		rt_json_obj(w, NULL);
		rt_json_int(w, RT_JK(rank), t->ranks[i].meta.rank);
		rt_json_str(w, RT_JK(source), source_name(d->source));
		rt_json_int(w, RT_JK(plugin_version), d->version);
		rt_json_uint(w, RT_JK(enqueued), d->enqueued);
		rt_json_uint(w, RT_JK(started), d->started);
		rt_json_uint(w, RT_JK(completed), d->completed);
		rt_json_uint(w, RT_JK(unmatched), d->unbound);
		drops_json(w, d);
		rt_json_end(w);
	}
	rt_json_end(w);
	straggle_json(w, t->straggle);
	rt_json_end(w);
}
