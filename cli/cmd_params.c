/* SPDX-License-Identifier: MIT */
/* cmd_params.c - `ranktrace params`: its options (--rank, --param, --at,
 * --json), the load, the exit status. The table and its JSON (schema
 * ranktrace.params/1, docs/json.md) are the render room's
 * (viewer/render/params_view.c). */
#include <ctype.h>
#include <fnmatch.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define AT_LAST RT_VW_AT_LAST /* --at last: the latest report */

static const char *const usage =
	"usage: ranktrace params DIR [--rank N] [--param GLOB] [--at wrap|first-forward|last]\n"
	"                        [--json] [--attempt N]\n";

static int parse_at(const char *s)
{
	if (!strcmp(s, "last"))
		return AT_LAST;
	for (int k = 0; k < RT_PP_COUNT; k++)
		if (!strcmp(s, rt_vw_param_point_names[k]) && k != RT_PP_ROOT_FORWARD)
			return k;
	return -1;
}

static void help(void)
{
	printf("%s\n"
	       "Where each parameter lives on each rank, as the PyTorch probe (or rt_param())\n"
	       "reported it: cuda:N, cpu, meta, storage freed, or a tensor whose data lies in\n"
	       "another device's memory; its elements, dtype and bytes; the allocation its\n"
	       "data pointer falls in (the call that made it, its size and device); and the\n"
	       "change that led there (\"meta -> cuda:1 at first-forward\"). Ranks that agree\n"
	       "share a row; cuda:N means each rank on its own device.\n\n"
	       "  --rank N        only rank N (devices shown as they are)\n"
	       "  --param GLOB    only parameters matching GLOB, e.g. 'layers.0.*'\n"
	       "  --at POINT      wrap (the module handed to FSDP, as loaded), first-forward\n"
	       "                  (the first forward of the top-level module) or last (the\n"
	       "                  latest report; default)\n"
	       "  --json          schema ranktrace.params/1 (docs/json.md): every rank, every\n"
	       "                  report point\n"
	       "  --attempt N     the attempt of an elastic job (torchrun --max-restarts:\n"
	       "                  DIR/attempt-N/; 0 the first); default: the last\n\n"
	       "Exit status: 0; 3 when a rank's files are damaged (the others are shown);\n"
	       "2 for a usage error.\n", usage);
}

int rt_cli_cmd_params(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rank", required_argument, NULL, 'r' },
		{ "param", required_argument, NULL, 'p' },
		{ "at", required_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "attempt", required_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *glob = NULL;
	int c, only = -1, at = AT_LAST, rc;
	bool json = false;
	struct rt_vw_trace *t;
	struct rt_vw_names nm = { 0 };

	while ((c = getopt_long(argc, argv, "r:p:a:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			only = rt_cli_parse_rank("params", optarg);
			if (only < 0)
				return EXIT_USAGE;
			break;
		case 'p': glob = optarg; break;
		case 'a':
			at = parse_at(optarg);
			if (at < 0) {
				fprintf(stderr, "ranktrace params: --at %s: expected wrap, first-forward or "
					"last\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'j': json = true; break;
		case 'A':
			if (rt_cli_parse_attempt("params", optarg) != 0)
				return EXIT_USAGE;
			break;
		case 'h': help(); return 0;
		default: fputs(usage, stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ranktrace params: expected one trace directory\n%s", usage);
		return EXIT_USAGE;
	}
	rc = rt_cli_check_dir("params", argv[optind]);
	if (rc)
		return rc;
	t = rt_cli_load("params", argv[optind]);
	if (!t)
		return RT_VW_ERR_CORRUPT;
	if (only >= 0 && rt_vw_rank_index(t, only) < 0) {
		fprintf(stderr, "ranktrace params: no rank %d in %s\n", only, argv[optind]);
		rt_vw_free(t);
		return EXIT_USAGE;
	}
	if (rt_vw_param_names(t, glob, &nm) != 0) {
		fprintf(stderr, "ranktrace params: out of memory\n");
		rt_vw_free(t);
		return 1;
	}
	rc = json ? rt_vw_params_json(stdout, t, &nm, at, only) : rt_vw_params_text(stdout, t, &nm, at, only);
	rc = rt_cli_printed("params", rc) ?: t->damaged ? RT_VW_ERR_CORRUPT : 0;
	free(nm.v);
	rt_vw_free(t);
	return rc;
}
