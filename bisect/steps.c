/* SPDX-License-Identifier: MIT */
/* steps.c - one set-up step of a candidate (a logged command under the
 * bisect's timeout, with why it failed) and the pip install step; where a
 * candidate's work directory is. Used by worker.c (a candidate's set-up) and
 * env.c (the shared base environment); calls spawn.c and cands.c only. */
#include <stdio.h>
#include <sys/wait.h>

#include "bisect_int.h"

void bs_work_dir(const struct bs_ctx *x, int i, char *out, size_t n)
{
	snprintf(out, n, "%s/.bisect/%s", x->dir, x->c[i].name);
}

static void log_step(int fd, char *const *argv)
{
	dprintf(fd, "== ");
	for (int k = 0; argv[k]; k++)
		dprintf(fd, "%s%s", k ? " " : "", argv[k]);
	dprintf(fd, "\n");
}

/* Run one set-up step; 0 when it exited 0, else -1 with why. */
int bs_step(const struct bs_ctx *x, int fd, const char *what, char *const *argv,
		const char *cwd, const struct bs_env *env, char *why, size_t n)
{
	bool timed_out;
	int st;

	log_step(fd, argv);
	st = bs_spawn(argv, cwd, fd, env, x->o.timeout, &timed_out);
	if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (timed_out)
		snprintf(why, n, "%s timed out after %gs", what, x->o.timeout);
	else if (st >= 0 && WIFSIGNALED(st))
		snprintf(why, n, "%s killed by signal %d", what, WTERMSIG(st));
	else
		snprintf(why, n, "%s exited %d", what, st >= 0 ? WEXITSTATUS(st) : -1);
	return -1;
}

/* pip install PKG==VERSION [--with pins] into target (an overlay, --no-deps)
 * or, with dependencies, into the venv of interpreter venv_py (pip --python).
 * No VERSION: the pins alone. */
int bs_pip_install(const struct bs_ctx *x, const char *version, int fd, const char *venv_py,
		   const char *target, char *why, size_t n)
{
	char spec[256], *argv[24 + BS_MAX_WITH];
	int k = 0;

	snprintf(spec, sizeof(spec), "%s==%s", x->o.pkg, version ? version : "");
	argv[k++] = (char *)x->o.python;
	argv[k++] = "-m";
	argv[k++] = "pip";
	if (venv_py) {
		argv[k++] = "--python";
		argv[k++] = (char *)venv_py;
	}
	argv[k++] = "install";
	argv[k++] = "--disable-pip-version-check";
	argv[k++] = "--pre";
	if (target) {
		argv[k++] = "--no-deps";
		argv[k++] = "--target";
		argv[k++] = (char *)target;
	}
	k = bs_pip_index_args(x, argv, k);
	if (version)
		argv[k++] = spec;
	for (int w = 0; w < x->o.nwith; w++)
		argv[k++] = (char *)x->o.with[w];
	argv[k] = NULL;
	return bs_step(x, fd, "pip install", argv, NULL, NULL, why, n);
}
