/* SPDX-License-Identifier: MIT */
/* main.c - the ranktrace command: a table of commands, one file each.
 *
 * The only part of ranktrace that prints for people and exits with codes.
 * Exit codes: `run` returns the traced command's status (128+signal when
 * killed); 2 is a usage error; 3 an unreadable trace; 128 a RANKTRACE_*
 * variable set to a bad value (format/env.def; for git bisect run, stop);
 * verdict and diff document their own. Adding a command: a cmd_NAME.c with
 * rt_cli_cmd_NAME(argc, argv), one line in cli.h and one row below. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "version.h"
#include "env.h"

void rt_cli_usage(FILE *f)
{
	fprintf(f,
		"usage: ranktrace <command> [options]\n"
		"\n"
		"Trace CUDA allocations, device use and NCCL calls in every rank of an\n"
		"unmodified distributed training job.\n"
		"\n"
		"commands:\n"
		"  run [-o DIR] [--max-size SIZE] [--min-free SIZE] [--ring SIZE]\n"
		"      [--inject PLAN | --inject-file F] [--append] [--allow-untraced] [--cupti]\n"
		"      [--backend ctf|lttng [--lttng-kernel]] [--] CMD...\n"
		"                                           trace CMD and all its child processes\n"
		"  inject --list | --check PLAN             fault plan targets, actions, presets\n"
		"  view DIR [--rank N] [--all] [--json] [--stall D] [--watch [--interval S]] [--jobs N]\n"
		"      [--attempt N]                        per-rank summary, completeness, findings\n"
		"  params DIR [--rank N] [--param GLOB] [--at wrap|first-forward|last] [--json]\n"
		"      [--attempt N]                        where each parameter lives, per rank\n"
		"  verdict DIR [--bad SIGNATURE] [--stall D] [--attempt N]\n"
		"                                           one-word classification; exit code for\n"
		"                                           git bisect run: 0 healthy, 1 bad, 125 skip\n"
		"                                           (evidence incomplete: says why)\n"
		"  diff A B [--json] [--attempt N]          what differs, the decisive difference first\n"
		"      (--attempt N: an elastic job's attempt N, DIR/attempt-N; default: the last)\n"
		"  export DIR --perfetto OUT.json           Chrome trace JSON for ui.perfetto.dev\n"
		"  report DIR -o REPORT.html [--stall D]    one self-contained HTML report\n"
		"  bisect --pip PKG | --git REPO | --versions A,B,... [--good X --bad Y] -- CMD...\n"
		"      [--find-links DIR] [--index-url URL] [--pre] [--with REQ] [--isolated]\n"
		"      [--python PY] [--min-free SIZE] [--setup CMD] [--first-parent]\n"
		"      [--pythonpath SUB] [--signature SIG | --like TRACE] [--retries N]\n"
		"      [--timeout S] [--jobs P] [--launcher PREFIX] [--env NAME=VALUE]\n"
		"      [--keep] [-o DIR] [--resume] [--json]\n"
		"                                           the first version or commit whose\n"
		"                                           trace shows the failure\n"
		"  --version                                version, git revision, CUDA/NCCL headers\n"
		"\n"
		"example:\n"
		"  ranktrace run -o T -- torchrun --nproc-per-node 8 train.py\n"
		"  ranktrace view T && ranktrace verdict T\n"
		"  ranktrace run -o T2 --inject skip-fsdp-root -- torchrun ... train.py\n"
		"  ranktrace diff T T2\n"
		"\n"
		"Run `ranktrace <command> --help` for a command's options.\n");
}

static const struct rt_cli_cmd commands[] = {
	{ "run", rt_cli_cmd_run },
	{ "inject", rt_cli_cmd_inject },
	{ "view", rt_cli_cmd_view },
	{ "params", rt_cli_cmd_params },
	{ "verdict", rt_cli_cmd_verdict },
	{ "diff", rt_cli_cmd_diff },
	{ "export", rt_cli_cmd_export },
	{ "report", rt_cli_cmd_report },
	{ "bisect", rt_cli_cmd_bisect },
};

int main(int argc, char **argv)
{
	/* The viewer's memory goes back to the kernel at exit, not as it is
	 * freed, and its heaps grow 64 MiB at a time: at 16,384 ranks each
	 * round frees and takes again hundreds of MB, and trimmed heaps were
	 * grown again page by page (40,000 mprotect calls, a fault a page).
	 * Nothing of it reaches a program that run or bisect starts (exec). */
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	mallopt(M_TOP_PAD, 64 << 20);
	if (argc < 2) {
		rt_cli_usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		rt_cli_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))
		return rt_cli_version(stdout);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		struct rt_env_val jobs;
		char prog[64];

		if (strcmp(argv[1], commands[i].name))
			continue;
		/* what this process reads: a bad value stops here, exit 128 */
		if (rt_cli_check_env(argv[1], "cli viewer") != 0)
			return EXIT_ENV;
		if (rt_env_get(RT_ENV_JOBS, &jobs, NULL, 0) == 0)
			rt_vw_set_jobs((int)jobs.n);
		/* getopt's own messages then read "ranktrace run: unrecognized option" */
		snprintf(prog, sizeof(prog), "ranktrace %s", commands[i].name);
		argv[1] = prog;
		return commands[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "ranktrace: unknown command '%s'\n\n", argv[1]);
	rt_cli_usage(stderr);
	return EXIT_USAGE;
}
