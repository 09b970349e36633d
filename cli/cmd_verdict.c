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

static void usage_verdict(FILE *f)
{
	fprintf(f, "usage: ranktrace verdict DIR [--bad SIGNATURE] [--stall DURATION] [--attempt N]\n\n"
		   "Prints one word (why goes to stderr):\n");
	for (int v = 0; v < RT_V_COUNT; v++) /* format/findings.def */
		fprintf(f, "  %-20s %d  %s\n", rt_verdicts[v].word, rt_verdicts[v].exit,
			rt_verdicts[v].meaning);
	fprintf(f, "Exit status, for `git bisect run`: as above (0 healthy, 1 a failure, 125\n"
		   "inconclusive); a failure other than the SIGNATURE asked for with --bad\n"
		   "(by default any) is 125; 128 a usage error (a typo in --bad): git bisect run\n"
		   "stops on 128 or more, where 2 would have counted the commit as bad.\n\n"
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
		   "it is hung if, when it was stopped, no call had returned for --stall.\n"
		   "An elastic job (torchrun --max-restarts) is judged by its last attempt\n"
		   "(DIR/attempt-N/), the earlier ones' endings said; --attempt N judges that one.\n");
}

int rt_cli_cmd_verdict(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bad", required_argument, NULL, 'b' },
		{ "stall", required_argument, NULL, 's' },
		{ "attempt", required_argument, NULL, 'A' },
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
			bad = rt_verdict_parse(optarg);
			if (bad < 0 || !rt_verdicts[bad].bisect) {
				char list[256];

				rt_verdict_bisect_list(list, sizeof(list));
				fprintf(stderr, "ranktrace verdict: --bad %s: expected one of %s\n",
					rt_vw_esc(optarg), list);
				return EXIT_VERDICT_USAGE;
			}
			break;
		case 's':
			if (rt_cli_parse_duration("verdict", "stall", optarg, &stall_ns) != 0)
				return EXIT_VERDICT_USAGE;
			break;
		case 'A':
			if (rt_cli_parse_attempt("verdict", optarg) != 0)
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
		/* no trace here: nothing to judge, skip */
		printf("%s\n", rt_verdicts[RT_V_INCONCLUSIVE].word);
		return rt_verdicts[RT_V_INCONCLUSIVE].exit;
	}
	t = rt_cli_load_stall("verdict", argv[optind], stall_ns);
	if (!t) {
		printf("%s\n", rt_verdicts[RT_V_INCONCLUSIVE].word);
		fprintf(stderr, "ranktrace verdict: %s: no readable rank trace\n",
			rt_verdicts[RT_V_INCONCLUSIVE].word);
		return rt_verdicts[RT_V_INCONCLUSIVE].exit;
	}
	printf("%s\n", rt_verdicts[t->verdict].word);
	fflush(stdout); /* the word before why, where both go to one terminal */
	if (rt_vw_report_make(t, -1, &rp) == 0)
		rt_vw_verdict_why(stderr, &rp);
	rt_vw_report_free(&rp);
	rc = rt_verdicts[t->verdict].exit; /* 0, 1 or 125: format/findings.def */
	if (rt_verdicts[t->verdict].bisect && bad >= 0 && bad != (int)t->verdict)
		rc = rt_verdicts[RT_V_INCONCLUSIVE].exit; /* another failure than the one hunted */
	rt_vw_free(t);
	return rc;
}
