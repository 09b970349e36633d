/* SPDX-License-Identifier: MIT */
/* test_nccl_plugin.c - ranktrace's NCCL profiler plugin
 * (libnccl-profiler-ranktrace.so) driven through its ABI as NCCL drives it,
 * including orders the simulated NCCL never produces: a collective on
 * several kernel channels whose first channel stops before the next starts
 * (NCCL's profiler thread reports each channel as it finds it done), channel
 * stops out of time order, events for a communicator the plugin never saw,
 * stops without a start, init from several threads, a fork after init.
 *
 * This program stands in for libranktrace.so: it exports the hooks the
 * plugin looks up (rt_dev_bind_v2, rt_dev_event, rt_dev_p2p_event,
 * rt_dev_loaded, rt_dev_dropped) and records what the plugin reports. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nccl_profiler_abi.h"
#include "schema.h"

#define MAXEV 64

struct dev_ev {
	int phase;
	uint64_t comm_id, nccl_seq, gpu_ns;
	uint32_t seq;
	int peer, send; /* a P2P's; peer -1 for a collective */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct dev_ev evs[MAXEV];
static int nev, loaded, binds, dropped, drop_reason, completions;
static uint64_t drop_nccl_seq;
/* what the last bind asked */
static struct { const void *send, *recv; uint64_t count; int peer; char func[16]; } asked;

__attribute__((visibility("default"))) void rt_dev_bind_v2(const char *func, const void *send,
							     const void *recv, uint64_t count, int peer,
							     uint64_t *comm_id, uint32_t *seq)
{
	pthread_mutex_lock(&mu);
	binds++;
	asked.send = send;
	asked.recv = recv;
	asked.count = count;
	asked.peer = peer;
	snprintf(asked.func, sizeof(asked.func), "%s", func ? func : "");
	*comm_id = func ? 0xc0 : 0;
	*seq = (uint32_t)binds;
	pthread_mutex_unlock(&mu);
}

__attribute__((visibility("default"))) void rt_dev_p2p_event(int phase, uint64_t comm_id, int peer,
							       uint32_t seq, int send,
							       uint64_t nccl_comm, uint64_t gpu_ns)
{
	(void)nccl_comm;
	pthread_mutex_lock(&mu);
	if (nev < MAXEV)
		evs[nev++] = (struct dev_ev){ phase, comm_id, 0, gpu_ns, seq, peer, send };
	pthread_mutex_unlock(&mu);
}

__attribute__((visibility("default"))) void rt_dev_event(int phase, uint64_t comm_id, uint32_t seq,
							   uint64_t nccl_comm, uint64_t nccl_seq,
							   uint64_t gpu_ns)
{
	(void)nccl_comm;
	pthread_mutex_lock(&mu);
	completions += phase == 2;
	if (nev < MAXEV)
		evs[nev++] = (struct dev_ev){ phase, comm_id, nccl_seq, gpu_ns, seq, -1, 0 };
	pthread_mutex_unlock(&mu);
}

__attribute__((visibility("default"))) void rt_dev_loaded(int version)
{
	pthread_mutex_lock(&mu);
	loaded += version;
	pthread_mutex_unlock(&mu);
}

__attribute__((visibility("default"))) void rt_dev_dropped(int reason, const char *func,
							     uint64_t nccl_comm, uint64_t nccl_seq)
{
	(void)func, (void)nccl_comm;
	pthread_mutex_lock(&mu);
	dropped++;
	drop_reason = reason;
	drop_nccl_seq = nccl_seq;
	pthread_mutex_unlock(&mu);
}

static const rt_nccl_profiler_v5_t *v5;
static const rt_nccl_profiler_v4_t *v4;

static void load(void)
{
	void *lib = dlopen(RT_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);

	cr_assert(lib, "dlopen %s: %s", RT_PLUGIN_PATH, dlerror());
	v5 = dlsym(lib, "ncclProfiler_v5");
	v4 = dlsym(lib, "ncclProfiler_v4");
	cr_assert(v5 && v4);
	nev = loaded = binds = dropped = drop_reason = completions = 0;
}

static int count(int phase)
{
	int n = 0;

	for (int i = 0; i < nev; i++)
		n += evs[i].phase == phase;
	return n;
}

static void *coll(void *ctx, uint64_t nseq, uint8_t nchannels)
{
	struct rt_nccl_descr_v5 d = { .type = RT_NCCL_PROFILE_COLL };
	void *h = NULL;

	d.coll = (struct rt_nccl_coll_v5){ .seqNumber = nseq, .func = "AllReduce", .count = 8,
					   .nChannels = nchannels };
	cr_assert_eq(v5->startEvent(ctx, &h, &d), ncclSuccess);
	cr_assert(h);
	return h;
}

static void *chan(void *ctx, void *parent, uint8_t id, uint64_t t)
{
	struct rt_nccl_descr_v5 d = { .type = RT_NCCL_PROFILE_KERNEL_CH, .parentObj = parent };
	void *h = NULL;

	d.kernelCh.channelId = id;
	d.kernelCh.pTimer = t;
	cr_assert_eq(v5->startEvent(ctx, &h, &d), ncclSuccess);
	return h;
}

static void chan_stop(void *h, uint64_t t)
{
	union rt_nccl_state_args a = { .kernelCh = { t } };

	v5->recordEventState(h, RT_NCCL_KERNEL_CH_STOP, &a);
	v5->stopEvent(h);
}

static void *init5(void)
{
	void *ctx = NULL;
	int mask = 0;

	cr_assert_eq(v5->init(&ctx, 0x1234, &mask, "", 1, 2, 0, NULL), ncclSuccess);
	cr_assert(mask & RT_NCCL_PROFILE_KERNEL_CH);
	return ctx;
}

Test(nccl_plugin, completion_waits_for_every_channel_the_collective_announced)
{
	void *ctx, *c, *h;

	load();
	ctx = init5();
	c = coll(ctx, 7, 2);
	v5->stopEvent(c); /* NCCL stops the collective event at launch */
	/* the profiler thread finds channel 0 started and done before channel 1 started */
	h = chan(ctx, c, 0, 100);
	chan_stop(h, 150);
	cr_expect_eq(count(2), 0, "completed after 1 of its 2 channels");
	h = chan(ctx, c, 1, 120);
	chan_stop(h, 300);
	cr_expect_eq(count(1), 1);
	cr_expect_eq(count(2), 1, "one completion, after the last channel");
	cr_expect_eq(evs[nev - 1].gpu_ns, 300);
	v5->finalize(ctx);
}

Test(nccl_plugin, completion_time_is_the_latest_channel_stop_whatever_the_order)
{
	void *ctx, *c, *h0, *h1;

	load();
	ctx = init5();
	c = coll(ctx, 1, 2);
	h0 = chan(ctx, c, 0, 100);
	h1 = chan(ctx, c, 1, 100);
	chan_stop(h1, 500);
	chan_stop(h0, 400); /* reported after, stopped before */
	v5->stopEvent(c);   /* the host stops the collective event last */
	cr_assert_eq(count(2), 1);
	cr_expect_eq(evs[nev - 1].gpu_ns, 500);
	v5->finalize(ctx);
}

Test(nccl_plugin, channels_past_64_are_counted)
{
	void *ctx, *c;

	load();
	ctx = init5();
	c = coll(ctx, 1, 80); /* a future NCCL with more channels */
	v5->stopEvent(c);
	for (int i = 0; i < 80; i++) {
		void *h = chan(ctx, c, (uint8_t)i, 10);

		cr_assert(h, "channel %d has no handle", i);
		chan_stop(h, 20 + (uint64_t)i);
	}
	cr_expect_eq(count(2), 1);
	cr_expect_eq(evs[nev - 1].gpu_ns, 99);
	v5->finalize(ctx);
}

Test(nccl_plugin, unknown_channel_count_completes_when_every_started_channel_stopped)
{
	void *ctx, *c, *h;

	load();
	ctx = init5();
	c = coll(ctx, 1, 0); /* NCCL did not say */
	v5->stopEvent(c);
	h = chan(ctx, c, 0, 100);
	chan_stop(h, 200);
	cr_expect_eq(count(2), 1);
	v5->finalize(ctx);
}

Test(nccl_plugin, reports_after_completion_change_nothing)
{
	void *ctx, *c, *h;

	load();
	ctx = init5();
	c = coll(ctx, 1, 1);
	v5->stopEvent(c);
	h = chan(ctx, c, 0, 100);
	chan_stop(h, 200);
	cr_assert_eq(count(2), 1);
	/* a stray extra channel on the finished record: no second completion */
	h = chan(ctx, c, 1, 300);
	if (h)
		chan_stop(h, 400);
	cr_expect_eq(count(2), 1);
	v5->finalize(ctx);
}

/* A collective event's bind asks with its buffers and count (the tracer
 * ties it to the call with those, whatever order NCCL launched a group in);
 * a P2P event is asked for with its buffer and peer, and reported as
 * rt_dev_p2p (a Send's peer, send 1). */
Test(nccl_plugin, binds_by_buffers_and_reports_point_to_point)
{
	struct rt_nccl_descr_v5 d = { .type = RT_NCCL_PROFILE_P2P };
	char sendbuf[8], recvbuf[8];
	void *ctx, *c, *h = NULL;
	int mask = 0;

	load();
	cr_assert_eq(v5->init(&ctx, 0x1234, &mask, "", 1, 2, 0, NULL), ncclSuccess);
	cr_assert(mask & RT_NCCL_PROFILE_P2P, "P2P events asked for (mask %#x)", mask);
	d.coll = (struct rt_nccl_coll_v5){ .func = "AllReduce", .sendBuff = sendbuf,
					   .recvBuff = recvbuf, .count = 5, .nChannels = 1 };
	d.type = RT_NCCL_PROFILE_COLL;
	cr_assert_eq(v5->startEvent(ctx, &c, &d), ncclSuccess);
	cr_expect(asked.send == sendbuf && asked.recv == recvbuf && asked.count == 5 &&
		  asked.peer == -1, "a collective's bind asks with its buffers");
	v5->stopEvent(c);
	memset(&d, 0, sizeof(d));
	d.type = RT_NCCL_PROFILE_P2P;
	d.p2p.func = "Send";
	d.p2p.buff = sendbuf;
	d.p2p.count = 3;
	d.p2p.peer = 1;
	d.p2p.nChannels = 1;
	cr_assert_eq(v5->startEvent(ctx, &h, &d), ncclSuccess);
	cr_assert(h);
	cr_expect(!strcmp(asked.func, "Send") && asked.send == sendbuf && !asked.recv &&
		  asked.count == 3 && asked.peer == 1, "a Send's bind: its buffer and peer");
	v5->stopEvent(h);
	chan_stop(chan(ctx, h, 0, 10), 20);
	cr_assert_eq(count(2), 1);
	cr_expect_eq(evs[nev - 1].peer, 1);
	cr_expect_eq(evs[nev - 1].send, 1);
	cr_expect_eq(evs[nev - 1].seq, (uint32_t)binds, "the P2P's own sequence, as bound");
	v5->finalize(ctx);
}

Test(nccl_plugin, strange_calls_are_harmless)
{
	struct rt_nccl_descr_v5 d = { .type = RT_NCCL_PROFILE_KERNEL_CH };
	union rt_nccl_state_args a = { .kernelCh = { 1 } };
	void *h = (void *)1;

	load();
	cr_expect_eq(v5->stopEvent(NULL), ncclSuccess);
	cr_expect_eq(v5->recordEventState(NULL, RT_NCCL_KERNEL_CH_STOP, &a), ncclSuccess);
	/* a kernel channel with no parent, events of types never activated */
	cr_expect_eq(v5->startEvent(NULL, &h, &d), ncclSuccess);
	cr_expect_null(h);
	d.type = RT_NCCL_PROFILE_GROUP;
	cr_expect_eq(v5->startEvent(NULL, &h, &d), ncclSuccess);
	cr_expect_null(h);
	/* a collective of a communicator the plugin never saw (no context) */
	d = (struct rt_nccl_descr_v5){ .type = RT_NCCL_PROFILE_COLL };
	d.coll.func = NULL;
	cr_expect_eq(v5->startEvent(NULL, &h, &d), ncclSuccess);
	if (h)
		v5->stopEvent(h);
	cr_expect_eq(count(1) + count(2), 0);
}

static void *init_thread(void *arg)
{
	void *ctx = NULL;
	int mask = 0;

	(void)arg;
	if (v4->init(&ctx, &mask, "", 1, 1, 8, 0, NULL) != ncclSuccess || !ctx)
		return (void *)1;
	v4->finalize(ctx);
	return NULL;
}

Test(nccl_plugin, init_from_many_threads_and_after_fork)
{
	pthread_t th[8];
	void *r;
	pid_t pid;
	int st;

	load();
	for (int i = 0; i < 8; i++)
		pthread_create(&th[i], NULL, init_thread, NULL);
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], &r);
		cr_expect_null(r);
	}
	cr_expect_eq(loaded, 8 * 4);
	pid = fork();
	if (pid == 0) {
		alarm(10);
		_exit(init_thread(NULL) ? 1 : 0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The pool holds 65,536 collectives in flight (issue 30; 4,096 before):
 * the one past it gets no handle, and the tracer is told (rt_dev_dropped,
 * pool full) with NCCL's sequence number, instead of losing it silently. */
#define POOL_MAX 65536

static void drop_past_the_pool(void *ctx, uint64_t nseq)
{
	struct rt_nccl_descr_v5 d = { .type = RT_NCCL_PROFILE_COLL };
	void *h = NULL;
	int before = dropped;

	d.coll = (struct rt_nccl_coll_v5){ .seqNumber = nseq, .func = "AllReduce", .count = 8 };
	cr_assert_eq(v5->startEvent(ctx, &h, &d), ncclSuccess);
	cr_expect_null(h, "no record left for it");
	cr_expect_eq(dropped, before + 1);
	cr_expect_eq(drop_reason, RT_DROP_POOL);
	cr_expect_eq(drop_nccl_seq, nseq);
}

Test(nccl_plugin, a_full_pool_says_the_dropped_record)
{
	void *ctx;

	load();
	ctx = init5();
	for (uint64_t i = 0; i < POOL_MAX; i++)
		coll(ctx, i, 1);
	cr_expect_eq(dropped, 0);
	drop_past_the_pool(ctx, POOL_MAX);
	v5->finalize(ctx);
}

/* A completed collective's record serves the next: a full pool takes one
 * more once one of its collectives completed, and only one. */
Test(nccl_plugin, a_completed_record_is_reused)
{
	void *ctx, *first;

	load();
	ctx = init5();
	first = coll(ctx, 0, 1);
	for (uint64_t i = 1; i < POOL_MAX; i++)
		coll(ctx, i, 1);
	chan_stop(chan(ctx, first, 0, 10), 20);
	v5->stopEvent(first);
	cr_expect_eq(completions, 1);
	cr_expect_eq(coll(ctx, POOL_MAX, 1), first, "the completed record, given back");
	drop_past_the_pool(ctx, POOL_MAX + 1);
	v5->finalize(ctx);
}

/* Threads start and complete collectives at once, in bursts of 1,000 in
 * flight each: every one gets a record and completes once (no record handed
 * to two collectives, none lost: the pool still holds 65,536 after). */
static void *burst_thread(void *ctx)
{
	struct rt_nccl_descr_v5 d = { .type = RT_NCCL_PROFILE_COLL };
	struct rt_nccl_descr_v5 c = { .type = RT_NCCL_PROFILE_KERNEL_CH };
	union rt_nccl_state_args stop = { .kernelCh = { 2 } };
	void *h[1000], *ch;
	uintptr_t lost = 0; /* no cr_assert off the test's thread */

	d.coll = (struct rt_nccl_coll_v5){ .func = "AllReduce", .count = 8, .nChannels = 1 };
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 1000; i++) {
			h[i] = NULL;
			v5->startEvent(ctx, &h[i], &d);
			lost += !h[i];
		}
		for (int i = 0; i < 1000; i++) {
			if (!h[i])
				continue;
			c.parentObj = h[i];
			ch = NULL;
			v5->startEvent(ctx, &ch, &c);
			v5->recordEventState(ch, RT_NCCL_KERNEL_CH_STOP, &stop);
			v5->stopEvent(ch);
			v5->stopEvent(h[i]);
		}
	}
	return (void *)lost;
}

Test(nccl_plugin, threads_claim_and_give_back_records_at_once)
{
	pthread_t th[4];
	void *ctx, *lost;

	load();
	ctx = init5();
	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, burst_thread, ctx), 0);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], &lost);
		cr_expect_null(lost, "every start had a record");
	}
	cr_expect_eq(completions, 4 * 20 * 1000);
	cr_expect_eq(dropped, 0);
	for (uint64_t i = 0; i < POOL_MAX; i++)
		coll(ctx, i, 1);
	cr_expect_eq(dropped, 0);
	drop_past_the_pool(ctx, POOL_MAX);
	v5->finalize(ctx);
}
