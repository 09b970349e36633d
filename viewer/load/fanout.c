/* SPDX-License-Identifier: MIT */
/* fanout.c - the load's per-rank work spread over the pass's threads.
 *
 * rt_vw_fanout runs fn on contiguous chunks of ranks [0, n)
 * (RT_VW_FANOUT_CHUNK each), the chunks taken in order by rt_vw_jobs
 * threads (0: one per core, as the pass; --jobs, RANKTRACE_JOBS), a
 * thread per chunk at most; each thread is a slot whose state fn may keep
 * (a metadata cache). What fn writes it places by rank or by chunk index,
 * never in the order the threads finish, so the result is the same for
 * every thread count. Used by load.c (metadata, the live state) and
 * merge.c (the streams' cursors). Allocates nothing; thread-safe when fn
 * is for disjoint ranks. */
#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include "model.h"
#include "model_int.h"

struct fanout {
	void (*fn)(void *arg, int slot, int lo, int hi);
	void *arg;
	int n, chunk, next; /* next: the next chunk's first rank (atomic) */
};

struct fanout_slot {
	struct fanout *f;
	int slot;
};

static void *take_chunks(void *arg)
{
	struct fanout_slot *s = arg;
	struct fanout *f = s->f;

	for (;;) {
		int lo = __atomic_fetch_add(&f->next, f->chunk, __ATOMIC_RELAXED);

		if (lo >= f->n)
			return NULL;
		f->fn(f->arg, s->slot, lo, lo + f->chunk < f->n ? lo + f->chunk : f->n);
	}
}

int rt_vw_job_count(long units)
{
	long jobs = rt_vw_jobs > 0 ? rt_vw_jobs : sysconf(_SC_NPROCESSORS_ONLN);

	if (jobs > units)
		jobs = units;
	return jobs < 1 ? 1 : jobs > INT_MAX ? INT_MAX : (int)jobs;
}

int rt_vw_fanout_slots(int n)
{
	/* a thread per chunk at most */
	int jobs = rt_vw_job_count((n + RT_VW_FANOUT_CHUNK - 1) / RT_VW_FANOUT_CHUNK);

	return jobs > RT_VW_FANOUT_MAX ? RT_VW_FANOUT_MAX : jobs;
}

void rt_vw_fanout(int n, int slots, void (*fn)(void *arg, int slot, int lo, int hi), void *arg)
{
	struct fanout f = { .fn = fn, .arg = arg, .n = n, .chunk = RT_VW_FANOUT_CHUNK };
	struct fanout_slot s[RT_VW_FANOUT_MAX];
	pthread_t th[RT_VW_FANOUT_MAX];
	int started = 0;

	if (slots > RT_VW_FANOUT_MAX)
		slots = RT_VW_FANOUT_MAX;
	for (int j = 0; j < slots; j++)
		s[j] = (struct fanout_slot){ &f, j };
	/* a thread that fails to start: the others take its chunks */
	for (int j = 1; j < slots; j++)
		if (pthread_create(&th[started], NULL, take_chunks, &s[j]) == 0)
			started++;
	take_chunks(&s[0]);
	for (int j = 0; j < started; j++)
		pthread_join(th[j], NULL);
}
