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
		"  run [-o DIR] [--max-size SIZE] -- CMD...   trace CMD and all its child processes\n"
		"\n"
		"Run `ranktrace <command> --help` for a command's options.\n");
}

static void usage_run(FILE *f)
{
	fprintf(f,
		"usage: ranktrace run [-o DIR] [--max-size SIZE] [--] CMD [ARG...]\n"
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

static int find_library(char *out, size_t n)
{
	const char *env = getenv("RANKTRACE_LIB");
	char dir[PATH_MAX];

	if (env && *env) {
		snprintf(out, n, "%s", env);
		return access(out, R_OK);
	}
	if (exe_dir(dir, sizeof(dir)) != 0)
		return -1;
	snprintf(out, n, "%s/../lib/libranktrace.so", dir);
	if (access(out, R_OK) == 0)
		return 0;
	snprintf(out, n, "%s/../lib/ranktrace/libranktrace.so", dir);
	return access(out, R_OK);
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char dir[PATH_MAX] = "", abs[PATH_MAX], lib[PATH_MAX], preload[2 * PATH_MAX + 16];
	char run_id[33];
	unsigned char rnd[16];
	const char *max_size = NULL, *old;
	bool traced = true;
	int c, status;

	while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': snprintf(dir, sizeof(dir), "%s", optarg); break;
		case 'm': max_size = optarg; break;
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
	if (find_library(lib, sizeof(lib)) != 0) {
		fprintf(stderr, "ranktrace run: cannot find libranktrace.so next to this program "
			"(set RANKTRACE_LIB)\n");
		return EXIT_USAGE;
	}
	if (!dir[0])
		default_dir(dir, sizeof(dir));
	if (mkdir(dir, 0700) != 0 && (errno != EEXIST || !dir_is_empty(dir))) {
		if (errno == EEXIST) {
			fprintf(stderr, "ranktrace run: %s already holds rank traces: choose another -o\n",
				dir);
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
		old = getenv("LD_PRELOAD");
		snprintf(preload, sizeof(preload), "%s%s%s", lib, old && *old ? ":" : "",
			 old ? old : "");
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			memset(rnd, (int)getpid(), sizeof(rnd));
		for (int i = 0; i < 16; i++)
			snprintf(run_id + 2 * i, 3, "%02x", rnd[i]);
		setenv("LD_PRELOAD", preload, 1);
		setenv("RANKTRACE_DIR", abs, 1);
		setenv("RANKTRACE_RUN_ID", run_id, 1);
		if (max_size)
			setenv("RANKTRACE_MAX_SIZE", max_size, 1);
		else
			unsetenv("RANKTRACE_MAX_SIZE");
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
	fprintf(stderr, "ranktrace: unknown command '%s'\n\n", argv[1]);
	usage_main(stderr);
	return EXIT_USAGE;
}
