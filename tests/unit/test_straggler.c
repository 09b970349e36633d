/* SPDX-License-Identifier: MIT */
/* test_straggler.c - viewer/analyse/straggler.c's rule on device truth built in
 * memory (model_rig.h): a rank that starts every collective on the device
 * well after the others is named; one a loaded host schedules a little late,
 * within the others' own spread, is noise; too few collectives say nothing. */
#include "device.h"
#include "model_rig.h"
#include "export.h"
#include "json.h"

static unsigned src = RT_DEV_SRC_PLUGIN; /* where the device times come from */

/* rank ri enqueues AllReduce #seq at the current time and starts it on the
 * device at base + at_ns */
static void start(int ri, uint32_t seq, uint64_t base, uint64_t at_ns)
{
	ev(ri, RT_ID_ncclAllReduce, ri, 0, false, RT_FN_comm_id, COMM, RT_FN_seq, U(seq),
	   RT_FN_count, U(256), -1);
	now = base + at_ns;
	ev(ri, RT_ID_rt_dev_coll, ri, 0, false, RT_FN_dev_phase, U(RT_DEV_STARTED), RT_FN_comm_id, COMM,
	   RT_FN_seq, U(seq), RT_FN_source, U(src), -1);
}

/* ncoll collectives; in each, rank r starts at offset[r] ns (plus the
 * collective's own base), the offsets rotating with rot (0: fixed ranks) */
static void job(int ncoll, const uint64_t offset[4], bool rot)
{
	for (int i = 0; i < t->nranks; i++) {
		OK(i, cudaSetDevice, i, RT_FN_device, U(i));
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, U(t->nranks), RT_FN_rank, U(i));
	}
	for (int c = 1; c <= ncoll; c++) {
		uint64_t base = now + 100000000ull;

		for (int i = 0; i < t->nranks; i++)
			start(i, (uint32_t)c, base, offset[rot ? (i + c) % 4 : i]);
	}
	for (int i = 0; i < t->nranks; i++)
		OK(i, rt_exit, i, RT_FN_status, U(0));
}

/* rank 2 starts 5 ms after the others, which start within 0.1 ms */
static void s_slow_rank(void)
{
	job(10, (const uint64_t[4]){ 0, 50000, 5000000, 100000 }, false);
}

/* a loaded host: the ranks start up to 1 ms apart and rank 2 another
 * 1.5 ms later every time; not three times the others' spread */
static void s_loaded_host(void)
{
	job(10, (const uint64_t[4]){ 0, 1000000, 2500000, 500000 }, false);
}

/* a healthy job: whoever is last changes from one collective to the next */
static void s_rotating(void)
{
	job(10, (const uint64_t[4]){ 0, 50000, 5000000, 100000 }, true);
}

/* rank 2 is 5 ms late but in 3 collectives only */
static void s_few(void)
{
	job(3, (const uint64_t[4]){ 0, 50000, 5000000, 100000 }, false);
}

/* rank 2 starts 1.5 ms after the others, which start within 0.1 ms: a
 * straggler by the plugin's times; from CUDA events (poll times, 0.5 ms
 * apart, each rank's poller its own phase) below what they tell apart */
static void s_late_1_5ms(void)
{
	job(10, (const uint64_t[4]){ 0, 50000, 1500000, 100000 }, false);
}

static void s_late_1_5ms_events(void)
{
	src = RT_DEV_SRC_EVENT;
	s_late_1_5ms();
}

static void s_slow_rank_events(void)
{
	src = RT_DEV_SRC_EVENT;
	s_slow_rank();
}

/* rank 2 starts 20 ms after the others in 17 collectives; in one of them
 * rank 0's host stalled it 2 s (it was last there): one stall of another
 * rank is no noise of the job's (the mean lateness of the others when last,
 * 2 s, hid the straggler: test_devevents under ASan on a loaded machine) */
static void s_straggler_and_one_stall(void)
{
	for (int i = 0; i < t->nranks; i++) {
		OK(i, cudaSetDevice, i, RT_FN_device, U(i));
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, U(t->nranks), RT_FN_rank, U(i));
	}
	for (int c = 1; c <= 17; c++) {
		uint64_t base = now + 100000000ull;
		const uint64_t off[4] = { c == 9 ? 2000000000ull : 0, 50000, 20000000, 100000 };

		for (int i = 0; i < t->nranks; i++)
			start(i, (uint32_t)c, base, off[i]);
	}
	for (int i = 0; i < t->nranks; i++)
		OK(i, rt_exit, i, RT_FN_status, U(0));
}

RIG_CASE(straggler, late_1_5_ms_by_the_plugin_is_named, s_late_1_5ms, RT_V_HEALTHY,
	 "rank 2 is the straggler", NULL)
RIG_CASE(straggler, late_1_5_ms_by_cuda_event_polls_is_no_straggler, s_late_1_5ms_events, RT_V_HEALTHY,
	 NULL, "straggler")
RIG_CASE(straggler, late_5_ms_by_cuda_event_polls_is_named, s_slow_rank_events, RT_V_HEALTHY,
	 "rank 2 is the straggler", NULL)
RIG_CASE(straggler, a_rank_late_on_the_device_is_named, s_slow_rank, RT_V_HEALTHY,
	 "rank 2 is the straggler: last into 100 % of collectives (10 of 10)", NULL)
RIG_CASE(straggler, lateness_within_the_noise_is_no_straggler, s_loaded_host, RT_V_HEALTHY, NULL,
	 "straggler")
RIG_CASE(straggler, a_changing_last_rank_is_no_straggler, s_rotating, RT_V_HEALTHY, NULL, "straggler")
RIG_CASE(straggler, three_collectives_name_no_straggler, s_few, RT_V_HEALTHY, NULL, "straggler")
RIG_CASE(straggler, one_stall_of_another_rank_leaves_the_straggler_named, s_straggler_and_one_stall,
	 RT_V_HEALTHY, "rank 2 is the straggler: last into 94 % of collectives (16 of 17)", NULL)

/* Perfetto's device track: a collective a device started and never
 * completed (a hang on the device) is drawn from its start to the rank's
 * last event, marked never_completed, as a call that never returned is. */
Test(straggler, perfetto_draws_a_collective_that_never_completed)
{
	char *out = NULL, *p;
	size_t len = 0;
	int drawn = 0;
	struct rt_json w;
	FILE *f;

	rig(4);
	job(2, (const uint64_t[4]){ 0, 0, 0, 0 }, false);
	for (int i = 0; i < t->nranks; i++)
		for (uint32_t seq = 1; seq <= 2; seq++)
			if (seq == 1 || i != 2)
				ev(i, RT_ID_rt_dev_coll, i, 0, false, RT_FN_dev_phase, U(RT_DEV_COMPLETED),
				   RT_FN_comm_id, COMM, RT_FN_seq, U(seq), RT_FN_source, U(1), -1);
	now += 1000000;
	for (int i = 0; i < t->nranks; i++)
		OK(i, cudaSetDevice, i, RT_FN_device, U(i));
	rt_vw_model_finish(m);
	f = open_memstream(&out, &len);
	cr_assert(f);
	rt_json_init(&w, f, true);
	rt_json_arr(&w, NULL);
	rt_vw_perfetto_device(&w, t, 0);
	rt_json_end(&w);
	cr_assert_eq(rt_json_finish(&w), 0, "the device tracks are not well-formed JSON");
	fclose(f);
	for (p = out; (p = strstr(p, "\"name\":\"AllReduce #2\"")); p++)
		drawn++;
	cr_expect_eq(drawn, 4, "AllReduce #2 drawn on %d device tracks of 4:\n%s", drawn, out);
	p = strstr(out, "\"never_completed\":true");
	cr_expect(p, "no slice says never_completed:\n%s", out);
	cr_expect(p && !strstr(p + 1, "\"never_completed\":true"), "more than rank 2's #2:\n%s", out);
	free(out);
	rt_vw_free(t);
	free(m);
}
