/* SPDX-License-Identifier: MIT */
/* summary.c - the lines `ranktrace run` prints when the command is done:
 * per rank its events, devices and how it ended. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct rank_summary {
	uint64_t events, discarded;
	unsigned long long devices; /* bit d: device d touched */
	int exit_status, signo;
	bool exit_seen, main_seen;
	int main_pid;
	char died_in[64];
	uint64_t last_ts;
};

static int summarize_event(const struct rt_vw_event *e, void *arg)
{
	struct rank_summary *s = arg;
	bool is_main = (int)e->pid == s->main_pid;

	if (e->id < RT_ID_FIRST_TRACER && e->id != RT_ID_cudaSetDevice &&
	    e->id != RT_ID_cudaGetDevice && e->dev >= 0 && e->dev < 64)
		s->devices |= 1ull << e->dev;
	if (e->id == RT_ID_cudaSetDevice && e->ret == 0) {
		int64_t d = rt_field_get(e->id, e->fields, 0);

		if (d >= 0 && d < 64)
			s->devices |= 1ull << d;
	}
	if (!is_main)
		return 0;
	if (e->pending && e->ts >= s->last_ts)
		snprintf(s->died_in, sizeof(s->died_in), "%s", rt_events[e->id].name);
	if (e->ts >= s->last_ts)
		s->last_ts = e->ts;
	if (e->id == RT_ID_rt_exit) {
		s->exit_seen = true;
		s->exit_status = (int)rt_field_get(e->id, e->fields, 0);
	} else if (e->id == RT_ID_rt_signal) {
		s->exit_seen = true;
		s->signo = (int)rt_field_get(e->id, e->fields, 0);
	}
	return 0;
}

/* One line per rank: events, devices, how it ended. Returns the number of
 * unreadable ranks. */
int rt_cli_print_summary(const char *dir)
{
	char **ranks;
	int n = rt_vw_list_ranks(dir, &ranks), bad = 0;

	if (n <= 0) {
		printf("ranktrace: no rank traces in %s (the command made no CUDA or NCCL call)\n", dir);
		rt_vw_free_names(ranks, 0);
		return 0;
	}
	printf("ranktrace: %d rank trace%s in %s/\n", n, n == 1 ? "" : "s", dir);
	for (int r = 0; r < n; r++) {
		char rd[PATH_MAX], err[512] = "", devs[256] = "", how[128];
		struct rt_vw_rank_meta meta;
		struct rank_summary s = { 0 };
		char **streams;
		int ns, len = 0;

		snprintf(rd, sizeof(rd), "%s/%s", dir, ranks[r]);
		if (rt_vw_read_metadata(rd, &meta, err, sizeof(err)) != 0) {
			printf("  %-12s unreadable: %s\n", ranks[r], err);
			bad++;
			continue;
		}
		s.main_pid = meta.pid;
		ns = rt_vw_list_streams(rd, &streams);
		for (int i = 0; i < ns; i++) {
			char sp[PATH_MAX + 64];
			struct rt_vw_stream_info info;

			snprintf(sp, sizeof(sp), "%s/%s", rd, streams[i]);
			if (rt_vw_read_stream(sp, summarize_event, &s, &info, err, sizeof(err)) != 0)
				bad++;
			s.events += info.events;
			s.discarded += info.discarded;
		}
		rt_vw_free_names(streams, ns > 0 ? ns : 0);
		for (int d = 0; d < 64; d++)
			if (s.devices & (1ull << d))
				len += snprintf(devs + len, sizeof(devs) - (size_t)len, "%s%d", len ? "," : "", d);
		if (s.signo)
			snprintf(how, sizeof(how), "killed by signal %d%s%s", s.signo,
				 s.died_in[0] ? " in " : "", s.died_in);
		else if (s.exit_seen && s.exit_status >= 0)
			snprintf(how, sizeof(how), "exit %d", s.exit_status);
		else if (s.exit_seen)
			snprintf(how, sizeof(how), "returned from main");
		else if (s.died_in[0])
			snprintf(how, sizeof(how), "no exit recorded, last call %s never returned", s.died_in);
		else if (s.discarded)
			snprintf(how, sizeof(how), "no exit recorded (trace capped)");
		else
			snprintf(how, sizeof(how), "no exit recorded (killed?)");
		char who[32];

		if (meta.rank >= 0)
			snprintf(who, sizeof(who), "rank %d", meta.rank);
		else
			snprintf(who, sizeof(who), "%s", ranks[r]);
		printf("  %-12s %-10s %8llu events  device%s %-8s %s", who, meta.hostname,
		       (unsigned long long)s.events, strchr(devs, ',') ? "s" : " ", devs[0] ? devs : "-",
		       how);
		if (s.discarded)
			printf("  (%llu events discarded: size cap)", (unsigned long long)s.discarded);
		if (err[0])
			printf("\n    damaged: %s", err);
		printf("\n");
	}
	rt_vw_free_names(ranks, n);
	return bad;
}
