/* SPDX-License-Identifier: MIT */
/* test_bisect.c - the bisect search (bisect/search.c, worker.c) on a fake
 * judge (bisect_rig.h): it finds the first bad (--find fix: the first good
 * after a bad one) in at most ceil(log2 N) + 2 runs, in about log_(P+1) N rounds of at most P runs with --jobs P; goes
 * around skipped candidates; --retries wants the signature twice; a bisect
 * interrupted mid-way resumes from its state without judging anything
 * twice; misjudged endpoints stop it. Runs are counted from the judge's
 * own log, not from the bisect's bookkeeping. */
#include "bisect_rig.h"

TestSuite(bisect, .init = rig_init, .fini = rig_fini);

/* The search's answer: first bad is c[b], last good c[b-1], nothing else
 * bad below b; with --find fix, first good c[b], last bad c[b-1], nothing
 * good below b. */
static void assert_found(const struct bs_ctx *x, int rc, int b)
{
	int new = x->o.find == BS_FIND_FIX ? BS_GOOD : BS_BAD;
	int old = new == BS_GOOD ? BS_BAD : BS_GOOD;

	cr_assert_eq(rc, BS_EXIT_FOUND, "n %d, first %s %d: exit %d", x->n, bs_judged_name(new), b, rc);
	cr_assert_eq(x->c[b].judged, new, "n %d: v%d judged %s", x->n, b,
		     bs_judged_name(x->c[b].judged));
	cr_assert_eq(x->c[b - 1].judged, old, "n %d: v%d judged %s", x->n, b - 1,
		     bs_judged_name(x->c[b - 1].judged));
	for (int i = 0; i < b; i++)
		cr_assert_neq(x->c[i].judged, new, "n %d: v%d below the first %s judged so", x->n, i,
			      bs_judged_name(new));
}

/* Every position of the first bad (--find fix: first good) in lists of 2 to
 * 1000: found in at most ceil(log2 N) + 2 runs, the bad endpoint judged
 * first (it names the signature). Returns the number of searches. */
static int every_position(int find)
{
	static const int big[] = { 16, 17, 31, 32, 33, 64, 65, 100, 1000 };
	struct bs_ctx x;
	int searches = 0;

	for (int t = 0; t < 11 + 9; t++) {
		int n = t < 11 ? t + 2 : big[t - 11];
		int at[] = { 1, 2, n / 3, n / 2, n - 2, n - 1 };

		for (int k = 0; k < (n <= 12 ? n - 1 : 6); k++) {
			int b = n <= 12 ? k + 1 : at[k];
			char name[32], first[32], *calls;
			int rc, runs, bound = ceil_log(n, 2) + 2;

			if (b < 1 || b > n - 1)
				continue;
			snprintf(name, sizeof(name), "%s-n%d-k%d", find ? "fix" : "break", n, k);
			rig_ctx(&x, name, n, 1);
			x.o.find = find;
			rig.fix = find == BS_FIND_FIX;
			rig.first_bad = b;
			rc = rig_search(&x);
			assert_found(&x, rc, b);
			runs = rig_calls(&x, -1);
			cr_assert_leq(runs, bound, "n %d, first %d: %d runs, more than %d", n, b, runs, bound);
			cr_assert_eq(x.rounds, runs, "--jobs 1: one run a round (%d rounds)", x.rounds);
			cr_assert_str_eq(x.signature, SIG, "the bad endpoint names the signature");
			calls = rig_file(&x, "calls");
			snprintf(first, sizeof(first), "%d 0\n", find ? 0 : n - 1);
			cr_assert(!strncmp(calls, first, strlen(first)), "the bad endpoint first: %s", calls);
			free(calls);
			free(x.c);
			searches++;
		}
	}
	return searches;
}

Test(bisect, finds_the_first_bad_in_at_most_log2_n_plus_2_runs)
{
	cr_assert_geq(every_position(BS_FIND_BREAK), 100);
}

Test(bisect, find_fix_finds_the_first_good_after_a_bad_in_at_most_log2_n_plus_2_runs)
{
	cr_assert_geq(every_position(BS_FIND_FIX), 100);
}

Test(bisect, jobs_p_takes_about_log_p_plus_1_rounds_of_at_most_p_runs)
{
	static const int jobs[] = { 2, 3, 4, 8 };
	struct bs_ctx x;

	for (int t = 0; t < 4; t++) {
		int n = 200, p = jobs[t], b = 137 - 17 * t;
		int per_round[64] = { 0 }, bound = 1 + ceil_log(n - 1, p + 1);
		char name[32];
		int rc;

		snprintf(name, sizeof(name), "p%d", p);
		rig_ctx(&x, name, n, p);
		rig.first_bad = b;
		rc = rig_search(&x);
		assert_found(&x, rc, b);
		cr_assert_leq(x.rounds, bound, "--jobs %d: %d rounds, more than %d", p, x.rounds, bound);
		for (int i = 0; i < n; i++)
			if (x.c[i].judged != BS_UNTESTED) {
				cr_assert(x.c[i].round >= 1 && x.c[i].round <= x.rounds);
				per_round[x.c[i].round]++;
			}
		cr_assert_eq(per_round[1], 2, "the first round judges both endpoints");
		for (int r = 2; r <= x.rounds; r++)
			cr_assert(per_round[r] >= 1 && per_round[r] <= p, "--jobs %d: round %d ran %d", p, r,
				  per_round[r]);
		cr_assert_leq(rig_calls(&x, -1), 2 + p * (bound - 1));
		free(x.c);
	}
}

Test(bisect, a_skipped_candidate_is_gone_around)
{
	struct bs_ctx x;
	int rc;
	char *out;

	rig_ctx(&x, "skip", 17, 1);
	rig.first_bad = 11;
	for (int i = 5; i <= 9; i++) /* every one but v10 between 4 and the first bad */
		rig.runs[i] = i % 2 ? "inconclusive" : "crashed";
	rc = rig_search(&x);
	assert_found(&x, rc, 11);
	for (int i = 5; i <= 9; i++)
		if (x.c[i].judged != BS_UNTESTED)
			cr_assert_eq(x.c[i].judged, BS_SKIP, "v%d", i);
	cr_assert_eq(x.c[10].judged, BS_GOOD);
	out = rig_file(&x, "out");
	cr_assert(strstr(out, "\"first_bad\": {\"index\": 11, \"name\": \"v11\""), "%s", out);
	free(out);
	for (int i = 5; i <= 9; i++)
		if (x.c[i].judged == BS_SKIP)
			cr_assert_str_eq(x.c[i].reason, i % 2 ? "trace inconclusive" : "another failure: crashed");
	free(x.c);
}

Test(bisect, a_skip_next_to_the_first_bad_leaves_a_range)
{
	struct bs_ctx x;
	char *out;
	int rc;

	rig_ctx(&x, "range", 9, 1);
	rig.first_bad = 6;
	rig.runs[5] = "timeout";
	rc = rig_search(&x);
	cr_assert_eq(rc, BS_EXIT_NOT_FOUND);
	cr_assert_eq(x.c[4].judged, BS_GOOD);
	cr_assert_eq(x.c[5].judged, BS_SKIP);
	cr_assert_str_eq(x.c[5].reason, "run over --timeout 0s");
	cr_assert_eq(x.c[6].judged, BS_BAD);
	out = rig_file(&x, "out");
	cr_assert(strstr(out, "\"found\": false"), "%s", out);
	cr_assert(strstr(out, "\"first_bad\": null"), "%s", out);
	cr_assert(strstr(out, "\"first_bad_range\": [\"v5\", \"v6\"]"), "%s", out);
	free(out);
	free(x.c);
}

Test(bisect, retries_want_the_signature_twice)
{
	struct bs_ctx x;
	int rc;

	rig_ctx(&x, "retries", 9, 1);
	x.o.retries = 2;
	rig.first_bad = 6;
	rig.runs[4] = SIG ",healthy";         /* flaky */
	rig.runs[5] = SIG ",crashed,crashed"; /* does not repeat */
	rig.runs[6] = "crashed," SIG "," SIG; /* bad on its third run */
	rig.runs[8] = SIG;                    /* the bad endpoint */
	rc = rig_search(&x);
	cr_assert_eq(rc, BS_EXIT_NOT_FOUND, "v4, v5 skipped: v3..v6 is the range");
	cr_assert_eq(x.c[8].runs, 2);
	cr_assert_eq(rig_calls(&x, 8), 2, "the bad endpoint: twice");
	cr_assert_eq(rig_calls(&x, 0), 1, "healthy: once");
	if (x.c[4].judged != BS_UNTESTED) {
		cr_assert_eq(x.c[4].judged, BS_SKIP);
		cr_assert_str_eq(x.c[4].reason, "flaky: " SIG ", then healthy");
	}
	cr_assert_eq(x.c[5].judged, BS_SKIP);
	cr_assert_str_eq(x.c[5].reason, SIG " did not repeat (last run: crashed)");
	cr_assert_eq(rig_calls(&x, 5), 3);
	cr_assert_eq(x.c[6].judged, BS_BAD);
	cr_assert_eq(x.c[6].runs, 3);
	free(x.c);
}

Test(bisect, an_interrupted_bisect_resumes_from_its_state)
{
	struct bs_ctx x, y;
	char **argv;
	int argc, rc, before;

	rig_ctx(&x, "resume", 40, 1);
	rig.first_bad = 29;
	rig.interrupt_at = 19; /* the third run: 39, 0, 19 */
	rc = rig_search(&x);
	cr_assert_eq(rc, 130, "interrupted: exit 130 (%d)", rc);
	before = rig_calls(&x, -1);
	cr_assert_eq(before, 3);
	free(x.c);

	memset(&y, 0, sizeof(y));
	snprintf(y.dir, sizeof(y.dir), "%s", x.dir);
	cr_assert_eq(bs_state_load(&y, &argv, &argc), 0);
	cr_assert_eq(argc, 2);
	cr_assert_str_eq(argv[1], "v0,v1");
	cr_assert_eq(y.n, 40);
	cr_assert_str_eq(y.signature, SIG, "the signature comes back");
	cr_assert_eq(y.rounds, 2, "the rounds that ended");
	cr_assert_eq(y.c[39].judged, BS_BAD);
	cr_assert_eq(y.c[0].judged, BS_GOOD);
	cr_assert_eq(y.c[19].judged, BS_UNTESTED, "the unfinished round is forgotten");
	y.o = x.o;
	y.argv = argv;
	y.argc = argc;
	y.run = fake_run;
	snprintf(y.self, sizeof(y.self), "/bin/true");
	rig.interrupt_at = -1;
	bs_stop = 0;
	rc = rig_search(&y);
	assert_found(&y, rc, 29);
	cr_assert_eq(rig_calls(&y, 0) + rig_calls(&y, 39), 2, "the endpoints are not judged again");
	cr_assert_eq(rig_calls(&y, 19), 2, "the interrupted one is");
	cr_assert_leq(rig_calls(&y, -1), ceil_log(40, 2) + 3);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
	free(y.c);
}

Test(bisect, a_healthy_bad_endpoint_stops_the_bisect)
{
	struct bs_ctx x;
	char *out, *err;

	rig_ctx(&x, "healthy-bad", 8, 1);
	rig.first_bad = 8;
	cr_assert_eq(rig_search(&x), BS_EXIT_NOT_FOUND);
	cr_assert_eq(rig_calls(&x, -1), 1, "nothing after the bad endpoint");
	err = rig_file(&x, "err");
	out = rig_file(&x, "out");
	cr_assert(strstr(err, "the \"bad\" endpoint v7 is healthy"), "%s", err);
	cr_assert(strstr(out, "\"error\": \"the \\\"bad\\\" endpoint v7 is healthy"), "%s", out);
	free(out);
	free(err);
	free(x.c);
}

Test(bisect, a_good_endpoint_showing_the_signature_stops_the_bisect)
{
	struct bs_ctx x;
	char *err;

	rig_ctx(&x, "bad-good", 8, 2);
	rig.first_bad = 0;
	cr_assert_eq(rig_search(&x), BS_EXIT_NOT_FOUND);
	cr_assert_eq(rig_calls(&x, -1), 2, "--jobs 2: both endpoints at once, then nothing");
	err = rig_file(&x, "err");
	cr_assert(strstr(err, "the \"good\" endpoint v0 already shows " SIG), "%s", err);
	free(err);
	free(x.c);
}

Test(bisect, another_failure_at_the_bad_endpoint_is_not_the_signature)
{
	struct bs_ctx x;
	char *err;

	rig_ctx(&x, "other", 8, 1);
	snprintf(x.signature, sizeof(x.signature), "crashed"); /* --signature crashed */
	rig.first_bad = 4;
	cr_assert_eq(rig_search(&x), BS_EXIT_NOT_FOUND);
	err = rig_file(&x, "err");
	cr_assert(strstr(err, "the \"bad\" endpoint v7 could not be judged: another failure: " SIG
			  " (hunting crashed)"), "%s", err);
	free(err);
	free(x.c);
}

Test(bisect, the_text_report_names_first_bad_last_good_and_the_runs)
{
	struct bs_ctx x;
	char *out, line[128];

	rig_ctx(&x, "text", 12, 1);
	x.o.json = false;
	x.o.launcher = "srun -N2";
	rig.first_bad = 7;
	cr_assert_eq(rig_search(&x), BS_EXIT_FOUND);
	out = rig_file(&x, "out");
	cr_assert(strstr(out, "first bad: v7  (" SIG ")\nlast good: v6\n"), "%s", out);
	snprintf(line, sizeof(line), "candidates tried (%d of 12, oldest first)", rig_calls(&x, -1));
	cr_assert(strstr(out, line), "%s", out);
	cr_assert(strstr(out, "srun -N2 /bin/true run -o "), "the reproducing command: %s", out);
	cr_assert(strstr(out, "version range: v6 .. v7"), "%s", out);
	free(out);
	free(x.c);
}

Test(bisect, another_failure_judged_before_the_signature_was_known_is_a_skip)
{
	struct bs_ctx x;
	char *err;

	rig_ctx(&x, "unknown", 8, 2); /* --jobs 2: both endpoints at once, no signature yet */
	rig.first_bad = 4;
	rig.runs[0] = "crashed";
	cr_assert_eq(rig_search(&x), BS_EXIT_NOT_FOUND);
	cr_assert_str_eq(x.signature, SIG, "the bad endpoint's verdict, not the good one's");
	cr_assert_eq(x.c[0].judged, BS_SKIP);
	err = rig_file(&x, "err");
	cr_assert(strstr(err, "the \"good\" endpoint v0 is not healthy: another failure: crashed"), "%s",
		  err);
	free(err);
	free(x.c);
}

/* --find fix, --jobs P: the same rounds as a break. */
Test(bisect, find_fix_with_jobs_p_takes_about_log_p_plus_1_rounds)
{
	struct bs_ctx x;
	int bound = 1 + ceil_log(199, 4);

	rig_ctx(&x, "fix-p3", 200, 3);
	x.o.find = BS_FIND_FIX;
	rig.fix = true;
	rig.first_bad = 61;
	assert_found(&x, rig_search(&x), 61);
	cr_assert_leq(x.rounds, bound, "%d rounds, more than %d", x.rounds, bound);
	cr_assert_leq(rig_calls(&x, -1), 2 + 3 * (bound - 1));
	free(x.c);
}

/* The table's candidate numbers, top to bottom, into idx; their count. */
static int table_rows(const char *out, int *idx, int max)
{
	char *copy = strdup(out), *save = NULL, *l;
	bool in = false;
	int m = 0;

	cr_assert_not_null(copy);
	for (l = strtok_r(copy, "\n", &save); l && m < max; l = strtok_r(NULL, "\n", &save)) {
		if (in && !strncmp(l, "  v", 3))
			idx[m++] = atoi(l + 3);
		else if (in && strncmp(l, "  candidate ", 12))
			break;
		in |= !strncmp(l, "candidates tried", 16);
	}
	free(copy);
	return m;
}

Test(bisect, find_fix_reports_first_good_and_last_bad_in_version_order)
{
	struct bs_ctx x;
	char *out, line[128];
	int idx[64], m;

	rig_ctx(&x, "fix-text", 12, 1);
	x.o.json = false;
	x.o.find = BS_FIND_FIX;
	rig.fix = true;
	rig.first_bad = 7;
	cr_assert_eq(rig_search(&x), BS_EXIT_FOUND);
	out = rig_file(&x, "out");
	cr_assert(strstr(out, "first good: v7  (fixes " SIG ")\nlast bad: v6  (" SIG ")\n"), "%s", out);
	snprintf(line, sizeof(line), "candidates tried (%d of 12, oldest first)", rig_calls(&x, -1));
	cr_assert(strstr(out, line), "%s", out);
	m = table_rows(out, idx, 64);
	cr_assert_eq(m, rig_calls(&x, -1), "a row per candidate tried: %s", out);
	for (int k = 1; k < m; k++)
		cr_assert_lt(idx[k - 1], idx[k], "the table runs oldest first: %s", out);
	cr_assert(strstr(out, "reproduce the last bad run:\n"), "%s", out);
	cr_assert(strstr(out, "/v6.repro"), "the bad boundary's run: %s", out);
	cr_assert(strstr(out, "version range: v6 .. v7"), "%s", out);
	free(out);
	free(x.c);

	rig_ctx(&x, "fix-json", 12, 1);
	x.o.find = BS_FIND_FIX;
	rig.first_bad = 7;
	cr_assert_eq(rig_search(&x), BS_EXIT_FOUND);
	out = rig_file(&x, "out");
	cr_assert(strstr(out, "\"find\": \"fix\", \"found\": true"), "%s", out);
	cr_assert(strstr(out, "\"first_bad\": null,\n \"last_good\": null,\n"
			  " \"first_good\": {\"index\": 7, \"name\": \"v7\""), "%s", out);
	cr_assert(strstr(out, "\"last_bad\": {\"index\": 6, \"name\": \"v6\""), "%s", out);
	cr_assert(strstr(out, "\"first_bad_range\": [],\n \"first_good_range\": [\"v7\"]"), "%s", out);
	free(out);
	free(x.c);
}

Test(bisect, a_break_report_has_no_first_good)
{
	struct bs_ctx x;
	char *out;

	rig_ctx(&x, "break-json", 6, 1);
	rig.first_bad = 3;
	cr_assert_eq(rig_search(&x), BS_EXIT_FOUND);
	out = rig_file(&x, "out");
	cr_assert(strstr(out, "\"find\": \"break\""), "%s", out);
	cr_assert(strstr(out, "\"first_good\": null,\n \"last_bad\": null,\n"
			  " \"first_bad_range\": [\"v3\"],\n \"first_good_range\": []"), "%s", out);
	free(out);
	free(x.c);
}

Test(bisect, find_fix_goes_around_skips_and_may_leave_a_range)
{
	struct bs_ctx x;
	char *out;

	rig_ctx(&x, "fix-range", 9, 1);
	x.o.find = BS_FIND_FIX;
	x.o.json = false;
	rig.fix = true;
	rig.first_bad = 6;
	rig.runs[5] = "timeout";
	rig.runs[4] = "crashed";
	cr_assert_eq(rig_search(&x), BS_EXIT_NOT_FOUND);
	cr_assert_eq(x.c[6].judged, BS_GOOD);
	cr_assert_eq(x.c[5].judged, BS_SKIP);
	cr_assert_eq(x.c[4].judged, BS_SKIP);
	cr_assert_str_eq(x.c[4].reason, "another failure: crashed");
	cr_assert_eq(x.c[3].judged, BS_BAD);
	out = rig_file(&x, "out");
	cr_assert(strstr(out, "the first good is one of (the others were skipped): v4 v5 v6\n"
			  "last bad: v3  (" SIG ")\n"), "%s", out);
	free(out);
	free(x.c);
}

Test(bisect, find_fix_endpoints_misjudged_stop_the_bisect)
{
	struct bs_ctx x;
	char *err;

	rig_ctx(&x, "fix-healthy-bad", 8, 1);
	x.o.find = BS_FIND_FIX;
	rig.fix = true;
	rig.first_bad = 0; /* every one healthy */
	cr_assert_eq(rig_search(&x), BS_EXIT_NOT_FOUND);
	cr_assert_eq(rig_calls(&x, -1), 1, "nothing after the bad endpoint");
	cr_assert_eq(rig_calls(&x, 0), 1, "the bad endpoint is the oldest");
	err = rig_file(&x, "err");
	cr_assert(strstr(err, "the \"bad\" endpoint v0 is healthy"), "%s", err);
	free(err);
	free(x.c);

	rig_ctx(&x, "fix-bad-good", 8, 1);
	x.o.find = BS_FIND_FIX;
	rig.first_bad = 8; /* none fixed */
	cr_assert_eq(rig_search(&x), BS_EXIT_NOT_FOUND);
	cr_assert_eq(rig_calls(&x, -1), 2, "both endpoints, then nothing");
	err = rig_file(&x, "err");
	cr_assert(strstr(err, "the \"good\" endpoint v7 still shows " SIG ": the fix, if any, is "
			  "newer"), "%s", err);
	free(err);
	free(x.c);
}
