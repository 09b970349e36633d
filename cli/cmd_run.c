/* SPDX-License-Identifier: MIT */
/* cmd_run.c - `ranktrace run`: trace a command and every process it starts.
 *
 * Finds libranktrace.so and the Python probe next to this program, checks the
 * options (a bad fault plan is refused before anything starts), sets the
 * environment (LD_PRELOAD, RANKTRACE_*), runs the command (run/signals.c:
 * each signal sent to run reaches it once), then prints one line per rank
 * (summary.c). Returns the command's status. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "lttng_session.h"
#include "env.h"
#include "rt_util.h"

static void usage_run(FILE *f)
{
	fprintf(f,
		"usage: ranktrace run [-o DIR] [--max-size SIZE] [--min-free SIZE] [--ring SIZE]\n"
		"                     [--inject PLAN | --inject-file F]\n"
		"                     [--backend ctf|lttng [--lttng-kernel]] [--] CMD [ARG...]\n"
		"\n"
		"Runs CMD with libranktrace.so preloaded in it and in every process it starts\n"
		"(launchers such as torchrun, accelerate launch, srun or rt-launch fork the\n"
		"ranks). Each rank writes a CTF trace to DIR/rank-NNNNN/ (babeltrace2 reads it);\n"
		"attempt N of a job its launcher restarts (torchrun --max-restarts) writes\n"
		"DIR/attempt-N/rank-NNNNN/, and the summary at the end lists the last attempt's.\n"
		"\n"
		"  -o, --output DIR   trace directory (default: ranktrace-YYYYmmdd-HHMMSS); it\n"
		"                     and missing parents are created; it must hold no rank\n"
		"                     traces yet. The run claims it (DIR/ranktrace-run, made\n"
		"                     atomically; each rank directory carries the same id):\n"
		"                     a DIR another run holds, even one started at the same\n"
		"                     moment, or one this user cannot write, is refused. Put\n"
		"                     it on a shared filesystem when ranks run on several nodes\n"
		"  --max-size SIZE    cap the trace of each rank process (e.g. 64M, 1G; default\n"
		"                     2G, 0: no cap); past it, tracing stops: the trace says\n"
		"                     why and counts the events it discarded\n"
		"  --min-free SIZE    stop tracing before the trace filesystem has less than SIZE\n"
		"                     free (default: 5 %% of it, at least 2G or half of it);\n"
		"                     the job's own files (checkpoints) never find it full\n"
		"  --ring SIZE        flight recorder: each thread keeps only its last SIZE of\n"
		"                     events (e.g. 64M), so a long job can run traced and still\n"
		"                     show its final minutes; `view` says where it begins\n"
		"  --inject PLAN      inject faults: 'SPEC[;SPEC...]' or a preset such as\n"
		"                     skip-fsdp-root (see `ranktrace inject --list`); a bad plan\n"
		"                     is refused (exit 2) before anything starts\n"
		"  --inject-file F    the plan from a file, one SPEC per line ('#' comments)\n"
		"  --append           DIR may already hold rank traces: join the run that owns\n"
		"                     it, while it runs, and add to them (one `ranktrace run`\n"
		"                     per node or task on a shared DIR, started together); a\n"
		"                     finished run's DIR is refused (a job started again needs\n"
		"                     another -o); implied when Slurm runs several tasks\n"
		"                     (SLURM_NTASKS > 1), joining only the same job step's run\n"
		"  --allow-untraced   when DIR cannot be used (not a directory, no permission),\n"
		"                     run CMD untraced with a warning instead of refusing\n"
		"  --cupti            also trace through CUPTI (CUDA_INJECTION64_PATH): driver\n"
		"                     memory calls made inside NCCL and other libraries, and\n"
		"                     CUPTI's memory activity records. CUPTI allows one client:\n"
		"                     under torch.profiler or Nsight the trace records\n"
		"                     cupti-unavailable and tracing goes on without it\n"
		"  --backend B        ctf (default): ranktrace's own writer, one trace per rank;\n"
		"                     lttng: the same events as LTTng-UST tracepoints\n"
		"                     (ranktrace:*) in an LTTng session writing to DIR (a\n"
		"                     session daemon is started for you if none runs); every\n"
		"                     command reads both\n"
		"  --lttng-kernel     with --backend lttng: also record the kernel's scheduler\n"
		"                     and process events, where this user may\n"
		"\n"
		"SIGINT, SIGTERM and SIGHUP reach CMD once: sent to run alone, run forwards\n"
		"them; sent to its process group (Ctrl-C, kill -SIG -PGID), CMD has it already.\n"
		"If run dies (SIGKILL too), the job dies with it: SIGTERM to every process\n"
		"CMD started (torchrun's workers in their own sessions too), SIGKILL 3 s later;\n"
		"the trace reads \"job interrupted\".\n"
		"\n"
		"Exit status: CMD's (128+N if it was killed by signal N); 2 for a usage error;\n"
		"128 for a RANKTRACE_* variable set to a bad value (named; see\n"
		"docs/environment.md), checked before anything starts.\n"
		"\n"
		"examples:\n"
		"  ranktrace run -o T -- torchrun --nproc-per-node 8 train.py\n"
		"  ranktrace run -o T -- accelerate launch --config_file fsdp.yaml train.py\n"
		"  srun ranktrace run -o /shared/T -- python train.py\n");
}

/* Directory of the running executable. */
static int exe_dir(char *out, size_t n)
{
	ssize_t k = readlink("/proc/self/exe", out, n - 1);
	char *slash;

	if (k <= 0)
		return -1;
	out[k] = '\0';
	slash = strrchr(out, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return 0;
}

/* A file we ship, found from env (if set) or next to this program:
 * <bin>/../REL1, else <bin>/../REL2. 0 when readable. */
static int find_installed(const char *env_name, const char *rel1, const char *rel2, char *out,
			  size_t n)
{
	const char *env = getenv(env_name);
	char dir[PATH_MAX];

	if (env && *env) {
		snprintf(out, n, "%s", env);
		return access(out, R_OK);
	}
	if (exe_dir(dir, sizeof(dir)) != 0)
		return -1;
	snprintf(out, n, "%s/../%s", dir, rel1);
	if (access(out, R_OK) == 0)
		return 0;
	snprintf(out, n, "%s/../%s", dir, rel2);
	return access(out, R_OK);
}

static int find_library(char *out, size_t n)
{
	return find_installed(RT_ENV_NAME(LIB), "lib/libranktrace.so", "lib/ranktrace/libranktrace.so",
			      out, n);
}

/* python/ (the PyTorch probe): build/python or <prefix>/share/ranktrace/python. */
static int find_python(char *out, size_t n)
{
	return find_installed(RT_ENV_NAME(PYTHON), "python", "share/ranktrace/python", out, n);
}

/* LD_PRELOAD = lib, then whatever was preloaded before. */
static void prepend_preload(const char *lib)
{
	char val[2 * PATH_MAX + 16];
	const char *old = getenv("LD_PRELOAD");

	snprintf(val, sizeof(val), "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
	setenv("LD_PRELOAD", val, 1);
}

/* --cupti: the CUDA driver loads libranktrace.so as its injection library
 * (InitializeInjection, tracer/device/cupti.c), unless another tool already is. */
static void set_injection(const char *lib)
{
	const char *old = getenv("CUDA_INJECTION64_PATH");

	if (old && *old && strcmp(old, lib)) {
		fprintf(stderr, "ranktrace run: warning: CUDA_INJECTION64_PATH is already %s "
			"(Nsight?): --cupti leaves CUPTI to it\n", old);
		return;
	}
	setenv("CUDA_INJECTION64_PATH", lib, 1);
}

/* Does NCCL_PROFILER_PLUGIN=v name ranktrace's plugin (NCCL's NAME form
 * "ranktrace", or a path to a libnccl-profiler-ranktrace.so)? */
static bool names_ours(const char *v)
{
	const char *base = strrchr(v, '/');

	return !strcmp(v, "ranktrace") || !strcmp(base ? base + 1 : v, "libnccl-profiler-ranktrace.so");
}

/* NCCL loads ranktrace's profiler plugin (device-side start and completion
 * of each collective), found next to libranktrace.so, unless the user chose
 * a plugin: then theirs stays, said once (the tracer falls back to CUDA
 * events and records why). A setting that names ranktrace's own plugin is
 * no other plugin: ours, by its path, which matches this tracer. */
static void set_profiler_plugin(const char *lib)
{
	const char *old = getenv("NCCL_PROFILER_PLUGIN");
	char path[PATH_MAX + 64];
	const char *slash = strrchr(lib, '/');

	snprintf(path, sizeof(path), "%.*slibnccl-profiler-ranktrace.so",
		 slash ? (int)(slash - lib + 1) : 0, lib);
	if (old && *old && strcmp(old, path) && !names_ours(old)) {
		fprintf(stderr, "ranktrace run: NCCL_PROFILER_PLUGIN is already %s: keeping it "
			"(device-side completion from CUDA events instead of ranktrace's plugin)\n",
			old);
		return;
	}
	if (access(path, R_OK) == 0)
		setenv("NCCL_PROFILER_PLUGIN", path, 1);
}

/* The probe: the tracer imports it in every Python process once Python
 * starts the program (tracer/interpose/pyboot.c), from this directory;
 * PYTHONPATH and sys.path stay the program's own. */
static void set_probe_path(void)
{
	char py[PATH_MAX], abs[PATH_MAX];

	if (find_python(py, sizeof(py)) == 0 && realpath(py, abs))
		setenv(RT_ENV_NAME(PROBE_PATH), abs, 1);
	else
		unsetenv(RT_ENV_NAME(PROBE_PATH));
}

/* A plan file: one SPEC per line, '#' comments, joined with ';'. */
static char *read_plan_file(const char *path)
{
	char err[4200], *plan;

	if (rt_inj_read_plan_file(path, &plan, err, sizeof(err)) != 0) {
		fprintf(stderr, "ranktrace run: --inject-file %s\n", err);
		return NULL;
	}
	return plan;
}

static void default_dir(char *out, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(out, n, "ranktrace-%Y%m%d-%H%M%S", &tm);
}

/* A size option into out (decimal bytes, "" when not given): 0, or -1
 * after a message. 0 is kept (no limit); a non-zero size below `least` is
 * rounded up to it, with a message. */
static int size_option(const char *name, const char *arg, uint64_t least, char out[24])
{
	uint64_t v;

	if (!arg)
		return 0;
	if (rt_parse_size(arg, &v) != 0) {
		fprintf(stderr, "ranktrace run: %s %s: expected a size such as 64M or 1G (0: none)\n",
			name, arg);
		return -1;
	}
	if (v && v < least) {
		fprintf(stderr, "ranktrace run: %s %s is below the smallest the writer can keep: "
			"using %lluK\n", name, arg, (unsigned long long)least >> 10);
		v = least;
	}
	snprintf(out, 24, "%llu", (unsigned long long)v);
	return 0;
}

static void set_or_unset(const char *name, const char *value)
{
	if (value[0])
		setenv(name, value, 1);
	else
		unsetenv(name);
}

/* What `run` was asked for, once the options are read. */
struct run {
	char *inject;
	char dir[PATH_MAX], abs[PATH_MAX], lib[PATH_MAX], run_id[40];
	enum rt_run_join join;
	const char *max_size, *min_free, *ring, *backend;
	char max_env[24], free_env[24], ring_env[24];
	struct rt_lttng lttng;
	bool lttng_kernel, use_lttng, traced, allow_untraced, cupti;
	char err[PATH_MAX + 400];
};

/* Step 1: the options. 0, 1 (--help printed) or EXIT_USAGE. */
static int run_options(struct run *o, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "max-size", required_argument, NULL, 'm' },
		{ "min-free", required_argument, NULL, 'F' },
		{ "ring", required_argument, NULL, 'R' },
		{ "inject", required_argument, NULL, 'i' },
		{ "inject-file", required_argument, NULL, 'f' },
		{ "append", no_argument, NULL, 'a' },
		{ "allow-untraced", no_argument, NULL, 'U' },
		{ "cupti", no_argument, NULL, 'C' },
		{ "backend", required_argument, NULL, 'b' },
		{ "lttng-kernel", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': snprintf(o->dir, sizeof(o->dir), "%s", optarg); break;
		case 'm': o->max_size = optarg; break;
		case 'F': o->min_free = optarg; break;
		case 'R': o->ring = optarg; break;
		case 'a': o->join = RT_JOIN_ANY; break;
		case 'U': o->allow_untraced = true; break;
		case 'C': o->cupti = true; break;
		case 'b': o->backend = optarg; break;
		case 'k': o->lttng_kernel = true; break;
		case 'i':
			free(o->inject);
			o->inject = strdup(optarg);
			break;
		case 'f':
			free(o->inject);
			o->inject = read_plan_file(optarg);
			if (!o->inject)
				return EXIT_USAGE;
			break;
		case 'h': usage_run(stdout); return 1;
		default: usage_run(stderr); return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "ranktrace run: no command given\n\n");
		usage_run(stderr);
		return EXIT_USAGE;
	}
	return 0;
}

/* A path variable that is set must name what is there: a file this user
 * can read (mode R_OK) or run (X_OK, a bare name searched on PATH as exec
 * does). 0, or -1 after the message. */
static int check_env_path(enum rt_env id, int mode)
{
	const char *v = getenv(rt_env_names[id]), *path = getenv("PATH");
	char full[PATH_MAX], msg[400];

	if (!v || !*v || (strchr(v, '/') ? access(v, mode) == 0 : mode != X_OK))
		return 0;
	while (!strchr(v, '/') && path && *path) {
		size_t k = strcspn(path, ":");

		snprintf(full, sizeof(full), "%.*s/%s", (int)k, path, v);
		if (access(full, X_OK) == 0)
			return 0;
		path += k + (path[k] == ':');
	}
	rt_env_explain(id, v, mode == X_OK ? "no such command" : "no such file, or not readable", msg,
		       sizeof(msg));
	fprintf(stderr, "ranktrace run: %s\n", msg);
	return -1;
}

/* Step 2a: the RANKTRACE_* variables the job will read (the tracer's, the
 * probe's) and the paths run reads: a bad one is refused before anything
 * starts (exit 128, EXIT_ENV), never left to each rank to warn about. */
static int run_check_env(struct run *o)
{
	int bad = rt_cli_check_env("run", "tracer probe test") != 0;

	bad |= check_env_path(RT_ENV_LIB, R_OK) != 0;
	bad |= check_env_path(RT_ENV_PYTHON, R_OK) != 0;
	if (o->cupti)
		bad |= check_env_path(RT_ENV_CUPTI_LIB, R_OK) != 0;
	if (o->use_lttng) {
		bad |= check_env_path(RT_ENV_LTTNG_PROVIDER, R_OK) != 0;
		bad |= check_env_path(RT_ENV_LTTNG, X_OK) != 0;
	}
	return bad ? EXIT_ENV : 0;
}

/* Step 2: the options make sense together, the plan parses, the library
 * is there. 0 or EXIT_USAGE (the message printed). */
static int run_check(struct run *o)
{
	if (strcmp(o->backend, "ctf") != 0 && strcmp(o->backend, "lttng") != 0) {
		fprintf(stderr, "ranktrace run: --backend %s: expected ctf or lttng\n", o->backend);
		return EXIT_USAGE;
	}
	o->use_lttng = strcmp(o->backend, "lttng") == 0;
	if (!o->use_lttng && o->lttng_kernel) {
		fprintf(stderr, "ranktrace run: --lttng-kernel needs --backend lttng\n");
		return EXIT_USAGE;
	}
	if (o->use_lttng && (o->max_size || o->min_free || o->ring || o->join == RT_JOIN_ANY)) {
		fprintf(stderr, "ranktrace run: --%s applies to the ctf backend (with lttng, size the "
			"session's channels instead)\n", o->max_size ? "max-size" : o->min_free ? "min-free" :
			o->ring ? "ring" : "append");
		return EXIT_USAGE;
	}
	if (run_check_env(o) != 0)
		return EXIT_ENV;
	if (size_option("--max-size", o->max_size, RT_MIN_TRACE_BYTES, o->max_env) != 0 ||
	    size_option("--min-free", o->min_free, 0, o->free_env) != 0 ||
	    size_option("--ring", o->ring, RT_MIN_RING_BYTES, o->ring_env) != 0)
		return EXIT_USAGE;
	if (o->inject) {
		struct rt_inj_plan plan;

		if (rt_inj_parse(o->inject, &plan, o->err, sizeof(o->err)) != 0) {
			fprintf(stderr, "ranktrace run: %s\n", o->err);
			return EXIT_USAGE;
		}
		rt_inj_plan_free(&plan);
	}
	if (find_library(o->lib, sizeof(o->lib)) != 0) {
		fprintf(stderr, "ranktrace run: cannot find libranktrace.so next to this program "
			"(set %s)\n", RT_ENV_NAME(LIB));
		return EXIT_USAGE;
	}
	if (o->use_lttng && rt_lttng_provider(o->lib) != 0) {
		fprintf(stderr, "ranktrace run: --backend lttng: this build has no LTTng provider "
			"(libranktrace-lttng.so next to libranktrace.so; LTTng-UST was not found "
			"when it was built)\n");
		return EXIT_USAGE;
	}
	return 0;
}

/* Tracing cannot start (why: o->err): never run untraced silently, only
 * when asked. 0: go on untraced; EXIT_USAGE: stop. */
static int run_untraced(struct run *o, const char *what)
{
	if (!o->allow_untraced) {
		fprintf(stderr, "ranktrace run: %s%s\n(--allow-untraced runs the command anyway, "
			"untraced)\n", what, o->err);
		return EXIT_USAGE;
	}
	fprintf(stderr, "ranktrace: warning: %s%s: running the command untraced "
		"(--allow-untraced)\n", what, o->err);
	o->traced = false;
	return 0;
}

static bool is_number(const char *s)
{
	return s && *s && strlen(s) < 12 && strspn(s, "0123456789") == strlen(s);
}

/* This run's id: under Slurm's implied append, the job step's own (every
 * task of the step computes the same, so they join one run and no other;
 * without a job id they join any), else random. */
static void new_run_id(struct run *o)
{
	const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
	unsigned char rnd[16];

	if (!step)
		step = getenv("SLURM_STEPID");
	if (o->join == RT_JOIN_SAME && is_number(job) && is_number(step)) {
		snprintf(o->run_id, sizeof(o->run_id), "slurm-%s.%s", job, step);
		return;
	}
	if (o->join == RT_JOIN_SAME)
		o->join = RT_JOIN_ANY;
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		memset(rnd, (int)getpid(), sizeof(rnd));
	for (int i = 0; i < 16; i++)
		snprintf(o->run_id + 2 * i, 3, "%02x", rnd[i]);
}

/* DIR claimed for this run (run/outdir.c); a default name taken by another run
 * started in the same second gets a suffix (-2, -3...). 0 or -errno. */
static int claim_dir(struct run *o)
{
	char base[PATH_MAX];
	int rc;

	new_run_id(o);
	if (o->dir[0])
		return rt_run_prepare_dir(o->dir, o->join, o->run_id, o->abs, o->err, sizeof(o->err));
	default_dir(base, sizeof(base));
	snprintf(o->dir, sizeof(o->dir), "%s", base);
	rc = rt_run_prepare_dir(o->dir, o->join, o->run_id, o->abs, o->err, sizeof(o->err));
	for (int k = 2; rc == -EEXIST && k < 100; k++) {
		snprintf(o->dir, sizeof(o->dir), "%s-%d", base, k);
		rc = rt_run_prepare_dir(o->dir, o->join, o->run_id, o->abs, o->err, sizeof(o->err));
	}
	return rc;
}

/* Step 3: the trace directory and the environment the command inherits
 * (LD_PRELOAD, RANKTRACE_*, PYTHONPATH). 0 or EXIT_USAGE. */
static int run_environment(struct run *o)
{
	/* too long is refused before DIR is made, and again for its real path */
	if (((o->dir[0] && rt_run_check_dir_length(o->dir, o->err, sizeof(o->err)) != 0) ||
	     claim_dir(o) != 0 || rt_run_check_dir_length(o->abs, o->err, sizeof(o->err)) != 0) &&
	    run_untraced(o, "") != 0)
		return EXIT_USAGE;
	if (o->traced) {
		if (o->use_lttng) /* LTTng's fork() helper: children that do not exec */
			rt_lttng_fork_helper(prepend_preload);
		prepend_preload(o->lib);
		setenv(RT_ENV_NAME(DIR), o->abs, 1);
		setenv(RT_ENV_NAME(RUN_ID), o->run_id, 1);
		setenv(RT_ENV_NAME(BACKEND), o->backend, 1);
		set_or_unset(RT_ENV_NAME(MAX_SIZE), o->max_env);
		set_or_unset(RT_ENV_NAME(MIN_FREE), o->free_env);
		set_or_unset(RT_ENV_NAME(RING), o->ring_env);
		if (o->cupti)
			set_injection(o->lib);
		set_profiler_plugin(o->lib);
	}
	if (o->traced || o->inject)
		set_probe_path();
	if (o->inject) {
		/* faults are injected by the library: preload it even untraced */
		if (!o->traced)
			prepend_preload(o->lib);
		setenv(RT_ENV_NAME(INJECT), o->inject, 1);
	} else {
		unsetenv(RT_ENV_NAME(INJECT));
	}
	if (o->traced && o->use_lttng &&
	    rt_lttng_begin(&o->lttng, o->abs, o->lttng_kernel, o->err, sizeof(o->err)) != 0) {
		if (run_untraced(o, "no LTTng session: ") != 0)
			return EXIT_USAGE;
		unsetenv(RT_ENV_NAME(DIR));
	}
	return 0;
}

/* Step 5: the LTTng session closed, one line per rank (summary.c). */
static void run_report(struct run *o)
{
	if (o->traced && o->use_lttng) {
		uint64_t discarded, lost;

		if (rt_lttng_end(&o->lttng, &discarded, &lost) == 0)
			printf("lttng session %s: %llu events discarded, %llu packets lost\n", o->lttng.name,
			       (unsigned long long)discarded, (unsigned long long)lost);
		if (o->lttng.stopped)
			printf("lttng-sessiond %d (started by ranktrace): stopped\n", (int)o->lttng.stopped);
		else if (o->lttng.left_running)
			printf("lttng-sessiond %d (started by ranktrace): left running (another session "
			       "uses it; the last run using it stops it)\n", (int)o->lttng.sessiond);
	}
	if (o->traced) {
		fflush(stdout);
		rt_cli_print_summary(o->abs, o->inject);
	}
	fflush(stdout);
}

int rt_cli_cmd_run(int argc, char **argv)
{
	struct run o = { .backend = "ctf", .traced = true,
			 .join = getenv("SLURM_NTASKS") && atoi(getenv("SLURM_NTASKS")) > 1 ?
				 RT_JOIN_SAME : RT_JOIN_NONE };
	int rc = run_options(&o, argc, argv), status;

	if (rc == 0)
		rc = run_check(&o);
	if (rc == 0)
		rc = run_environment(&o);
	if (rc != 0) {
		rt_run_leave_dir();
		free(o.inject);
		return rc == 1 ? 0 : rc;
	}
	status = rt_run_child(argv + optind);
	free(o.inject);
	rt_run_leave_dir(); /* the job has ended: no --append joins it now */
	if (status < 0)
		return 1;
	run_report(&o);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
