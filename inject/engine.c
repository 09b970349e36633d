/* SPDX-License-Identifier: MIT */
/* engine.c - the fault plan inside libranktrace.so: decide per call, act,
 * record what fired; failure points (rt_fault_point, include/ranktrace.h).
 *
 * rt_inj_init() parses RANKTRACE_INJECT once (the CLI has already refused bad
 * plans; a bad plan here warns once and injects nothing) and expands it into
 * a per-function table of rule indices. Per call: a table lookup and one
 * relaxed atomic increment per matching rule; no lock, no allocation, no
 * string. What fires is recorded as an rt_fault event. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"
#include "plan.h"
#include "record.h"
#define RANKTRACE_IMPLEMENTATION
#include "ranktrace.h"
#include "env.h"

/* Every rule of a plan may match one function: a rule the CLI accepted
 * always takes part (an 8-slot table once dropped the 9th silently). */
#define RULES_PER_API RT_INJ_MAX_RULES
#define RT_EXPORT __attribute__((visibility("default")))

int rt_inj_active;
uint8_t rt_inj_api[RT_ID_COUNT];     /* number of rules for the function */
static uint8_t api_rules[RT_ID_COUNT][RULES_PER_API];
static struct rt_inj_plan plan;
static uint64_t counters[RT_INJ_MAX_RULES]; /* calls seen per rule (atomic) */
static uint64_t fired[RT_INJ_MAX_RULES];    /* faults it made (atomic) */
static int warned;

static int current_rank(void)
{
	return rt_inj_host_rank();
}

void rt_inj_init(void)
{
	const char *text = getenv(RT_ENV_NAME(INJECT));
	char err[1024], msg[1100];

	if (!text || !*text)
		return;
	if (rt_inj_parse(text, &plan, err, sizeof(err)) != 0) {
		snprintf(msg, sizeof(msg), "RANKTRACE_INJECT ignored: %s", err);
		rt_inj_host_warn(&warned, msg);
		return;
	}
	for (int i = 0; i < plan.nrules; i++)
		for (unsigned id = 0; id < RT_ID_COUNT; id++)
			if (rt_inj_rule_matches(&plan.rules[i], id) && rt_inj_api[id] < RULES_PER_API)
				api_rules[id][rt_inj_api[id]++] = (uint8_t)i;
	rt_inj_active = 1;
}

/* The first rule of function id that fires on this call, if any. Every
 * matching rule counts the call; a rule with comm= only the calls on such a
 * communicator (asked of the host once per call). */
void rt_inj_check(unsigned id, const void *comm, struct rt_inj_hit *hit)
{
	struct rt_inj_comm info;
	int known = -1; /* not asked yet */

	for (int k = 0; k < rt_inj_api[id]; k++) {
		int i = api_rules[id][k];
		const struct rt_inj_rule *r = &plan.rules[i];
		uint64_t n;

		if (r->comm_sel != RT_INJ_COMM_ANY) {
			if (known < 0)
				known = comm && rt_inj_host_comm(comm, &info);
			if (!rt_inj_comm_matches(r, known ? &info : NULL))
				continue;
		}
		n = __atomic_add_fetch(&counters[i], 1, __ATOMIC_RELAXED);

		if (hit->action || !rt_inj_when(r, n) || !rt_inj_applies(r, current_rank(), n, i))
			continue;
		hit->action = r->action;
		hit->arg = r->arg;
		hit->rule = i;
		hit->call = n;
	}
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { ns / 1000000000, ns % 1000000000 };

	while (nanosleep(&ts, &ts) != 0)
		;
}

static void hang_forever(void)
{
	for (;;)
		pause();
}

static void record(const char *target, const struct rt_inj_hit *h)
{
	__atomic_add_fetch(&fired[h->rule], 1, __ATOMIC_RELAXED);
	rt_tr_ev_rt_fault(target, h->action, h->arg, h->call, h->rule);
}

void rt_inj_at_end(bool from_signal)
{
	(void)from_signal; /* records only, no allocation: the same either way */
	for (int i = 0; i < plan.nrules; i++)
		rt_tr_ev_rt_inj_rule(i, plan.rules[i].spec, __atomic_load_n(&counters[i], __ATOMIC_RELAXED),
				     __atomic_load_n(&fired[i], __ATOMIC_RELAXED));
}

/* Before the real call: act; *replaced when the call must not happen, with
 * the value to return. */
long rt_inj_before(const struct rt_inj_hit *h, unsigned id, const uint8_t *fields,
		   bool *replaced)
{
	static int warned_devdelay;

	if (h->action != RT_INJ_CORRUPT)
		record(rt_events[id].name, h); /* corrupt is recorded once it happened */
	switch (h->action) {
	case RT_INJ_ERROR:
		*replaced = true;
		return (long)h->arg;
	case RT_INJ_SKIP:
		*replaced = true;
		return 0;
	case RT_INJ_DELAY:
		sleep_ns(h->arg);
		return 0;
	case RT_INJ_DEVDELAY: /* never the host: a stream we cannot reach is left alone */
		if (!fields || rt_field_at[id][RT_FN_stream] < 0 ||
		    rt_inj_host_stream_delay((uint64_t)rt_field_value(id, fields, RT_FN_stream),
					     h->arg) != 0)
			rt_inj_host_warn(&warned_devdelay, "devdelay: the stream could not be "
					 "delayed (no cudaLaunchHostFunc); the call runs on time");
		return 0;
	case RT_INJ_HANG:
		hang_forever();
		return 0;
	case RT_INJ_ABORT:
		abort();
	case RT_INJ_KILL:
		raise((int)h->arg);
		return 0;
	default: /* device: the wrapper passes the new device; corrupt: after */
		return 0;
	}
}

typedef int (*memcpy_fn)(void *, const void *, size_t, int);
typedef int (*sync_fn)(void *);

/* After a successful collective: flip one bit of its output, in device memory,
 * through the real cudaMemcpy (after the stream is done). */
void rt_inj_after(const struct rt_inj_hit *hit, unsigned id, const uint8_t *fields, long ret)
{
	static memcpy_fn real_memcpy;
	static sync_fn real_sync;
	unsigned elt = rt_nccl_dtype_size(rt_field_value(id, fields, RT_FN_datatype));
	uint8_t byte;
	char *out;

	if (hit->action != RT_INJ_CORRUPT || ret != 0)
		return;
	/* the output: recvbuff, or ncclBcast's one buffer */
	out = (char *)(uintptr_t)rt_field_value(id, fields, rt_field_at[id][RT_FN_recvbuff] >= 0
							       ? RT_FN_recvbuff : RT_FN_buff);
	if (!real_memcpy) {
		real_memcpy = (memcpy_fn)rt_inj_host_resolve(rt_events[RT_ID_cudaMemcpy].name, RT_LIB_CUDA);
		/* not interposed, so in no table */
		real_sync = (sync_fn)rt_inj_host_resolve("cudaStreamSynchronize", RT_LIB_CUDA);
	}
	if (!out || !real_memcpy || rt_field_value(id, fields, RT_FN_count) == 0)
		return;
	if (real_sync)
		real_sync((void *)(uintptr_t)rt_field_value(id, fields, RT_FN_stream));
	/* the first element's most significant byte: an exponent bit for
	 * floating point, a high bit for integers: the change shows */
	out += elt ? elt - 1 : 0;
	if (real_memcpy(&byte, out, 1, 2 /* cudaMemcpyDeviceToHost */) != 0)
		return;
	byte ^= 0x10;
	if (real_memcpy(out, &byte, 1, 1 /* cudaMemcpyHostToDevice */) == 0)
		record(rt_events[id].name, hit);
}

/* ---- failure points (include/ranktrace.h) ---- */

RT_EXPORT int rt_fault_point(const char *name)
{
	int result = RT_FAULT_PASS;

	if (!rt_inj_active || !name)
		return RT_FAULT_PASS;
	for (int i = 0; i < plan.nrules; i++) {
		const struct rt_inj_rule *r = &plan.rules[i];
		struct rt_inj_hit h;
		uint64_t n;

		if (!r->point || strcmp(r->target, name) != 0)
			continue;
		n = __atomic_add_fetch(&counters[i], 1, __ATOMIC_RELAXED);
		if (result != RT_FAULT_PASS || !rt_inj_when(r, n) || !rt_inj_applies(r, current_rank(), n, i))
			continue;
		h = (struct rt_inj_hit){ r->action, i, r->arg, n };
		record(name, &h);
		switch (r->action) {
		case RT_INJ_BYPASS: result = RT_FAULT_BYPASS; break;
		case RT_INJ_ERROR: result = (int)r->arg; break;
		case RT_INJ_DELAY: sleep_ns(r->arg); break;
		case RT_INJ_HANG: hang_forever(); break;
		case RT_INJ_ABORT: abort();
		case RT_INJ_KILL: raise((int)r->arg); break;
		default: break;
		}
	}
	return result;
}
