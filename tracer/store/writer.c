/* SPDX-License-Identifier: MIT */
/* writer.c - the slow paths of trace writing: a thread's stream, packet and
 * file switches, the end of tracing (rt_trace_stop), thread end, the rank
 * directory and its metadata.
 *
 * Called from the inline hot path (core/core.h) only when a thread has no
 * stream yet or its packet is full. In steady state a packet switch is a few
 * stores into a packet prepared ahead, and a file switch takes a file the
 * helper thread (prep.c) made ahead: no system call, no wait. Only the
 * first event of a thread, and a file switch the helper is late for, make
 * a file here (chunk.c). May allocate (stream open) and take rt_tr_lock
 * (set-up, registry). Never fails outward: when tracing has to stop (size
 * cap, free-space reserve, disk full, I/O error) the stream records why
 * (rt_trace_stop, in room every packet keeps for it), warns once, and goes
 * on in scratch mode counting discarded events; the program is untouched.
 *
 * Crash safety: packets are MAP_SHARED mappings of files that were complete
 * before they became visible (chunk.c), and the packet context's
 * content_size is updated after every event, so whatever a killed process
 * completed is in the page cache, readable by view and babeltrace2. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h"

/* room every packet keeps for the event that says why tracing stopped */
#define STOP_ROOM (RT_HEADER_EXTENDED_BYTES + RT_COMMON_BYTES + RT_SIZE_rt_trace_stop)

static pid_t ready_pid;          /* process whose rank directory is set up */
static pthread_key_t stream_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int warned_io, warned_stop;
/* One stream allocated ahead, for a thread that first needs one inside a
 * fatal-signal handler (where malloc is not allowed). */
static struct rt_tr_wstream *spare;

bool rt_tr_process_traced(void)
{
	return __atomic_load_n(&ready_pid, __ATOMIC_ACQUIRE) == rt_tr_pid;
}

void rt_tr_store_ready(void)
{
	__atomic_store_n(&ready_pid, rt_tr_pid, __ATOMIC_RELEASE);
}

/* The end of a stream whose thread is gone (or a helper done with it):
 * unused packets and files removed, mappings and files closed. */
void rt_tr_stream_release(struct rt_tr_wstream *s)
{
	struct rt_tr_chunk *cur = rt_tr_config.ring_bytes ? &s->ring[s->ring_cur] : &s->cur;

	if (__atomic_load_n(&s->next_state, __ATOMIC_ACQUIRE) == RT_TR_NEXT_READY)
		rt_tr_chunk_drop(s, &s->next, true);
	if (s->last_real_pkt && cur->base && s->last_real_pkt >= cur->base &&
	    s->last_real_pkt < cur->base + cur->size)
		rt_tr_chunk_trim(s, cur, (uint64_t)(s->last_real_pkt - cur->base) + cur->pkt_bytes);
	if (rt_tr_config.ring_bytes) {
		for (uint32_t i = 0; i < s->ring_used; i++)
			rt_tr_chunk_drop(s, &s->ring[i], false);
	} else {
		rt_tr_chunk_drop(s, &s->cur, false);
		rt_tr_chunk_drop(s, &s->prev, false);
	}
	if (__atomic_load_n(&s->retired_full, __ATOMIC_ACQUIRE))
		rt_tr_chunk_drop(s, &s->retired, false);
	free(s);
}

/* pthread key destructor: the thread ends. */
static void stream_gone(void *p)
{
	struct rt_tr_wstream *s = p;

	if (!s)
		return;
	if (s->h.pid == rt_tr_pid)
		rt_tr_stream_note_stop(&s->h);
	if (rt_tr_stream_tls == &s->h)
		rt_tr_stream_tls = NULL;
	if (s->h.pid == rt_tr_pid && rt_tr_prep_unregister(s))
		rt_tr_stream_release(s);
}

static void make_key(void)
{
	pthread_key_create(&stream_key, stream_gone);
}

bool rt_tr_fork_child;

/* Forget (in a forked child) the streams inherited from the parent. */
void rt_tr_stream_forget_inherited(void)
{
	/* a child of a traced process is not that rank: its files apart (a
	 * child of an untraced one becomes whatever rank it finds it is) */
	rt_tr_fork_child = rt_tr_fork_child || __atomic_load_n(&ready_pid, __ATOMIC_ACQUIRE) != 0;
	if (rt_tr_stream_tls)
		pthread_setspecific(stream_key, NULL);
	rt_tr_stream_tls = NULL;
	rt_tr_prep_after_fork();
	if (spare)
		memset(spare, 0, sizeof(*spare));
}

static void enter_scratch(struct rt_tr_wstream *s)
{
	s->scratch = true;
	s->h.pkt = s->buf;
	s->h.pos = s->buf + RT_PACKET_HEADER_BYTES;
	s->h.end = s->buf + sizeof(s->buf);
}

static void count_discarded(struct rt_tr_wstream *s)
{
	s->discarded++;
	if (s->last_real_pkt)
		rt_fmt_packet_set_discarded(s->last_real_pkt, s->discarded);
}

/* Turn the prepared, unused packet p of the current chunk into the one
 * being written: stores only, each leaving a valid file. */
static void packet_open(struct rt_tr_wstream *s, uint8_t *p, uint64_t now)
{
	if (now < s->h.last_ts)
		now = s->h.last_ts;
	rt_fmt_packet_set_discarded(p, s->discarded);
	rt_tr_put_ts_pair(p, now, now);
	s->h.pkt = s->last_real_pkt = p;
	s->h.pos = p + RT_PACKET_HEADER_BYTES;
	s->h.end = p + s->cur.pkt_bytes - STOP_ROOM;
	s->h.last_ts = now;
}

/* The store's own records (rt_trace_stop, rt_stream_file), written here by
 * hand: we are inside rt_tr_begin's switch, below the generated
 * rt_tr_ev_ functions. record_begin: the header at the stream's position,
 * time now (never before the newest), fields zeroed; record_put: one field
 * by name; record_end: counted, committed. */
static uint8_t *record_begin(struct rt_tr_wstream *s, unsigned id, uint64_t *now)
{
	uint8_t *p;

	if (*now < s->h.last_ts)
		*now = s->h.last_ts;
	p = rt_fmt_event_common(rt_fmt_event_header_ext(s->h.pos, id, *now), 0, 0, -1);
	memset(p, 0, rt_events[id].size);
	return p;
}

static void record_put(uint8_t *fields, unsigned id, enum rt_fname name, int64_t v)
{
	int i = rt_field_at[id][name];
	const struct rt_field *f;

	if (i < 0)
		return;
	f = &rt_events[id].fields[i];
	memcpy(fields + f->offset, &v, rt_kind_size(f->kind)); /* little-endian */
}

static void record_end(struct rt_tr_wstream *s, unsigned id, uint8_t *fields, uint64_t now)
{
	s->h.pos = fields + rt_events[id].size;
	s->h.last_ts = now;
	if (id != RT_ID_rt_stream_file) /* the store's bookkeeping: no event */
		s->h.events++;
	rt_tr_commit(s->h.pkt, s->h.pos, now);
}

/* rt_trace_stop into the room the packet kept for it. */
static void write_stop(struct rt_tr_wstream *s, uint64_t now, int err)
{
	unsigned id = RT_ID_rt_trace_stop;
	int reason = rt_tr_stop_reason_of(err);
	uint8_t *p;

	if (!s->last_real_pkt || s->h.pos + STOP_ROOM > s->h.pkt + s->cur.pkt_bytes)
		return;
	p = record_begin(s, id, &now);
	record_put(p, id, RT_FN_reason, reason);
	record_put(p, id, RT_FN_error,
		   reason == RT_STOP_CAP || reason == RT_STOP_RESERVE ? 0 : rt_tr_stop_errno(err));
	record_put(p, id, RT_FN_events, (int64_t)s->h.events);
	record_put(p, id, RT_FN_bytes, (int64_t)rt_tr_bytes_used());
	record_end(s, id, p, now);
}

/* The first packet of the current file is open: its first record says
 * which file this is and how many records the stream wrote before it, so a
 * reader can tell records lost (a zero-filled stretch, a missing file) from
 * records never written (format/events.def: rt_stream_file). */
static void write_file_record(struct rt_tr_wstream *s, uint64_t now)
{
	unsigned id = RT_ID_rt_stream_file;
	uint8_t *p = record_begin(s, id, &now);

	record_put(p, id, RT_FN_file, s->cur.seq);
	record_put(p, id, RT_FN_events, (int64_t)s->h.events);
	record_end(s, id, p, now);
}

/* Flight recorder: the file after slot k's in ring order becomes current. */
static void ring_enter(struct rt_tr_wstream *s, uint32_t k)
{
	s->prev = s->cur;
	s->cur = s->ring[k];
	s->ring_cur = k;
}

/* The current file is full: the next one (prepared ahead, or the oldest of
 * a flight recorder's, reset) becomes current. 0 or -errno. */
static int chunk_switch(struct rt_tr_wstream *s, uint64_t now)
{
	struct rt_tr_chunk ch;
	bool ring = rt_tr_config.ring_bytes != 0;
	int err;

	if (ring && s->ring_used == RT_TR_RING_CHUNKS) {
		uint32_t k = (s->ring_cur + 1) % RT_TR_RING_CHUNKS;

		rt_tr_chunk_recycle(&s->ring[k], s->discarded);
		ring_enter(s, k);
	} else {
		err = rt_tr_prep_take(s, &ch);
		if (err)
			return err;
		if (ring) {
			s->ring[s->ring_used] = ch;
			ring_enter(s, s->ring_used++);
		} else {
			/* the previous file may still hold a record in flight
			 * (a tracer event emitted during a call): one switch late */
			if (s->prev.base)
				rt_tr_prep_retire(s, &s->prev);
			s->prev = s->cur;
			s->cur = ch;
		}
	}
	packet_open(s, s->cur.base, now);
	write_file_record(s, now);
	return 0;
}

/* Once per process: why tracing stopped (the I/O error's own words). */
static void warn_stop(int err)
{
	int reason = rt_tr_stop_reason_of(err);

	rt_tr_warn_once(&warned_stop, "tracing stops (%s%s%s) after %llu bytes of trace: the "
			"program continues untouched, further events are only counted",
			rt_stop_prose((unsigned)reason), reason == RT_STOP_IO_ERROR ? ": " : "",
			reason == RT_STOP_IO_ERROR ? strerror(rt_tr_stop_errno(err)) : "",
			(unsigned long long)rt_tr_bytes_used());
}

/* A file switch is one step for this thread's signal handlers: a handler
 * that records (exit() from a handler) would find the stream half-switched,
 * its next file held by this very thread, and wait on itself for ever (the
 * exit-in-handler case hung ~7 % of runs). The asynchronous signals wait
 * for the switch's end (a file made: microseconds to milliseconds); the
 * ones the kernel raises for a fault stay open. */
static int switch_files(struct rt_tr_wstream *s, uint64_t now)
{
	static const int faults[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS };
	sigset_t async, old;
	bool blocked;
	int err;

	sigfillset(&async);
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(&async, faults[i]);
	blocked = pthread_sigmask(SIG_BLOCK, &async, &old) == 0;
	s->switching = true;
	err = chunk_switch(s, now);
	s->switching = false;
	if (blocked)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

static void stream_next(struct rt_tr_wstream *s, uint64_t now, unsigned need)
{
	int err;

	if (s->scratch) {
		/* room for exactly this event, so the next one comes here too */
		if (s->last_real_pkt)
			count_discarded(s);
		s->h.pos = s->buf + RT_PACKET_HEADER_BYTES;
		s->h.end = s->h.pos + need;
		return;
	}
	if (s->h.pkt + s->cur.pkt_bytes < s->cur.base + s->cur.size) {
		/* leaving the first packet of a file: time to ask for the next */
		if (s->h.pkt == s->cur.base &&
		    (!rt_tr_config.ring_bytes || s->ring_used < RT_TR_RING_CHUNKS))
			rt_tr_prep_ask(s);
		packet_open(s, s->h.pkt + s->cur.pkt_bytes, now);
		return;
	}
	err = switch_files(s, now);
	if (!err) {
		/* a thread that filled a file fills the next: ask for the one
		 * after it now, not a packet later (the first file's is asked
		 * for once a thread leaves its first packet: most short-lived
		 * threads never do) */
		if (!rt_tr_config.ring_bytes || s->ring_used < RT_TR_RING_CHUNKS)
			rt_tr_prep_ask(s);
		return;
	}
	write_stop(s, now, err);
	warn_stop(err);
	enter_scratch(s);
	s->h.end = s->h.pos + need;
	count_discarded(s);
}

/* The packet is full: the next one (the hot path's slow path). */
void rt_tr_stream_next(struct rt_tr_stream *s, uint64_t now, unsigned need)
{
	int saved = errno;

	stream_next(rt_tr_ws(s), now, need);
	errno = saved;
}

bool rt_tr_stream_switching(const struct rt_tr_stream *s)
{
	return s && rt_tr_ws((struct rt_tr_stream *)s)->switching;
}

/* At exit or thread end: tracing stopped (maybe for a thread that never had
 * a file to say so in) and this thread's stream s has not said it yet: it
 * says it now, in the room every packet keeps for it. */
void rt_tr_stream_note_stop(struct rt_tr_stream *hs)
{
	struct rt_tr_wstream *s = hs ? rt_tr_ws(hs) : NULL;
	int err = rt_tr_stop_error();

	if (!err || !s || s->h.pid != rt_tr_pid || s->scratch || !s->last_real_pkt || rt_tr_depth)
		return;
	rt_tr_depth = 1;
	write_stop(s, rt_tr_now(), err);
	enter_scratch(s);
	rt_tr_depth = 0;
}

/* ch, made for s, becomes its first file, its first packet open. */
static void adopt_first(struct rt_tr_wstream *s, const struct rt_tr_chunk *ch)
{
	if (rt_tr_config.ring_bytes) {
		s->ring[0] = *ch;
		s->ring_used = 1;
	}
	s->cur = *ch;
	packet_open(s, ch->base, rt_tr_now());
	write_file_record(s, rt_tr_now());
}

/* First file and packet for s (process already set up). registered: s is
 * in the helper's registry (the helper may make its file when this
 * thread cannot), else a signal handler's spare stream. */
static int stream_start(struct rt_tr_wstream *s, bool registered)
{
	struct rt_tr_chunk ch;
	int err;

	s->h.pid = rt_tr_pid;
	s->tid = (pid_t)syscall(SYS_gettid);
	if (rt_tr_lttng_wanted) {
		rt_tr_lttng_stream_init(s);
		return 0;
	}
	err = registered ? rt_tr_prep_take(s, &ch) : rt_tr_chunk_make(s, &ch);
	if (err)
		return err;
	adopt_first(s, &ch);
	return 0;
}

/* For the signal handler: the spare stream, opened with system calls only;
 * NULL when there is none (already used, or the process never traced). */
struct rt_tr_stream *rt_tr_stream_for_signal(void)
{
	struct rt_tr_wstream *s = __atomic_exchange_n(&spare, NULL, __ATOMIC_ACQ_REL);

	if (!s || !rt_tr_process_traced())
		return NULL;
	if (stream_start(s, false) != 0)
		return NULL;
	rt_tr_errno_p = &errno;
	rt_tr_stream_tls = &s->h;
	return &s->h;
}

static struct rt_tr_wstream *stream_open(int err)
{
	static struct rt_tr_wstream dead; /* when even malloc fails */
	struct rt_tr_wstream *s;

	pthread_once(&key_once, make_key);
	s = calloc(1, sizeof(*s));
	if (!s) {
		rt_tr_off = 1;
		enter_scratch(&dead);
		return &dead;
	}
	if (!err && !__atomic_load_n(&spare, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&rt_tr_lock);
		if (!__atomic_load_n(&spare, __ATOMIC_ACQUIRE))
			__atomic_store_n(&spare, calloc(1, sizeof(*spare)), __ATOMIC_RELEASE);
		pthread_mutex_unlock(&rt_tr_lock);
	}
	if (!err) {
		rt_tr_prep_register(s); /* before its first file: the helper may make it */
		err = stream_start(s, true);
		if (err)
			rt_tr_prep_unregister(s); /* nothing is asked of the helper any more */
	}
	if (err) {
		if (!rt_tr_process_traced()) {
			rt_tr_warn_once(&warned_io, "cannot write the trace in %s (%s): the program "
					"continues untraced", rt_tr_config.dir, strerror(-err));
			rt_tr_off = 1;
		} else {
			/* this thread's events have no file to be counted in: the
			 * trace must not look whole (rt_tr_stream_note_stop) */
			rt_tr_stop_process(err);
			warn_stop(err);
		}
		enter_scratch(s);
	}
	rt_tr_stream_tls = &s->h;
	pthread_setspecific(stream_key, s);
	return s;
}

struct rt_tr_stream *rt_tr_stream_open(int setup_err)
{
	int saved = errno;
	struct rt_tr_wstream *s;

	rt_tr_errno_p = &errno;
	s = stream_open(setup_err);
	errno = saved;
	return &s->h;
}
