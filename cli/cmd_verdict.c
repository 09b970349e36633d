/* SPDX-License-Identifier: MIT */
/* cmd_verdict.c - `ranktrace verdict`: one word and an exit code for
 * `git bisect run` (0 healthy, 1 bad, 125 skip; a usage error 128, which
 * stops a bisection: git counts 2 as bad). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Not 2: `git bisect run` counts 1-127 (but 125) as bad, and stops on 128+. */
#define EXIT_VERDICT_USAGE 128

static int parse_verdict(const char *s)
{
	for (int v = 0; v < RT_V_COUNT; v++)
		if (!strcmp(s, rt_vw_verdict_names[v]))
			return v;
	return -1;
}

static void usage_verdict(FILE *f)
{
	fprintf(f, "usage: ranktrace verdict DIR [--bad SIGNATURE] [--stall DURATION]\n\n"
		   "Prints one word: healthy, skipped-fsdp-root, device-misplacement,\n"
		   "collective-mismatch, crashed, hung or inconclusive (why goes to stderr).\n"
		   "Exit status, for `git bisect run`: 0 healthy; 1 the signature asked for with\n"
		   "--bad (by default any failure); 125 inconclusive, or another failure than\n"
		   "--bad; 128 a usage error (a typo in --bad): git bisect run stops on 128 or\n"
		   "more, where 2 would have counted the commit as bad.\n\n"
		   "A verdict never guesses. It is inconclusive (125, with the reason) whenever\n"
		   "the evidence for a signature is incomplete: a rank's trace damaged, capped\n"
		   "(tracing stopped early) or missing (the world size says it exists), two\n"
		   "directories claiming one rank, or a job still running but not stalled. A\n"
		   "failure shown by complete evidence is still named despite damage elsewhere.\n"
		   "hung: the job's ranks are alive and none of their calls returned for\n"
		   "--stall (default 30s); stderr names each rank's open call and its age,\n"
		   "which rank never entered the collective the others wait in, and a rank\n"
		   "whose process is stopped (SIGSTOP, Ctrl-Z, a debugger; seen on the host\n"
		   "that ran it).\n"
		   "An interrupted job (every rank stopped by SIGINT, SIGTERM or SIGHUP, as a\n"
		   "launcher does when run gets Ctrl-C or a scheduler's stop) is inconclusive:\n"
		   "its ranks stopped a collective apart, which is no mismatch and no crash;\n"
		   "it is hung if, when it was stopped, no call had returned for --stall.\n");
}

/* How each rank ended, ranks that ended alike on one line ("ranks 0-3
 * exited: exit 1"): a thousand ranks killed by the launcher read as one.
 * Ranks marked in named had their ending said already. */
static void print_endings(const struct rt_vw_trace *t, const bool *named)
{
	char (*how)[128] = calloc((size_t)t->nranks, sizeof(*how));
	int *same = calloc((size_t)t->nranks, sizeof(*same));
	bool *done = calloc((size_t)t->nranks, sizeof(*done));
	char list[256];

	for (int i = 0; how && same && done && i < t->nranks; i++) {
		char end[96];

		done[i] = named && named[i];
		rt_vw_rank_end(&t->ranks[i], end, sizeof(end));
		snprintf(how[i], sizeof(how[i]), "%s: %s", rt_vw_state_names[t->ranks[i].state], end);
	}
	for (int i = 0; how && same && done && i < t->nranks; i++) {
		int n = 0;

		if (done[i])
			continue;
		for (int j = i; j < t->nranks; j++)
			if (!done[j] && !strcmp(how[j], how[i])) {
				done[j] = true;
				same[n++] = t->ranks[j].meta.rank;
			}
		rt_vw_rank_list(same, n, list, sizeof(list));
		fprintf(stderr, "ranktrace verdict: rank%s %s %s\n", n > 1 ? "s" : "", list, how[i]);
	}
	free(how);
	free(same);
	free(done);
}

/* Why: the findings that decided the verdict, the same finding on several
 * ranks said once ("ranks 0-1 exited with status 1"). A crash's finding
 * names those ranks' endings: they are marked in named, not said again. */
static void print_why(const struct rt_vw_trace *t, bool *named)
{
	struct rt_vw_diag *g;
	int hidden, n = rt_vw_diagnose(t, -1, true, &g, &hidden);

	for (int k = 0; k < n; k++) {
		if (t->findings[g[k].first].signature != t->verdict)
			continue;
		fprintf(stderr, "ranktrace verdict: %s\n", rt_vw_esc(g[k].text));
		for (int j = 0; named && t->verdict == RT_V_CRASHED && j < g[k].nranks; j++) {
			int i = rt_vw_rank_index(t, g[k].ranks[j]);

			if (i >= 0)
				named[i] = true;
		}
		break;
	}
	free(g);
}

int rt_cli_cmd_verdict(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bad", required_argument, NULL, 'b' },
		{ "stall", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, bad = -1, rc;
	uint64_t stall_ns = 0;
	struct rt_vw_trace *t;

	while ((c = getopt_long(argc, argv, "b:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			bad = parse_verdict(optarg);
			if (bad < 0 || bad == RT_V_HEALTHY || bad == RT_V_INCONCLUSIVE) {
				fprintf(stderr, "ranktrace verdict: --bad %s: expected one of "
					"skipped-fsdp-root, device-misplacement, collective-mismatch, crashed, "
					"hung\n", optarg);
				return EXIT_VERDICT_USAGE;
			}
			break;
		case 's':
			if (rt_cli_parse_duration("verdict", "stall", optarg, &stall_ns) != 0)
				return EXIT_VERDICT_USAGE;
			break;
		case 'h': usage_verdict(stdout); return 0;
		default: usage_verdict(stderr); return EXIT_VERDICT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ranktrace verdict: expected one trace directory\n");
		usage_verdict(stderr);
		return EXIT_VERDICT_USAGE;
	}
	if (rt_cli_check_dir("verdict", argv[optind]) != 0) {
		printf("inconclusive\n"); /* no trace here: nothing to judge, skip */
		return 125;
	}
	t = rt_cli_load_stall("verdict", argv[optind], stall_ns);
	if (!t) {
		printf("inconclusive\n");
		fprintf(stderr, "ranktrace verdict: inconclusive: no readable rank trace\n");
		return 125;
	}
	printf("%s\n", rt_vw_verdict_names[t->verdict]);
	if (t->verdict == RT_V_INCONCLUSIVE)
		fprintf(stderr, "ranktrace verdict: inconclusive: %s\n", rt_vw_esc(t->inconclusive));
	for (int i = 0; t->verdict == RT_V_HUNG && i < t->nfindings; i++)
		if (t->findings[i].signature == RT_V_HUNG) {
			char text[sizeof(t->findings[i].text)];

			rt_vw_finding_text(&t->findings[i], text, sizeof(text));
			fprintf(stderr, "ranktrace verdict: %s\n", rt_vw_esc(text));
		}
	if (t->interrupted && t->verdict == RT_V_INCONCLUSIVE)
		print_endings(t, NULL);
	if (t->verdict != RT_V_HEALTHY && t->verdict != RT_V_INCONCLUSIVE &&
	    t->verdict != RT_V_HUNG) {
		/* why, and how each rank ended: each ending once */
		bool *named = calloc((size_t)t->nranks + 1, sizeof(*named));

		print_why(t, named);
		print_endings(t, named);
		free(named);
	}
	if (t->verdict == RT_V_HEALTHY)
		rc = 0;
	else if (t->verdict == RT_V_INCONCLUSIVE)
		rc = 125;
	else
		rc = bad < 0 || bad == (int)t->verdict ? 1 : 125;
	rt_vw_free(t);
	return rc;
}
