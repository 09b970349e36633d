/* SPDX-License-Identifier: MIT */
/* test_load.c - trace directories written in $TMPDIR (dir_rig.h) read back
 * as `ranktrace` reads them (viewer/load/load.c, merge.c, trace_dir.c,
 * parallel.c, completeness.c, hang.c): healthy, mismatched, damaged,
 * missing, duplicate, capped, interrupted and live jobs, the outputs made
 * from them and the replay of every event (rt_vw_foreach). */
#include "dir_rig.h"

TestSuite(load, .fini = tw_teardown);

Test(load, a_healthy_trace_reads_back_and_every_output_is_made)
{
	struct rt_vw_trace *t;
	char *json, *html;

	tw_init(2);
	for (int i = 0; i < 2; i++)
		rank_life(i, 1024, 0);
	tw_write();
	t = load(RT_VW_KEEP_CALLS | RT_VW_KEEP_MEMORY);
	cr_expect_eq(t->verdict, RT_V_HEALTHY, "verdict %s", rt_verdicts[t->verdict].word);
	cr_assert_eq(t->nranks, 2);
	cr_expect_eq(t->events, 20);
	cr_expect_eq(t->ranks[1].allocs, 1);
	cr_expect_eq(t->ranks[1].devices_used, 2u);
	cr_expect_eq(t->ranks[0].ncalls, 1);
	cr_expect_eq(t->completeness, RT_C_COMPLETE);
	json = output(rt_vw_export_perfetto, t);
	cr_expect(strstr(json, "\"traceEvents\"") && strstr(json, "ncclAllReduce"), "%.300s", json);
	html = output(rt_vw_report_html, t);
	cr_expect(strstr(html, "<html") && strstr(html, "embed.weight") && strstr(html, "healthy"),
		  "%.300s", html);
	free(json);
	free(html);
	rt_vw_free(t);
}

static void count_event(void *arg, int rank, const struct rt_vw_event *e)
{
	int *n = arg;

	(void)e;
	n[rank]++;
}

Test(load, every_event_is_replayed_in_order_for_the_exports)
{
	struct rt_vw_trace *t;
	int n[2] = { 0, 0 };

	tw_init(2);
	rank_life(0, 8, 0);
	rank_life(1, 8, 0);
	tw_write();
	t = load(0);
	cr_assert_eq(rt_vw_foreach(t, count_event, n), 0);
	cr_expect_eq(n[0], 10);
	cr_expect_eq(n[1], 10);
	rt_vw_free(t);
}

/* Rank 1 calls another count: a mismatch in the verdict, in the report. */
Test(load, a_mismatch_reads_back_as_one_and_the_report_says_it)
{
	struct rt_vw_trace *t;
	char *html, *json;

	tw_init(3);
	for (int i = 0; i < 3; i++)
		rank_life(i, i == 1 ? 7 : 1024, i == 1);
	tw_write();
	t = load(RT_VW_KEEP_MEMORY);
	cr_expect_eq(t->verdict, RT_V_COLLECTIVE_MISMATCH, "verdict %s", rt_verdicts[t->verdict].word);
	html = output(rt_vw_report_html, t);
	cr_expect(strstr(html, "collective mismatch"), "%.300s", html);
	json = output(rt_vw_export_perfetto, t);
	cr_expect(strstr(json, "ncclAllReduce"));
	free(html);
	free(json);
	rt_vw_free(t);
}

Test(load, a_directory_without_ranks_is_an_error_that_says_so)
{
	char err[600] = "";

	tw_init(0);
	cr_assert_null(rt_vw_load(w.dir, 0, err, sizeof(err)));
	cr_expect(strstr(err, "no rank traces"), "%s", err);
}

Test(load, unreadable_metadata_everywhere_is_an_error_that_says_so)
{
	char err[600] = "", path[400];

	tw_init(1);
	snprintf(path, sizeof(path), "%s/rank-00000/metadata", w.dir);
	write_file(path, "/* CTF 1.8 */\ntrace {", 21);
	cr_assert_null(rt_vw_load(w.dir, 0, err, sizeof(err)));
	cr_expect(strstr(err, "no readable rank trace"), "%s", err);
}

/* One rank's metadata damaged: the other still reads, the verdict cannot
 * rest on the damaged one. */
Test(load, a_damaged_rank_leaves_the_others_and_the_verdict_inconclusive)
{
	struct rt_vw_trace *t;
	char path[400];

	tw_init(2);
	rank_life(0, 8, 0);
	rank_life(1, 8, 0);
	tw_write();
	snprintf(path, sizeof(path), "%s/rank-00001/stream-101-101", w.dir);
	cr_assert_eq(truncate(path, RT_PACKET_HEADER_BYTES + 30), 0);
	t = load(0);
	cr_expect_eq(t->verdict, RT_V_INCONCLUSIVE, "verdict %s", rt_verdicts[t->verdict].word);
	cr_expect(t->ranks[1].damaged[0], "rank 1's damage noted");
	cr_expect_eq(t->ranks[0].events, 10);
	rt_vw_free(t);
}

/* Every rank stopped by SIGTERM inside a collective: interrupted, not
 * crashed, and the report and export still made. */
Test(load, a_job_stopped_from_outside_is_interrupted)
{
	struct rt_vw_trace *t;
	char *html;

	tw_init(2);
	for (int i = 0; i < 2; i++) {
		OK(i, cudaSetDevice, i, RT_FN_device, U(i));
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, U(0xc0), RT_FN_nranks, U(2), RT_FN_rank, U(i));
		tw_ev(i, RT_ID_ncclAllReduce, i, 0, true, RT_FN_comm_id, U(0xc0), RT_FN_seq, U(1),
		      RT_FN_count, U(8), -1);
		OK(i, rt_signal, -1, RT_FN_signo, U(15));
	}
	tw_write();
	t = load(RT_VW_KEEP_MEMORY);
	cr_expect_eq(t->verdict, RT_V_INCONCLUSIVE, "verdict %s", rt_verdicts[t->verdict].word);
	cr_expect_eq(t->interrupted, 15);
	cr_expect(t->ranks[0].interrupted && t->ranks[1].interrupted);
	html = output(rt_vw_report_html, t);
	cr_expect(strstr(html, "interrupted"), "%.300s", html);
	free(html);
	rt_vw_free(t);
}

/* Both ranks alive (their stream files locked): rank 1 waits in all-reduce
 * #2, which rank 0 never entered (it sits in a cudaMalloc); stall 1 ns:
 * hung, rank 0 the laggard. */
Test(load, live_ranks_stuck_apart_are_hung_and_the_laggard_is_named)
{
	struct rt_vw_trace *t;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char path[400], err[600] = "";
	int fds[2];

	tw_init(2);
	for (int i = 0; i < 2; i++) {
		OK(i, cudaSetDevice, i, RT_FN_device, U(i));
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, U(0xc0), RT_FN_nranks, U(2), RT_FN_rank, U(i));
		OK(i, ncclAllReduce, i, RT_FN_comm_id, U(0xc0), RT_FN_seq, U(1), RT_FN_count, U(8));
	}
	tw_ev(1, RT_ID_ncclAllReduce, 1, 0, true, RT_FN_comm_id, U(0xc0), RT_FN_seq, U(2),
	      RT_FN_count, U(8), -1);
	tw_ev(0, RT_ID_cudaMalloc, 0, 0, true, RT_FN_size, U(4096), -1);
	tw_write();
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/rank-%05d/stream-%d-%d", w.dir, i, 100 + i, 100 + i);
		fds[i] = open(path, O_RDWR | O_CLOEXEC);
		cr_assert_geq(fds[i], 0);
		cr_assert_eq(fcntl(fds[i], F_OFD_SETLK, &fl), 0);
	}
	t = rt_vw_load_stall(w.dir, 0, 1, err, sizeof(err));
	close(fds[0]);
	close(fds[1]);
	cr_assert_not_null(t, "%s", err);
	cr_expect_eq(t->running, 2);
	cr_expect_eq(t->completeness, RT_C_LIVE);
	cr_expect(t->hung);
	cr_expect_eq(t->verdict, RT_V_HUNG, "verdict %s", rt_verdicts[t->verdict].word);
	{
		char lag[600];

		rt_vw_laggard_text(t, lag, sizeof(lag));
		cr_expect(strstr(lag, "rank 0"), "laggard: %s", lag);
	}
	cr_expect_eq(t->ranks[1].nopen, 1);
	rt_vw_free(t);
}

/* One rank alive, the other ended in a call: a live trace, hung by the
 * stall; the report and the export show a live job. */
Test(load, a_live_rank_beside_a_dead_one)
{
	struct rt_vw_trace *t;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char path[400], err[600] = "", *html;

	tw_init(2);
	for (int i = 0; i < 2; i++) {
		OK(i, cudaSetDevice, i, RT_FN_device, U(i));
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, U(0xc0), RT_FN_nranks, U(2), RT_FN_rank, U(i));
	}
	tw_ev(1, RT_ID_ncclAllReduce, 1, 0, true, RT_FN_comm_id, U(0xc0), RT_FN_seq, U(1),
	      RT_FN_count, U(8), -1);
	OK(0, cudaGetDevice, 0, RT_FN_device, U(0));
	tw_write();
	snprintf(path, sizeof(path), "%s/rank-00000/stream-100-100", w.dir);
	w.lock_fd = open(path, O_RDWR | O_CLOEXEC);
	cr_assert_geq(w.lock_fd, 0);
	cr_assert_eq(fcntl(w.lock_fd, F_OFD_SETLK, &fl), 0);
	t = rt_vw_load_stall(w.dir, RT_VW_KEEP_MEMORY, 1, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	cr_expect_eq(t->running, 1);
	cr_expect_eq(t->ranks[0].state, RT_S_RUNNING);
	cr_expect_eq(t->completeness, RT_C_LIVE);
	cr_expect(t->hung);
	html = output(rt_vw_report_html, t);
	cr_expect(strstr(html, "running"), "%.300s", html);
	free(html);
	rt_vw_free(t);
}

/* The metadata says 3 ranks, 2 directories hold one: rank 2 is missing, the
 * verdict cannot rest on what it lacks. */
Test(load, a_rank_the_world_size_expects_is_missing)
{
	struct rt_vw_trace *t;

	w.world = 3;
	tw_init(2);
	rank_life(0, 8, 0);
	rank_life(1, 8, 0);
	tw_write();
	t = load(0);
	cr_assert_eq(t->nmissing, 1);
	cr_expect_eq(t->missing[0], 2);
	cr_expect_eq(t->world_size, 3);
	cr_expect_eq(t->verdict, RT_V_INCONCLUSIVE, "verdict %s", rt_verdicts[t->verdict].word);
	rt_vw_free(t);
}

/* Two directories both say they are rank 0: damage, said with both names. */
Test(load, two_directories_claiming_one_rank_are_damage)
{
	static char meta[1 << 17];
	struct rt_trace_env env = { .hostname = "node", .pid = 101, .rank = 0, .world_size = 2,
				    .rank_source = "env:RANK", .packet_bytes = BUF };
	struct rt_vw_trace *t;
	char path[400];
	long len;

	tw_init(2);
	rank_life(0, 8, 0);
	rank_life(1, 8, 0);
	tw_write();
	len = rt_schema_tsdl(meta, sizeof(meta), &env);
	snprintf(path, sizeof(path), "%s/rank-00001/metadata", w.dir);
	write_file(path, meta, (size_t)len);
	t = load(0);
	cr_expect_gt(t->duplicates, 0);
	{
		char why[400];

		rt_vw_incomplete_text(t, 1, why, sizeof(why));
		cr_expect(strstr(why, "both claim rank 0"), "%s", why);
	}
	cr_expect_eq(t->verdict, RT_V_INCONCLUSIVE, "verdict %s", rt_verdicts[t->verdict].word);
	rt_vw_free(t);
}

/* The writer stopped early (its size cap): the rank is capped, its end says
 * so, and nothing rests on what it lacks. */
Test(load, a_writer_that_stopped_early_leaves_a_capped_rank)
{
	struct rt_vw_trace *t;
	char end[128];

	tw_init(2);
	rank_life(0, 8, 0);
	OK(1, cudaSetDevice, 1, RT_FN_device, U(1));
	OK(1, rt_trace_stop, -1, RT_FN_reason, U(1), RT_FN_events, U(2));
	tw_write();
	t = load(0);
	cr_expect_eq(t->ranks[1].completeness, RT_C_CAPPED);
	cr_expect_eq(t->verdict, RT_V_INCONCLUSIVE, "verdict %s", rt_verdicts[t->verdict].word);
	rt_vw_rank_end(&t->ranks[1], end, sizeof(end));
	cr_expect(strstr(end, "trace incomplete") && strstr(end, "at event 2"), "%s", end);
	rt_vw_free(t);
}

/* How a rank ended, in the words every output uses (rank.c). */
Test(load, how_a_rank_ended_in_words)
{
	static const struct {
		struct rt_vw_rank r;
		const char *end;
	} cases[] = {
		{ { .readable = false }, "unreadable" },
		{ { .readable = true, .state = RT_S_RUNNING }, "running" },
		{ { .readable = true, .state = RT_S_KILLED, .signo = 9 }, "signal 9" },
		{ { .readable = true, .state = RT_S_KILLED, .signo = 11, .died = true,
		    .died_id = RT_ID_cudaMalloc },
		  "signal 11 in cudaMalloc" },
		{ { .readable = true, .state = RT_S_EXITED, .exit_seen = true, .exit_status = 3 }, "exit 3" },
		{ { .readable = true, .state = RT_S_EXITED, .exit_seen = true, .exit_status = -1 }, "returned" },
		{ { .readable = true, .state = RT_S_VANISHED, .died = true,
		    .died_id = RT_ID_ncclAllReduce,
		    .completeness = RT_C_COMPLETE }, "died in ncclAllReduce" },
		{ { .readable = true, .state = RT_S_VANISHED, .died = true,
		    .died_id = RT_ID_ncclAllReduce,
		    .completeness = RT_C_DAMAGED }, "trace ends in ncclAllReduce" },
		{ { .readable = true, .state = RT_S_VANISHED, .completeness = RT_C_CAPPED }, "trace capped" },
		{ { .readable = true, .state = RT_S_VANISHED, .completeness = RT_C_DAMAGED }, "trace damaged" },
		{ { .readable = true, .state = RT_S_VANISHED, .completeness = RT_C_COMPLETE },
		  "vanished (no end)" },
	};
	char end[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rt_vw_rank_end(&cases[i].r, end, sizeof(end));
		cr_expect_str_eq(end, cases[i].end, "case %zu", i);
	}
}
