/* SPDX-License-Identifier: MIT */
/* cmd_view.c - `ranktrace view`: its options, the loads (once, or each
 * --interval with --watch), the exit status. What it prints is the render
 * room's (viewer/render/view_text.c, view_json.c: schema ranktrace.view/1,
 * docs/json.md), from one report of the loaded trace. */
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

/* One load and one screen; *running gets the ranks still alive. */
static int view_once(const char *dir, uint64_t stall_ns, int only, bool json, bool watch,
		     bool all, int *running)
{
	struct rt_vw_trace *t = rt_cli_load_stall("view", dir, stall_ns);
	struct rt_vw_report rp;
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
	if (rt_vw_report_make(t, only, &rp) != 0) {
		fprintf(stderr, "ranktrace view: out of memory\n");
		rt_vw_free(t);
		return 1;
	}
	rc = json ? rt_vw_view_json(stdout, &rp) : rt_vw_view_text(stdout, &rp, all);
	rc = rt_cli_printed("view", rc) ?: rt_cli_trace_status(t);
	*running = t->running;
	rt_vw_report_free(&rp);
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
		   "                      [--watch [--interval SECONDS]] [--jobs N] [--attempt N]\n\n"
		   "One screen per trace: a row per rank (host, devices used, expected device\n"
		   "(LOCAL_RANK), peak device memory, allocations, collectives, FSDP root\n"
		   "forwards, how complete its trace is, how it ended or what it is doing), the\n"
		   "communicators (each one's id, members as global ranks, how it was made:\n"
		   "init, split with parent, color and keys, shrink; its state; the collectives\n"
		   "and Send/Recv made on it) and the findings as a diagnosis: most important\n"
		   "first, each an error, a warning or a note, the same finding on several ranks\n"
		   "said once, and what to do next.\n\n"
		   "  --rank N          only rank N's row, communicators and findings (and those\n"
		   "                    about several ranks)\n"
		   "  --all             also the notes (context that is not a problem: parameters\n"
		   "                    that arrived on meta and were materialised, ...) and every\n"
		   "                    communicator (else the first 16)\n"
		   "  --json            schema ranktrace.view/1 (docs/json.md): every finding with\n"
		   "                    its level, the collapsed \"diagnosis\", every communicator\n"
		   "  --stall DURATION  a live job none of whose calls returned for this long is\n"
		   "                    hung (default 30s; 500ms, 2m, 1h)\n"
		   "  --watch           refresh every --interval seconds (default 2) until every\n"
		   "                    rank has ended: a job's `top` (started before the job,\n"
		   "                    it waits for the first rank directory)\n"
		   "  --jobs N          read ranks on N threads (default: one per core, or\n"
		   "                    RANKTRACE_JOBS); the output does not depend on N\n"
		   "  --attempt N       the attempt of an elastic job to read (torchrun --max-restarts:\n"
		   "                    DIR/attempt-N/; 0 is the first); default: the last, the\n"
		   "                    earlier ones' endings said among the findings\n\n"
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
		{ "attempt", required_argument, NULL, 'A' },
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
		case 'A':
			if (rt_cli_parse_attempt("view", optarg) != 0)
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
