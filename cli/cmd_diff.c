/* SPDX-License-Identifier: MIT */
/* cmd_diff.c - `ranktrace diff A B [--json]`: its options, the two loads,
 * the exit status (0 same verdict, 1 not). The comparison is the viewer's
 * (viewer/analyse/diff.c), its text and JSON (schema ranktrace.diff/1,
 * docs/json.md) the render room's (viewer/render/diff_view.c). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diff.h"

static const char *const usage = "usage: ranktrace diff A B [--json] [--attempt N]\n";

static void help(void)
{
	printf("%s\nCompares two traces, the decisive difference first: the probe's counts per\n"
	       "rank where they differ (FSDP root forwards, calls of the unwrapped module); where\n"
	       "each parameter lives and its shape (latest report); then rank by rank where the\n"
	       "sequence of collectives first diverges, allocation counts and how each rank\n"
	       "ended; then both verdicts and whether B shows A's failure signature.\n\n"
	       "  --json   schema ranktrace.diff/1 (docs/json.md)\n"
	       "  --attempt N  the attempt of both (elastic jobs, torchrun --max-restarts:\n"
	       "           DIR/attempt-N/; 0 the first); default: each one's last\n\n"
	       "Exit status: 0 same verdict, 1 different verdicts, 2 a usage error, 3\n"
	       "unreadable input.\n", usage);
}

int rt_cli_cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "attempt", required_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rt_vw_trace *a, *b;
	struct rt_vw_diff d;
	bool json = false;
	int c, rc;

	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'A':
			if (rt_cli_parse_attempt("diff", optarg) != 0)
				return EXIT_USAGE;
			break;
		case 'h': help(); return 0;
		default: fputs(usage, stderr); return EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "ranktrace diff: expected two trace directories, A and B\n%s", usage);
		return EXIT_USAGE;
	}
	if (rt_cli_check_dir("diff", argv[optind]) || rt_cli_check_dir("diff", argv[optind + 1]))
		return EXIT_USAGE;
	a = rt_cli_load("diff", argv[optind]);
	b = a ? rt_cli_load("diff", argv[optind + 1]) : NULL;
	if (!a || !b) {
		rt_vw_free(a);
		return RT_VW_ERR_CORRUPT;
	}
	if (rt_vw_diff(a, b, &d) != 0) {
		fprintf(stderr, "ranktrace diff: out of memory\n");
		rt_vw_free(a);
		rt_vw_free(b);
		return 1;
	}
	rc = json ? rt_vw_diff_json(stdout, &d) : rt_vw_diff_text(stdout, &d);
	rc = rt_cli_printed("diff", rc) ? 1 : d.same_verdict ? 0 : 1;
	rt_vw_diff_free(&d);
	rt_vw_free(a);
	rt_vw_free(b);
	return rc;
}
