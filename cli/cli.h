/* SPDX-License-Identifier: MIT */
/* cli.h - what the ranktrace command's files share: the command table's
 * shape, each command's entry point, and the helpers that print the same
 * thing the same way in every command (common.c). */
#ifndef RT_CLI_H
#define RT_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include "export.h"
#include "view.h"
#include "model.h"
#include "plan.h"
#include "reader.h"
#include "run.h"

#define EXIT_USAGE 2
/* a RANKTRACE_* variable set to a bad value: git bisect run stops on 128+
 * (2 would count the commit as bad) */
#define EXIT_ENV 128

/* One row of main.c's command table: `ranktrace NAME ARGS...` calls
 * fn(argc, argv) with argv[0] = NAME; returns the exit status. */
struct rt_cli_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
};

/* the commands (cmd_NAME.c) */
int rt_cli_cmd_run(int argc, char **argv);
int rt_cli_cmd_inject(int argc, char **argv);
int rt_cli_cmd_view(int argc, char **argv);
int rt_cli_cmd_verdict(int argc, char **argv);
int rt_cli_cmd_diff(int argc, char **argv);
int rt_cli_cmd_export(int argc, char **argv);
int rt_cli_cmd_report(int argc, char **argv);
int rt_cli_cmd_bisect(int argc, char **argv);
int rt_cli_cmd_params(int argc, char **argv);

/* --jobs N: threads reading ranks (common.c; RANKTRACE_JOBS's range); 0, or
 * -1 with a message naming cmd when s is not a number from 1 to 256. */
int rt_cli_set_jobs(const char *cmd, const char *s);

/* Every RANKTRACE_* variable that one of whos reads ("cli viewer": this
 * process; "tracer probe test": the job run starts), checked against
 * format/env.def: each bad one said ("ranktrace CMD: RANKTRACE_JOBS=0:
 * expected ..."); EXIT_ENV when there was one, else 0. */
int rt_cli_check_env(const char *cmd, const char *whos);

/* main.c */
void rt_cli_usage(FILE *f);
/* common.c: one line per rank after `run` (render/summary.c), then on
 * stderr each rule of the fault plan inject (NULL: none) that never fired;
 * returns the unreadable ranks */
int rt_cli_print_summary(const char *dir, const char *inject);

/* common.c */
/* After a renderer printed to stdout (view.h: 0, -EIO, -EINVAL): 0 when
 * all of it reached stdout; else 1, having said why (a write error: a full
 * disk, a closed pipe; or the JSON writer misused, a bug). */
int rt_cli_printed(const char *cmd, int rc);
/* A rank number as given to command cmd's --rank: digits only, 0 to
 * RT_CLI_MAX_RANK; anything else ("abc", "1x", "", "-1", overflow) is -1,
 * after the usage message. */
#define RT_CLI_MAX_RANK 99999
int rt_cli_parse_rank(const char *cmd, const char *s);
/* --attempt N: the attempt of an elastic job (torchrun --max-restarts) the
 * trace is read at (rt_cli_load*), RT_VW_LAST_ATTEMPT unless given. 0, or
 * -1 after the message. */
extern int rt_cli_attempt;
int rt_cli_parse_attempt(const char *cmd, const char *s);
/* 0 when dir is a directory; else prints "no such directory" (or why) and
 * returns EXIT_USAGE: a wrong path is a usage error, not a damaged trace. */
int rt_cli_check_dir(const char *cmd, const char *dir);
/* Load a trace for command cmd; prints the error or each damaged rank. */
struct rt_vw_trace *rt_cli_load(const char *cmd, const char *dir);
/* The same with --stall (0: the default, 30 s). */
struct rt_vw_trace *rt_cli_load_stall(const char *cmd, const char *dir, uint64_t stall_ns);
/* Command cmd's --opt (stall, interval): 30, 30s, 500ms, 2m, 1h (1 ms to a
 * week); 0, or -1 after the usage message. */
int rt_cli_parse_duration(const char *cmd, const char *opt, const char *s, uint64_t *ns);
/* A trace's exit status for view/export/report: 3 when a rank is damaged,
 * missing or claimed twice, else 0. */
int rt_cli_trace_status(const struct rt_vw_trace *t);
/* Write to out via a temporary file, renamed at the end: no half files. */
int rt_cli_write_output(const char *cmd, const struct rt_vw_trace *t, const char *out,
			int (*fn)(const struct rt_vw_trace *, FILE *));
int rt_cli_export_cmd(int argc, char **argv, bool report);

#endif
