/* SPDX-License-Identifier: MIT */
/* summary.c - the lines `ranktrace run` prints when the command is done:
 * per rank its events, devices used, how it ended, allocations and peak
 * device memory; for an elastic job its last attempt's ranks, each earlier
 * attempt's ending before them.
 *
 * A view of the model (the CLI loads it), as `view` is: the same devices,
 * peaks, allocation counts and endings (rt_vw_rank_end), never counted twice
 * in two ways. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"

/* "0:4224 B,1:512 B", or "-": the peak of every device the rank used. */
static void peaks_str(const struct rt_vw_rank *r, char *out, size_t n)
{
	size_t len = 0;

	out[0] = '\0';
	for (int d = 0; d < RT_VW_MAX_DEV && len + 32 < n; d++)
		if (r->dev_peak[d])
			len += (size_t)snprintf(out + len, n - len, "%s%d:%" PRIu64 " B", len ? "," : "", d,
						r->dev_peak[d]);
	if (!len)
		snprintf(out, n, "-");
}

/* A rank that made no CUDA or NCCL call: what the probe recorded instead
 * ("no CUDA or NCCL call; probe: 10 parameters, 3 FSDP root forwards");
 * false when it recorded nothing either. */
static bool probe_only(const struct rt_vw_rank *r, char *out, size_t n)
{
	size_t len;

	if (r->api_events || !(r->params_reported || r->fsdp_root_forwards || r->unwrapped_calls ||
			       r->markers || r->faults))
		return false;
	len = (size_t)snprintf(out, n, "no CUDA or NCCL call; probe: %u parameter%s, %" PRIu64
			       " FSDP root forward%s", r->nparams, r->nparams == 1 ? "" : "s",
			       r->fsdp_root_forwards, r->fsdp_root_forwards == 1 ? "" : "s");
	if (r->unwrapped_calls && len < n)
		len += (size_t)snprintf(out + len, n - len, ", %" PRIu64 " unwrapped-module call%s",
					r->unwrapped_calls, r->unwrapped_calls == 1 ? "" : "s");
	if (r->faults && len < n)
		snprintf(out + len, n - len, ", %" PRIu64 " injected fault%s", r->faults,
			 r->faults == 1 ? "" : "s");
	return true;
}

static void print_rank(FILE *f, const struct rt_vw_rank *r, const char *discard_why)
{
	char who[80], devs[256], how[128], peaks[512], probe[200];

	if (r->meta.rank >= 0 && r->meta.rank < 100000)
		snprintf(who, sizeof(who), "rank %d", r->meta.rank);
	else
		snprintf(who, sizeof(who), "%s", rt_vw_esc(r->name));
	rt_vw_devices_str(r->devices_used, devs, sizeof(devs));
	rt_vw_rank_end(r, how, sizeof(how));
	peaks_str(r, peaks, sizeof(peaks));
	fprintf(f, "  %-12s %-10s %8" PRIu64 " events  device%s %-8s %-16s  ", who,
	          rt_vw_esc(r->meta.hostname), r->events, strchr(devs, ',') ? "s" : " ", devs, how);
	if (probe_only(r, probe, sizeof(probe)))
		fprintf(f, "%s", probe);
	else
		fprintf(f, "%" PRIu64 " allocation%s, peak %s", r->allocs, r->allocs == 1 ? "" : "s", peaks);
	if (r->discarded)
		fprintf(f, "  (%" PRIu64 " events discarded: %s)", r->discarded,
		          r->stopped && rt_stop_prose(r->stop_reason) ? rt_stop_prose(r->stop_reason)
								 : discard_why);
	if (r->damaged[0])
		fprintf(f, "\n    damaged: %s", rt_vw_esc(r->damaged));
	if (r->meta.python_probe == RT_PROBE_FAILED || r->meta.python_probe == RT_PROBE_MISSING)
		fprintf(f, "\n    Python ran without the ranktrace probe: %s",
			rt_vw_esc(r->meta.python_probe_detail));
	fprintf(f, "\n");
}

int rt_vw_summary_ranks(FILE *f, const struct rt_vw_trace *t)
{
	int bad = 0;

	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		if (!r->readable) {
			fprintf(f, "  %-12s unreadable: %s\n", rt_vw_esc(r->name), rt_vw_esc(r->damaged));
			bad++;
			continue;
		}
		print_rank(f, r, t->lttng ? "LTTng ring buffers, an upper bound" : "size cap");
		bad += r->damaged[0] != '\0';
	}
	return bad;
}

/* Each finding of kind k in t, one line each after prefix; their count. */
static int print_kind(FILE *f, const struct rt_vw_trace *t, enum rt_finding_kind k,
		      const char *prefix)
{
	int n = 0;

	for (int i = 0; t && i < t->nfindings; i++)
		if (t->findings[i].kind == k) {
			char text[RT_VW_FINDING_TEXT];

			rt_vw_finding_text(t, &t->findings[i], text, sizeof(text));
			fprintf(f, "%s%s\n", prefix, rt_vw_esc(text));
			n++;
		}
	return n;
}

int rt_vw_summary(FILE *f, const char *dir, int listed, const struct rt_vw_trace *t, const char *err)
{
	if (!listed) {
		fprintf(f, "ranktrace: no rank traces in %s (the command made no CUDA or NCCL call)\n",
			rt_vw_esc(dir));
		return 0;
	}
	if (listed > 0)
		fprintf(f, "ranktrace: %d rank trace%s in %s/", listed, listed == 1 ? "" : "s",
			rt_vw_esc(dir));
	if (listed > 0 && t && t->nattempts > 1)
		fprintf(f, " (attempt %d, the last of %d: the launcher restarted the job)", t->attempt,
			t->nattempts);
	if (listed > 0)
		fprintf(f, "\n");
	/* an elastic job's earlier attempts: "attempt 0: rank 1 exited 1; restarted (attempt 1)" */
	print_kind(f, t, RT_FK_EARLIER_ATTEMPT, "  ");
	if (!t) {
		fprintf(f, "  unreadable: %s\n", rt_vw_esc(err));
		return listed > 0 ? listed : 1;
	}
	if (listed < 0)
		fprintf(f, "ranktrace: %d rank%s in the LTTng trace %s/\n", t->nranks,
			t->nranks == 1 ? "" : "s", rt_vw_esc(dir));
	return rt_vw_summary_ranks(f, t);
}

int rt_vw_summary_never_fired(FILE *f, const struct rt_vw_trace *t)
{
	return print_kind(f, t, RT_FK_INJECTION_NEVER_FIRED, "ranktrace run: warning: ");
}
