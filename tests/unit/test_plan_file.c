/* SPDX-License-Identifier: MIT */
/* test_plan_file.c - `--inject-file` (inject/plan_file.c): what a plan file
 * is and what it is not, each refusal with its reason; and `inject --list`
 * (inject/list.c): every target, action, error code and preset listed, and
 * every preset a plan the parser accepts. Files live in a directory under
 * $TMPDIR, removed by each test. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plan.h"
#include "plan_int.h"

static char dir[PATH_MAX];
static char path[PATH_MAX + 32];

static void make_dir(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/rt-planfile-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	cr_assert(mkdtemp(dir), "mkdtemp %s", dir);
	snprintf(path, sizeof(path), "%s/plan", dir);
}

static void remove_dir(void)
{
	unlink(path);
	rmdir(dir);
}

TestSuite(plan_file, .init = make_dir, .fini = remove_dir);

static void write_file(const char *bytes, size_t n)
{
	FILE *f = fopen(path, "wb");

	cr_assert(f);
	cr_assert_eq(fwrite(bytes, 1, n, f), n);
	cr_assert_eq(fclose(f), 0);
}

/* Read path as a plan file: 0 with *plan, or -1 with err. */
static int read_plan(char **plan, char *err, size_t errlen)
{
	err[0] = '\0';
	return rt_inj_read_plan_file(path, plan, err, errlen);
}

Test(plan_file, specs_are_joined_without_comments_blanks_or_spaces)
{
	static const char text[] = "# a plan\n"
				   "\n"
				   "  cudaMalloc:error=cudaErrorMemoryAllocation:when=3   # the third\n"
				   "\tncclAllReduce:delay=1ms\t\r\n"
				   "   # nothing\n"
				   "skip-fsdp-root";
	struct rt_inj_plan p;
	char *plan = NULL, err[512];

	write_file(text, sizeof(text) - 1);
	cr_assert_eq(read_plan(&plan, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(plan, "cudaMalloc:error=cudaErrorMemoryAllocation:when=3;"
			       "ncclAllReduce:delay=1ms;skip-fsdp-root");
	cr_assert_eq(rt_inj_parse(plan, &p, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(p.nrules, 3);
	rt_inj_plan_free(&p);
	free(plan);
}

Test(plan_file, a_line_longer_than_a_read_is_kept_whole)
{
	size_t n = 20000;
	char *text = malloc(n + 64), *plan = NULL, err[512];

	cr_assert(text);
	memset(text, ' ', n);
	memcpy(text + n, "cudaFree:skip\n", 14);
	write_file(text, n + 14);
	cr_assert_eq(read_plan(&plan, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(plan, "cudaFree:skip");
	free(plan);
	free(text);
}

Test(plan_file, only_comments_hold_no_spec)
{
	char *plan = (char *)1, err[512];

	write_file("# nothing\n\n  \n", 14);
	cr_assert_eq(read_plan(&plan, err, sizeof(err)), -1);
	cr_assert_null(plan);
	cr_assert(strstr(err, "holds no spec"), "%s", err);
}

Test(plan_file, a_nul_byte_is_refused_with_its_line)
{
	char *plan = NULL, err[512];

	write_file("cudaFree:skip\n# x\nab\0cudaMalloc:skip\n", 37);
	cr_assert_eq(read_plan(&plan, err, sizeof(err)), -1);
	cr_assert(strstr(err, "line 3: a NUL byte (at byte 20): not a text file"), "%s", err);
}

Test(plan_file, over_one_mib_is_refused)
{
	size_t n = RT_INJ_MAX_PLAN_FILE + 1;
	char *text = malloc(n), *plan = NULL, err[512];

	cr_assert(text);
	memset(text, '#', n);
	write_file(text, n);
	free(text);
	cr_assert_eq(read_plan(&plan, err, sizeof(err)), -1);
	cr_assert(strstr(err, "over 1 MiB: not a plan file"), "%s", err);
}

Test(plan_file, a_directory_a_device_and_a_missing_file_are_refused)
{
	char *plan = NULL, err[512];

	cr_assert_eq(rt_inj_read_plan_file(dir, &plan, err, sizeof(err)), -1);
	cr_assert(strstr(err, "not a plan file (a directory)"), "%s", err);
	cr_assert_eq(rt_inj_read_plan_file("/dev/null", &plan, err, sizeof(err)), -1);
	cr_assert(strstr(err, "a device or socket"), "%s", err);
	cr_assert_eq(read_plan(&plan, err, sizeof(err)), -1, "no file yet");
	cr_assert(strstr(err, "No such file"), "%s", err);
	cr_assert_null(plan);
}

/* `--inject-file <(...)`: a pipe whose writer sends the plan in pieces */
Test(plan_file, a_pipe_is_read_as_it_comes)
{
	char *plan = NULL, err[512], fdpath[64];
	int fds[2], status;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		alarm(20);
		if (write(fds[1], "cudaFree:", 9) != 9)
			_exit(1);
		usleep(100 * 1000); /* the rest comes later: the reader must wait for it */
		_exit(write(fds[1], "skip\n", 5) == 5 ? 0 : 1);
	}
	close(fds[1]);
	alarm(20);
	snprintf(fdpath, sizeof(fdpath), "/dev/fd/%d", fds[0]);
	cr_assert_eq(rt_inj_read_plan_file(fdpath, &plan, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(plan, "cudaFree:skip");
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fds[0]);
	free(plan);
}

/* A named pipe whose writer opens it late (`mkfifo p; ranktrace run
 * --inject-file p ... & echo spec > p`): read as `cat p` would, once the
 * writer came; with no writer at all, refused after a bounded wait. */
Test(plan_file, a_named_pipe_waits_for_a_late_writer)
{
	char *plan = NULL, err[512];
	int status;
	pid_t pid;

	cr_assert_eq(mkfifo(path, 0600), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd;

		alarm(20);
		usleep(300 * 1000); /* the reader is already there */
		fd = open(path, O_WRONLY);
		_exit(fd >= 0 && write(fd, "cudaFree:skip\n", 14) == 14 ? 0 : 1);
	}
	alarm(20);
	cr_assert_eq(read_plan(&plan, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(plan, "cudaFree:skip");
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	free(plan);
}

Test(plan_file, a_named_pipe_nobody_writes_is_refused_in_bounded_time)
{
	char *plan = NULL, err[512];

	cr_assert_eq(mkfifo(path, 0600), 0);
	rt_inj_plan_pipe_wait_ms = 200;
	alarm(20);
	cr_assert_eq(read_plan(&plan, err, sizeof(err)), -1);
	cr_expect(strstr(err, "no writer"), "%s", err);
	cr_expect_null(plan);
}

/* ---- inject --list ---- */

static char *list_text(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert(f);
	rt_inj_print_list(f);
	cr_assert_eq(fclose(f), 0);
	return text;
}

Test(inject_list, names_every_target_action_and_error)
{
	char *text = list_text();

	for (unsigned id = 0; id < RT_ID_COUNT; id++)
		cr_assert(!rt_id_is_api(id) || strstr(text, rt_events[id].name), "target %s not listed",
			  rt_events[id].name);
	for (int a = 1; a < RT_INJ_NACTIONS; a++)
		cr_assert(strstr(text, rt_inj_actions[a].usage), "action %s not listed", rt_inj_action_names[a]);
	cr_assert(strstr(text, "@collective (AllGather, ReduceScatter, AllReduce"), "the group, its members");
	cr_assert(strstr(text, "cudaErrorMemoryAllocation"));
	cr_assert(strstr(text, "ncclSystemError"));
	free(text);
}

Test(inject_list, shows_each_preset_with_its_expansion)
{
	char *text = list_text();

	cr_assert(strstr(text, "oom-at=N"), "%s", text);
	cr_assert(strstr(text, "= cudaMalloc:error=cudaErrorMemoryAllocation:when=N\n"));
	cr_assert(strstr(text, "rank-dies=R@SEQ"));
	cr_assert(strstr(text, "= @collective:kill=9:rank=R:when=SEQ\n"));
	cr_assert(strstr(text, "= fsdp.root_forward:bypass\n"));
	for (size_t i = 0; i < rt_inj_npresets; i++)
		cr_assert(strstr(text, rt_inj_presets[i].name), "preset %s", rt_inj_presets[i].name);
	free(text);
}

Test(inject_list, every_preset_is_a_plan_the_parser_accepts)
{
	for (size_t i = 0; i < rt_inj_npresets; i++) {
		const struct rt_inj_preset *pr = &rt_inj_presets[i];
		char text[128], err[512];
		struct rt_inj_plan p;

		if (!pr->params)
			snprintf(text, sizeof(text), "%s", pr->name);
		else
			snprintf(text, sizeof(text), "%s=%s", pr->name, strchr(pr->params, '@') ? "1@3" : "3");
		cr_assert_eq(rt_inj_parse(text, &p, err, sizeof(err)), 0, "%s: %s", text, err);
		cr_assert_eq(p.nrules, 1, "%s", text);
		rt_inj_plan_free(&p);
	}
}
