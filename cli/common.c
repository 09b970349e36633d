/* SPDX-License-Identifier: MIT */
/* common.c - what the commands share: parsing ranks and durations, loading
 * a trace with its warnings, the exit status of a trace and of an output
 * printed, writing an output file atomically, run's summary. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "env.h"
#include "escape.h"
#include "read_bt2.h"

int rt_cli_printed(const char *cmd, int rc)
{
	if (rc == -EINVAL) {
		fprintf(stderr, "ranktrace %s: internal error: the JSON writer was misused; the output "
			"is not well-formed (a bug: please report it)\n", cmd);
		return 1;
	}
	if (fflush(stdout) != 0 || rc || ferror(stdout)) {
		fprintf(stderr, "ranktrace %s: writing the output failed: %s\n", cmd,
			strerror(errno ? errno : EIO));
		return 1;
	}
	return 0;
}

int rt_cli_attempt = RT_VW_LAST_ATTEMPT;

int rt_cli_parse_attempt(const char *cmd, const char *s)
{
	char *end;
	long v = -1;

	if (isdigit((unsigned char)*s)) {
		errno = 0;
		v = strtol(s, &end, 10);
		if (*end || errno || v > 1000000)
			v = -1;
	}
	if (v < 0) {
		fprintf(stderr, "ranktrace %s: --attempt %s: expected an attempt number (0: the "
			"first; the default is the last)\n", cmd, s);
		return -1;
	}
	rt_cli_attempt = (int)v;
	return 0;
}

int rt_cli_parse_rank(const char *cmd, const char *s)
{
	char *end;
	long v = -1;

	if (isdigit((unsigned char)*s)) {
		errno = 0;
		v = strtol(s, &end, 10);
		if (*end || errno || v > RT_CLI_MAX_RANK)
			v = -1;
	}
	if (v < 0)
		fprintf(stderr, "ranktrace %s: --rank %s: expected a rank number (0 to %d)\n", cmd,
			s, RT_CLI_MAX_RANK);
	return (int)v;
}

int rt_cli_check_dir(const char *cmd, const char *dir)
{
	struct stat st;

	if (stat(dir, &st) != 0) {
		fprintf(stderr, "ranktrace %s: %s: %s\n", cmd, dir, errno == ENOENT ?
			"no such directory" : strerror(errno));
		return EXIT_USAGE;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "ranktrace %s: %s: not a directory (a trace is the directory "
			"`ranktrace run -o` wrote)\n", cmd, dir);
		return EXIT_USAGE;
	}
	return 0;
}

int rt_cli_trace_status(const struct rt_vw_trace *t)
{
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].completeness == RT_C_DAMAGED)
			return RT_VW_ERR_CORRUPT;
	return t->damaged || t->nmissing || t->duplicates ? RT_VW_ERR_CORRUPT : 0;
}

static int parse_duration(const char *s, uint64_t *ns)
{
	char *end;
	double v, unit = 1e9;

	if (!isdigit((unsigned char)*s))
		return -1;
	v = strtod(s, &end);
	if (!strcmp(end, "ms"))
		unit = 1e6;
	else if (!strcmp(end, "m") || !strcmp(end, "min"))
		unit = 60e9;
	else if (!strcmp(end, "h"))
		unit = 3600e9;
	else if (*end && strcmp(end, "s"))
		return -1;
	if (!(v * unit >= 1e6 && v * unit <= 7 * 86400e9)) /* 1 ms .. a week, nan refused */
		return -1;
	*ns = (uint64_t)(v * unit);
	return 0;
}

int rt_cli_parse_duration(const char *cmd, const char *opt, const char *s, uint64_t *ns)
{
	if (parse_duration(s, ns) == 0)
		return 0;
	fprintf(stderr, "ranktrace %s: --%s %s: expected a duration such as 30s, 500ms or 2m\n",
		cmd, opt, s);
	return -1;
}

/* An elastic job's summary is its last attempt's (DIR/attempt-N, what
 * rt_vw_load reads), the earlier attempts said by their endings. */
int rt_cli_print_summary(const char *dir, const char *inject)
{
	char **names, err[1024] = "", adir[PATH_MAX];
	int n = -1, bad, last = 0; /* -1: an LTTng trace, its ranks counted by the model */
	struct rt_vw_trace *t = NULL;

	if (!rt_vw_is_lttng(dir)) {
		last = rt_vw_last_attempt(dir);
		if (last > 0 && snprintf(adir, sizeof(adir), "%s/attempt-%d", dir, last) >=
					(int)sizeof(adir))
			last = 0;
		n = rt_vw_list_ranks(last > 0 ? adir : dir, &names);
		rt_vw_free_names(names, n > 0 ? n : 0);
		n = n > 0 ? n : 0;
	}
	if (n)
		t = rt_vw_load(dir, 0, err, sizeof(err));
	bad = rt_vw_summary(stdout, last > 0 ? adir : dir, n, t, err);
	fflush(stdout);
	if (!n && inject && *inject) /* nothing traced: no rule could fire or say so */
		fprintf(stderr, "ranktrace run: warning: the fault plan never fired (%s): no process "
			"of the command was traced\n", rt_vw_esc(inject));
	rt_vw_summary_never_fired(stderr, t);
	if (t && rt_vw_probe_missing_text(t, err, sizeof(err)))
		fprintf(stderr, "ranktrace run: warning: %s: its verdict will be inconclusive (125)\n",
			rt_vw_esc(err));
	rt_vw_free(t);
	return bad;
}

struct rt_vw_trace *rt_cli_load(const char *cmd, const char *dir)
{
	return rt_cli_load_stall(cmd, dir, 0);
}

struct rt_vw_trace *rt_cli_load_stall(const char *cmd, const char *dir, uint64_t stall_ns)
{
	char err[1024];
	unsigned flags = !strcmp(cmd, "diff") ? RT_VW_KEEP_CALLS
			 : !strcmp(cmd, "export") || !strcmp(cmd, "report") ? RT_VW_KEEP_MEMORY : 0;
	struct rt_vw_trace *t = rt_vw_load_attempt(dir, flags, stall_ns, rt_cli_attempt, err,
						   sizeof(err));

	if (!t)
		fprintf(stderr, "ranktrace %s: %s\n", cmd, rt_vw_esc(err));
	for (int i = 0; t && i < t->nranks; i++)
		if (t->ranks[i].damaged[0])
			fprintf(stderr, "ranktrace %s: warning: %s\n", cmd, rt_vw_esc(t->ranks[i].damaged));
	return t;
}

/* Write to OUT via a temporary file, renamed at the end: no half files. */
int rt_cli_write_output(const char *cmd, const struct rt_vw_trace *t, const char *out,
			int (*fn)(const struct rt_vw_trace *, FILE *))
{
	char tmp[PATH_MAX];
	mode_t mask = umask(0);
	FILE *f = NULL;
	int fd;

	umask(mask);
	/* an unpredictable name created with O_EXCL in OUT's directory: a
	 * planted OUT.tmpPID symlink can no longer redirect the write */
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", out) >= (int)sizeof(tmp)) {
		fprintf(stderr, "ranktrace %s: %s: path too long\n", cmd, out);
		return 1;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0 || fchmod(fd, 0666 & ~mask) != 0 || !(f = fdopen(fd, "w"))) {
		fprintf(stderr, "ranktrace %s: cannot write %s: %s\n", cmd, out, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return 1;
	}
	fd = fn(t, f);
	if (fclose(f) != 0 || fd != 0 || rename(tmp, out) != 0) {
		fprintf(stderr, "ranktrace %s: writing %s failed: %s\n", cmd, out, strerror(errno));
		unlink(tmp);
		return 1;
	}
	return 0;
}

int rt_cli_check_env(const char *cmd, const char *whos)
{
	char msg[400];
	int bad = 0;

	for (int i = rt_env_next_bad(whos, 0, msg, sizeof(msg)); i >= 0;
	     i = rt_env_next_bad(whos, i + 1, msg, sizeof(msg)), bad++)
		fprintf(stderr, "ranktrace %s: %s\n", cmd, msg);
	return bad ? EXIT_ENV : 0;
}

int rt_cli_set_jobs(const char *cmd, const char *s)
{
	struct rt_env_val v;
	char why[160];

	/* the range of RANKTRACE_JOBS, which --jobs overrides */
	if (rt_env_check(RT_ENV_JOBS, s, &v, why, sizeof(why)) != 0) {
		fprintf(stderr, "ranktrace %s: --jobs %s: %s threads\n", cmd, rt_vw_esc(s), why);
		return -1;
	}
	rt_vw_set_jobs((int)v.n);
	return 0;
}
