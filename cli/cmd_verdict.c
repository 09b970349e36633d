/* SPDX-License-Identifier: MIT */
/* cmd_verdict.c - `ranktrace verdict`: one word and an exit code for
 * `git bisect run` (0 healthy, 1 bad, 125 skip; a usage error 128, which
 * stops a bisection: git counts 2 as bad). Why goes to stderr, said by the
 * render room (viewer/render/verdict_text.c). */
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
	struct rt_vw_report rp;

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
	fflush(stdout); /* the word before why, where both go to one terminal */
	if (rt_vw_report_make(t, -1, &rp) == 0)
		rt_vw_verdict_why(stderr, &rp);
	rt_vw_report_free(&rp);
	if (t->verdict == RT_V_HEALTHY)
		rc = 0;
	else if (t->verdict == RT_V_INCONCLUSIVE)
		rc = 125;
	else
		rc = bad < 0 || bad == (int)t->verdict ? 1 : 125;
	rt_vw_free(t);
	return rc;
}
