/* SPDX-License-Identifier: MIT */
/* run.h - `ranktrace run`'s machinery (run/, library rtrun): the output
 * directory checked and claimed for one run (outdir.c), the command started
 * below a keeper that stops the job when run dies (keeper.c), and run's
 * signals forwarded to it once (signals.c). cli/cmd_run.c parses run's
 * options, sets the job's environment and calls these; they print nothing
 * but the keeper's own warnings (errors come back in err). */
#ifndef RT_RUN_H
#define RT_RUN_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

/* outdir.c: mkdir -p DIR, check it is safe to trace into (no planted
 * rank-* symlink; no rank traces unless joining) and claim it for run_id
 * (DIR/ranktrace-run, created atomically). Joining a run that owns DIR
 * (RT_JOIN_ANY: --append, only while another `run` of it is live;
 * RT_JOIN_SAME: only the run whose id is run_id, Slurm's implied append) replaces run_id (40 bytes) with the owner's. abs
 * gets DIR's real path (PATH_MAX). 0, or -errno with a message in err. */
enum rt_run_join { RT_JOIN_NONE, RT_JOIN_SAME, RT_JOIN_ANY };
int rt_run_prepare_dir(const char *dir, enum rt_run_join join, char *run_id, char *abs, char *err,
		       size_t errlen);
/* The end of this `run` in DIR: its live file goes (a run no `run` holds
 * live any more is finished: --append onto it is refused). */
void rt_run_leave_dir(void);

/* outdir.c: DIR (as given; relative to the working directory) short enough
 * for the rank directories and stream files the tracer makes below it
 * (RANKTRACE_DIR's rule): 0, or -ENAMETOOLONG with why in err. */
int rt_run_check_dir_length(const char *dir, char *err, size_t errlen);

/* keeper.c: the keeper between run and its command, which stops the
 * job when run dies (SIGKILL included): SIGTERM to every process below it,
 * SIGKILL after a grace period. Start: forks the keeper, which starts argv
 * with signal mask cmd_mask; cmd is the command's pid (-1: it could not be
 * started), fd where its status comes. 0 or -errno (no keeper). */
struct rt_run_keeper {
	pid_t keeper, cmd;
	int fd;
};
int rt_run_keeper_start(char **argv, const sigset_t *cmd_mask, struct rt_run_keeper *k);
/* Once the keeper has exited (its wait status keeper_status): the command's
 * wait status, or keeper_status when the keeper could not report it. */
int rt_run_keeper_status(struct rt_run_keeper *k, int keeper_status);

/* signals.c: run argv, each SIGINT/SIGTERM/SIGHUP sent to run reaching
 * it once (forwarded unless the same group delivery reached it), wait.
 * Its wait status, or -1 when it could not be started. */
int rt_run_child(char **argv);

#endif
