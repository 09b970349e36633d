/* SPDX-License-Identifier: MIT */
/* cmd_verdict.c - `ranktrace verdict`: one word and an exit code for
 * `git bisect run` (0 healthy, 1 bad, 125 skip). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int parse_verdict(const char *s)
{
	for (int v = 0; v < RT_V_COUNT; v++)
		if (!strcmp(s, rt_vw_verdict_names[v]))
			return v;
	return -1;
}

int rt_cli_cmd_verdict(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bad", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, bad = -1, rc;
	struct rt_vw_trace *t;

	while ((c = getopt_long(argc, argv, "b:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			bad = parse_verdict(optarg);
			if (bad < 0 || bad == RT_V_HEALTHY || bad == RT_V_INCONCLUSIVE) {
				fprintf(stderr, "ranktrace verdict: --bad %s: expected one of "
					"skipped-fsdp-root, device-misplacement, collective-mismatch, crashed\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			printf("usage: ranktrace verdict DIR [--bad SIGNATURE]\n\n"
			       "Prints one word: healthy, skipped-fsdp-root, device-misplacement,\n"
			       "collective-mismatch, crashed or inconclusive. Exit status, for\n"
			       "`git bisect run`: 0 healthy; 1 the signature asked for with --bad (by\n"
			       "default any failure); 125 inconclusive, or another failure than --bad.\n");
			return 0;
		default: return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ranktrace verdict: expected one trace directory\n"
			"usage: ranktrace verdict DIR [--bad SIGNATURE]\n");
		return EXIT_USAGE;
	}
	t = rt_cli_load("verdict", argv[optind]);
	if (!t) {
		printf("inconclusive\n");
		return 125;
	}
	printf("%s\n", rt_vw_verdict_names[t->verdict]);
	if (t->verdict == RT_V_HEALTHY)
		rc = 0;
	else if (t->verdict == RT_V_INCONCLUSIVE)
		rc = 125;
	else
		rc = bad < 0 || bad == (int)t->verdict ? 1 : 125;
	rt_vw_free(t);
	return rc;
}
