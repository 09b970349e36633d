/* SPDX-License-Identifier: MIT */
/* test_devhang.c - viewer/analyse/devhang.c: a hung job judged on device truth
 * (model_rig.h). With asynchronous collectives the waiting ranks' host
 * threads sit in a stream synchronisation; the collective that never
 * completed is known from the device records only. */
#include "analyse.h"
#include "device.h"
#include "model_rig.h"

/* devhang.c's evidence of the stuck collective, said as the hang finding
 * says it (render/finding_say.c) after "hung: "; its length, 0 when the
 * trace has no device records or no such collective. */
static size_t rt_vw_dev_hang(struct rt_vw_trace *tr, char *text, size_t n)
{
	const struct rt_vw_devcoll *c = rt_vw_dev_stuck(tr);
	struct rt_vw_finding *f;
	char said[RT_VW_FINDING_TEXT + 200];

	text[0] = '\0';
	if (!c || !(f = rt_vw_finding_add(tr, RT_FK_HUNG, -1)))
		return 0;
	rt_vw_dev_hang_evidence(tr, c, f);
	rt_vw_finding_text(tr, f, said, sizeof(said));
	cr_assert(!strncmp(said, "hung: ", 6), "%s", said);
	snprintf(text, n, "%s", said + 6);
	return strlen(text);
}

#define KIB512 U(131072) /* floats */

/* the device source of the records: the plugin (start and completion), or
 * CUDA events (with starts when events_start, as devevents.c records them;
 * completion only without, as an older tracer did) */
static int src = RT_DEV_SRC_PLUGIN;
static bool events_start;

static void done(int ri, uint32_t seq)
{
	ev(ri, RT_ID_rt_dev_coll, ri, 0, false, RT_FN_dev_phase, U(RT_DEV_COMPLETED), RT_FN_comm_id,
	   COMM, RT_FN_seq, U(seq), RT_FN_source, U(src), -1);
}

/* rank ri enqueues AllGather #seq; started/done on its device when asked
 * (started: not recorded by CUDA events without events_start) */
static void coll(int ri, uint32_t seq, bool started, bool fin)
{
	ev(ri, RT_ID_ncclAllGather, ri, 0, false, RT_FN_comm_id, COMM, RT_FN_seq, U(seq),
	   RT_FN_count, KIB512, RT_FN_datatype, U(7), -1);
	if (started && (src == RT_DEV_SRC_PLUGIN || events_start))
		ev(ri, RT_ID_rt_dev_coll, ri, 0, false, RT_FN_dev_phase, U(RT_DEV_STARTED),
		   RT_FN_comm_id, COMM, RT_FN_seq, U(seq), RT_FN_source, U(src), -1);
	if (fin)
		done(ri, seq);
}

/* three collectives done everywhere; then #4 as host2/dev2 say for rank 2;
 * every rank then blocks: rank 2 in cudaMalloc when it never enqueued #4,
 * the others (and rank 2 otherwise) in a synchronous cudaMemcpy */
static void job(bool host2, bool dev2, bool device_records)
{
	for (int i = 0; i < t->nranks; i++) {
		OK(i, cudaSetDevice, i, RT_FN_device, U(i));
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, U(t->nranks), RT_FN_rank, U(i));
		if (device_records && src == RT_DEV_SRC_EVENT) /* said at the first collective */
			OK(i, rt_dev_source, i, RT_FN_source, U(src), RT_FN_version, U(0), RT_FN_detail,
			   "cuda events polled by the tracer");
	}
	for (uint32_t c = 1; c <= 3; c++)
		for (int i = 0; i < t->nranks; i++)
			coll(i, c, device_records, device_records);
	for (int i = 0; i < t->nranks; i++) {
		if (i != 2 || host2)
			coll(i, 4, device_records && (i != 2 || dev2), false);
		if (i == 2 && !host2)
			ev(i, RT_ID_cudaMalloc, i, 0, true, RT_FN_size, U(1 << 20), -1);
		else
			ev(i, RT_ID_cudaMemcpy, i, 0, true, RT_FN_count, U(4), -1);
	}
}

/* The live state the pipeline hands the analyses (read/live.c asks the
 * system; the rig's ranks have no process): every rank alive, its stream
 * locked, asked secs after the trace's last event; rank stopped's process
 * in state T (-1: none). */
static void live_job(struct rt_vw_live *live, double secs, int stopped)
{
	uint64_t last = 0;

	for (int i = 0; i < t->nranks; i++)
		last = t->ranks[i].last_ts > last ? t->ranks[i].last_ts : last;
	for (int i = 0; i < t->nranks; i++)
		live[i] = (struct rt_vw_live){ .streams = 1, .own = 1, .locked = true,
					       .proc_state = i == stopped ? 'T' : 'S',
					       .now = last + (uint64_t)(secs * 1e9) };
}

/* The model of job(...), then() feeding more events after the job's (or
 * NULL), every rank alive 31 s after the last event, and devhang.c's text
 * for it. */
static void judge_then(bool host2, bool dev2, bool device_records, void (*then)(void),
		       const char *want, const char *absent)
{
	char text[600] = "";
	struct rt_vw_live live[4];

	rig(4);
	job(host2, dev2, device_records);
	if (then)
		then();
	live_job(live, 31, -1);
	rt_vw_model_finish_live(m, live);
	cr_expect(t->hung, "alive and idle for 31 s: hung");
	rt_vw_dev_hang(t, text, sizeof(text));
	cr_expect(want ? strstr(text, want) != NULL : text[0] == '\0', "got \"%s\", want \"%s\"",
		  text, want ? want : "");
	cr_expect(!absent || !strstr(text, absent), "\"%s\" has \"%s\"", text, absent);
	rt_vw_free(t);
	free(m);
}

static void judge(bool host2, bool dev2, bool device_records, const char *want, const char *absent)
{
	judge_then(host2, dev2, device_records, NULL, want, absent);
}

Test(devhang, a_rank_that_never_enqueued_is_named_with_its_host_call)
{
	judge(false, false, true, "AllGather #4 (comm 00c0, 512 KiB) was enqueued by ranks 0,1,3 and "
	      "never completed on any device; rank 2 never enqueued #4: its host thread has been "
	      "inside cudaMalloc for 31 s (last collective it enqueued: #3)", "started on");
}

Test(devhang, a_device_that_never_started_it_is_named)
{
	judge(true, false, true, "AllGather #4 (comm 00c0, 512 KiB) was enqueued by ranks 0,1,2,3 and "
	      "never completed on any device; it started on the devices of ranks 0,1,3, never on "
	      "rank 2's", "never enqueued");
}

/* no device records: nothing said here, hang.c's host analysis answers */
Test(devhang, without_device_records_nothing_is_said)
{
	judge(false, false, false, NULL, NULL);
}

/* a healthy job with device records: no hang said in the verdict either */
static void s_healthy(void)
{
	for (int i = 0; i < t->nranks; i++)
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, U(4), RT_FN_rank, U(i));
	for (uint32_t c = 1; c <= 2; c++)
		for (int i = 0; i < t->nranks; i++)
			coll(i, c, true, true);
	for (int i = 0; i < t->nranks; i++)
		OK(i, rt_exit, i, RT_FN_status, U(0));
}

RIG_CASE(devhang, a_healthy_job_with_device_records_is_healthy, s_healthy, RT_V_HEALTHY, NULL,
	 "enqueued")

/* all done on the device: no hang on device truth */
Test(devhang, collectives_all_completed_say_nothing)
{
	rig(4);
	for (int i = 0; i < t->nranks; i++)
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, U(4), RT_FN_rank, U(i));
	for (int i = 0; i < t->nranks; i++)
		coll(i, 1, true, true);
	rt_vw_model_finish(m);
	char text[600] = "";

	cr_expect_eq(rt_vw_dev_hang(t, text, sizeof(text)), 0, "got \"%s\"", text);
	rt_vw_free(t);
	free(m);
}

/* CUDA-event records with completions only (a tracer before start events):
 * with every rank's #4 enqueued and none completed, which device never
 * started it cannot be told, and the text says so instead of naming none */
Test(devhang, cuda_events_without_starts_say_the_device_is_not_known)
{
	src = RT_DEV_SRC_EVENT;
	judge(true, false, true, "AllGather #4 (comm 00c0, 512 KiB) was enqueued by ranks 0,1,2,3 and "
	      "never completed on any device; which device never started it is not known (the CUDA-event "
	      "records hold completions only)", "started on");
}

/* with start records from CUDA events: the device that never started it,
 * as with the plugin */
Test(devhang, cuda_events_with_starts_name_the_device)
{
	src = RT_DEV_SRC_EVENT;
	events_start = true;
	judge(true, false, true, "never completed on any device; it started on the devices of ranks "
	      "0,1,3, never on rank 2's", "not known");
}

/* a rank that never enqueued #4 is the answer: nothing said of starts */
Test(devhang, cuda_events_a_rank_that_never_enqueued_is_named)
{
	src = RT_DEV_SRC_EVENT;
	judge(false, false, true, "AllGather #4 (comm 00c0, 512 KiB) was enqueued by ranks 0,1,3 and "
	      "never completed on any device; rank 2 never enqueued #4: its host thread has been "
	      "inside cudaMalloc for 31 s (last collective it enqueued: #3)", "not known");
}

/* rank 1's watchdog aborts the communicator: its CUDA event after #4 then
 * completes (the stream moves on), which is no completion of #4 */
static void abort_then_done(void)
{
	OK(1, ncclCommAbort, 1, RT_FN_comm_id, COMM);
	done(1, 4);
}

Test(devhang, a_completion_after_the_ranks_abort_is_none)
{
	src = RT_DEV_SRC_EVENT;
	judge_then(true, false, true, abort_then_done, "AllGather #4 (comm 00c0, 512 KiB) was enqueued "
		   "by ranks 0,1,2,3 and never completed on any device", NULL);
}

/* rank 1's #4 completes (its stream passed a failed collective: a peer
 * aborted) while rank 2 never enqueued #4: no collective completes without
 * one of its ranks, so #4 is still the one that never completed */
static void done_on_1(void)
{
	done(1, 4);
}

Test(devhang, a_completion_without_every_rank_is_none)
{
	src = RT_DEV_SRC_EVENT;
	judge_then(false, false, true, done_on_1, "AllGather #4 (comm 00c0, 512 KiB) was enqueued by "
		   "ranks 0,1,3 and never completed on any device; rank 2 never enqueued #4", NULL);
}

/* post-mortem, event mode: ranks 0,1,3 ended by their watchdogs (SIGABRT
 * after ncclCommAbort, rank 1's event completing after its abort), rank 2
 * killed in cudaMalloc by the launcher */
static void s_watchdog_events(void)
{
	src = RT_DEV_SRC_EVENT;
	job(false, false, true);
	abort_then_done();
	for (int i = 0; i < t->nranks; i++)
		OK(i, rt_signal, i, RT_FN_signo, U(i == 2 ? 15 : 6));
}

RIG_CASE(devhang, cuda_events_the_watchdog_ending_is_named, s_watchdog_events, RT_V_CRASHED,
	 "ranks 0,1,3 were ended by the NCCL watchdog (SIGABRT) on AllGather #4 (comm 00c0, 512 KiB), "
	 "enqueued and never completed on any device; rank 2 never enqueued #4: it was killed (signal "
	 "15) inside cudaMalloc", NULL)

/* view --json's comm and seq of the watchdog finding: the collective it
 * timed out on */
Test(devhang, the_watchdog_finding_carries_its_collective)
{
	int k = -1;

	rig(4);
	s_watchdog_events();
	rt_vw_model_finish(m);
	for (int i = 0; i < t->nfindings; i++)
		if (t->findings[i].kind == RT_FK_NCCL_WATCHDOG)
			k = i;
	cr_assert_geq(k, 0, "no watchdog finding");
	cr_expect_eq(t->findings[k].coll.comm, COMM);
	cr_expect_eq(t->findings[k].coll.seq, 4);
	rt_vw_free(t);
	free(m);
}

/* The analyses judge a live job from the state the pipeline handed them,
 * never asking the system: ranks 0,1,3 wait in AllGather #2 for 40 s, rank
 * 2 sits in cudaMalloc with its process stopped (state T: SIGSTOP, a
 * debugger). It is named as stopped and as the rank that never entered #2
 * (before: hang.c read /proc itself, and a rank with no process on this
 * host could not be judged as stopped). */
Test(devhang, a_live_job_is_judged_from_the_live_state_handed_in)
{
	struct rt_vw_live live[4];
	const struct rt_vw_finding *hang = NULL;
	char text[RT_VW_FINDING_TEXT];
	bool stopped = false, never = false, stalled = false;
	int waits = 0;

	rig(4);
	for (int i = 0; i < t->nranks; i++) {
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, U(4), RT_FN_rank, U(i));
		coll(i, 1, false, false);
	}
	for (int i = 0; i < t->nranks; i++)
		if (i == 2)
			ev(i, RT_ID_cudaMalloc, i, 0, true, RT_FN_size, U(1 << 20), -1);
		else
			ev(i, RT_ID_ncclAllGather, i, 0, true, RT_FN_comm_id, COMM, RT_FN_seq, U(2),
			   RT_FN_count, KIB512, RT_FN_datatype, U(7), -1);
	live_job(live, 40, 2);
	rt_vw_model_finish_live(m, live);
	cr_expect_eq(t->verdict, RT_V_HUNG, "verdict %s", rt_verdicts[t->verdict].word);
	for (int i = 0; i < t->nfindings; i++) {
		const struct rt_vw_finding *f = &t->findings[i];
		const struct rt_vw_fval *v = rt_vw_fv(f, RT_FV_stopped);

		hang = f->kind == RT_FK_HUNG ? f : hang;
		stalled = stalled || (f->kind == RT_FK_RANK_STALLED && f->rank == 2 && v && v->v.i);
	}
	cr_assert(hang, "no hang finding");
	cr_expect_eq(hang->coll.comm, COMM);
	cr_expect_eq(hang->coll.seq, 2);
	for (int k = 0; k < hang->nev; k++) {
		const struct rt_vw_evidence *e = &hang->ev[k];

		stopped = stopped || (e->role == RT_EV_STOPPED && e->rank == 2);
		never = never || (e->role == RT_EV_NEVER_ENTERED && e->rank == 2 && e->last_seq == 1);
		if (e->role == RT_EV_WAITS && e->rank != 2 && e->secs > 39.9 && e->secs < 40.1)
			waits++;
	}
	cr_expect(stopped, "rank 2's stopped process is no evidence");
	cr_expect(never, "rank 2 never entering #2 is no evidence");
	cr_expect_eq(waits, 3, "ranks 0,1,3 waiting 40 s: %d", waits);
	cr_expect(stalled, "rank 2 stalled, stopped: no finding");
	rt_vw_finding_text(t, hang, text, sizeof(text));
	cr_expect(strstr(text, "rank 2 is stopped (process state T"), "%s", text);
	rt_vw_free(t);
	free(m);
}

/* A hung job interrupted: every rank inside AllGather #2, then the fault
 * plan's rule records (rt_inj_rule, written at the signal) and SIGTERM.
 * The rule records are no call that returned: the job is judged hung as it
 * stood (it read 'job interrupted' when they counted as the last return). */
Test(devhang, a_hung_job_interrupted_stays_hung_past_its_rule_records)
{
	const struct rt_vw_finding *hang = NULL;

	rig(4);
	for (int i = 0; i < t->nranks; i++) {
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, U(4), RT_FN_rank, U(i));
		coll(i, 1, false, false);
	}
	for (int i = 0; i < t->nranks; i++)
		ev(i, RT_ID_ncclAllGather, i, 0, true, RT_FN_comm_id, COMM, RT_FN_seq, U(2),
		   RT_FN_count, KIB512, RT_FN_datatype, U(7), -1);
	now += 5000000; /* 5 ms later (--stall 1ms): the launcher's SIGTERM */
	for (int i = 0; i < t->nranks; i++) {
		OK(i, rt_inj_rule, -1, RT_FN_rule, U(0), RT_FN_spec, "ncclAllGather:hang", RT_FN_seen,
		   U(2), RT_FN_fired, U(1));
		OK(i, rt_signal, -1, RT_FN_signo, U(15));
	}
	t->stall_ns = 1000000;
	rt_vw_model_finish(m);
	cr_expect(t->interrupted, "every rank stopped by SIGTERM: interrupted");
	cr_expect_eq(t->verdict, RT_V_HUNG, "verdict %s", rt_verdicts[t->verdict].word);
	for (int i = 0; i < t->nfindings; i++)
		hang = t->findings[i].kind == RT_FK_HUNG ? &t->findings[i] : hang;
	cr_assert(hang, "no hang finding");
	cr_expect_eq(hang->coll.seq, 2);
	rt_vw_free(t);
	free(m);
}

/* A hung job whose stop reached rank 2 first, the others gap_ns later:
 * ranks 0,1,3 (AllGather #4 enqueued, their host thread in a cudaMemcpy
 * since) saw the collective fail 0.2 s after rank 2 was gone (the
 * simulator's remote error; NCCL's through the watchdog's abort), their
 * copy returned, their devices completed #4 then when complete_after (CUDA
 * events complete after a failed collective), and each made 12 more calls
 * and entered AllGather #5 before its own SIGTERM. Rank 2 (never enqueued
 * #4: inside cudaMalloc, or with dev2 enqueued it, its device never
 * started it) was stopped 3 s into the hang. --stall 2s. */
static int64_t rank0_offset; /* rank 0's clock offset (its metadata's) */

static void stopped_apart(uint64_t gap_ns, bool dev2, bool complete_after)
{
	uint64_t start;

	rig(4);
	for (int i = 0; i < 4; i++) {
		OK(i, cudaSetDevice, i, RT_FN_device, U(i));
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, U(4), RT_FN_rank, U(i));
	}
	for (uint32_t c = 1; c <= 3; c++)
		for (int i = 0; i < 4; i++)
			coll(i, c, true, true);
	for (int i = 0; i < 4; i++)
		if (i != 2 || dev2)
			coll(i, 4, i != 2, false);
	start = now;
	for (int i = 0; i < 4; i++) {
		next_dur = i == 2 ? 0 : 3200000000ull; /* returned 0.2 s after the first stop */
		if (i == 2 && !dev2)
			ev(i, RT_ID_cudaMalloc, i, 0, true, RT_FN_size, U(1 << 20), -1);
		else
			ev(i, RT_ID_cudaMemcpy, i, 0, i == 2, RT_FN_count, U(4), -1);
	}
	now = start + 3000000000ull;
	OK(2, rt_signal, -1, RT_FN_signo, U(15));
	now = start + 3200000000ull + 100000;
	for (int i = 0; i < 4; i++)
		for (int k = 0; i != 2 && k < 13; k++) {
			if (k == 0 && complete_after)
				done(i, 4);
			else if (k < 12)
				OK(i, cudaMalloc, i, RT_FN_size, U(64));
			else
				ev(i, RT_ID_ncclAllGather, i, 0, true, RT_FN_comm_id, COMM, RT_FN_seq, U(5),
				   RT_FN_count, KIB512, RT_FN_datatype, U(7), -1);
		}
	now = start + 3000000000ull + gap_ns;
	for (int i = 0; i < 4; i++)
		if (i != 2)
			OK(i, rt_signal, -1, RT_FN_signo, U(15));
	t->stall_ns = 2000000000ull;
	t->ranks[0].meta.clock_offset_ns = rank0_offset;
	rt_vw_model_finish(m);
}

/* The hang finding's text and the rank r's open call ("" when none). */
static void hang_text(char *text, size_t n, int r, const char **call)
{
	const struct rt_vw_open_call *o = rt_vw_oldest_open(&t->ranks[r]);

	text[0] = '\0';
	*call = o ? rt_events[o->id].name : "";
	for (int i = 0; i < t->nfindings; i++)
		if (t->findings[i].kind == RT_FK_HUNG)
			rt_vw_finding_text(t, &t->findings[i], text, n);
}

/* Stopped 0.5 s apart: judged as the job stood at rank 2's stop, hung, the
 * same evidence as live (the CI failure of test_hangdev: "inconclusive: job
 * interrupted"; fails on the old hang.c, which read ranks 0,1,3 at their
 * own stop, idle for 0.3 s, inside AllGather #5). */
Test(devhang, a_job_stopped_a_moment_apart_is_judged_at_its_first_stop)
{
	char text[600];
	const char *call;

	stopped_apart(500000000ull, false, false);
	cr_expect_eq(t->interrupted, 15);
	cr_expect_eq(t->verdict, RT_V_HUNG, "verdict %s", rt_verdicts[t->verdict].word);
	hang_text(text, sizeof(text), 0, &call);
	cr_expect(strstr(text, "hung when the job was interrupted: AllGather #4 (comm 00c0, 512 KiB) was "
			 "enqueued by ranks 0,1,3 and never completed on any device; rank 2 never "
			 "enqueued #4: its host thread has been inside cudaMalloc for 3 s") != NULL,
		  "got \"%s\"", text);
	cr_expect_str_eq(call, "cudaMemcpy", "rank 0 at the first stop: inside %s", call);
	cr_expect(t->ranks[0].idle_s > 2.99 && t->ranks[0].idle_s < 3.01, "idle %.3f s", t->ranks[0].idle_s);
	cr_expect_eq(t->ranks[0].judged_ts, t->ranks[2].signal_ts);
	cr_expect_str_eq(rt_events[t->ranks[0].died_id].name, "ncclAllGather", "it ended in AllGather #5");
	rt_vw_free(t);
	free(m);
}

/* The same with rank 2's device that never started #4, and the others'
 * completing it (failed) after rank 2 was gone: no completion at the first
 * stop (fails on the old devhang.c, which counted it, and hang.c). */
Test(devhang, a_completion_after_the_first_stop_is_none)
{
	char text[600];
	const char *call;

	src = RT_DEV_SRC_EVENT;
	events_start = true;
	stopped_apart(500000000ull, true, true);
	cr_expect_eq(t->verdict, RT_V_HUNG, "verdict %s", rt_verdicts[t->verdict].word);
	hang_text(text, sizeof(text), 1, &call);
	cr_expect(strstr(text, "AllGather #4 (comm 00c0, 512 KiB) was enqueued by ranks 0,1,2,3 and never "
			 "completed on any device; it started on the devices of ranks 0,1,3, never on "
			 "rank 2's") != NULL, "got \"%s\"", text);
	rt_vw_free(t);
	free(m);
}

/* Stopped 12 s apart (more than RT_VW_STOP_SPREAD_NS): no one stop; each
 * rank judged at its own, ranks 0,1,3 inside AllGather #5, as before this
 * change. */
Test(devhang, ranks_stopped_seconds_apart_are_judged_at_their_own_stop)
{
	char text[600];
	const char *call;

	stopped_apart(12000000000ull, false, false);
	hang_text(text, sizeof(text), 0, &call);
	cr_expect_str_eq(call, "ncclAllGather", "rank 0 at its own stop: inside %s", call);
	cr_expect_eq(t->ranks[0].judged_ts, t->ranks[0].last_ts);
	rt_vw_free(t);
	free(m);
}

/* A hostile metadata's clock offset that no time plus it fits in: rank 0
 * cannot be placed in real time, and is judged at its own stop; the others
 * at rank 2's (no overflow: UBSan would say so under make test-asan). */
Test(devhang, a_clock_offset_out_of_range_is_judged_at_its_own_stop)
{
	rank0_offset = INT64_MAX;
	stopped_apart(500000000ull, false, false);
	cr_expect_eq(t->ranks[0].judged_ts, t->ranks[0].last_ts);
	cr_expect_eq(t->ranks[1].judged_ts, t->ranks[2].signal_ts);
	rt_vw_free(t);
	free(m);
}

/* Rank 3 has no device records (its plugin never loaded) and runs 100
 * collectives past the stuck #4: it keeps only its newest RT_VW_DEV_WINDOW
 * enqueues (the device log held one entry per collective per rank: 930 MB at
 * 16,384 ranks), and still counts as having enqueued #4 (its entered
 * sequence says so). Fails on the old model: rank 3 kept 104 entries. */
Test(devhang, a_rank_without_device_records_keeps_a_window_and_still_enqueued_it)
{
	char text[600] = "";
	struct rt_vw_live live[4];

	rig(4);
	for (int i = 0; i < 4; i++) {
		OK(i, cudaSetDevice, i, RT_FN_device, U(i));
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, U(4), RT_FN_rank, U(i));
	}
	for (uint32_t c = 1; c <= 4; c++)
		for (int i = 0; i < 3; i++)
			coll(i, c, true, c < 4);
	for (uint32_t c = 1; c <= 104; c++)
		coll(3, c, false, false);
	for (int i = 0; i < 4; i++)
		ev(i, RT_ID_cudaMemcpy, i, 0, true, RT_FN_count, U(4), -1);
	live_job(live, 31, -1);
	rt_vw_model_finish_live(m, live);
	cr_assert(t->ranks[3].dev, "rank 3 enqueued collectives");
	cr_expect_leq(t->ranks[3].dev->n, RT_VW_DEV_WINDOW, "rank 3 keeps %u enqueues", t->ranks[3].dev->n);
	cr_expect_eq(t->ranks[3].dev->enqueued, 104, "every enqueue counted");
	cr_expect_eq(t->ranks[0].dev->n, 4, "a rank with device records keeps them all");
	rt_vw_dev_hang(t, text, sizeof(text));
	cr_expect(strstr(text, "AllGather #4 (comm 00c0, 512 KiB) was enqueued by ranks 0,1,2,3 and "
			 "never completed on any device") != NULL, "got \"%s\"", text);
	rt_vw_free(t);
	free(m);
}
