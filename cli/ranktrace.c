/* SPDX-License-Identifier: MIT */
/* ranktrace.c - the ranktrace command: run (trace a training job).
 *
 * The only place that prints for people and exits with codes. Exit codes:
 * `run` returns the traced command's status (128+signal when killed);
 * 2 is a usage error; 3 an unreadable trace. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "export.h"
#include "model.h"
#include "plan.h"
#include "reader.h"

#define EXIT_USAGE 2

static pid_t child;

static void usage_main(FILE *f)
{
	fprintf(f,
		"usage: ranktrace <command> [options]\n"
		"\n"
		"Trace CUDA allocations, device use and NCCL calls in every rank of an\n"
		"unmodified distributed training job.\n"
		"\n"
		"commands:\n"
		"  run [-o DIR] [--max-size SIZE] [--inject PLAN] -- CMD...\n"
		"                                           trace CMD and all its child processes\n"
		"  inject --list                            fault plan targets, actions, presets\n"
		"  view DIR [--rank N] [--json]             per-rank summary and findings\n"
		"  verdict DIR [--bad SIGNATURE]            one-word classification; exit code for\n"
		"                                           git bisect run: 0 healthy, 1 bad, 125 skip\n"
		"  diff A B                                 where two traces first diverge, per rank\n"
		"  export DIR --perfetto OUT.json           Chrome trace JSON for ui.perfetto.dev\n"
		"  report DIR -o REPORT.html                one self-contained HTML report\n"
		"\n"
		"example:\n"
		"  ranktrace run -o T -- torchrun --nproc-per-node 8 train.py\n"
		"  ranktrace view T && ranktrace verdict T\n"
		"  ranktrace run -o T2 --inject skip-fsdp-root -- torchrun ... train.py\n"
		"  ranktrace diff T T2\n"
		"\n"
		"Run `ranktrace <command> --help` for a command's options.\n");
}

static void usage_run(FILE *f)
{
	fprintf(f,
		"usage: ranktrace run [-o DIR] [--max-size SIZE] [--inject PLAN | --inject-file F]\n"
		"                     [--] CMD [ARG...]\n"
		"\n"
		"Runs CMD with libranktrace.so preloaded in it and in every process it starts\n"
		"(launchers such as torchrun, accelerate launch, srun or rt-launch fork the\n"
		"ranks). Each rank writes a CTF trace to DIR/rank-NNNNN/ (babeltrace2 reads it).\n"
		"\n"
		"  -o, --output DIR   trace directory (default: ranktrace-YYYYmmdd-HHMMSS); it\n"
		"                     must not exist or be empty; put it on a shared filesystem\n"
		"                     when ranks run on several nodes\n"
		"  --max-size SIZE    cap the trace of each rank process (e.g. 64M, 1G); events\n"
		"                     past the cap are counted as discarded\n"
		"  --inject PLAN      inject faults: 'SPEC[;SPEC...]' or a preset such as\n"
		"                     skip-fsdp-root (see `ranktrace inject --list`); a bad plan\n"
		"                     is refused (exit 2) before anything starts\n"
		"  --inject-file F    the plan from a file, one SPEC per line ('#' comments)\n"
		"  --append           DIR may already hold rank traces: add to them (one\n"
		"                     `ranktrace run` per node or task on a shared DIR; implied\n"
		"                     when Slurm runs several tasks, SLURM_NTASKS > 1)\n"
		"\n"
		"Exit status: CMD's (128+N if it was killed by signal N); 2 for a usage error.\n"
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
	return find_installed("RANKTRACE_LIB", "lib/libranktrace.so", "lib/ranktrace/libranktrace.so",
			      out, n);
}

/* python/ (the PyTorch probe): build/python or <prefix>/share/ranktrace/python. */
static int find_python(char *out, size_t n)
{
	return find_installed("RANKTRACE_PYTHON", "python", "share/ranktrace/python", out, n);
}

/* LD_PRELOAD = lib, then whatever was preloaded before. */
static void prepend_preload(const char *lib)
{
	char val[2 * PATH_MAX + 16];
	const char *old = getenv("LD_PRELOAD");

	snprintf(val, sizeof(val), "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
	setenv("LD_PRELOAD", val, 1);
}

/* The probe loads in every Python rank through our sitecustomize (which runs
 * any sitecustomize it shadows). */
static void set_python_path(void)
{
	char py[PATH_MAX], val[3 * PATH_MAX + 16];
	const char *old = getenv("PYTHONPATH");

	if (find_python(py, sizeof(py)) != 0)
		return;
	snprintf(val, sizeof(val), "%s/site:%s%s%s", py, py, old && *old ? ":" : "", old ? old : "");
	setenv("PYTHONPATH", val, 1);
}

static bool dir_is_empty(const char *path)
{
	char **names;
	int n = rt_vw_list_ranks(path, &names);

	rt_vw_free_names(names, n > 0 ? n : 0);
	return n <= 0;
}

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

struct rank_summary {
	uint64_t events, discarded;
	unsigned long long devices; /* bit d: device d touched */
	int exit_status, signo;
	bool exit_seen, main_seen;
	int main_pid;
	char died_in[64];
	uint64_t last_ts;
};

static int summarize_event(const struct rt_vw_event *e, void *arg)
{
	struct rank_summary *s = arg;
	bool is_main = (int)e->pid == s->main_pid;

	if (e->id < RT_ID_FIRST_TRACER && e->id != RT_ID_cudaSetDevice &&
	    e->id != RT_ID_cudaGetDevice && e->dev >= 0 && e->dev < 64)
		s->devices |= 1ull << e->dev;
	if (e->id == RT_ID_cudaSetDevice && e->ret == 0) {
		int64_t d = rt_field_get(e->id, e->fields, 0);

		if (d >= 0 && d < 64)
			s->devices |= 1ull << d;
	}
	if (!is_main)
		return 0;
	if (e->pending && e->ts >= s->last_ts)
		snprintf(s->died_in, sizeof(s->died_in), "%s", rt_events[e->id].name);
	if (e->ts >= s->last_ts)
		s->last_ts = e->ts;
	if (e->id == RT_ID_rt_exit) {
		s->exit_seen = true;
		s->exit_status = (int)rt_field_get(e->id, e->fields, 0);
	} else if (e->id == RT_ID_rt_signal) {
		s->exit_seen = true;
		s->signo = (int)rt_field_get(e->id, e->fields, 0);
	}
	return 0;
}

/* One line per rank: events, devices, how it ended. Returns the number of
 * unreadable ranks. */
static int print_summary(const char *dir)
{
	char **ranks;
	int n = rt_vw_list_ranks(dir, &ranks), bad = 0;

	if (n <= 0) {
		printf("ranktrace: no rank traces in %s (the command made no CUDA or NCCL call)\n", dir);
		rt_vw_free_names(ranks, 0);
		return 0;
	}
	printf("ranktrace: %d rank trace%s in %s/\n", n, n == 1 ? "" : "s", dir);
	for (int r = 0; r < n; r++) {
		char rd[PATH_MAX], err[512] = "", devs[256] = "", how[128];
		struct rt_vw_rank_meta meta;
		struct rank_summary s = { 0 };
		char **streams;
		int ns, len = 0;

		snprintf(rd, sizeof(rd), "%s/%s", dir, ranks[r]);
		if (rt_vw_read_metadata(rd, &meta, err, sizeof(err)) != 0) {
			printf("  %-12s unreadable: %s\n", ranks[r], err);
			bad++;
			continue;
		}
		s.main_pid = meta.pid;
		ns = rt_vw_list_streams(rd, &streams);
		for (int i = 0; i < ns; i++) {
			char sp[PATH_MAX + 64];
			struct rt_vw_stream_info info;

			snprintf(sp, sizeof(sp), "%s/%s", rd, streams[i]);
			if (rt_vw_read_stream(sp, summarize_event, &s, &info, err, sizeof(err)) != 0)
				bad++;
			s.events += info.events;
			s.discarded += info.discarded;
		}
		rt_vw_free_names(streams, ns > 0 ? ns : 0);
		for (int d = 0; d < 64; d++)
			if (s.devices & (1ull << d))
				len += snprintf(devs + len, sizeof(devs) - (size_t)len, "%s%d", len ? "," : "", d);
		if (s.signo)
			snprintf(how, sizeof(how), "killed by signal %d%s%s", s.signo,
				 s.died_in[0] ? " in " : "", s.died_in);
		else if (s.exit_seen && s.exit_status >= 0)
			snprintf(how, sizeof(how), "exit %d", s.exit_status);
		else if (s.exit_seen)
			snprintf(how, sizeof(how), "returned from main");
		else if (s.died_in[0])
			snprintf(how, sizeof(how), "no exit recorded, last call %s never returned", s.died_in);
		else if (s.discarded)
			snprintf(how, sizeof(how), "no exit recorded (trace capped)");
		else
			snprintf(how, sizeof(how), "no exit recorded (killed?)");
		char who[32];

		if (meta.rank >= 0)
			snprintf(who, sizeof(who), "rank %d", meta.rank);
		else
			snprintf(who, sizeof(who), "%s", ranks[r]);
		printf("  %-12s %-10s %8llu events  device%s %-8s %s", who, meta.hostname,
		       (unsigned long long)s.events, strchr(devs, ',') ? "s" : " ", devs[0] ? devs : "-",
		       how);
		if (s.discarded)
			printf("  (%llu events discarded: size cap)", (unsigned long long)s.discarded);
		if (err[0])
			printf("\n    damaged: %s", err);
		printf("\n");
	}
	rt_vw_free_names(ranks, n);
	return bad;
}

/* A plan file: one SPEC per line, '#' comments, joined with ';'. */
static char *read_plan_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024], *out;
	size_t len = 0, cap = 4096;

	if (!f) {
		fprintf(stderr, "ranktrace run: --inject-file %s: %s\n", path, strerror(errno));
		return NULL;
	}
	out = calloc(1, cap);
	while (out && fgets(line, sizeof(line), f)) {
		char *p = line, *hash = strchr(line, '#');
		size_t n;

		if (hash)
			*hash = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		n = strcspn(p, "\r\n");
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (!n)
			continue;
		if (len + n + 2 > cap) {
			char *q = realloc(out, cap = (len + n + 2) * 2);

			if (!q) {
				free(out);
				out = NULL;
				break;
			}
			out = q;
		}
		if (len)
			out[len++] = ';';
		memcpy(out + len, p, n);
		out[len += n] = '\0';
	}
	fclose(f);
	if (out && !len) {
		fprintf(stderr, "ranktrace run: --inject-file %s holds no spec\n", path);
		free(out);
		return NULL;
	}
	return out;
}

static int cmd_inject(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "--list") || !strcmp(argv[1], "-l"))) {
		rt_inj_print_list(stdout);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--check")) {
		struct rt_inj_plan plan;
		char err[2048];

		if (rt_inj_parse(argv[2], &plan, err, sizeof(err)) != 0) {
			fprintf(stderr, "%s\n", err);
			return EXIT_USAGE;
		}
		printf("ok: %d rule%s\n", plan.nrules, plan.nrules == 1 ? "" : "s");
		rt_inj_plan_free(&plan);
		return 0;
	}
	fprintf(stderr, "usage: ranktrace inject --list | --check PLAN\n");
	return argc == 2 && !strcmp(argv[1], "--help") ? 0 : EXIT_USAGE;
}

static void default_dir(char *out, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(out, n, "ranktrace-%Y%m%d-%H%M%S", &tm);
}

static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "max-size", required_argument, NULL, 'm' },
		{ "inject", required_argument, NULL, 'i' },
		{ "inject-file", required_argument, NULL, 'f' },
		{ "append", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *inject = NULL;
	char dir[PATH_MAX] = "", abs[PATH_MAX], lib[PATH_MAX];
	char run_id[33];
	unsigned char rnd[16];
	const char *max_size = NULL;
	bool traced = true, append = getenv("SLURM_NTASKS") && atoi(getenv("SLURM_NTASKS")) > 1;
	int c, status;

	while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': snprintf(dir, sizeof(dir), "%s", optarg); break;
		case 'm': max_size = optarg; break;
		case 'a': append = true; break;
		case 'i':
			free(inject);
			inject = strdup(optarg);
			break;
		case 'f':
			free(inject);
			inject = read_plan_file(optarg);
			if (!inject)
				return EXIT_USAGE;
			break;
		case 'h': usage_run(stdout); return 0;
		default: usage_run(stderr); return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "ranktrace run: no command given\n\n");
		usage_run(stderr);
		return EXIT_USAGE;
	}
	if (max_size) {
		char *end;
		unsigned long long v = strtoull(max_size, &end, 10);

		if (end == max_size || v == 0 || (*end && !strchr("kKmMgG", *end)) ||
		    (*end && end[1] && strcmp(end + 1, "B") && strcmp(end + 1, "iB"))) {
			fprintf(stderr, "ranktrace run: --max-size %s: expected a size such as 64M or 1G\n",
				max_size);
			return EXIT_USAGE;
		}
	}
	if (inject) {
		struct rt_inj_plan plan;
		char err[2048];

		if (rt_inj_parse(inject, &plan, err, sizeof(err)) != 0) {
			fprintf(stderr, "ranktrace run: %s\n", err);
			return EXIT_USAGE;
		}
		rt_inj_plan_free(&plan);
	}
	if (find_library(lib, sizeof(lib)) != 0) {
		fprintf(stderr, "ranktrace run: cannot find libranktrace.so next to this program "
			"(set RANKTRACE_LIB)\n");
		return EXIT_USAGE;
	}
	if (!dir[0])
		default_dir(dir, sizeof(dir));
	if (mkdir(dir, 0700) != 0 && (errno != EEXIST || (!append && !dir_is_empty(dir)))) {
		if (errno == EEXIST) {
			fprintf(stderr, "ranktrace run: %s already holds rank traces: choose another -o, "
				"or --append to add to them (one run per node)\n", dir);
			return EXIT_USAGE;
		}
		fprintf(stderr, "ranktrace: warning: cannot create %s (%s): running the command "
			"untraced\n", dir, strerror(errno));
		traced = false;
	}
	if (traced && !realpath(dir, abs)) {
		fprintf(stderr, "ranktrace: warning: %s: %s: running the command untraced\n", dir,
			strerror(errno));
		traced = false;
	}
	if (traced) {
		prepend_preload(lib);
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			memset(rnd, (int)getpid(), sizeof(rnd));
		for (int i = 0; i < 16; i++)
			snprintf(run_id + 2 * i, 3, "%02x", rnd[i]);
		setenv("RANKTRACE_DIR", abs, 1);
		setenv("RANKTRACE_RUN_ID", run_id, 1);
		if (max_size)
			setenv("RANKTRACE_MAX_SIZE", max_size, 1);
		else
			unsetenv("RANKTRACE_MAX_SIZE");
	}
	if (traced || inject)
		set_python_path();
	if (inject) {
		/* faults are injected by the library: preload it even untraced */
		if (!traced)
			prepend_preload(lib);
		setenv("RANKTRACE_INJECT", inject, 1);
	} else {
		unsetenv("RANKTRACE_INJECT");
	}
	fflush(stdout);
	child = fork();
	if (child < 0) {
		perror("ranktrace run: fork");
		return 1;
	}
	if (child == 0) {
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "ranktrace run: cannot run %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	signal(SIGINT, forward);
	signal(SIGTERM, forward);
	signal(SIGHUP, forward);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (traced) {
		fflush(stdout);
		print_summary(abs);
	}
	fflush(stdout);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* ---- view, verdict, diff ---- */

static void human_bytes(char *out, size_t n, uint64_t b)
{
	const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int i = 0;

	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(out, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	rt_vw_json_esc(f, s);
	fputc('"', f);
}

static void rank_end(const struct rt_vw_rank *r, char *out, size_t n)
{
	if (!r->readable)
		snprintf(out, n, "unreadable");
	else if (r->signo)
		snprintf(out, n, "signal %d%s%s", r->signo, r->died_in[0] ? " in " : "", r->died_in);
	else if (r->exit_seen && r->exit_status >= 0)
		snprintf(out, n, "exit %d", r->exit_status);
	else if (r->exit_seen)
		snprintf(out, n, "returned");
	else if (r->died_in[0])
		snprintf(out, n, "died in %s", r->died_in);
	else
		snprintf(out, n, "no end (killed?)");
}

static void devices_str(uint64_t mask, char *out, size_t n)
{
	size_t len = 0;

	out[0] = '\0';
	for (int d = 0; d < RT_VW_MAX_DEV && len < n - 4; d++)
		if (mask & (1ull << d))
			len += (size_t)snprintf(out + len, n - len, "%s%d", len ? "," : "", d);
	if (!len)
		snprintf(out, n, "-");
}

static uint64_t rank_peak(const struct rt_vw_rank *r)
{
	uint64_t p = 0;

	for (int d = 0; d < RT_VW_MAX_DEV; d++)
		p = r->dev_peak[d] > p ? r->dev_peak[d] : p;
	return p;
}

static void print_view_text(const struct rt_vw_trace *t, int only_rank)
{
	printf("trace %s: %d rank%s, %llu events, verdict: %s\n\n", t->dir, t->nranks,
	       t->nranks == 1 ? "" : "s", (unsigned long long)t->events,
	       rt_vw_verdict_names[t->verdict]);
	printf("%-6s %-10s %-8s %-4s %10s %7s %-28s %5s %-16s\n", "rank", "host", "devices", "exp",
	       "peak mem", "allocs", "collectives (AG/RS/AR/BC)", "fwd", "end");
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		char devs[64], peak[32], end[80], colls[64], exp[8];

		if (only_rank >= 0 && r->meta.rank != only_rank)
			continue;
		devices_str(r->devices_used, devs, sizeof(devs));
		human_bytes(peak, sizeof(peak), rank_peak(r));
		rank_end(r, end, sizeof(end));
		snprintf(colls, sizeof(colls), "%llu/%llu/%llu/%llu",
			 (unsigned long long)r->colls[RT_CK_ALLGATHER],
			 (unsigned long long)r->colls[RT_CK_REDUCESCATTER],
			 (unsigned long long)r->colls[RT_CK_ALLREDUCE],
			 (unsigned long long)r->colls[RT_CK_BROADCAST]);
		if (r->meta.local_rank >= 0)
			snprintf(exp, sizeof(exp), "%d", r->meta.local_rank);
		else
			snprintf(exp, sizeof(exp), "-");
		printf("%-6d %-10.10s %-8s %-4s %10s %7llu %-28s %5llu %-16s\n", r->meta.rank,
		       r->meta.hostname, devs, exp, peak, (unsigned long long)r->allocs, colls,
		       (unsigned long long)r->fsdp_root_forwards, end);
	}
	printf("\nfindings:\n");
	if (!t->nfindings)
		printf("  none: every rank ended cleanly, collectives matched across ranks\n");
	for (int i = 0; i < t->nfindings; i++)
		printf("  %d. %s\n", i + 1, t->findings[i].text);
}

/* JSON schema "ranktrace.view/1": documented in docs/json.md. */
static void print_view_json(const struct rt_vw_trace *t, int only_rank)
{
	printf("{\"schema\": \"ranktrace.view/1\", \"dir\": ");
	json_str(stdout, t->dir);
	printf(", \"verdict\": \"%s\", \"events\": %llu, \"ranks\": [",
	       rt_vw_verdict_names[t->verdict], (unsigned long long)t->events);
	for (int i = 0, first = 1; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		char end[80];

		if (only_rank >= 0 && r->meta.rank != only_rank)
			continue;
		rank_end(r, end, sizeof(end));
		printf("%s\n  {\"rank\": %d, \"dir\": ", first ? "" : ",", r->meta.rank);
		first = 0;
		json_str(stdout, r->name);
		printf(", \"host\": ");
		json_str(stdout, r->meta.hostname);
		printf(", \"local_rank\": %d, \"rank_source\": ", r->meta.local_rank);
		json_str(stdout, r->meta.rank_source);
		printf(", \"events\": %llu, \"discarded\": %llu, \"devices\": [",
		       (unsigned long long)r->events, (unsigned long long)r->discarded);
		for (int d = 0, c = 0; d < RT_VW_MAX_DEV; d++)
			if (r->devices_used & (1ull << d))
				printf("%s%d", c++ ? ", " : "", d);
		printf("], \"peak_device_bytes\": {");
		for (int d = 0, c = 0; d < RT_VW_MAX_DEV; d++)
			if (r->dev_peak[d])
				printf("%s\"%d\": %llu", c++ ? ", " : "", d, (unsigned long long)r->dev_peak[d]);
		printf("}, \"allocations\": %llu, \"frees\": %llu, \"failed_allocations\": %llu, "
		       "\"collectives\": {", (unsigned long long)r->allocs, (unsigned long long)r->frees,
		       (unsigned long long)r->failed_allocs);
		for (int k = 0; k < RT_CK_COUNT; k++)
			printf("%s\"%s\": %llu", k ? ", " : "", rt_vw_coll_names[k],
			       (unsigned long long)r->colls[k]);
		printf("}, \"streams_created\": %llu, \"errors\": %llu, \"fsdp_root_forwards\": %llu, "
		       "\"params\": {\"reported\": %llu, \"storage_freed\": %llu, \"meta\": %llu, "
		       "\"ever_meta\": %llu, \"distinct\": %u}, "
		       "\"faults\": %llu, \"end\": ",
		       (unsigned long long)r->streams_created, (unsigned long long)r->errors,
		       (unsigned long long)r->fsdp_root_forwards, (unsigned long long)r->params_reported,
		       (unsigned long long)r->params_freed, (unsigned long long)r->params_meta,
		       (unsigned long long)r->params_ever_meta, r->nparams, (unsigned long long)r->faults);
		json_str(stdout, end);
		printf(", \"damaged\": ");
		if (r->damaged[0])
			json_str(stdout, r->damaged);
		else
			printf("null");
		printf("}");
	}
	printf("\n], \"findings\": [");
	for (int i = 0; i < t->nfindings; i++) {
		printf("%s\n  {\"signature\": \"%s\", \"text\": ", i ? "," : "",
		       rt_vw_verdict_names[t->findings[i].signature]);
		json_str(stdout, t->findings[i].text);
		printf("}");
	}
	printf("\n]}\n");
}

static struct rt_vw_trace *load_or_complain(const char *cmd, const char *dir)
{
	char err[1024];
	struct rt_vw_trace *t = rt_vw_load(dir, strcmp(cmd, "diff") ? 0 : RT_VW_KEEP_CALLS, err,
					   sizeof(err));

	if (!t)
		fprintf(stderr, "ranktrace %s: %s\n", cmd, err);
	for (int i = 0; t && i < t->nranks; i++)
		if (t->ranks[i].damaged[0])
			fprintf(stderr, "ranktrace %s: warning: %s\n", cmd, t->ranks[i].damaged);
	return t;
}

static int cmd_view(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rank", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, only = -1, rc;
	bool json = false;
	struct rt_vw_trace *t;

	while ((c = getopt_long(argc, argv, "r:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'r': only = atoi(optarg); break;
		case 'j': json = true; break;
		case 'h':
			printf("usage: ranktrace view DIR [--rank N] [--json]\n\n"
			       "One screen per trace: a row per rank (host, devices used, expected device\n"
			       "(LOCAL_RANK), peak device memory, allocations, collectives, FSDP root\n"
			       "forwards, how it ended) and the findings, most important first.\n"
			       "--json prints the same as schema ranktrace.view/1 (docs/json.md).\n"
			       "Exit status: 0, or 3 when a rank's files are damaged (the others are\n"
			       "still analysed), 2 for a usage error.\n");
			return 0;
		default: return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: ranktrace view DIR [--rank N] [--json]\n");
		return EXIT_USAGE;
	}
	t = load_or_complain("view", argv[optind]);
	if (!t)
		return RT_VW_ERR_CORRUPT;
	if (only >= 0 && rt_vw_rank_index(t, only) < 0) {
		fprintf(stderr, "ranktrace view: no rank %d in %s\n", only, argv[optind]);
		rt_vw_free(t);
		return EXIT_USAGE;
	}
	if (json)
		print_view_json(t, only);
	else
		print_view_text(t, only);
	rc = t->damaged ? RT_VW_ERR_CORRUPT : 0;
	rt_vw_free(t);
	return rc;
}

static int parse_verdict(const char *s)
{
	for (int v = 0; v < RT_V_COUNT; v++)
		if (!strcmp(s, rt_vw_verdict_names[v]))
			return v;
	return -1;
}

static int cmd_verdict(int argc, char **argv)
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
		fprintf(stderr, "usage: ranktrace verdict DIR [--bad SIGNATURE]\n");
		return EXIT_USAGE;
	}
	t = load_or_complain("verdict", argv[optind]);
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

static void call_str(const struct rt_vw_call_sig *c, char *out, size_t n)
{
	snprintf(out, n, "%s #%u (count %llu)", rt_vw_coll_names[c->kind], c->seq,
		 (unsigned long long)c->count);
}

static int cmd_diff(int argc, char **argv)
{
	struct rt_vw_trace *a, *b;
	bool same;

	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: ranktrace diff A B\n\nCompares two traces rank by rank: where the\n"
		       "sequence of collectives first diverges, allocation counts and peaks, how each\n"
		       "rank ended; then both verdicts and whether B shows A's failure signature.\n"
		       "Exit status: 0 same verdict, 1 different verdicts, 3 unreadable input.\n");
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: ranktrace diff A B\n");
		return EXIT_USAGE;
	}
	a = load_or_complain("diff", argv[1]);
	b = a ? load_or_complain("diff", argv[2]) : NULL;
	if (!a || !b) {
		rt_vw_free(a);
		return RT_VW_ERR_CORRUPT;
	}
	printf("A %s: %s\nB %s: %s\n\n", a->dir, rt_vw_verdict_names[a->verdict], b->dir,
	       rt_vw_verdict_names[b->verdict]);
	for (int i = 0; i < a->nranks; i++) {
		const struct rt_vw_rank *ra = &a->ranks[i];
		int j = rt_vw_rank_index(b, ra->meta.rank);
		const struct rt_vw_rank *rb = j >= 0 ? &b->ranks[j] : NULL;
		char x[96], y[96], ea[80], eb[80];
		uint32_t k = 0;

		if (!rb) {
			printf("rank %d: only in A\n", ra->meta.rank);
			continue;
		}
		while (k < ra->ncalls && k < rb->ncalls && ra->calls[k].kind == rb->calls[k].kind &&
		       ra->calls[k].count == rb->calls[k].count && ra->calls[k].root == rb->calls[k].root)
			k++;
		rank_end(ra, ea, sizeof(ea));
		rank_end(rb, eb, sizeof(eb));
		if (k == ra->ncalls && k == rb->ncalls) {
			printf("rank %d: same %u collectives", ra->meta.rank, k);
		} else {
			if (k < ra->ncalls)
				call_str(&ra->calls[k], x, sizeof(x));
			else
				snprintf(x, sizeof(x), "nothing more (%s)", ea);
			if (k < rb->ncalls)
				call_str(&rb->calls[k], y, sizeof(y));
			else
				snprintf(y, sizeof(y), "nothing more (%s)", eb);
			printf("rank %d: first divergence after %u identical collectives%s: A %s, B %s",
			       ra->meta.rank, k,
			       k && ra->calls[k - 1].kind == RT_CK_BROADCAST &&
					       ra->broadcasts_before_allgather == k ? " (the init broadcasts)" : "",
			       x, y);
		}
		printf("; allocations A %llu, B %llu", (unsigned long long)ra->allocs,
		       (unsigned long long)rb->allocs);
		if (strcmp(ea, eb))
			printf("; end A %s, B %s", ea, eb);
		printf("\n");
	}
	for (int j = 0; j < b->nranks; j++)
		if (rt_vw_rank_index(a, b->ranks[j].meta.rank) < 0)
			printf("rank %d: only in B\n", b->ranks[j].meta.rank);
	same = a->verdict == b->verdict;
	printf("\nverdicts: A %s, B %s: %s\n", rt_vw_verdict_names[a->verdict],
	       rt_vw_verdict_names[b->verdict],
	       same ? (a->verdict == RT_V_HEALTHY ? "both healthy" : "B shows the same failure signature as A")
		    : "different");
	rt_vw_free(a);
	rt_vw_free(b);
	return same ? 0 : 1;
}

/* Write to OUT via a temporary file, renamed at the end: no half files. */
static int write_output(const char *cmd, const struct rt_vw_trace *t, const char *out,
			int (*fn)(const struct rt_vw_trace *, FILE *))
{
	char tmp[PATH_MAX];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp%d", out, (int)getpid());
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "ranktrace %s: cannot write %s: %s\n", cmd, out, strerror(errno));
		return 1;
	}
	if (fn(t, f) != 0 || fclose(f) != 0 || rename(tmp, out) != 0) {
		fprintf(stderr, "ranktrace %s: writing %s failed: %s\n", cmd, out, strerror(errno));
		unlink(tmp);
		return 1;
	}
	return 0;
}

static int cmd_export(int argc, char **argv, bool report)
{
	static const struct option opts[] = {
		{ "perfetto", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = report ? "report" : "export", *out = NULL;
	struct rt_vw_trace *t;
	int c, rc;

	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
		case 'o': out = optarg; break;
		case 'h':
			if (report)
				printf("usage: ranktrace report DIR -o REPORT.html\n\nOne self-contained HTML "
				       "file (no network): verdict, findings, a row per rank, a timeline of\n"
				       "collectives per rank, device memory over time, parameter placement.\n");
			else
				printf("usage: ranktrace export DIR --perfetto OUT.json\n\nChrome trace-event "
				       "JSON for ui.perfetto.dev or chrome://tracing: a process per rank,\n"
				       "tracks per thread and CUDA stream, device-memory counters, and flow\n"
				       "arrows linking the same collective across ranks.\n");
			return 0;
		default: return EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || !out) {
		fprintf(stderr, report ? "usage: ranktrace report DIR -o REPORT.html\n"
				       : "usage: ranktrace export DIR --perfetto OUT.json\n");
		return EXIT_USAGE;
	}
	t = load_or_complain(cmd, argv[optind]);
	if (!t)
		return RT_VW_ERR_CORRUPT;
	rc = write_output(cmd, t, out, report ? rt_vw_report_html : rt_vw_export_perfetto);
	if (!rc)
		fprintf(stderr, "ranktrace %s: wrote %s\n", cmd, out);
	else
		rc = 1;
	if (!rc && t->damaged)
		rc = RT_VW_ERR_CORRUPT;
	rt_vw_free(t);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage_main(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage_main(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "inject"))
		return cmd_inject(argc - 1, argv + 1);
	if (!strcmp(argv[1], "view"))
		return cmd_view(argc - 1, argv + 1);
	if (!strcmp(argv[1], "verdict"))
		return cmd_verdict(argc - 1, argv + 1);
	if (!strcmp(argv[1], "diff"))
		return cmd_diff(argc - 1, argv + 1);
	if (!strcmp(argv[1], "export"))
		return cmd_export(argc - 1, argv + 1, false);
	if (!strcmp(argv[1], "report"))
		return cmd_export(argc - 1, argv + 1, true);
	fprintf(stderr, "ranktrace: unknown command '%s'\n\n", argv[1]);
	usage_main(stderr);
	return EXIT_USAGE;
}
