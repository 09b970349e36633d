/* SPDX-License-Identifier: MIT */
/* cmd_view.c - `ranktrace view`: a row per rank and the findings, as text or
 * as JSON (schema ranktrace.view/1, docs/json.md). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void print_view_text(const struct rt_vw_trace *t, int only_rank)
{
	printf("trace %s: %d rank%s, %llu events, verdict: %s\n\n", t->dir, t->nranks,
	       t->nranks == 1 ? "" : "s", (unsigned long long)t->events,
	       rt_vw_verdict_names[t->verdict]);
	printf("%-6s %-10s %-8s %-4s %10s %7s %-28s %5s %-16s\n", "rank", "host", "devices", "exp",
	       "peak mem", "allocs", "collectives (AG/RS/AR/BC)", "fwd", "end");
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		char devs[64], peak[32], end[80], colls[64], exp[8];

		if (only_rank >= 0 && r->meta.rank != only_rank)
			continue;
		rt_cli_devices_str(r->devices_used, devs, sizeof(devs));
		rt_cli_human_bytes(peak, sizeof(peak), rt_cli_rank_peak(r));
		rt_cli_rank_end(r, end, sizeof(end));
		snprintf(colls, sizeof(colls), "%llu/%llu/%llu/%llu",
			 (unsigned long long)r->colls[RT_CK_AllGather],
			 (unsigned long long)r->colls[RT_CK_ReduceScatter],
			 (unsigned long long)r->colls[RT_CK_AllReduce],
			 (unsigned long long)r->colls[RT_CK_Broadcast]);
		if (r->meta.local_rank >= 0)
			snprintf(exp, sizeof(exp), "%d", r->meta.local_rank);
		else
			snprintf(exp, sizeof(exp), "-");
		printf("%-6d %-10.10s %-8s %-4s %10s %7llu %-28s %5llu %-16s\n", r->meta.rank,
		       r->meta.hostname, devs, exp, peak, (unsigned long long)r->allocs, colls,
		       (unsigned long long)r->fsdp_root_forwards, end);
	}
	printf("\nfindings:\n");
	if (!t->nfindings)
		printf("  none: every rank ended cleanly, collectives matched across ranks\n");
	for (int i = 0; i < t->nfindings; i++)
		printf("  %d. %s\n", i + 1, t->findings[i].text);
}

/* JSON schema "ranktrace.view/1": documented in docs/json.md. */
static void print_view_json(const struct rt_vw_trace *t, int only_rank)
{
	printf("{\"schema\": \"ranktrace.view/1\", \"dir\": ");
	rt_cli_json_str(stdout, t->dir);
	printf(", \"verdict\": \"%s\", \"events\": %llu, \"ranks\": [",
	       rt_vw_verdict_names[t->verdict], (unsigned long long)t->events);
	for (int i = 0, first = 1; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		char end[80];

		if (only_rank >= 0 && r->meta.rank != only_rank)
			continue;
		rt_cli_rank_end(r, end, sizeof(end));
		printf("%s\n  {\"rank\": %d, \"dir\": ", first ? "" : ",", r->meta.rank);
		first = 0;
		rt_cli_json_str(stdout, r->name);
		printf(", \"host\": ");
		rt_cli_json_str(stdout, r->meta.hostname);
		printf(", \"local_rank\": %d, \"rank_source\": ", r->meta.local_rank);
		rt_cli_json_str(stdout, r->meta.rank_source);
		printf(", \"events\": %llu, \"discarded\": %llu, \"devices\": [",
		       (unsigned long long)r->events, (unsigned long long)r->discarded);
		for (int d = 0, c = 0; d < RT_VW_MAX_DEV; d++)
			if (r->devices_used & (1ull << d))
				printf("%s%d", c++ ? ", " : "", d);
		printf("], \"peak_device_bytes\": {");
		for (int d = 0, c = 0; d < RT_VW_MAX_DEV; d++)
			if (r->dev_peak[d])
				printf("%s\"%d\": %llu", c++ ? ", " : "", d, (unsigned long long)r->dev_peak[d]);
		printf("}, \"device_bytes\": {");
		for (int d = 0, c = 0; d < RT_VW_MAX_DEV; d++)
			if (r->dev_bytes[d])
				printf("%s\"%d\": %llu", c++ ? ", " : "", d, (unsigned long long)r->dev_bytes[d]);
		printf("}, \"driver\": {\"allocations\": %llu, \"bytes\": %llu, \"vmm_handles\": %llu, "
		       "\"vmm_maps\": %llu, \"seen_twice\": %llu", (unsigned long long)r->drv_allocs,
		       (unsigned long long)r->drv_bytes, (unsigned long long)r->vmm_handles,
		       (unsigned long long)r->vmm_maps, (unsigned long long)r->dup_allocs);
		printf("}, \"allocations\": %llu, \"frees\": %llu, \"failed_allocations\": %llu, "
		       "\"collectives\": {", (unsigned long long)r->allocs, (unsigned long long)r->frees,
		       (unsigned long long)r->failed_allocs);
		for (int k = 0; k < RT_CK_COUNT; k++)
			printf("%s\"%s\": %llu", k ? ", " : "", rt_coll_names[k],
			       (unsigned long long)r->colls[k]);
		printf("}, \"streams_created\": %llu, \"errors\": %llu, \"fsdp_root_forwards\": %llu, "
		       "\"params\": {\"reported\": %llu, \"storage_freed\": %llu, \"meta\": %llu, "
		       "\"ever_meta\": %llu, \"distinct\": %u}, "
		       "\"faults\": %llu, \"end\": ",
		       (unsigned long long)r->streams_created, (unsigned long long)r->errors,
		       (unsigned long long)r->fsdp_root_forwards, (unsigned long long)r->params_reported,
		       (unsigned long long)r->params_freed, (unsigned long long)r->params_meta,
		       (unsigned long long)r->params_ever_meta, r->nparams, (unsigned long long)r->faults);
		rt_cli_json_str(stdout, end);
		printf(", \"damaged\": ");
		if (r->damaged[0])
			rt_cli_json_str(stdout, r->damaged);
		else
			printf("null");
		printf("}");
	}
	printf("\n], \"findings\": [");
	for (int i = 0; i < t->nfindings; i++) {
		printf("%s\n  {\"signature\": \"%s\", \"text\": ", i ? "," : "",
		       rt_vw_verdict_names[t->findings[i].signature]);
		rt_cli_json_str(stdout, t->findings[i].text);
		printf("}");
	}
	printf("\n]}\n");
}

int rt_cli_cmd_view(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rank", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, only = -1, rc;
	bool json = false;
	struct rt_vw_trace *t;

	while ((c = getopt_long(argc, argv, "r:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			only = rt_cli_parse_rank(optarg);
			if (only < 0) {
				fprintf(stderr, "ranktrace view: --rank %s: expected a rank number "
					"(0 to %d)\n", optarg, RT_CLI_MAX_RANK);
				return EXIT_USAGE;
			}
			break;
		case 'j': json = true; break;
		case 'h':
			printf("usage: ranktrace view DIR [--rank N] [--json]\n\n"
			       "One screen per trace: a row per rank (host, devices used, expected device\n"
			       "(LOCAL_RANK), peak device memory, allocations, collectives, FSDP root\n"
			       "forwards, how it ended) and the findings, most important first.\n"
			       "--json prints the same as schema ranktrace.view/1 (docs/json.md).\n"
			       "Exit status: 0, or 3 when a rank's files are damaged (the others are\n"
			       "still analysed), 2 for a usage error.\n");
			return 0;
		default: return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ranktrace view: expected one trace directory\n"
			"usage: ranktrace view DIR [--rank N] [--json]\n");
		return EXIT_USAGE;
	}
	rc = rt_cli_check_dir("view", argv[optind]);
	if (rc)
		return rc;
	t = rt_cli_load("view", argv[optind]);
	if (!t)
		return RT_VW_ERR_CORRUPT;
	if (only >= 0 && rt_vw_rank_index(t, only) < 0) {
		fprintf(stderr, "ranktrace view: no rank %d in %s\n", only, argv[optind]);
		rt_vw_free(t);
		return EXIT_USAGE;
	}
	if (json)
		print_view_json(t, only);
	else
		print_view_text(t, only);
	rc = t->damaged ? RT_VW_ERR_CORRUPT : 0;
	rt_vw_free(t);
	return rc;
}
