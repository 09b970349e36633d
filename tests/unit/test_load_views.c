/* SPDX-License-Identifier: MIT */
/* test_load_views.c - what the views of a loaded trace show (perfetto.c,
 * report_html.c, report_params.c, params.c): parameters that moved or are
 * wrong, a rank's threads merged; and an LTTng session's trace read through
 * libbabeltrace2 (read_bt2.c) into the same model. Traces written in
 * $TMPDIR by dir_rig.h. */
#include "dir_rig.h"
#include "model_int.h"
#include "view.h"

TestSuite(load_views, .fini = tw_teardown);

/* A parameter's life on rank ri: on meta, then on cpu, then cuda:ri (each a
 * placement change), and an injected fault that fired. */
static void moving_param(int ri)
{
	uint64_t ptr = U(0x7f0000000000) + U(ri) * 0x100000;

	OK(ri, cudaSetDevice, ri, RT_FN_device, U(ri));
	OK(ri, cudaMalloc, ri, RT_FN_ptr, ptr, RT_FN_size, U(1 << 20));
	OK(ri, rt_param, -1, RT_FN_name, "lm_head.weight", RT_FN_devtype, U(2), RT_FN_device, U(-1),
	   RT_FN_numel, U(2048), RT_FN_bytes, U(0));
	OK(ri, rt_param, -1, RT_FN_name, "lm_head.weight", RT_FN_devtype, U(1), RT_FN_device, U(-1),
	   RT_FN_numel, U(2048), RT_FN_bytes, U(8192), RT_FN_ptr, U(0x5000));
	OK(ri, rt_param, -1, RT_FN_name, "lm_head.weight", RT_FN_devtype, U(0), RT_FN_device, U(ri),
	   RT_FN_numel, U(2048), RT_FN_bytes, U(8192), RT_FN_ptr, ptr);
	OK(ri, rt_fault, -1, RT_FN_target, "cudaMalloc", RT_FN_action, U(1), RT_FN_arg, U(2),
	   RT_FN_call, U(1));
	OK(ri, rt_exit, -1, RT_FN_status, U(0));
}

/* Parameters that moved: each move drawn in the export, the rank's
 * placement summed up in one line, the report's table filled. */
Test(load_views, parameters_that_moved_are_drawn_and_summed_up)
{
	struct rt_vw_trace *t;
	char *json, *html, line[300];

	tw_init(2);
	moving_param(0);
	moving_param(1);
	tw_write();
	t = load(RT_VW_KEEP_MEMORY);
	cr_expect_eq(t->ranks[0].faults, 1);
	cr_expect_eq(t->ranks[1].params_ever_meta, 1);
	json = output(rt_vw_export_perfetto, t);
	cr_expect(strstr(json, "\"cat\":\"placement\"") && strstr(json, "lm_head.weight"), "%.300s", json);
	cr_expect(strstr(json, "cudaMalloc:error="), "the fault's spec");
	html = output(rt_vw_report_html, t);
	cr_expect(strstr(html, "lm_head.weight"), "%.300s", html);
	cr_expect_not(rt_vw_placement_summary(&t->ranks[1], line, sizeof(line)), "%s", line);
	cr_expect(strstr(line, "1 parameters") || strstr(line, "parameter"), "%s", line);
	free(json);
	free(html);
	rt_vw_free(t);
}

/* Parameters left on meta and freed storage at the end: the summary says
 * what is wrong, with an example. */
Test(load_views, a_rank_whose_parameters_are_wrong_is_summed_up_as_wrong)
{
	struct rt_vw_trace *t;
	char line[300];

	tw_init(1);
	OK(0, rt_param, -1, RT_FN_name, "a.weight", RT_FN_devtype, U(2), RT_FN_device, U(-1),
	   RT_FN_numel, U(16), RT_FN_bytes, U(0));
	OK(0, rt_param, -1, RT_FN_name, "b.weight", RT_FN_devtype, U(0), RT_FN_device, U(0),
	   RT_FN_numel, U(16), RT_FN_bytes, U(0));
	OK(0, rt_param, -1, RT_FN_name, "c.weight", RT_FN_devtype, U(0), RT_FN_device, U(0),
	   RT_FN_numel, U(16), RT_FN_bytes, U(0));
	OK(0, rt_exit, -1, RT_FN_status, U(1));
	tw_write();
	t = load(0);
	cr_expect(rt_vw_placement_summary(&t->ranks[0], line, sizeof(line)), "%s", line);
	cr_expect(strstr(line, "2 of 3 parameters") && strstr(line, "e.g."), "%s", line);
	rt_vw_free(t);
}

/* FSDP v1 with use_orig_params=false between steps: most parameters are
 * views of freed storage (resharded), a few left unsharded on the device,
 * and the root forward ran: FSDP's normal state, not a wrong rank (it read
 * "2 of 3 parameters point at freed storage" before). */
Test(load_views, resharded_parameters_between_steps_are_fsdps_normal_state)
{
	struct rt_vw_trace *t;
	char line[300];

	tw_init(1);
	OK(0, rt_fsdp_forward, -1, RT_FN_phase, U(0));
	OK(0, rt_param, -1, RT_FN_name, "a.weight", RT_FN_devtype, U(0), RT_FN_device, U(0),
	   RT_FN_numel, U(16), RT_FN_bytes, U(0));
	OK(0, rt_param, -1, RT_FN_name, "b.weight", RT_FN_devtype, U(0), RT_FN_device, U(0),
	   RT_FN_numel, U(16), RT_FN_bytes, U(0));
	OK(0, rt_param, -1, RT_FN_name, "c.bias", RT_FN_devtype, U(1), RT_FN_device, U(-1),
	   RT_FN_numel, U(16), RT_FN_bytes, U(64), RT_FN_ptr, U(0x5000));
	OK(0, rt_exit, -1, RT_FN_status, U(0));
	tw_write();
	t = load(0);
	cr_expect_not(rt_vw_placement_summary(&t->ranks[0], line, sizeof(line)), "%s", line);
	cr_expect(strstr(line, "2 of 3 parameters sharded by FSDP") && strstr(line, "normal state") &&
		  strstr(line, "1 on cpu") && !strstr(line, "e.g."), "%s", line);
	rt_vw_free(t);
}

/* Two threads of a rank (two stream files), the second cut short: the
 * first one's events are all there, the damage is noted on the rank. */
Test(load_views, a_ranks_threads_are_merged_and_a_cut_one_is_damage)
{
	struct rt_vw_trace *t;
	char path[400];
	uint8_t pkt[4096] = { 0 };
	struct rt_fmt_packet h = { NULL, w.now, w.now, RT_PACKET_HEADER_BYTES, 4096, 0, 100, 200 };

	tw_init(1);
	rank_life(0, 8, 0);
	tw_write();
	rt_fmt_packet_put(pkt, &h);
	snprintf(path, sizeof(path), "%s/rank-00000/stream-100-200", w.dir);
	write_file(path, pkt, 100); /* a packet cut inside its header */
	t = load(0);
	cr_expect_eq(t->ranks[0].events, 10);
	cr_expect(t->ranks[0].damaged[0], "the cut stream is damage");
	rt_vw_free(t);
}

/* `view --json` of the trace in w.dir, windows of `round` events
 * (RANKTRACE_ROUND_EVENTS), the first window from the streams' first
 * packets or from a round 0 (no_peek). */
static char *view_json(const char *round, bool no_peek)
{
	struct rt_vw_report rp;
	struct rt_vw_trace *t;
	char *s = NULL;
	size_t n = 0;
	FILE *m;

	cr_assert_eq(setenv("RANKTRACE_ROUND_EVENTS", round, 1), 0);
	rt_vw_pass_no_peek = no_peek;
	t = load(0);
	rt_vw_pass_no_peek = false;
	unsetenv("RANKTRACE_ROUND_EVENTS");
	m = open_memstream(&s, &n);
	cr_assert_not_null(m);
	cr_assert_eq(rt_vw_report_make(t, -1, &rp), 0);
	rt_vw_view_json(m, &rp);
	rt_vw_report_free(&rp);
	fclose(m);
	rt_vw_free(t);
	return s;
}

/* The first window from the streams' first packet headers (no round 0) or
 * from a round 0 that reads each stream's first event: the same model,
 * whatever the windows; ranks that begin at other times (rank 2 a second
 * late, rank 3 with a second thread whose first packet is one instant:
 * nothing to plan by, so round 0 runs). */
Test(load_views, the_first_window_from_the_packets_or_a_round_0_gives_one_model)
{
	static const char *const rounds[] = { "1", "3", "40", "100000" };
	char path[400];
	uint8_t pkt[4096] = { 0 };

	tw_init(4);
	for (int ri = 0; ri < 4; ri++) {
		if (ri == 2)
			w.now += 1000000000ull;
		rank_life(ri, 8 + (uint64_t)ri, 0);
	}
	tw_write();
	for (int k = 0; k < 4; k++) {
		char *peeked = view_json(rounds[k], false), *round0 = view_json(rounds[k], true);

		cr_expect_str_eq(peeked, round0, "windows of %s events", rounds[k]);
		cr_expect(strstr(peeked, "\"verdict\""), "%.200s", peeked);
		free(peeked);
		free(round0);
	}
	{
		struct rt_fmt_packet h = { NULL, w.now, w.now, RT_PACKET_HEADER_BYTES, 4096, 0, 103, 204 };
		char *peeked, *round0;

		rt_fmt_packet_put(pkt, &h); /* a used packet of one instant: no pace */
		snprintf(path, sizeof(path), "%s/rank-00003/stream-103-204", w.dir);
		write_file(path, pkt, sizeof(pkt));
		peeked = view_json("3", false);
		round0 = view_json("3", true);
		cr_expect_str_eq(peeked, round0);
		free(peeked);
		free(round0);
	}
}

/* An LTTng session's directory (ust/ inside) whose CTF trace holds no
 * ranktrace:* event (here a native trace, read by babeltrace2 as LTTng's
 * would be): every event is foreign, no rank comes of it, and the load
 * says so instead of showing an empty trace. */
Test(load_views, an_lttng_directory_without_ranktrace_events_is_an_error)
{
	char err[600] = "", from[400], to[400];

	tw_init(1);
	rank_life(0, 8, 0);
	tw_write();
	snprintf(from, sizeof(from), "%s/rank-00000", w.dir);
	snprintf(to, sizeof(to), "%s/ust", w.dir);
	cr_assert_eq(mkdir(to, 0700), 0);
	snprintf(to, sizeof(to), "%s/ust/uid", w.dir);
	cr_assert_eq(rename(from, to), 0);
	cr_assert_null(rt_vw_load(w.dir, 0, err, sizeof(err)));
	cr_expect(strstr(err, "without ranktrace events (10 other events)"), "%s", err);
}

/* The metadata at path with every event named as the LTTng provider names
 * it (ranktrace:NAME). */
static void as_lttng_events(const char *path)
{
	static char in[1 << 17], out[1 << 18];
	FILE *f = fopen(path, "r");
	size_t n, k = 0;
	const char *p, *q;

	cr_assert_not_null(f);
	n = fread(in, 1, sizeof(in) - 1, f);
	fclose(f);
	in[n] = '\0';
	for (p = in; (q = strstr(p, "event {\n\tname = \"")); p = q + 17) {
		k += (size_t)snprintf(out + k, sizeof(out) - k, "%.*sevent {\n\tname = \"ranktrace:",
				      (int)(q - p), p);
		cr_assert_lt(k, sizeof(out));
	}
	k += (size_t)snprintf(out + k, sizeof(out) - k, "%s", p);
	write_file(path, out, k);
}

/* The same trace with its events named ranktrace:*: read through
 * libbabeltrace2 (read_bt2.c) into the same rank model (its events, its
 * allocation, its all-reduce); without LTTng's rt_identity event the rank's
 * number is not known, so the verdict cannot be given. */
Test(load_views, an_lttng_trace_reads_into_the_same_model)
{
	char from[400], to[400], err[600] = "";
	struct rt_vw_trace *t;

	tw_init(1);
	rank_life(0, 8, 0);
	tw_write();
	snprintf(from, sizeof(from), "%s/rank-00000", w.dir);
	snprintf(to, sizeof(to), "%s/ust", w.dir);
	cr_assert_eq(mkdir(to, 0700), 0);
	snprintf(to, sizeof(to), "%s/ust/uid", w.dir);
	cr_assert_eq(rename(from, to), 0);
	snprintf(to, sizeof(to), "%s/ust/uid/metadata", w.dir);
	as_lttng_events(to);
	t = rt_vw_load(w.dir, 0, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	cr_assert_eq(t->nranks, 1);
	cr_expect_eq(t->events, 10);
	cr_expect_eq(t->ranks[0].allocs, 1);
	cr_expect_eq(t->ranks[0].ncalls, 0);
	cr_expect_eq(t->ranks[0].colls[RT_CK_AllReduce], 1);
	/* no rt_identity (LTTng's own event): which rank it is is not known */
	cr_expect_eq(t->verdict, RT_V_INCONCLUSIVE, "verdict %s", rt_verdicts[t->verdict].word);
	rt_vw_free(t);
}
