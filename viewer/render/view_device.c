/* SPDX-License-Identifier: MIT */
/* view_device.c - view's device section: where device-side times come
 * from, each rank's collectives enqueued / started / completed on the
 * device, the straggler analysis (analyse/straggler.c) and the hosts'
 * clocks it aligned (analyse/hosts.c), as text and as the "device" member
 * of view --json. Reads the model only. */
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

/* "2,3" (the first 8, then "..."): host k's ranks */
static void host_ranks(FILE *f, const struct rt_vw_trace *t, int k)
{
	int said = 0;

	for (int i = 0; i < t->nranks; i++)
		if (t->hosts->of[i] == k && said++ < 8)
			fprintf(f, "%s%d", said > 1 ? "," : "", t->ranks[i].meta.rank);
	if (said > 8)
		fprintf(f, ",... (%d)", said);
}

/* Each host's clock against the reference's, when the job has several */
static void hosts_text(FILE *f, const struct rt_vw_trace *t)
{
	const struct rt_vw_hosts *h = t->hosts;

	if (!h || h->n < 2)
		return;
	fprintf(f, "  hosts: %d, each its own clock; lateness is judged on host %s's (ranks ", h->n,
		rt_vw_esc(h->h[0].name));
	host_ranks(f, t, 0);
	fprintf(f, "):\n");
	for (int k = 1; k < h->n; k++) {
		fprintf(f, "    host %s (ranks ", rt_vw_esc(h->h[k].name));
		host_ranks(f, t, k);
		if (h->h[k].estimated)
			fprintf(f, "): clock %+.3f ms +- %.3f ms against host %s's (from %llu collectives "
				   "completed on both)\n", h->h[k].offset_ns / 1e6, h->h[k].err_ns / 1e6,
				rt_vw_esc(h->h[0].name), (unsigned long long)h->h[k].shared);
		else
			fprintf(f, "): its clock is not estimated (%llu collectives completed on both it "
				   "and host %s, 3 needed): lateness across hosts is not judged\n",
				(unsigned long long)h->h[k].shared, rt_vw_esc(h->h[0].name));
	}
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
	hosts_text(f, t);
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

/* "hosts": each clock domain, the reference first; [] when there is one */
static void hosts_json(struct rt_json *w, const struct rt_vw_trace *t)
{
	const struct rt_vw_hosts *h = t->hosts;

	rt_json_arr(w, RT_JK(hosts));
	for (int k = 0; h && h->n > 1 && k < h->n; k++) {
		rt_json_obj(w, NULL);
		rt_json_str(w, RT_JK(host), h->h[k].name);
		rt_json_arr(w, RT_JK(ranks));
		for (int i = 0; i < t->nranks; i++)
			if (h->of[i] == k)
				rt_json_int(w, NULL, t->ranks[i].meta.rank);
		rt_json_end(w);
		rt_json_bool(w, RT_JK(reference), k == 0);
		if (h->h[k].estimated) {
			rt_json_fixed(w, RT_JK(offset_ms), h->h[k].offset_ns / 1e6, 3);
			rt_json_fixed(w, RT_JK(uncertainty_ms), h->h[k].err_ns / 1e6, 3);
		} else {
			rt_json_null(w, RT_JK(offset_ms));
			rt_json_null(w, RT_JK(uncertainty_ms));
		}
		rt_json_uint(w, RT_JK(collectives), h->h[k].shared);
		rt_json_end(w);
	}
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
	hosts_json(w, t);
	rt_json_end(w);
}
