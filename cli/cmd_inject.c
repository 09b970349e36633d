/* SPDX-License-Identifier: MIT */
/* cmd_inject.c - `ranktrace inject --list | --check PLAN`: the fault plan
 * language (targets, actions, presets) and a plan checked without running. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int rt_cli_cmd_inject(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "--list") || !strcmp(argv[1], "-l"))) {
		rt_inj_print_list(stdout);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--check")) {
		struct rt_inj_plan plan;
		char err[2048];

		if (rt_inj_parse(argv[2], &plan, err, sizeof(err)) != 0) {
			fprintf(stderr, "ranktrace inject: %s\n", err);
			return EXIT_USAGE;
		}
		printf("ok: %d rule%s\n", plan.nrules, plan.nrules == 1 ? "" : "s");
		rt_inj_plan_free(&plan);
		return 0;
	}
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: ranktrace inject --list | --check PLAN\n\n"
		       "  -l, --list     the fault plan language: targets, actions, keys, presets\n"
		       "                 with their parameters, examples\n"
		       "  --check PLAN   parse PLAN as `run --inject` would, without running anything\n"
		       "                 (exit 0, or 2 with the mistake pointed at)\n");
		return 0;
	}
	fprintf(stderr, "ranktrace inject: expected --list or --check PLAN\n"
		"usage: ranktrace inject --list | --check PLAN\n");
	return EXIT_USAGE;
}
