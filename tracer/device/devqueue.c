/* SPDX-License-Identifier: MIT */
/* devqueue.c - the queues of CUDA events of devevents.c, and the poller
 * that reports them (devqueue.h).
 *
 * Cold paths only, apart from the poller's pass: a queue is made when a
 * thread first records on a device (or taken over from a thread that
 * exited), a chunk of events when a queue's chunks are all in use (at most
 * MAX_CHUNKS per queue, 65,536 collectives in flight: then a record is
 * dropped, never waited for, and said in the trace: rt_dev_drop,
 * devevents.c). The poller walks each queue from its oldest unreported
 * entry to the newest published one, querying a stream's events only up to
 * its first pending start (stream order: what follows it is pending too):
 * completed work is reported once and the chunks behind it go back to
 * their producer; a queue with nothing pending costs two loads. */
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "devqueue.h"

/* per queue: 65,536 collectives in flight, and the two chunks the poller
 * may still hold (partly consumed, not yet given back) */
#define MAX_CHUNKS (65536 / RT_DQ_CHUNK + 2)
#define MAX_QUEUES 256 /* threads x devices, reused as threads exit */
#define POLL_NS RT_DEV_EVENT_POLL_NS /* while anything is pending, and 1 s after */
#define IDLE_NS 10000000
#define BLOCKED 16 /* streams a pass remembers as pending (poll_queue) */

static struct rt_dq *queues; /* every queue (atomic push) */
static int nqueues;
static pid_t poller_pid;
static int in_pass; /* the poller is in a pass (drain waits for its end) */
static int poller_up;      /* the poller thread runs its loop */
static unsigned passes;    /* the poller's passes so far */
static uint64_t reported;  /* device records the poller wrote so far */
static uint32_t wake;      /* set by the drain: the poller's naps end */
static pthread_key_t exit_key;
static void (*settle_hook)(void *); /* devevents.c: what the thread left */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* The calling thread's stream capture interaction mode set to relaxed:
 * a call of ours that CUDA counts as potentially unsafe during a capture
 * (an event query, a device switch) never invalidates a capture of the
 * program's, on this thread or another. The mode it had, for relaxed_end. */
static int relaxed_begin(void)
{
	enum cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;

	if (!rt_dq_cu.capture_mode || rt_dq_cu.capture_mode(&m) != cudaSuccess)
		return -1;
	return (int)m;
}

static void relaxed_end(int old)
{
	enum cudaStreamCaptureMode m = (enum cudaStreamCaptureMode)old;

	if (old >= 0)
		rt_dq_cu.capture_mode(&m);
}

/* A chunk of fresh events on dev, made on the program's thread; what the
 * program sees of that thread is as it was: its current device, its
 * capture mode, its pending error. Only with none of the program's pending
 * (else NULL, counted as a drop: cudaGetLastError would take it), so that
 * any failure of ours is ours to clear. */
static struct rt_dq_chunk *make_chunk(int dev)
{
	struct rt_dq_chunk *c;
	int cur = -1, n = 0, mode;

	if (rt_dq_cu.peek() != cudaSuccess || !(c = calloc(1, sizeof(*c))))
		return NULL;
	mode = relaxed_begin();
	if (rt_dq_cu.getdev && rt_dq_cu.getdev(&cur) == cudaSuccess && cur != dev && rt_dq_cu.setdev)
		rt_dq_cu.setdev(dev); /* an event belongs to the device current at its creation */
	for (; n < RT_DQ_CHUNK; n++)
		if (rt_dq_cu.create(&c->e[n].start, cudaEventDisableTiming) != cudaSuccess ||
		    rt_dq_cu.create(&c->e[n].end, cudaEventDisableTiming) != cudaSuccess)
			break;
	if (cur >= 0 && cur != dev && rt_dq_cu.setdev)
		rt_dq_cu.setdev(cur);
	relaxed_end(mode);
	rt_dq_cu.get(); /* success before (checked above): success after */
	if (n < RT_DQ_CHUNK) { /* the events made stay: a failure is the end of the source */
		free(c);
		rt_dq_fail_once("cudaEventCreateWithFlags", 0);
		return NULL;
	}
	return c;
}

/* A thread exits: what it reserved and did not publish (a call or a group
 * it was in) is voided and published; its queues are free for another. */
static void thread_exit(void *mine)
{
	struct rt_dq **qs = mine;

	if (settle_hook)
		settle_hook(mine);
	for (int d = 0; d < RT_DQ_NDEV; d++) {
		struct rt_dq *q = qs[d];
		struct rt_dq_chunk *c;
		unsigned i;

		if (!q)
			continue;
		for (c = q->pc, i = q->pi; c && !(c == q->wc && i == q->wi); i++) {
			if (i == RT_DQ_CHUNK) {
				c = c->next;
				i = (unsigned)-1;
				continue;
			}
			c->e[i].dead = 1;
		}
		rt_dq_publish(q);
		__atomic_store_n(&q->owner, 0, __ATOMIC_RELEASE);
	}
}

static void make_key(void)
{
	if (pthread_key_create(&exit_key, thread_exit) != 0)
		exit_key = (pthread_key_t)-1;
}

void rt_dq_thread_started(struct rt_dq **mine, void (*settle)(void *))
{
	settle_hook = settle;
	pthread_once(&key_once, make_key);
	if (exit_key != (pthread_key_t)-1)
		pthread_setspecific(exit_key, mine);
}

static void *poller(void *arg);

static void start_poller(void)
{
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;

	if (__atomic_exchange_n(&poller_pid, rt_tr_pid, __ATOMIC_ACQ_REL) == rt_tr_pid)
		return;
	rt_tr_on_end_drain(rt_tr_devev_drain); /* the last look at exit */
	rt_tr_ev_rt_dev_source(RT_DEV_SRC_EVENT, 0, "cuda events polled by the tracer");
	if (pthread_attr_init(&attr) != 0)
		return;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all); /* the program's signals are never delivered to our thread */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, &attr, poller, NULL) != 0)
		rt_dq_fail_once("pthread_create", 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

/* Cold: a queue on dev for the calling thread. */
struct rt_dq *rt_dq_claim(int dev)
{
	struct rt_dq *q;
	int zero;

	if (__atomic_load_n(&poller_pid, __ATOMIC_RELAXED) != rt_tr_pid)
		start_poller();
	for (q = __atomic_load_n(&queues, __ATOMIC_ACQUIRE); q; q = q->next_q) {
		zero = 0;
		if (q->dev == dev && !__atomic_load_n(&q->owner, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&q->owner, &zero, 1, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return q; /* its thread exited: its producer state is ours now */
	}
	if (__atomic_fetch_add(&nqueues, 1, __ATOMIC_RELAXED) >= MAX_QUEUES ||
	    !(q = calloc(1, sizeof(*q))))
		return NULL;
	q->dev = dev;
	q->owner = 1;
	if (!(q->wc = q->rc = q->pc = make_chunk(dev))) {
		free(q);
		return NULL;
	}
	q->nchunks = 1;
	q->next_q = __atomic_load_n(&queues, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&queues, &q->next_q, q, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
	return q;
}

/* The current chunk is full: link the next one (reused, or new). */
__attribute__((cold, noinline)) struct rt_dq_entry *rt_dq_reserve_slow(struct rt_dq *q)
{
	struct rt_dq_chunk *c = q->spare;

	if (!c) /* what the poller gave back, all at once */
		c = q->spare = __atomic_exchange_n(&q->freed, NULL, __ATOMIC_ACQUIRE);
	if (c) {
		q->spare = c->next;
	} else {
		if (q->nchunks >= MAX_CHUNKS || !(c = make_chunk(q->dev)))
			return NULL;
		q->nchunks++;
	}
	c->next = NULL;
	__atomic_store_n(&q->wc->next, c, __ATOMIC_RELEASE);
	q->wc = c;
	q->wi = 0;
	return rt_dq_reserve(q);
}

/* A collective's device record, or a point-to-point call's. */
static void report(const struct rt_dq_entry *e, int phase)
{
	__atomic_store_n(&reported, reported + 1, __ATOMIC_RELAXED); /* one consumer at a time */
	if (e->p2p)
		rt_tr_ev_rt_dev_p2p(phase, e->comm_id, e->peer, e->seq, e->p2p == 1, 0,
				    RT_DEV_SRC_EVENT, 0);
	else
		rt_tr_ev_rt_dev_coll(phase, e->comm_id, e->seq, 0, 0, RT_DEV_SRC_EVENT, 0);
}

/* Where an entry stands after the poller's look (visit). */
enum { AT_START, AT_END, DONE };

/* The poller: one entry, in stream order (start before completion):
 * AT_START while its start event is pending, AT_END while its completion
 * is, DONE once fully reported. */
static int visit(struct rt_dq_entry *e)
{
	cudaError_t r;

	if (__atomic_load_n(&e->dead, __ATOMIC_ACQUIRE))
		return DONE;
	if (!(e->seen & 1)) {
		r = rt_dq_cu.query(e->start);
		if (r == cudaErrorNotReady)
			return AT_START;
		e->seen |= 1;
		if (r != cudaSuccess) /* a device error: neither is known */
			return DONE;
		report(e, RT_DEV_STARTED);
	}
	if (!__atomic_load_n(&e->armed, __ATOMIC_ACQUIRE)) /* its group's end runs */
		return __atomic_load_n(&e->dead, __ATOMIC_ACQUIRE) ? DONE : AT_END;
	r = rt_dq_cu.query(e->end);
	if (r == cudaErrorNotReady)
		return AT_END;
	if (r == cudaSuccess)
		report(e, RT_DEV_COMPLETED);
	return DONE;
}

/* The chunk behind the poller goes back to the producer. */
static void give_back(struct rt_dq *q, struct rt_dq_chunk *c)
{
	c->next = __atomic_load_n(&q->freed, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&q->freed, &c->next, c, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
}

/* Is stream among the n streams whose start events were found pending? */
static bool behind(const void *const *blocked, unsigned n, const void *stream)
{
	for (unsigned i = 0; i < n; i++)
		if (blocked[i] == stream)
			return true;
	return false;
}

/* One pass over a queue's published entries not yet reported; returns how
 * many stay pending. Only the oldest unreported entries move the tail.
 * Entries are in the order their start events were recorded, each start
 * before its own completion: once an entry's start is pending on a stream,
 * every later entry's events on that stream are too (stream order), and
 * are not queried: a pass costs a query or two per stream, not one per
 * collective in flight (20,000 held behind a busy stream: 20,000 queries
 * every pass before). Streams past BLOCKED are queried entry by entry. */
static unsigned poll_queue(struct rt_dq *q)
{
	uint64_t head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE), t = q->tail;
	struct rt_dq_chunk *c = q->rc;
	unsigned i = q->ri, left = 0, nb = 0;
	const void *blocked[BLOCKED];
	bool front = true;

	for (; t < head; t++, i++) {
		if (i == RT_DQ_CHUNK) { /* entry t is published: the next chunk is linked */
			struct rt_dq_chunk *n = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE);

			if (front) {
				give_back(q, c);
				q->rc = n;
				q->ri = 0;
			}
			c = n;
			i = 0;
		}
		struct rt_dq_entry *e = &c->e[i];
		int at = e->seen == 2 ? DONE : behind(blocked, nb, e->stream) ? AT_START : visit(e);

		if (at != DONE) {
			if (at == AT_START && nb < BLOCKED && !behind(blocked, nb, e->stream))
				blocked[nb++] = e->stream;
			front = false;
			left++;
			continue;
		}
		e->seen = 2;
		if (front) {
			q->tail = t + 1;
			q->ri = i + 1;
		}
	}
	return left;
}

static unsigned poll_all(void)
{
	unsigned left = 0;

	for (struct rt_dq *q = __atomic_load_n(&queues, __ATOMIC_ACQUIRE); q; q = q->next_q)
		if (q->tail != __atomic_load_n(&q->head, __ATOMIC_ACQUIRE))
			left += poll_queue(q);
	return left;
}

/* Sleep for ts, or until the drain wakes us (wake set). */
static void poller_nap(const struct timespec *ts)
{
	syscall(SYS_futex, &wake, FUTEX_WAIT_PRIVATE, 0, ts, NULL, 0);
}

static void *poller(void *arg)
{
	const struct timespec nap = { 0, POLL_NS }, idle = { 0, IDLE_NS };
	unsigned quiet = 0; /* passes with nothing pending */

	(void)arg;
	/* our queries never invalidate a program's capture (global mode) */
	relaxed_begin();
	__atomic_store_n(&poller_up, 1, __ATOMIC_SEQ_CST);
	while (!rt_tr_stopped() && !rt_tr_off) {
		__atomic_store_n(&in_pass, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&poller_pid, __ATOMIC_SEQ_CST) != rt_tr_pid)
			break; /* the drain took over, or a fork's child */
		quiet = poll_all() ? 0 : quiet + 1;
		__atomic_store_n(&in_pass, 0, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&passes, 1, __ATOMIC_SEQ_CST);
		poller_nap(quiet < 2000 ? &nap : &idle); /* 0.5 ms until 1 s quiet */
	}
	__atomic_store_n(&poller_up, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&in_pass, 0, __ATOMIC_SEQ_CST);
	return NULL;
}

/* The poller's last pass, asked at exit: one that began after now (the
 * exiting thread makes no CUDA call of its own). True once done; false
 * when the poller wrote nothing for 100 ms (or 30 s went by): a pass that
 * reports every collective of a long queue completed since its last look
 * (65,536 released at once before the exit) takes longer than 100 ms, and
 * is waited for while it makes progress. */
static bool poller_last_pass(void)
{
	struct timespec nap = { 0, 100000 };
	unsigned target;
	uint64_t seen = 0;

	if (!__atomic_load_n(&poller_up, __ATOMIC_SEQ_CST) ||
	    __atomic_load_n(&poller_pid, __ATOMIC_SEQ_CST) != rt_tr_pid)
		return false;
	target = __atomic_load_n(&passes, __ATOMIC_SEQ_CST) + 2; /* the running one began before */
	__atomic_store_n(&wake, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	for (int n = 0, still = 0; n < 300000 && still < 1000 &&
				   __atomic_load_n(&poller_up, __ATOMIC_SEQ_CST); n++) {
		uint64_t now = __atomic_load_n(&reported, __ATOMIC_RELAXED);

		if (__atomic_load_n(&passes, __ATOMIC_SEQ_CST) >= target)
			return true;
		still = now == seen ? still + 1 : 0;
		seen = now;
		nanosleep(&nap, NULL);
	}
	return false;
}

/* At exit: one last pass for what completed since the poller's last look
 * (nothing is waited for: a collective still running stays incomplete),
 * made by the poller itself, then the poller leaves (poller_pid). Without
 * a poller (a fork's child, tracing stopped) the exiting thread makes it,
 * in relaxed capture mode and only with no error of the program's pending;
 * a pass of the poller's still running ends first (one consumer at a time;
 * 100 ms at most, else no last pass). */
void rt_tr_devev_drain(void)
{
	bool done = rt_dq_cu.query && poller_last_pass();

	if (rt_dq_cu.query && __atomic_exchange_n(&poller_pid, 0, __ATOMIC_SEQ_CST) == rt_tr_pid) {
		struct timespec nap = { 0, 100000 };
		int n = 0;

		while (__atomic_load_n(&in_pass, __ATOMIC_SEQ_CST) && n++ < 1000)
			nanosleep(&nap, NULL);
		if (!done && !__atomic_load_n(&in_pass, __ATOMIC_SEQ_CST) &&
		    rt_dq_cu.peek() == cudaSuccess) {
			int mode = relaxed_begin();

			poll_all();
			relaxed_end(mode);
			rt_dq_cu.get(); /* only ours: success before */
		}
	}
}
