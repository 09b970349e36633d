/* SPDX-License-Identifier: MIT */
/* test_pass_cut.c - rounds cut short (viewer/load/windows.c): a round that
 * would log far more records than it aims at ends earlier for the rank
 * jobs still to run; the jobs done read to the old end, and their records
 * past the new one wait for the next replay (logs.c: the replay's bound;
 * test_logs.c tests that bound alone). The model is the same. */
#include "pass_job.h"

/* Windows of 40 events aim at 40 records too: some of the random jobs of up
 * to 96 ranks are cut short, their model the one thread's without windows. */
Test(pass_cut, a_round_that_logs_too_much_is_cut_short_and_the_model_is_the_same)
{
	unsigned long cuts = rt_vw_pass_cuts;

	for (uint64_t seed = 8; seed <= 64; seed += 8) { /* every 8th: up to 96 ranks */
		struct job j;
		char *ref, *got;

		build(&j, seed);
		ref = model(&j, 1, 0);
		for (int jobs = 1; jobs <= 2; jobs++) {
			got = model(&j, jobs, 40);
			cr_assert_str_eq(got, ref, "seed %llu, --jobs %d", (unsigned long long)seed, jobs);
			free(got);
		}
		free(ref);
		job_free(&j);
	}
	cr_assert_gt(rt_vw_pass_cuts, cuts, "no round was cut short");
}

/* The first size learned for a communicator wins, in clock order. Rank 0
 * logs five records each 100 ns (its sizes, 4, five ns after rank 1's, and
 * four other communicators), rank 1 one (its size, 8): rank 0's job runs
 * first and its pace cuts the round short for rank 1, so rank 0's records
 * past the cut wait while rank 1 logs the same communicators' earlier ones
 * in the next round. Every communicator is 8 ranks, for every window and
 * thread count; a round that published rank 0's records past the cut
 * would make some of them 4. */
Test(pass_cut, records_past_a_cut_wait_for_the_ranks_cut_short)
{
	struct job j = { .nranks = 2, .nstreams = { 1, 1 }, .fixed = true };
	static const int windows[] = { 7, 10, 25, 40, 0 };
	unsigned long cuts = rt_vw_pass_cuts;
	char *ref;

	for (int r = 0; r < 2; r++)
		j.s[r][0].tid = 100u + (uint32_t)r;
	for (uint64_t k = 0; k < 200; k++) {
		at(&j, 1, 1000 + 100 * k);
		ev(&j, 1, 0, RT_ID_ncclCommInitRank, 0, false, RT_FN_comm_id, 0x1000 + k, RT_FN_nranks, U(8),
		   RT_FN_rank, U(1), -1);
		at(&j, 0, 1005 + 100 * k);
		ev(&j, 0, 0, RT_ID_ncclCommInitRank, 0, false, RT_FN_comm_id, 0x1000 + k, RT_FN_nranks, U(4),
		   RT_FN_rank, U(0), -1);
		for (uint64_t x = 0; x < 4; x++) {
			at(&j, 0, 1010 + 100 * k + 10 * x);
			ev(&j, 0, 0, RT_ID_ncclCommInitRank, 0, false, RT_FN_comm_id, 0x9000 + 4 * k + x,
			   RT_FN_nranks, U(2), RT_FN_rank, U(0), -1);
		}
	}
	ref = model(&j, 1, 0);
	cr_assert(strstr(ref, "comm 1000 8 0\n") && strstr(ref, "comm 10c7 8 0\n") && !strstr(ref, " 4 0\n"),
		  "rank 1's sizes first:\n%.2000s", ref);
	for (int jobs = 1; jobs <= 2; jobs++)
		for (size_t w = 0; w < sizeof(windows) / sizeof(windows[0]); w++) {
			char *got = model(&j, jobs, windows[w]);

			cr_assert_str_eq(got, ref, "--jobs %d, windows of %d events", jobs, windows[w]);
			free(got);
		}
	cr_assert_gt(rt_vw_pass_cuts, cuts, "no round was cut short");
	free(ref);
	job_free(&j);
}
