/* SPDX-License-Identifier: MIT */
/* test_engine.c - the fault injector's decisions (inject/engine.c) through a
 * fake host: which call fails, with which code, how calls are counted, the
 * rank filter, the seeded probability, what each action does to the call
 * (replace, delay, hang, signal), the corrupted byte, failure points (the
 * probe API's records: test_probe.c).
 *
 * The engine reaches its host through inject/inject.h's rt_inj_host_* and
 * format/record.h's rt_tr_ev_*: this file is that host, recording what the
 * engine asked for. Criterion runs each test in a process of its own, so each
 * starts with a fresh engine (its tables are process-wide, set once by
 * rt_inj_init from RANKTRACE_INJECT). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "encode_args.h"
#include "inject.h"
#include "plan.h"
#include "ranktrace.h"
#include "record.h"

/* ---- the fake host ---- */

struct fault_rec {
	char target[64];
	int action;
	int64_t arg;
	uint64_t call;
	int rule;
};

static struct fault_rec faults[256];
static int nfaults;
static int host_rank = -1;
static int nwarnings;
static char last_warning[2048];
static int nsyncs;

int rt_inj_host_rank(void)
{
	return host_rank;
}

static int fake_memcpy(void *dst, const void *src, size_t n, int kind)
{
	(void)kind;
	memcpy(dst, src, n);
	return 0;
}

static int fake_sync(void *stream)
{
	(void)stream;
	nsyncs++;
	return 0;
}

void *rt_inj_host_resolve(const char *name, int lib)
{
	cr_assert_eq(lib, RT_LIB_CUDA);
	if (!strcmp(name, "cudaMemcpy"))
		return (void *)fake_memcpy;
	if (!strcmp(name, "cudaStreamSynchronize"))
		return (void *)fake_sync;
	return NULL;
}

static uint64_t delayed_stream;
static int64_t delayed_ns;

int rt_inj_host_stream_delay(uint64_t stream, int64_t ns)
{
	delayed_stream = stream;
	delayed_ns = ns;
	return 0;
}

void rt_inj_host_warn(int *flag, const char *msg)
{
	if (*flag)
		return;
	*flag = 1;
	nwarnings++;
	snprintf(last_warning, sizeof(last_warning), "%s", msg);
}

void rt_tr_ev_rt_fault(const char *target, int action, int64_t arg, uint64_t call, int rule)
{
	struct fault_rec *f = &faults[nfaults < 255 ? nfaults++ : 255];

	snprintf(f->target, sizeof(f->target), "%s", target);
	f->action = action;
	f->arg = arg;
	f->call = call;
	f->rule = rule;
}

struct rule_rec {
	int rule;
	char spec[64];
	uint64_t seen, fired;
};

static struct rule_rec rules[64];
static int nrules;

void rt_tr_ev_rt_inj_rule(int rule, const char *spec, uint64_t seen, uint64_t fired)
{
	struct rule_rec *r = &rules[nrules < 63 ? nrules++ : 63];

	r->rule = rule;
	snprintf(r->spec, sizeof(r->spec), "%s", spec);
	r->seen = seen;
	r->fired = fired;
}

/* ---- helpers ---- */

/* Two communicators the host knows: the 1st init's and the 2nd split's
 * (color 1); any other handle is unknown. */
static const char comm_init[1] = { 0 }, comm_split2[1] = { 0 }, comm_unknown[1] = { 0 };

bool rt_inj_host_comm(const void *comm, struct rt_inj_comm *c)
{
	if (comm == comm_init)
		*c = (struct rt_inj_comm){ 0x11, RT_INJ_MADE_INIT, 1, -1 };
	else if (comm == comm_split2)
		*c = (struct rt_inj_comm){ 0x22, RT_INJ_MADE_SPLIT, 2, 1 };
	else
		return false;
	return true;
}

static void load(const char *plan)
{
	cr_assert_eq(setenv("RANKTRACE_INJECT", plan, 1), 0);
	rt_inj_init();
}

/* The wrapper's question for one call of function id, on communicator comm. */
static struct rt_inj_hit ask_on(unsigned id, const void *comm)
{
	struct rt_inj_hit h = { 0 };

	if (rt_inj_active && rt_inj_api[id])
		rt_inj_check(id, comm, &h);
	return h;
}

static struct rt_inj_hit ask(unsigned id)
{
	return ask_on(id, NULL);
}

/* The call numbers (1..n) of function id at which something fires, as a
 * string "3 5 7", each hit checked against the expected action. */
static const char *fired(unsigned id, int n, int action)
{
	static char out[512];
	size_t len = 0;

	out[0] = '\0';
	for (int k = 1; k <= n; k++) {
		struct rt_inj_hit h = ask(id);

		if (!h.action)
			continue;
		cr_assert_eq(h.action, action, "call %d: action %d", k, h.action);
		cr_assert_eq(h.call, (uint64_t)k, "call %d counted as %llu", k, (unsigned long long)h.call);
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%d", len ? " " : "", k);
	}
	return out;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- loading a plan ---- */

Test(engine, no_plan_injects_nothing)
{
	unsetenv("RANKTRACE_INJECT");
	rt_inj_init();
	cr_assert_eq(rt_inj_active, 0);
	cr_assert_eq(rt_inj_api[RT_ID_cudaMalloc], 0);
	cr_assert_eq(rt_fault_point("fsdp.root_forward"), RT_FAULT_PASS);
	cr_assert_eq(nfaults, 0);
}

Test(engine, a_bad_plan_warns_once_and_injects_nothing)
{
	load("cudaMalloc:error=cudaErrorBogus:when=3");
	cr_assert_eq(rt_inj_active, 0);
	cr_assert_eq(nwarnings, 1);
	cr_assert(strstr(last_warning, "RANKTRACE_INJECT ignored: "), "%s", last_warning);
	cr_assert(strstr(last_warning, "cudaErrorBogus"), "%s", last_warning);
	cr_assert_eq(rt_inj_api[RT_ID_cudaMalloc], 0);
	cr_assert_str_empty(fired(RT_ID_cudaMalloc, 5, RT_INJ_ERROR));
}

Test(engine, rules_attach_only_to_the_functions_they_name)
{
	load("cudaMalloc:skip;nccl*:delay=1ns;@collective:skip;fsdp.root_forward:bypass");
	cr_assert_eq(rt_inj_active, 1);
	cr_assert_eq(rt_inj_api[RT_ID_cudaMalloc], 1);
	cr_assert_eq(rt_inj_api[RT_ID_cudaFree], 0, "cudaFree is not named");
	cr_assert_eq(rt_inj_api[RT_ID_ncclAllGather], 2, "nccl* and @collective");
	cr_assert_eq(rt_inj_api[RT_ID_ncclCommInitRank], 1, "nccl* only: not a collective");
}

Test(engine, every_rule_of_a_plan_takes_part)
{
	char plan[64 * 40] = "";

	/* 63 rules that fire late, then one that fires at the first call: a
	 * per-function table that dropped rules beyond its size lost it */
	for (int i = 0; i < RT_INJ_MAX_RULES - 1; i++)
		strcat(plan, "cudaMalloc:skip:when=1000;");
	strcat(plan, "cudaMalloc:error=cudaErrorMemoryAllocation:when=1");
	load(plan);
	cr_assert_eq(rt_inj_api[RT_ID_cudaMalloc], RT_INJ_MAX_RULES);
	struct rt_inj_hit h = ask(RT_ID_cudaMalloc);
	cr_assert_eq(h.action, RT_INJ_ERROR);
	cr_assert_eq(h.rule, RT_INJ_MAX_RULES - 1);
}

/* ---- which call ---- */

Test(engine, error_fires_at_the_named_call_with_the_named_code)
{
	bool replaced = false;

	load("cudaMalloc:error=cudaErrorMemoryAllocation:when=3");
	for (int k = 1; k <= 2; k++)
		cr_assert_eq(ask(RT_ID_cudaMalloc).action, RT_INJ_NONE, "call %d", k);
	struct rt_inj_hit h = ask(RT_ID_cudaMalloc);
	cr_assert_eq(h.action, RT_INJ_ERROR);
	cr_assert_eq(h.call, 3);
	cr_assert_eq(rt_inj_before(&h, RT_ID_cudaMalloc, NULL, &replaced), 2 /* cudaErrorMemoryAllocation */);
	cr_assert(replaced, "the real cudaMalloc must not run");
	cr_assert_eq(nfaults, 1);
	cr_assert_str_eq(faults[0].target, "cudaMalloc");
	cr_assert_eq(faults[0].action, RT_INJ_ERROR);
	cr_assert_eq(faults[0].arg, 2);
	cr_assert_eq(faults[0].call, 3);
	cr_assert_eq(faults[0].rule, 0);
	cr_assert_eq(ask(RT_ID_cudaMalloc).action, RT_INJ_NONE, "call 4");
}

Test(engine, when_ranges_count_calls_per_rule)
{
	load("cudaMalloc:skip:when=3+;cudaFree:skip:when=2..4;cudaMemset:skip:when=2+3");
	cr_assert_str_eq(fired(RT_ID_cudaMalloc, 6, RT_INJ_SKIP), "3 4 5 6");
	cr_assert_str_eq(fired(RT_ID_cudaFree, 6, RT_INJ_SKIP), "2 3 4");
	cr_assert_str_eq(fired(RT_ID_cudaMemset, 9, RT_INJ_SKIP), "2 5 8");
}

Test(engine, the_first_rule_wins_and_every_rule_counts)
{
	load("cudaMalloc:error=cudaErrorMemoryAllocation:when=2;cudaMalloc:skip:when=2..3");
	cr_assert_eq(ask(RT_ID_cudaMalloc).action, RT_INJ_NONE);
	struct rt_inj_hit h = ask(RT_ID_cudaMalloc);
	cr_assert_eq(h.action, RT_INJ_ERROR, "rule 0 first");
	cr_assert_eq(h.rule, 0);
	/* rule 1 counted call 2 although rule 0 took it: its call 3 is call 3 */
	h = ask(RT_ID_cudaMalloc);
	cr_assert_eq(h.action, RT_INJ_SKIP);
	cr_assert_eq(h.rule, 1);
	cr_assert_eq(h.call, 3);
	cr_assert_eq(ask(RT_ID_cudaMalloc).action, RT_INJ_NONE);
}

Test(engine, a_group_counts_its_calls_together)
{
	load("@collective:hang:when=3");
	cr_assert_eq(ask(RT_ID_ncclAllReduce).action, RT_INJ_NONE);
	cr_assert_eq(ask(RT_ID_ncclCommInitRank).action, RT_INJ_NONE, "not a collective");
	cr_assert_eq(ask(RT_ID_ncclAllGather).action, RT_INJ_NONE);
	struct rt_inj_hit h = ask(RT_ID_ncclBroadcast);
	cr_assert_eq(h.action, RT_INJ_HANG, "the third collective, whatever its kind");
	cr_assert_eq(h.call, 3);
}

/* ---- which rank ---- */

/* comm=: only the calls on such a communicator count (when=2 is the 2nd
 * all-reduce on the split, whatever the calls on other communicators). */
Test(engine, comm_counts_the_calls_on_its_communicator_only)
{
	const void *calls[] = { comm_init, comm_split2, comm_unknown, comm_init, NULL, comm_split2,
				comm_split2 };
	int fired_at = 0, n = 0;

	load("ncclAllReduce:skip:when=2:comm=split2;ncclAllReduce:delay=1ns:comm=init");
	for (int k = 0; k < 7; k++) {
		struct rt_inj_hit h = ask_on(RT_ID_ncclAllReduce, calls[k]);

		if (h.action == RT_INJ_SKIP) {
			fired_at = k + 1;
			n++;
			cr_assert_eq(h.call, 2, "counted as the %llu-th", (unsigned long long)h.call);
		} else {
			cr_assert_eq(h.action, calls[k] == comm_init ? RT_INJ_DELAY : 0, "call %d", k + 1);
		}
	}
	cr_assert_eq(n, 1);
	cr_assert_eq(fired_at, 6, "fired at the 2nd call on the split: overall call 6, not %d", fired_at);
}

Test(engine, the_rank_filter_fires_on_listed_ranks_only)
{
	load("ncclAllReduce:error=ncclSystemError:when=2:rank=0,2-3");
	host_rank = 2;
	cr_assert_str_eq(fired(RT_ID_ncclAllReduce, 4, RT_INJ_ERROR), "2");
}

Test(engine, other_ranks_are_left_alone)
{
	load("ncclAllReduce:error=ncclSystemError:when=2:rank=0,2-3");
	host_rank = 1;
	cr_assert_str_empty(fired(RT_ID_ncclAllReduce, 4, RT_INJ_ERROR));
	host_rank = -1; /* not known yet: a rank filter cannot match */
	cr_assert_str_empty(fired(RT_ID_ncclAllReduce, 4, RT_INJ_ERROR));
}

Test(engine, probability_is_seeded_and_counts_every_call)
{
	struct rt_inj_plan p;
	char err[512], want[512] = "";
	size_t len = 0;
	const char *plan = "cudaMalloc:skip:prob=0.5:seed=7";

	cr_assert_eq(rt_inj_parse(plan, &p, err, sizeof(err)), 0, "%s", err);
	for (int k = 1; k <= 40; k++)
		if (rt_inj_applies(&p.rules[0], 0, (uint64_t)k, 0))
			len += (size_t)snprintf(want + len, sizeof(want) - len, "%s%d", len ? " " : "", k);
	rt_inj_plan_free(&p);
	load(plan);
	host_rank = 0;
	const char *got = fired(RT_ID_cudaMalloc, 40, RT_INJ_SKIP);
	cr_assert_str_eq(got, want);
	cr_assert(strlen(got) > 10 && strcmp(got, "1 2 3 4 5 6 7 8 9 10") != 0, "%s", got);
}

/* ---- what an action does to the call ---- */

Test(engine, skip_returns_success_without_the_call)
{
	bool replaced = false;

	load("cudaFree:skip");
	struct rt_inj_hit h = ask(RT_ID_cudaFree);
	cr_assert_eq(rt_inj_before(&h, RT_ID_cudaFree, NULL, &replaced), 0);
	cr_assert(replaced);
	cr_assert_eq(nfaults, 1);
}

Test(engine, delay_sleeps_then_lets_the_call_run)
{
	bool replaced = false;
	double t0;

	load("ncclAllGather:delay=30ms:when=1");
	struct rt_inj_hit h = ask(RT_ID_ncclAllGather);
	cr_assert_eq(h.arg, 30000000);
	t0 = now_s();
	cr_assert_eq(rt_inj_before(&h, RT_ID_ncclAllGather, NULL, &replaced), 0);
	cr_assert(!replaced, "the real call still runs");
	cr_assert_geq(now_s() - t0, 0.030);
	cr_assert_lt(now_s() - t0, 5.0);
	cr_assert_str_eq(faults[0].target, "ncclAllGather");
}

Test(engine, devdelay_delays_the_calls_stream_not_the_host)
{
	uint8_t fields[RT_SIZE_MAX_PAYLOAD] = { 0 };
	uint64_t stream = 0x5eed;
	bool replaced = false;
	double t0;

	memcpy(fields + rt_events[RT_ID_ncclAllGather].fields[rt_field_at[RT_ID_ncclAllGather]
							       [RT_FN_stream]].offset, &stream, 8);
	load("ncclAllGather:devdelay=30ms");
	struct rt_inj_hit h = ask(RT_ID_ncclAllGather);
	t0 = now_s();
	cr_assert_eq(rt_inj_before(&h, RT_ID_ncclAllGather, fields, &replaced), 0);
	cr_assert(!replaced, "the real call still runs");
	cr_assert_lt(now_s() - t0, 0.020, "the host is not delayed");
	cr_assert_eq(delayed_stream, 0x5eed, "the call's own stream waits");
	cr_assert_eq(delayed_ns, 30000000);
	cr_assert_eq(nwarnings, 0);
}

Test(engine, devdelay_is_for_collectives_only)
{
	load("cudaMalloc:devdelay=1ms");
	cr_assert(!rt_inj_active || !rt_inj_api[RT_ID_cudaMalloc], "a bad plan injects nothing");
	cr_assert(strstr(last_warning, "devdelay= delays collectives"), "%s", last_warning);
}

Test(engine, device_lets_the_call_run_for_the_wrapper_to_redirect)
{
	bool replaced = false;

	load("cudaSetDevice:device=1");
	struct rt_inj_hit h = ask(RT_ID_cudaSetDevice);
	cr_assert_eq(h.action, RT_INJ_DEVICE);
	cr_assert_eq(h.arg, 1);
	cr_assert_eq(rt_inj_before(&h, RT_ID_cudaSetDevice, NULL, &replaced), 0);
	cr_assert(!replaced);
	cr_assert_eq(nfaults, 1);
}

Test(engine, hang_never_returns)
{
	load("ncclAllReduce:hang");
	struct rt_inj_hit h = ask(RT_ID_ncclAllReduce);
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		bool replaced;

		alarm(20); /* bounded even if the parent dies */
		rt_inj_before(&h, RT_ID_ncclAllReduce, NULL, &replaced);
		_exit(0);
	}
	usleep(300 * 1000);
	cr_expect_eq(waitpid(pid, &status, WNOHANG), 0, "the hung call returned");
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
}

Test(engine, kill_raises_the_signal, .signal = SIGUSR1)
{
	bool replaced;

	load("cudaMalloc:kill=10:when=2");
	ask(RT_ID_cudaMalloc);
	struct rt_inj_hit h = ask(RT_ID_cudaMalloc);
	cr_assert_eq(h.action, RT_INJ_KILL);
	rt_inj_before(&h, RT_ID_cudaMalloc, NULL, &replaced);
}

Test(engine, abort_aborts, .signal = SIGABRT)
{
	bool replaced;

	load("ncclBroadcast:abort");
	struct rt_inj_hit h = ask(RT_ID_ncclBroadcast);
	rt_inj_before(&h, RT_ID_ncclBroadcast, NULL, &replaced);
}

/* ---- corrupt: one bit of a collective's output ---- */

static void encode_fields(uint8_t *fields, unsigned id, ...)
{
	va_list ap;

	va_start(ap, id);
	encode_args(fields, id, ap);
	va_end(ap);
}

/* An ncclAllReduce's recorded fields, as the wrapper hands them over. */
static void allreduce_fields(uint8_t *fields, void *recv, uint64_t count, uint64_t dtype)
{
	encode_fields(fields, RT_ID_ncclAllReduce, RT_FN_recvbuff, (uint64_t)(uintptr_t)recv,
		      RT_FN_count, count, RT_FN_datatype, dtype, RT_FN_stream, (uint64_t)0x5, -1);
}

Test(engine, corrupt_flips_a_high_bit_of_the_first_element_after_success)
{
	float out[4] = { 1.0f, 2.0f, 3.0f, 4.0f };
	uint8_t fields[RT_SIZE_MAX_PAYLOAD] = { 0 };
	bool replaced = false;

	load("ncclAllReduce:corrupt:when=1");
	struct rt_inj_hit h = ask(RT_ID_ncclAllReduce);
	cr_assert_eq(rt_inj_before(&h, RT_ID_ncclAllReduce, NULL, &replaced), 0);
	cr_assert(!replaced);
	cr_assert_eq(nfaults, 0, "corrupt is recorded once it happened");
	allreduce_fields(fields, out, 4, 7 /* ncclFloat32 */);
	rt_inj_after(&h, RT_ID_ncclAllReduce, fields, 0);
	cr_assert_eq(nsyncs, 1, "the stream is done before the output is read");
	cr_assert_neq(out[0], 1.0f, "the first element changed");
	cr_assert_eq(((uint8_t *)out)[3], 0x3f ^ 0x10, "its most significant byte (1.0f: 0x3f800000)");
	cr_assert(out[1] == 2.0f && out[2] == 3.0f && out[3] == 4.0f, "nothing else");
	cr_assert_eq(nfaults, 1);
	cr_assert_eq(faults[0].action, RT_INJ_CORRUPT);
}

Test(engine, corrupt_leaves_a_failed_or_empty_collective_alone)
{
	double out[2] = { 1.0, 2.0 };
	uint8_t fields[RT_SIZE_MAX_PAYLOAD] = { 0 };

	load("ncclAllReduce:corrupt");
	struct rt_inj_hit h = ask(RT_ID_ncclAllReduce);
	allreduce_fields(fields, out, 2, 8 /* ncclFloat64 */);
	rt_inj_after(&h, RT_ID_ncclAllReduce, fields, 2 /* ncclSystemError */);
	memset(fields, 0, sizeof(fields));
	allreduce_fields(fields, out, 0, 8);
	rt_inj_after(&h, RT_ID_ncclAllReduce, fields, 0);
	cr_assert(out[0] == 1.0 && out[1] == 2.0);
	cr_assert_eq(nfaults, 0);
	/* and a double: the 8th byte is the high one */
	memset(fields, 0, sizeof(fields));
	allreduce_fields(fields, out, 2, 8);
	rt_inj_after(&h, RT_ID_ncclAllReduce, fields, 0);
	cr_assert_neq(out[0], 1.0);
	cr_assert_eq(((uint8_t *)out)[7], 0x3f ^ 0x10, "1.0: 0x3ff0000000000000");
}

/* ---- failure points and the probe API ---- */

Test(engine, a_failure_point_bypasses_at_its_call)
{
	load("fsdp.root_forward:bypass:when=2;my.point:error=7");
	cr_assert_eq(rt_fault_point("fsdp.root_forward"), RT_FAULT_PASS);
	cr_assert_eq(rt_fault_point("fsdp.root_forward"), RT_FAULT_BYPASS);
	cr_assert_eq(rt_fault_point("fsdp.root_forward"), RT_FAULT_PASS);
	cr_assert_eq(rt_fault_point("my.point"), 7);
	cr_assert_eq(rt_fault_point("other.point"), RT_FAULT_PASS);
	cr_assert_eq(rt_fault_point(NULL), RT_FAULT_PASS);
	cr_assert_eq(nfaults, 2);
	cr_assert_str_eq(faults[0].target, "fsdp.root_forward");
	cr_assert_eq(faults[0].call, 2);
	cr_assert_str_eq(faults[1].target, "my.point");
	cr_assert_eq(faults[1].rule, 1);
	cr_assert_eq(rt_inj_api[RT_ID_cudaMalloc], 0, "a point is no function");
}

Test(engine, each_rule_says_at_the_end_what_it_counted_and_fired)
{
	load("skip-fsdp-root;cudaMalloc:error=cudaErrorMemoryAllocation:when=2..3;"
	     "accelerate.prepare_model:bypass:rank=5");
	host_rank = 0;
	/* the probe asks no point on a DDP job: skip-fsdp-root never fires */
	for (int k = 0; k < 4; k++)
		ask(RT_ID_cudaMalloc);
	cr_assert_eq(rt_fault_point("accelerate.prepare_model"), RT_FAULT_PASS, "rank 0 is not listed");
	for (int k = 0; k < 3; k++) /* what the wrapper does with a hit: record it */
		if (k < 2) {
			struct rt_inj_hit h = { RT_INJ_ERROR, 1, 2, (uint64_t)(k + 2) };
			bool replaced = false;

			rt_inj_before(&h, RT_ID_cudaMalloc, NULL, &replaced);
		}
	rt_inj_at_end(false);
	cr_assert_eq(nrules, 3);
	cr_assert_str_eq(rules[0].spec, "skip-fsdp-root", "the preset as written");
	cr_assert(rules[0].seen == 0 && rules[0].fired == 0);
	cr_assert_str_eq(rules[1].spec, "cudaMalloc:error=cudaErrorMemoryAllocation:when=2..3");
	cr_assert(rules[1].seen == 4 && rules[1].fired == 2, "%llu %llu",
		  (unsigned long long)rules[1].seen, (unsigned long long)rules[1].fired);
	cr_assert_eq(rules[2].rule, 2);
	cr_assert(rules[2].seen == 1 && rules[2].fired == 0, "reached, but not on its rank");
}

Test(engine, a_failure_point_honours_the_rank_filter)
{
	load("fsdp.root_forward:bypass:rank=1");
	host_rank = 0;
	cr_assert_eq(rt_fault_point("fsdp.root_forward"), RT_FAULT_PASS);
	host_rank = 1;
	cr_assert_eq(rt_fault_point("fsdp.root_forward"), RT_FAULT_BYPASS);
}

Test(engine, a_failure_point_delays_then_passes)
{
	double t0;

	load("my.point:delay=20ms:when=2");
	cr_assert_eq(rt_fault_point("my.point"), RT_FAULT_PASS);
	t0 = now_s();
	cr_assert_eq(rt_fault_point("my.point"), RT_FAULT_PASS, "a delay lets the step run");
	cr_assert_geq(now_s() - t0, 0.020);
	cr_assert_eq(nfaults, 1);
	cr_assert_eq(faults[0].action, RT_INJ_DELAY);
}

Test(engine, a_failure_point_can_kill, .signal = SIGUSR2)
{
	load("my.point:kill=12");
	rt_fault_point("my.point");
}
