/* SPDX-License-Identifier: MIT */
/* prep.c - the helper thread that makes each stream's next file ahead, so
 * that a traced thread never waits for file extension or page population.
 *
 * One helper per traced process, started with its first stream (again in a
 * fork child, at the child's first event) and gone when tracing stops or the
 * process ends. It blocks every signal, so none of the program's lands on
 * it. It sleeps on a futex. A traced thread asks for its next chunk at its
 * current chunk's first packet switch (rt_tr_prep_ask: one atomic and one
 * FUTEX_WAKE, never a wait) and takes it at the chunk's end
 * (rt_tr_prep_take: atomics only when it is ready). When the helper is behind
 * or absent (RANKTRACE_HELPER=0, thread creation refused) the traced thread
 * makes the chunk itself, as the slow path always did. The helper also
 * unmaps the files traced threads are done with.
 *
 * The helper works in a descriptor table of its own (unshare(CLONE_FILES),
 * the copy of the program's emptied at once): what it opens takes no number
 * from the program, and nothing the program closes or dup2s reaches it
 * (base/own.c). Where that cannot be done it runs in the shared table, lifting
 * its descriptors to the top of the range as the traced threads do.
 *
 * The registry of streams (and the process set-up in writer.c) is guarded by
 * rt_tr_lock, never held across a system call that may wait on the disk. */
#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h"

pthread_mutex_t rt_tr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rt_tr_wstream *registry;
static pid_t helper_pid;  /* process whose helper runs, 0: none */
static uint32_t work;     /* futex word: bumped when there is work */
static uint32_t started;  /* futex word: 1 once the helper runs its own code */
static int helper_private; /* the helper works in a descriptor table of its own */

static void futex_wake(void *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void futex_wait(void *word, uint32_t seen, const struct timespec *ts)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, ts, NULL, 0);
}

static bool helper_running(void)
{
	return __atomic_load_n(&helper_pid, __ATOMIC_ACQUIRE) == rt_tr_pid;
}

void rt_tr_prep_register(struct rt_tr_wstream *s)
{
	pthread_mutex_lock(&rt_tr_lock);
	s->reg_next = registry;
	registry = s;
	pthread_mutex_unlock(&rt_tr_lock);
}

/* Take s out of the registry. False: the helper is making a file for it
 * and will release s itself when done. */
bool rt_tr_prep_unregister(struct rt_tr_wstream *s)
{
	bool now = true;

	pthread_mutex_lock(&rt_tr_lock);
	for (struct rt_tr_wstream **p = &registry; *p; p = &(*p)->reg_next)
		if (*p == s) {
			*p = s->reg_next;
			break;
		}
	if (__atomic_load_n(&s->next_state, __ATOMIC_ACQUIRE) == RT_TR_NEXT_BUSY) {
		s->orphan = true;
		now = false;
	}
	pthread_mutex_unlock(&rt_tr_lock);
	return now;
}

void rt_tr_prep_ask(struct rt_tr_wstream *s)
{
	int idle = RT_TR_NEXT_IDLE;

	if (!helper_running() ||
	    !__atomic_compare_exchange_n(&s->next_state, &idle, RT_TR_NEXT_ASKED, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	__atomic_add_fetch(&work, 1, __ATOMIC_RELEASE);
	futex_wake(&work);
}

/* The next chunk of s, from the helper or made here: 0 or -errno. When
 * the program's descriptor table is full (EMFILE here), the helper, whose
 * own table has room, is asked and waited for (1 s at most). When the
 * tracer's budget of descriptors in that table is in use (threads starting
 * together), a slot is waited for: woken as one frees, 6000 tries of 10 ms
 * at most (its holders are making files, a millisecond each when the
 * machine is not overloaded). s is registered. */
int rt_tr_prep_take(struct rt_tr_wstream *s, struct rt_tr_chunk *ch)
{
	const struct timespec slice = { 0, 10 * 1000 * 1000 };
	bool asked = false;
	int waited = 0, slot_waits = 0;

	for (;;) {
		int st = __atomic_load_n(&s->next_state, __ATOMIC_ACQUIRE), err;

		if (asked && st == RT_TR_NEXT_ASKED && waited++ < 100 && helper_running()) {
			futex_wait(&s->next_state, RT_TR_NEXT_ASKED, &slice);
			continue;
		}
		switch (st) {
		case RT_TR_NEXT_READY:
		case RT_TR_NEXT_FAILED:
			*ch = s->next;
			err = st == RT_TR_NEXT_READY ? 0 : s->next_err;
			__atomic_store_n(&s->next_state, RT_TR_NEXT_IDLE, __ATOMIC_RELEASE);
			return err;
		case RT_TR_NEXT_BUSY: /* the helper is on it: no faster to do it twice */
			futex_wait(&s->next_state, RT_TR_NEXT_BUSY, NULL);
			continue;
		default:
			if (!__atomic_compare_exchange_n(&s->next_state, &st, RT_TR_NEXT_BUSY, false,
							 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
				continue;
			err = rt_tr_chunk_make(s, ch);
			__atomic_store_n(&s->next_state, RT_TR_NEXT_IDLE, __ATOMIC_RELEASE);
			if (err == -EMFILE && !asked && helper_running() &&
			    __atomic_load_n(&helper_private, __ATOMIC_ACQUIRE)) {
				asked = true;
				rt_tr_prep_ask(s);
				continue;
			}
			if (err == -RT_TR_E_FDS && slot_waits++ < 6000) {
				rt_tr_fd_slot_wait(10);
				continue;
			}
			return err;
		}
	}
}

/* A chunk s is done with (no record in flight in it any more). */
void rt_tr_prep_retire(struct rt_tr_wstream *s, struct rt_tr_chunk *ch)
{
	if (helper_running() && !__atomic_load_n(&s->retired_full, __ATOMIC_ACQUIRE)) {
		s->retired = *ch;
		__atomic_store_n(&s->retired_full, 1, __ATOMIC_RELEASE);
	} else {
		rt_tr_chunk_drop(s, ch, false);
	}
}

#define BATCH 16

/* One round: retired chunks collected, one asked-for chunk made. True when
 * there was anything to do. */
static bool serve(void)
{
	struct rt_tr_chunk done[BATCH];
	struct rt_tr_wstream *asked = NULL;
	struct rt_tr_chunk ch;
	int ndone = 0, err;

	pthread_mutex_lock(&rt_tr_lock);
	for (struct rt_tr_wstream *s = registry; s; s = s->reg_next) {
		int st = RT_TR_NEXT_ASKED;

		if (ndone < BATCH && __atomic_load_n(&s->retired_full, __ATOMIC_ACQUIRE)) {
			done[ndone++] = s->retired;
			__atomic_store_n(&s->retired_full, 0, __ATOMIC_RELEASE);
		}
		if (!asked && __atomic_compare_exchange_n(&s->next_state, &st, RT_TR_NEXT_BUSY, false,
							  __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			asked = s;
	}
	pthread_mutex_unlock(&rt_tr_lock);
	for (int i = 0; i < ndone; i++)
		rt_tr_chunk_drop(NULL, &done[i], false);
	if (!asked)
		return ndone > 0;
	err = rt_tr_chunk_make(asked, &ch);
	pthread_mutex_lock(&rt_tr_lock);
	if (asked->orphan) { /* its thread ended meanwhile */
		pthread_mutex_unlock(&rt_tr_lock);
		rt_tr_chunk_drop(asked, &ch, true);
		asked->next_state = RT_TR_NEXT_IDLE;
		rt_tr_stream_release(asked);
		return true;
	}
	asked->next = ch;
	asked->next_err = err;
	__atomic_store_n(&asked->next_state, err ? RT_TR_NEXT_FAILED : RT_TR_NEXT_READY,
			 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&rt_tr_lock);
	futex_wake(&asked->next_state);
	return true;
}

/* Close every descriptor of this thread's (private) table: with
 * close_range, else by listing /proc/thread-self/fd. True when done. */
static bool close_all_here(void)
{
	struct dirent *e;
	DIR *d;

	if (syscall(SYS_close_range, 0u, ~0u, 0u) == 0)
		return true;
	d = opendir("/proc/thread-self/fd");
	if (!d)
		return false;
	while ((e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && fd != dirfd(d))
			close(fd);
	}
	closedir(d);
	return true;
}

/* The helper's own descriptor table: a copy of the program's, emptied (its
 * copies would keep the program's pipes and sockets open). 0: private;
 * 1: unshare refused, the table is the program's; -1: a private copy that
 * could not be emptied. */
static int own_table(void)
{
	if (unshare(CLONE_FILES) != 0)
		return 1;
	if (!close_all_here())
		return -1;
	rt_tr_fds_private = true;
	__atomic_store_n(&helper_private, 1, __ATOMIC_RELEASE);
	return 0;
}

static void *helper_main(void *arg)
{
	const struct timespec nap = { 0, 200 * 1000 * 1000 };

	(void)arg;
	if (own_table() < 0) {
		/* its copies of the program's files would outlive the program's
		 * close: no helper rather than that (threads make their chunks) */
		__atomic_store_n(&helper_pid, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
		futex_wake(&started);
		return NULL;
	}
	__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
	futex_wake(&started);
	while (!rt_tr_stopped() && !rt_tr_off) {
		uint32_t seen = __atomic_load_n(&work, __ATOMIC_ACQUIRE);

		if (!serve())
			futex_wait(&work, seen, &nap);
	}
	__atomic_store_n(&helper_pid, 0, __ATOMIC_RELEASE);
	while (serve()) /* hand back what was asked before we knew */
		;
	return NULL;
}

/* Start this process's helper (called under rt_tr_lock, once set up). */
void rt_tr_prep_start(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;

	if (rt_tr_config.no_helper || helper_pid == rt_tr_pid || pthread_attr_init(&attr) != 0)
		return;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	__atomic_store_n(&started, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&helper_pid, rt_tr_pid, __ATOMIC_RELEASE);
	if (pthread_create(&t, &attr, helper_main, NULL) != 0) {
		__atomic_store_n(&helper_pid, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
	} else {
		pthread_setname_np(t, "ranktrace");
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

/* The process ends: files made ahead and not taken yet hold no event:
 * remove them. A thread that still needs one after this (atexit handlers
 * may still trace, and exit() from a signal handler stops no other thread)
 * makes it itself, under the removed file's number: a later number would
 * leave a hole, a missing file before the stream's last. The stream is
 * ours while its state is BUSY (nobody else makes its files then). */
void rt_tr_prep_at_exit(void)
{
	if (pthread_mutex_trylock(&rt_tr_lock) != 0)
		return; /* exit() from a handler that interrupted the lock's holder */
	for (struct rt_tr_wstream *s = registry; s; s = s->reg_next) {
		int ready = RT_TR_NEXT_READY;

		if (!__atomic_compare_exchange_n(&s->next_state, &ready, RT_TR_NEXT_BUSY, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		rt_tr_chunk_drop(s, &s->next, true);
		s->seq_next = s->next.seq; /* (still there if not removed: made under the next) */
		s->nchunks--;
		__atomic_store_n(&s->next_state, RT_TR_NEXT_IDLE, __ATOMIC_RELEASE);
		futex_wake(&s->next_state);
	}
	pthread_mutex_unlock(&rt_tr_lock);
}

/* Before fork(): the registry is held still, and a helper still starting is
 * waited for (1 s at most). Its start runs the C library's and a sanitizer
 * runtime's own code (thread set-up, stack bounds: malloc and free); a fork
 * in the middle of it leaves the child with their locks held, and an
 * allocator that does not prepare for fork (GCC 12's AddressSanitizer) then
 * hangs the child at its first allocation. */
void rt_tr_prep_fork_prepare(void)
{
	const struct timespec slice = { 0, 10 * 1000 * 1000 };

	pthread_mutex_lock(&rt_tr_lock);
	for (int i = 0; i < 100 && helper_running() && !__atomic_load_n(&started, __ATOMIC_ACQUIRE);
	     i++)
		futex_wait(&started, 0, &slice);
}

void rt_tr_prep_fork_parent(void)
{
	pthread_mutex_unlock(&rt_tr_lock);
}

/* Fork child: the registry holds the parent's streams (its threads are not
 * here): unmap and close them, never touching their files; no helper. */
void rt_tr_prep_after_fork(void)
{
	struct rt_tr_wstream *s = registry, *next;

	pthread_mutex_init(&rt_tr_lock, NULL);
	registry = NULL;
	helper_pid = helper_private = 0;
	for (; s; s = next) {
		next = s->reg_next;
		if (!rt_tr_config.ring_bytes) { /* else cur and prev are views of ring slots */
			rt_tr_chunk_drop(s, &s->cur, false);
			rt_tr_chunk_drop(s, &s->prev, false);
		}
		if (s->next_state == RT_TR_NEXT_READY)
			rt_tr_chunk_drop(s, &s->next, false);
		if (s->retired_full)
			rt_tr_chunk_drop(s, &s->retired, false);
		for (uint32_t i = 0; i < s->ring_used; i++)
			rt_tr_chunk_drop(s, &s->ring[i], false);
		if (&s->h == rt_tr_stream_tls)
			rt_tr_stream_tls = NULL;
		free(s);
	}
	rt_tr_chunk_forget_process();
}
