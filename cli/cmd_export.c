/* SPDX-License-Identifier: MIT */
/* cmd_export.c - `ranktrace export` (Perfetto JSON) and `ranktrace report`
 * (one HTML file): load, then write through a temporary file. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int rt_cli_export_cmd(int argc, char **argv, bool report)
{
	static const struct option opts[] = {
		{ "perfetto", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "stall", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = report ? "report" : "export", *out = NULL;
	struct rt_vw_trace *t;
	uint64_t stall_ns = 0;
	int c, rc;

	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
		case 'o': out = optarg; break;
		case 's':
			if (rt_cli_parse_duration(cmd, "stall", optarg, &stall_ns) != 0)
				return EXIT_USAGE;
			break;
		case 'h':
			if (report)
				printf("usage: ranktrace report DIR -o REPORT.html\n\nOne self-contained HTML "
				       "file (no network): verdict, findings, a row per rank, a timeline of\n"
				       "collectives per rank, device memory over time, parameter placement.\n\n"
				       "  -o, --output REPORT.html   where to write it (replaced atomically)\n"
				       "  --stall DURATION           a live job none of whose calls returned for\n"
				       "                             this long is hung (default 30s)\n");
			else
				printf("usage: ranktrace export DIR --perfetto OUT.json\n\nChrome trace-event "
				       "JSON for ui.perfetto.dev or chrome://tracing: a process per rank,\n"
				       "tracks per thread and CUDA stream, device-memory counters, flow\n"
				       "arrows linking the same collective across ranks, and each finding\n"
				       "on its ranks' tracks, on the collective it is about (docs/json.md).\n\n"
				       "  --perfetto OUT.json   where to write it (-o, --output: the same)\n");
			return 0;
		default: return EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || !out) {
		fprintf(stderr, "ranktrace %s: %s\n%s", cmd,
			!out ? (report ? "-o REPORT.html is required" : "--perfetto OUT.json is required")
			     : "expected one trace directory",
			report ? "usage: ranktrace report DIR -o REPORT.html\n"
			       : "usage: ranktrace export DIR --perfetto OUT.json\n");
		return EXIT_USAGE;
	}
	rc = rt_cli_check_dir(cmd, argv[optind]);
	if (rc)
		return rc;
	t = rt_cli_load_stall(cmd, argv[optind], stall_ns);
	if (!t)
		return RT_VW_ERR_CORRUPT;
	rc = rt_cli_write_output(cmd, t, out, report ? rt_vw_report_html : rt_vw_export_perfetto);
	if (!rc)
		fprintf(stderr, "ranktrace %s: wrote %s\n", cmd, out);
	else
		rc = 1;
	if (!rc)
		rc = rt_cli_trace_status(t);
	rt_vw_free(t);
	return rc;
}

int rt_cli_cmd_export(int argc, char **argv)
{
	return rt_cli_export_cmd(argc, argv, false);
}

int rt_cli_cmd_report(int argc, char **argv)
{
	return rt_cli_export_cmd(argc, argv, true);
}
