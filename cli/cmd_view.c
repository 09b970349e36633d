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
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "escape.h"

/* "next: ..." with this trace's directory in place of DIR. */
static void print_advice(const char *advice, const char *dir)
{
	printf("     next: ");
	for (const char *p = advice; *p; p++) {
		if (!strncmp(p, "DIR", 3) && (p == advice || p[-1] == ' ')) {
			rt_esc_text_file(stdout, dir);
			p += 2;
		} else {
			putchar(*p);
		}
	}
	putchar('\n');
}

/* The findings as a diagnosis (viewer/render/diagnosis.c): levels, ranks collapsed,
 * notes hidden unless all, what to do next under the first. */
static void print_findings(const struct rt_vw_trace *t, int only_rank, bool all)
{
	struct rt_vw_diag *g;
	int hidden, n = rt_vw_diagnose(t, only_rank, all, &g, &hidden);
	const char *next = n > 0 ? rt_vw_diag_advice(t, g, n) : NULL;

	printf("\nfindings:\n");
	for (int k = 0; k < n; k++) {
		printf("  %d. %s: %s\n", k + 1, rt_vw_level_names[g[k].level], rt_vw_esc(g[k].text));
		if (next && t->findings[g[k].first].advice == next) {
			print_advice(next, t->dir);
			next = NULL;
		}
	}
	if (n <= 0)
		printf("  none%s\n", t->verdict == RT_V_HEALTHY ? ": every rank ended cleanly, "
		       "collectives matched across ranks" : "");
	if (hidden)
		printf("  (%d note%s not shown: --all)\n", hidden, hidden == 1 ? "" : "s");
	free(g);
}

/* The kinds `ranktrace view` shows, in their view column's order (nccl_api.def):
 * "AG/RS/AR/BC" from labels, or "1/2/3/4" from rank r's counts (r NULL: labels). */
static void colls_column(char *out, size_t n, const struct rt_vw_rank *r)
{
	size_t k = 0;

	out[0] = '\0';
	for (int pos = 1; pos <= RT_CK_COUNT; pos++)
		for (int c = 0; c < RT_CK_COUNT; c++) {
			if (rt_coll_info[c].view != pos || k >= n)
				continue;
			if (r)
				k += (size_t)snprintf(out + k, n - k, "%s%llu", k ? "/" : "",
						      (unsigned long long)r->colls[c]);
			else
				k += (size_t)snprintf(out + k, n - k, "%s%s", k ? "/" : "",
						      rt_coll_info[c].label);
		}
}

static void print_view_text(const struct rt_vw_trace *t, int only_rank, bool all)
{
	char labels[48], head[64];

	printf("trace %s: %d rank%s, %llu events, verdict: %s\n", rt_vw_esc(t->dir), t->nranks,
	       t->nranks == 1 ? "" : "s", (unsigned long long)t->events,
	       rt_vw_verdict_names[t->verdict]);
	printf("completeness: %s%s%s%s\n\n", rt_vw_completeness_names[t->completeness],
	       t->inconclusive[0] ? " (" : "", rt_vw_esc(t->inconclusive), t->inconclusive[0] ? ")" : "");
	colls_column(labels, sizeof(labels), NULL);
	snprintf(head, sizeof(head), "collectives (%s)", labels);
	printf("%-6s %-10s %-8s %-4s %10s %7s %-28s %5s %-9s %-16s\n", "rank", "host", "devices",
	       "exp", "peak mem", "allocs", head, "fwd", "trace", "end");
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		char devs[64], peak[32], end[160], colls[64], exp[8];

		if (only_rank >= 0 && r->meta.rank != only_rank)
			continue;
		rt_vw_devices_str(r->devices_used, devs, sizeof(devs));
		rt_cli_human_bytes(peak, sizeof(peak), rt_cli_rank_peak(r));
		rt_vw_rank_end(r, end, sizeof(end));
		colls_column(colls, sizeof(colls), r);
		if (r->meta.local_rank >= 0)
			snprintf(exp, sizeof(exp), "%d", r->meta.local_rank);
		else
			snprintf(exp, sizeof(exp), "-");
		printf("%-6d %-10.10s %-8s %-4s %10s %7llu %-28s %5llu %-9s %-16s\n", r->meta.rank,
		       rt_vw_esc(r->meta.hostname), devs, exp, peak, (unsigned long long)r->allocs, colls,
		       (unsigned long long)r->fsdp_root_forwards,
		       rt_vw_completeness_names[r->completeness], end);
	}
	for (int k = 0; k < t->nmissing; k++)
		if (only_rank < 0 || t->missing[k] == only_rank)
			printf("%-6d %-10s %-8s %-4s %10s %7s %-28s %5s %-9s %-16s\n", t->missing[k], "-",
			       "-", "-", "-", "-", "-", "-", "missing", "no directory");
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].nparams) { /* the probe reported parameters: where they live */
			printf("\nparameters (`ranktrace params` for each one):\n");
			rt_cli_print_placement(t, only_rank, "  ");
			break;
		}
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		char ring[32];

		if (!r->meta.ring_bytes || (only_rank >= 0 && r->meta.rank != only_rank))
			continue;
		rt_cli_human_bytes(ring, sizeof(ring), r->meta.ring_bytes);
		printf("rank %d: flight recorder (each thread kept its last %s): the trace begins "
		       "%.3f s before its last event; what came before was overwritten\n",
		       r->meta.rank, ring, (double)(r->last_ts - r->first_ts) / 1e9);
	}
	rt_vw_device_text(stdout, t, only_rank);
	print_findings(t, only_rank, all);
}

/* A rank's completeness, state, open calls and idle time. */
static void print_rank_live_json(const struct rt_vw_rank *r)
{
	printf(", \"completeness\": \"%s\", \"incomplete\": ",
	       rt_vw_completeness_names[r->completeness]);
	if (r->incomplete[0])
		rt_cli_json_str(stdout, r->incomplete);
	else
		printf("null");
	printf(", \"state\": \"%s\", \"idle_s\": ", rt_vw_state_names[r->state]);
	if (r->idle_s >= 0)
		printf("%.3f", r->idle_s);
	else
		printf("null");
	printf(", \"open_calls\": [");
	for (int k = 0; k < r->nopen; k++) {
		const struct rt_vw_open_call *o = &r->open[k];

		printf("%s{\"call\": \"%s\", \"tid\": %u, ", k ? ", " : "", rt_events[o->id].name,
		       o->tid);
		if (o->comm_id)
			printf("\"comm\": \"%016llx\", \"seq\": %u, ", (unsigned long long)o->comm_id,
			       o->seq);
		if (o->age_s >= 0)
			printf("\"age_s\": %.3f}", o->age_s);
		else
			printf("\"age_s\": null}");
	}
	printf("]");
}

/* "diagnosis": the findings as text view shows them with --all (collapsed). */
static void print_diagnosis_json(const struct rt_vw_trace *t, int only_rank)
{
	struct rt_vw_diag *g;
	int hidden, n = rt_vw_diagnose(t, only_rank, true, &g, &hidden);

	printf("\n], \"diagnosis\": [");
	for (int k = 0; k < n; k++) {
		printf("%s\n  {\"level\": \"%s\", \"text\": ", k ? "," : "",
		       rt_vw_level_names[g[k].level]);
		rt_cli_json_str(stdout, g[k].text);
		printf(", \"ranks\": [");
		for (int i = 0; i < g[k].nranks; i++)
			printf("%s%d", i ? ", " : "", g[k].ranks[i]);
		printf("], \"finding\": %d}", g[k].first);
	}
	printf("\n]");
	free(g);
}

/* A finding's ranks (the first RT_VW_FINDING_RANKS it names), and the
 * collective it is about (the matcher's), or nulls. */
static void print_finding_where_json(const struct rt_vw_finding *f)
{
	printf(", \"ranks\": [");
	for (int k = 0; k < f->nranks && k < RT_VW_FINDING_RANKS; k++)
		printf("%s%d", k ? ", " : "", f->ranks[k]);
	if (f->comm)
		printf("], \"comm\": \"%016llx\", \"seq\": %u", (unsigned long long)f->comm, f->seq);
	else
		printf("], \"comm\": null, \"seq\": null");
}

/* "findings": every finding with its level, detector, advice, ranks and
 * collective. */
static void print_findings_json(const struct rt_vw_trace *t, int only_rank)
{
	printf("\n], \"findings\": [");
	for (int i = 0, n = 0; i < t->nfindings; i++) {
		char text[sizeof(t->findings[i].text)];

		if (only_rank >= 0 && t->findings[i].rank >= 0 && t->findings[i].rank != only_rank)
			continue;
		rt_vw_finding_text(&t->findings[i], text, sizeof(text));
		printf("%s\n  {\"signature\": \"%s\", \"rank\": %d, \"level\": \"%s\", \"id\": \"%s\", "
		       "\"text\": ", n++ ? "," : "", rt_vw_verdict_names[t->findings[i].signature],
		       t->findings[i].rank, rt_vw_level_names[t->findings[i].level],
		       t->findings[i].id ? t->findings[i].id : "");
		rt_cli_json_str(stdout, text);
		printf(", \"advice\": ");
		if (t->findings[i].advice)
			rt_cli_json_str(stdout, t->findings[i].advice);
		else
			printf("null");
		print_finding_where_json(&t->findings[i]);
		printf("}");
	}
}

/* The probe's evidence of a skipped FSDP root and of teardown (docs/json.md). */
static void print_rank_probe_json(const struct rt_vw_rank *r)
{
	printf(", \"unwrapped\": {\"calls\": %llu, \"root_forwards_before\": %llu, \"sites\": [",
	       (unsigned long long)r->unwrapped_calls,
	       (unsigned long long)r->root_forwards_before_unwrapped);
	for (int i = 0; i < r->nunwrapped; i++) {
		printf("%s{\"module\": ", i ? ", " : "");
		rt_cli_json_str(stdout, r->unwrapped[i].module);
		printf(", \"caller\": ");
		rt_cli_json_str(stdout, r->unwrapped[i].caller);
		printf(", \"calls\": %llu}", (unsigned long long)r->unwrapped[i].calls);
	}
	printf("]}, \"teardown\": {\"began\": %s, \"crashed\": %s}",
	       r->teardown_how == 1 ? "\"destroy_process_group\"" :
	       r->teardown_how == 2 ? "\"exit\"" : "null", r->teardown_crash ? "true" : "false");
}

/* JSON schema "ranktrace.view/1": documented in docs/json.md. */
/* One rank's object of view --json (docs/json.md); first: no comma. */
static void print_rank_json(const struct rt_vw_rank *r, bool first)
{
	char end[160];

	rt_vw_rank_end(r, end, sizeof(end));
	printf("%s\n  {\"rank\": %d, \"dir\": ", first ? "" : ",", r->meta.rank);
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
	printf("}, \"cupti\": {\"state\": \"%s\", \"detail\": ",
	       r->cupti == 1 ? "active" : r->cupti == 2 ? "unavailable" : "off");
	rt_cli_json_str(stdout, r->cupti_detail);
	printf(", \"memory_records\": %llu, \"allocated_bytes\": %llu",
	       (unsigned long long)r->cupti_records, (unsigned long long)r->cupti_alloc_bytes);
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
	printf(", \"trace_stop\": ");
	if (r->stopped)
		printf("{\"reason\": \"%s\", \"at_event\": %llu}",
		       rt_stop_word(r->stop_reason) ?: "unknown",
		       (unsigned long long)r->stop_events);
	else
		printf("null");
	printf(", \"ring_bytes\": %llu", (unsigned long long)r->meta.ring_bytes);
	printf(", \"damaged\": ");
	if (r->damaged[0])
		rt_cli_json_str(stdout, r->damaged);
	else
		printf("null");
	print_rank_live_json(r);
	print_rank_probe_json(r);
	printf("}");
}

static void print_view_json(const struct rt_vw_trace *t, int only_rank)
{
	printf("{\"schema\": \"ranktrace.view/1\", \"dir\": ");
	rt_cli_json_str(stdout, t->dir);
	printf(", \"verdict\": \"%s\", \"events\": %llu, \"completeness\": \"%s\", "
	       "\"inconclusive\": ", rt_vw_verdict_names[t->verdict], (unsigned long long)t->events,
	       rt_vw_completeness_names[t->completeness]);
	if (t->inconclusive[0])
		rt_cli_json_str(stdout, t->inconclusive);
	else
		printf("null");
	printf(", \"world_size\": %d, \"missing_ranks\": [", t->world_size);
	for (int k = 0; k < t->nmissing; k++)
		printf("%s%d", k ? ", " : "", t->missing[k]);
	printf("], \"duplicate_ranks\": %d, \"running\": %d, \"hung\": %s, \"stall_s\": %.3f, "
	       "\"laggard\": ", t->duplicates, t->running, t->hung ? "true" : "false",
	       (double)t->stall_ns / 1e9);
	if (t->laggard[0])
		rt_cli_json_str(stdout, t->laggard);
	else
		printf("null");
	rt_vw_device_json(stdout, t);
	printf(", \"ranks\": [");
	for (int i = 0, first = 1; i < t->nranks; i++) {
		if (only_rank >= 0 && t->ranks[i].meta.rank != only_rank)
			continue;
		print_rank_json(&t->ranks[i], first);
		first = 0;
	}
	print_findings_json(t, only_rank);
	print_diagnosis_json(t, only_rank);
	printf("}\n");
}

/* One load and one screen; *running gets the ranks still alive. */
static int view_once(const char *dir, uint64_t stall_ns, int only, bool json, bool watch,
		     bool all, int *running)
{
	struct rt_vw_trace *t = rt_cli_load_stall("view", dir, stall_ns);
	int rc;

	*running = 0;
	if (!t)
		return RT_VW_ERR_CORRUPT;
	if (only >= 0 && rt_vw_rank_index(t, only) < 0) {
		bool missing = false;

		for (int k = 0; k < t->nmissing; k++)
			missing |= t->missing[k] == only;
		if (!missing) {
			fprintf(stderr, "ranktrace view: no rank %d in %s\n", only, rt_vw_esc(dir));
			rt_vw_free(t);
			return EXIT_USAGE;
		}
	}
	if (watch && !json && isatty(STDOUT_FILENO))
		printf("\033[H\033[2J"); /* a terminal: redraw in place, as top does */
	if (json)
		print_view_json(t, only);
	else
		print_view_text(t, only, all);
	*running = t->running;
	rc = rt_cli_trace_status(t);
	rt_vw_free(t);
	return rc;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void usage_view(FILE *f)
{
	fprintf(f, "usage: ranktrace view DIR [--rank N] [--all] [--json] [--stall DURATION]\n"
		   "                      [--watch [--interval SECONDS]] [--jobs N]\n\n"
		   "One screen per trace: a row per rank (host, devices used, expected device\n"
		   "(LOCAL_RANK), peak device memory, allocations, collectives, FSDP root\n"
		   "forwards, how complete its trace is, how it ended or what it is doing) and\n"
		   "the findings as a diagnosis: most important first, each an error, a warning\n"
		   "or a note, the same finding on several ranks said once, and what to do next.\n\n"
		   "  --rank N          only rank N's row and findings (and those about several ranks)\n"
		   "  --all             also the notes (context that is not a problem: parameters\n"
		   "                    that arrived on meta and were materialised, ...)\n"
		   "  --json            schema ranktrace.view/1 (docs/json.md): every finding with\n"
		   "                    its level, and the collapsed \"diagnosis\"\n"
		   "  --stall DURATION  a live job none of whose calls returned for this long is\n"
		   "                    hung (default 30s; 500ms, 2m, 1h)\n"
		   "  --watch           refresh every --interval seconds (default 2) until every\n"
		   "                    rank has ended: a job's `top` (started before the job,\n"
		   "                    it waits for the first rank directory)\n"
		   "  --jobs N          read ranks on N threads (default: one per core, or\n"
		   "                    RANKTRACE_JOBS); the output does not depend on N\n\n"
		   "A rank's trace is complete, capped (tracing stopped early: size cap, disk\n"
		   "full), damaged, missing (the world size says it exists) or live (its process\n"
		   "still runs: it holds a lock on its stream files).\n"
		   "Exit status: 0; 3 when a rank's files are damaged, a rank is missing or two\n"
		   "directories claim one rank (the others are still analysed); 2 for a usage\n"
		   "error (a missing DIR included).\n");
}

/* view once, or with --watch until every rank has ended (waiting for the
 * job's first rank directory when started before it). */
static int view_loop(const char *dir, uint64_t stall_ns, uint64_t interval_ns, int only, bool json,
		     bool watch, bool all)
{
	bool retried = false;
	int rc = 0, running = 0;

	for (;;) {
		char **names;
		int nr = rt_vw_list_ranks(dir, &names);

		rt_vw_free_names(names, nr > 0 ? nr : 0);
		if (watch && nr <= 0) { /* started before the job: wait for its first rank */
			printf("waiting for rank traces in %s ...\n", rt_vw_esc(dir));
			fflush(stdout);
			sleep_ns(interval_ns);
			continue;
		}
		rc = view_once(dir, stall_ns, only, json, watch, all, &running);
		if (watch && rc == RT_VW_ERR_CORRUPT && !running && !retried) {
			/* a rank being born (its metadata half written) reads as damaged:
			 * look once more before calling the trace damaged */
			retried = true;
			sleep_ns(interval_ns);
			continue;
		}
		retried = false;
		if (!watch || rc == EXIT_USAGE || !running)
			break;
		printf("\n(every %.1f s until every rank has ended; Ctrl-C stops)\n",
		       (double)interval_ns / 1e9);
		fflush(stdout);
		sleep_ns(interval_ns);
		if (!isatty(STDOUT_FILENO))
			printf("\n");
	}
	return rc;
}

int rt_cli_cmd_view(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rank", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "all", no_argument, NULL, 'a' },
		{ "stall", required_argument, NULL, 's' },
		{ "watch", no_argument, NULL, 'w' },
		{ "interval", required_argument, NULL, 'i' },
		{ "jobs", required_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, only = -1, rc;
	bool json = false, watch = false, all = false;
	uint64_t stall_ns = 0, interval_ns = 2000000000ull;

	while ((c = getopt_long(argc, argv, "r:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			only = rt_cli_parse_rank("view", optarg);
			if (only < 0)
				return EXIT_USAGE;
			break;
		case 'j': json = true; break;
		case 'a': all = true; break;
		case 'w': watch = true; break;
		case 's':
		case 'i':
			if (rt_cli_parse_duration("view", c == 's' ? "stall" : "interval", optarg,
						  c == 's' ? &stall_ns : &interval_ns) != 0)
				return EXIT_USAGE;
			break;
		case 'J':
			if (rt_cli_set_jobs("view", optarg) != 0)
				return EXIT_USAGE;
			break;
		case 'h': usage_view(stdout); return 0;
		default: usage_view(stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ranktrace view: expected one trace directory\n");
		usage_view(stderr);
		return EXIT_USAGE;
	}
	rc = rt_cli_check_dir("view", argv[optind]);
	if (rc)
		return rc;
	return view_loop(argv[optind], stall_ns, interval_ns, only, json, watch, all);
}
