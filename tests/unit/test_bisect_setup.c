/* SPDX-License-Identifier: MIT */
/* test_bisect_setup.c - what surrounds the search (bisect/cands.c,
 * worker.c, spawn.c, state.c, env.c), still with the fake judge of
 * bisect_rig.h for the traced runs: --versions lists (--find fix: from the
 * bad endpoint to the good one) and their refusals;
 * git candidates in worktrees at the right commit, the boundaries' kept and
 * the others removed; a failing or hanging --setup skips its candidate (the
 * hanging one's whole process group killed); --env and the candidate reach
 * the set-up; the state file round-trips any text and refuses damage. */
#include "bisect_rig.h"
#include "proc_alive.h"

TestSuite(bisect_setup, .init = rig_init, .fini = rig_fini);

static int list(struct bs_ctx *x, const char *versions, const char *good, const char *bad)
{
	memset(x, 0, sizeof(*x));
	x->o.source = BS_VERSIONS;
	x->o.versions = versions;
	x->o.good = good;
	x->o.bad = bad;
	return bs_list_candidates(x);
}

Test(bisect_setup, versions_are_listed_between_good_and_bad)
{
	struct bs_ctx x;

	cr_assert_eq(list(&x, "1.0,1.1,,2.0rc1,2.0,2.1", "1.1", "2.0"), 0);
	cr_assert_eq(x.n, 3);
	cr_assert_str_eq(x.c[0].id, "1.1");
	cr_assert_str_eq(x.c[1].id, "2.0rc1");
	cr_assert_str_eq(x.c[2].name, "2.0");
	free(x.c);
	cr_assert_eq(list(&x, "a,b", NULL, NULL), 0);
	cr_assert_eq(x.n, 2);
	free(x.c);
}

Test(bisect_setup, bad_version_lists_are_refused_with_exit_2)
{
	static const char *const bad[][3] = {
		{ "1.0,$(reboot)", NULL, NULL }, /* shell text is no version */
		{ "1.0,1.0,2.0", NULL, NULL },    /* twice */
		{ "1.0,2.0", "2.0", "1.0" },      /* good after bad */
		{ "1.0,2.0", "1.0", "1.0" },      /* the same */
		{ "1.0,2.0", "0.9", NULL },       /* not listed */
		{ "1.0,-x", NULL, NULL },         /* an option, not a version */
	};
	struct bs_ctx x;

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		cr_assert_eq(list(&x, bad[k][0], bad[k][1], bad[k][2]), BS_EXIT_USAGE, "%s", bad[k][0]);
		free(x.c);
	}
}

Test(bisect_setup, find_fix_lists_from_the_bad_endpoint_to_the_good_one)
{
	struct bs_ctx x;

	memset(&x, 0, sizeof(x));
	x.o.source = BS_VERSIONS;
	x.o.find = BS_FIND_FIX;
	x.o.versions = "4.52.4,4.53.0,4.53.1,4.53.2,4.54.1";
	x.o.bad = "4.53.0";
	x.o.good = "4.53.2";
	cr_assert_eq(bs_list_candidates(&x), 0);
	cr_assert_eq(x.n, 3, "bad 4.53.0 .. good 4.53.2, oldest first");
	cr_assert_str_eq(x.c[0].id, "4.53.0");
	cr_assert_str_eq(x.c[2].id, "4.53.2");
	free(x.c);
	x.c = NULL;
	x.n = 0;
	x.o.good = x.o.bad = NULL; /* the endpoints by default: the first bad, the last good */
	cr_assert_eq(bs_list_candidates(&x), 0);
	cr_assert_eq(x.n, 5);
	free(x.c);
	x.c = NULL;
	x.n = 0;
	x.o.bad = "4.53.2"; /* a bad endpoint after the good one: that is --find break */
	x.o.good = "4.53.0";
	cr_assert_eq(bs_list_candidates(&x), BS_EXIT_USAGE);
	free(x.c);
}

Test(bisect_setup, a_failing_setup_skips_its_candidate)
{
	struct bs_ctx x;
	char *log;

	rig_ctx(&x, "setup", 9, 1);
	rig.first_bad = 7; /* v8, v0, v4 (set-up fails), v3, v6, v7 */
	x.o.setup = "echo preparing {version}; test {version} != v4";
	cr_assert_eq(rig_search(&x), BS_EXIT_FOUND);
	cr_assert_eq(x.c[4].judged, BS_SKIP);
	cr_assert_str_eq(x.c[4].verdict, "set-up-failed");
	cr_assert_str_eq(x.c[4].reason, "set-up failed: --setup exited 1: preparing v4");
	cr_assert_eq(rig_calls(&x, 4), 0, "no run after a failed set-up");
	cr_assert_eq(x.c[6].judged, BS_GOOD);
	cr_assert_eq(x.c[7].judged, BS_BAD);
	log = rig_file(&x, ".bisect/v4/log");
	cr_assert(strstr(log, "== /bin/sh -c echo preparing \"${RANKTRACE_BISECT_CANDIDATE}\""), "%s", log);
	free(log);
	free(x.c);
}

Test(bisect_setup, a_hanging_setup_is_killed_with_its_process_group)
{
	struct bs_ctx x;
	char *pid;

	rig_ctx(&x, "hang", 3, 1);
	rig.first_bad = 2;
	x.o.timeout = 0.5;
	x.o.setup = "if [ {version} = v1 ]; then sleep 30 & echo $! > {dir}/pid; wait; fi";
	cr_assert_eq(rig_search(&x), BS_EXIT_NOT_FOUND);
	cr_assert_eq(x.c[1].judged, BS_SKIP);
	cr_assert_str_eq(x.c[1].reason, "set-up failed: --setup timed out after 0.5s");
	pid = rig_file(&x, ".bisect/v1/pid");
	cr_assert(atoi(pid) > 0, "the set-up's child: '%s'", pid);
	cr_assert_not(alive(atoi(pid)), "sleep %d outlived its set-up", atoi(pid));
	free(pid);
	free(x.c);
}

Test(bisect_setup, env_and_the_candidate_reach_the_setup)
{
	static const char *const env[] = { "RT_TEST_A=one", "RT_TEST_A=one two", "PYTHONPATH=/p" };
	struct bs_ctx x;
	char *a, *c, *pp;

	rig_ctx(&x, "env", 2, 1);
	for (int k = 0; k < 3; k++)
		x.o.env[x.o.nenv++] = env[k];
	x.o.setup = "printf %s \"$RT_TEST_A\" > {dir}/a; printf %s {version} > '{dir}/c';"
		    " printf %s \"$PYTHONPATH\" > {dir}/pp";
	cr_assert_eq(rig_search(&x), BS_EXIT_FOUND);
	a = rig_file(&x, ".bisect/v1/a");
	c = rig_file(&x, ".bisect/v1/c");
	pp = rig_file(&x, ".bisect/v1/pp");
	cr_assert_str_eq(a, "one two", "the last of a name wins");
	cr_assert_str_eq(c, "v1");
	cr_assert_str_eq(pp, "/p");
	free(a), free(c), free(pp);
	free(x.c);
}

static void git(const char *repo, const char *cmd)
{
	char line[PATH_MAX + 256];

	snprintf(line, sizeof(line), "cd '%s' && timeout 60 sh -c '%s' > /dev/null 2>&1", repo, cmd);
	cr_assert_eq(system(line), 0, "%s", cmd);
}

Test(bisect_setup, git_candidates_run_in_worktrees_at_their_commit)
{
	char repo[PATH_MAX + 8], head[128];
	struct bs_ctx x;
	char *out, *h;

	rig_ctx(&x, "git", 0, 1);
	snprintf(repo, sizeof(repo), "%s/repo", rig.root);
	cr_assert_eq(bs_mkdir_p(repo), 0);
	git(repo, "git init -q . && git config user.email t@t && git config user.name t");
	for (int i = 0; i < 9; i++) {
		snprintf(head, sizeof(head), "echo %d > f && git add f && git commit -qm c%d%s", i, i,
			 i ? "" : " && git tag t0");
		git(repo, head);
	}
	x.o.source = BS_GIT;
	x.o.repo = repo;
	x.o.good = "t0";
	x.o.bad = "HEAD";
	x.o.json = false;
	x.o.setup = "git rev-parse HEAD > ../head";
	cr_assert_eq(bs_list_candidates(&x), 0);
	cr_assert_eq(x.n, 9);
	cr_assert_str_eq(x.c[3].label, "c3");
	cr_assert_eq(strlen(x.c[3].id), 40);
	cr_assert_eq(strlen(x.c[3].name), 12);
	rig.first_bad = 6;
	cr_assert_eq(rig_search(&x), BS_EXIT_FOUND);
	for (int i = 0; i < 9; i++) {
		char p[256];
		bool kept;

		if (x.c[i].judged == BS_UNTESTED)
			continue;
		snprintf(p, sizeof(p), ".bisect/%s/head", x.c[i].name);
		h = rig_file(&x, p);
		cr_assert(!strncmp(h, x.c[i].id, 40), "c%d's worktree is at %s", i, h);
		free(h);
		snprintf(p, sizeof(p), "%s/.bisect/%s/src/f", x.dir, x.c[i].name);
		kept = access(p, F_OK) == 0;
		cr_assert_eq(kept, i == 5 || i == 6, "c%d's worktree %s", i, kept ? "kept" : "removed");
	}
	out = rig_file(&x, "out");
	cr_assert(strstr(out, "first bad: "), "%s", out);
	cr_assert(strstr(out, "  c6  (" SIG ")"), "%s", out);
	cr_assert(strstr(out, " c6\n"), "git log of the range: %s", out);
	free(out);
	free(x.c);
}

Test(bisect_setup, the_state_file_round_trips_any_text)
{
	static char *argv[] = { "--versions", "a\tb\\n", "--", "sh", "-c", "echo 'x\ny'", NULL };
	struct bs_ctx x, y;
	char **av;
	int ac;

	rig_ctx(&x, "state", 3, 1);
	x.argv = argv;
	x.argc = 6;
	x.rounds = 7;
	snprintf(x.signature, sizeof(x.signature), "crashed");
	snprintf(x.pytag, sizeof(x.pytag), "cpython-311-linux");
	snprintf(x.repo, sizeof(x.repo), "/r\te\\po");
	x.c[1].judged = BS_SKIP;
	x.c[1].runs = 2;
	x.c[1].round = 3;
	x.c[1].seconds = 1.5;
	snprintf(x.c[1].label, sizeof(x.c[1].label), "tab\there");
	snprintf(x.c[1].reason, sizeof(x.c[1].reason), "line\nbreak \\ back");
	snprintf(x.c[1].verdict, sizeof(x.c[1].verdict), "timeout");
	cr_assert_eq(bs_state_save(&x), 0);
	memset(&y, 0, sizeof(y));
	snprintf(y.dir, sizeof(y.dir), "%s", x.dir);
	cr_assert_eq(bs_state_load(&y, &av, &ac), 0);
	cr_assert_eq(ac, 6);
	for (int k = 0; k < 6; k++)
		cr_assert_str_eq(av[k], argv[k]);
	cr_assert_null(av[6]);
	cr_assert_eq(y.n, 3);
	cr_assert_eq(y.rounds, 7);
	cr_assert_str_eq(y.signature, "crashed");
	cr_assert_str_eq(y.pytag, "cpython-311-linux");
	cr_assert_str_eq(y.repo, "/r\te\\po");
	cr_assert_eq(y.c[1].judged, BS_SKIP);
	cr_assert_eq(y.c[1].runs, 2);
	cr_assert_eq(y.c[1].round, 3);
	cr_assert_float_eq(y.c[1].seconds, 1.5, 1e-9);
	cr_assert_str_eq(y.c[1].label, "tab\there");
	cr_assert_str_eq(y.c[1].reason, "line\nbreak \\ back");
	cr_assert_str_eq(y.c[2].id, "v2");
	for (int k = 0; k < ac; k++)
		free(av[k]);
	free(av);
	free(x.c);
	free(y.c);
}

Test(bisect_setup, a_damaged_state_file_is_refused)
{
	static const char *const bad[] = {
		"",                                          /* empty */
		"ranktrace-bisect-state 2\narg x\n",         /* another format */
		"ranktrace-bisect-state 1\ncand 0 0 0 0.0\tv0\tv0\t\t\t\ncand 0 0 0 0.0\tv1\n", /* no args */
		"ranktrace-bisect-state 1\narg x\ncand 0 0 0 0.0\tv0\n",  /* one candidate */
		"ranktrace-bisect-state 1\narg x\ncand 0 0 0 0.0 v0\ncand 0 0 0 0.0\tv1\n", /* no tab */
		"ranktrace-bisect-state 1\narg x\ncand zero\tv0\ncand 0 0 0 0.0\tv1\n", /* numbers */
	};
	struct bs_ctx x, y;
	char path[PATH_MAX + 32], **av;
	int ac;

	rig_ctx(&x, "damaged", 0, 1);
	snprintf(path, sizeof(path), "%s/.bisect/state", x.dir);
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		FILE *f = fopen(path, "w");

		cr_assert_not_null(f);
		fputs(bad[k], f);
		fclose(f);
		memset(&y, 0, sizeof(y));
		snprintf(y.dir, sizeof(y.dir), "%s", x.dir);
		cr_assert_eq(bs_state_load(&y, &av, &ac), -1, "state %zu loaded", k);
		for (int i = 0; i < ac; i++)
			free(av[i]);
		free(av);
		free(y.c);
	}
	unlink(path);
	memset(&y, 0, sizeof(y));
	snprintf(y.dir, sizeof(y.dir), "%s", x.dir);
	cr_assert_eq(bs_state_load(&y, &av, &ac), -1, "no state file");
	free(x.c);
}
