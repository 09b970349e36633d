/* SPDX-License-Identifier: MIT */
/* spawn.c - the commands bisect starts (pip, git, a set-up, a traced run,
 * `ranktrace verdict`), through the one process runner (util/proc.h).
 *
 * Each runs in a process group of its own with stdin from /dev/null, so that
 * a timeout or a SIGINT (bs_stop) kills it and everything it started:
 * SIGTERM to the group, SIGKILL 3 s later, and a last SIGKILL to the group
 * once the leader is reaped (stray ranks). What is bisect's own is the
 * environment a candidate's commands get (--env first, then the candidate's
 * PYTHONPATH / PATH in front, VIRTUAL_ENV, RANKTRACE_BISECT_CANDIDATE and
 * RANKTRACE_BISECT_DIR). Called from one thread, in the parent or a
 * worker; prints nothing but the child's "cannot run" line. */
#include <stdlib.h>
#include <string.h>

#include "bisect_int.h"
#include "env.h"
#include "proc.h"

#define GRACE_S 3.0 /* SIGTERM to SIGKILL */
#define WHO "ranktrace bisect"

volatile sig_atomic_t bs_stop;

static void prepend_env(const char *name, const char *value)
{
	const char *old = getenv(name);
	size_t n;
	char *v;

	if (!value || !*value)
		return;
	n = strlen(value) + (old ? strlen(old) : 0) + 2;
	v = malloc(n);
	if (!v)
		return;
	snprintf(v, n, "%s%s%s", value, old && *old ? ":" : "", old && *old ? old : "");
	setenv(name, v, 1);
	free(v);
}

/* In the child, before cwd and exec: the candidate's environment. */
static void child_env(void *arg)
{
	const struct bs_env *env = arg;

	for (int k = 0; k < env->nvars; k++) { /* NAME=VALUE, checked by the parser */
		char name[256];
		const char *eq = strchr(env->vars[k], '=');
		size_t len = eq ? (size_t)(eq - env->vars[k]) : 0;

		if (len && len < sizeof(name)) {
			memcpy(name, env->vars[k], len);
			name[len] = '\0';
			setenv(name, eq + 1, 1);
		}
	}
	prepend_env("PYTHONPATH", env->pythonpath);
	prepend_env("PATH", env->path);
	if (env->venv)
		setenv("VIRTUAL_ENV", env->venv, 1);
	if (env->candidate)
		setenv(RT_ENV_NAME(BISECT_CANDIDATE), env->candidate, 1);
	if (env->dir) /* {dir} in --setup (bs_subst_sh) */
		setenv(RT_ENV_NAME(BISECT_DIR), env->dir, 1);
}

int bs_spawn(char *const *argv, const char *cwd, int out_fd, const struct bs_env *env,
	     double timeout, bool *timed_out)
{
	struct rt_proc p = { .argv = argv, .cwd = cwd, .out_fd = out_fd, .null_stdin = true,
			     .timeout = timeout, .grace = GRACE_S, .stop = &bs_stop,
			     .child = env ? child_env : NULL, .arg = (void *)env, .who = WHO };
	struct rt_proc_result r;

	rt_proc_run(&p, &r);
	if (timed_out)
		*timed_out = r.timed_out;
	return r.status;
}

int bs_capture(char *const *argv, const char *cwd, char **out, bool quiet)
{
	struct rt_proc p = { .argv = argv, .cwd = cwd, .out_fd = -1, .capture = true, .quiet = quiet,
			     .null_stdin = true, .grace = GRACE_S, .stop = &bs_stop, .who = WHO };
	struct rt_proc_result r;

	rt_proc_run(&p, &r);
	*out = r.out;
	return rt_proc_exit_code(r.status);
}
