/* SPDX-License-Identifier: MIT */
/* logs.h - the parallel pass's per-rank logs (logs.c): what a rank job
 * hands across ranks (communicator sizes learned, joins, collectives to
 * match), each record under the rank's clock, and their replay into the
 * matcher in (clock, rank, order logged). parallel.c writes one log per rank
 * from its rank jobs and replays the finished rounds'. */
#ifndef RT_VW_LOGS_H
#define RT_VW_LOGS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "model_int.h"
#include "rt_sort.h"

struct chunk;

/* Where the logs' chunks come from (logs.c): slabs, 64 KiB first, each
 * next twice the last up to 64 MiB, cut into chunks; and the chunks the
 * replay is done with, for the rank jobs to log into again, a list of
 * batches per capacity class. At 16,384 ranks a rank logs a chunk or two
 * a round, given back on another thread: from malloc they were a third of
 * the pass's page faults, the arenas trimmed and grown again. (In
 * transparent huge pages the kernel's zeroing of them was 11 % of the CPU
 * on this VM: not taken.) A batch is RT_CHUNK_BATCH chunks at most (a rank
 * job's thread takes one at once: struct rt_vw_chunk_cache). Under its own
 * lock; all freed at once (rt_vw_chunks_free). */
enum { RT_CHUNK_CLASSES = 7, RT_CHUNK_BATCH = 32 };
struct rt_vw_chunks {
	pthread_mutex_t mu;
	struct chunk *free[RT_CHUNK_CLASSES]; /* batches, linked by their first's next_batch */
	size_t next_size; /* the next slab's */
	void *slabs;      /* every slab, linked through its first word */
};

/* A rank job thread's chunks: a batch of each class taken from the pool
 * under its lock at once, and a slab of its own to cut new ones from (the
 * pool's lock once a batch or a slab, not once a chunk: at 16,384 ranks
 * the two threads' takes were most of the pass's contended locks). */
struct rt_vw_chunk_cache {
	struct chunk *free[RT_CHUNK_CLASSES];
	char *slab;       /* its slab's room left: slab[0, left) */
	char *pop;        /* the slab's pages are present up to here (logs.c: RT_POPULATE) */
	size_t left;
};

/* A rank's log: the writer's half (its rank job) and the reader's half (the
 * replay) on cache lines of their own. */
struct rt_vw_log {
	_Alignas(64) struct chunk *tail;
	uint32_t tail_n;     /* records in tail */
	uint32_t round_n;    /* records logged in this round's job so far */
	uint32_t last_n;     /* ... and in its last round's */
	int ri;              /* its rank index */
	struct rt_vw_chunks *pool; /* where its chunks go back to (and its cache's come from) */
	struct rt_vw_chunk_cache *cache; /* where they come from: set by each rank job before it logs */
	uint64_t n;          /* records logged */
	uint64_t clock;      /* the rank's clock: largest order time so far */
	bool oom;            /* a record could not be logged */
	_Alignas(64) struct chunk *head;
	uint32_t head_i;     /* next record to replay in head */
	uint64_t pub;        /* records of finished rounds (under the mutex) */
	uint64_t used;       /* records replayed */
};

/* The rank job's sink: log l (its rank the log's). */
struct rt_vw_sink rt_vw_log_sink(struct rt_vw_log *l);
/* The replay's room (logs.c): entries and the sort's scratch for a slice
 * of records, grown to the most one slice took, and a cursor per log.
 * slice: the records a slice aims at (0: all at once). */
struct rt_vw_log_cursor;
struct rec;
struct rt_vw_replay_room {
	struct rt_sort_entry *e, *tmp;
	struct rec *rec;
	size_t cap, slice;
	struct rt_vw_log_cursor *cur;
	int ncur;
};
/* The records of every log i up to lim[i] whose clock is below bound
 * (UINT64_MAX: all of them) into the matcher m, merged in (clock, rank,
 * order logged), a slice of the clocks at a time; the chunks they emptied
 * freed, the others left for a later replay. 0, or -1: no room (m has part
 * of them). */
int rt_vw_logs_replay(struct rt_vw_log *logs, int nranks, const uint64_t *lim, uint64_t bound,
		      struct rt_vw_matcher *m, struct rt_vw_replay_room *rm);
void rt_vw_replay_room_free(struct rt_vw_replay_room *rm);
/* pool made empty: 0, or -1. rt_vw_chunks_free: every chunk of it freed,
 * the logs' too. */
int rt_vw_chunks_init(struct rt_vw_chunks *pool);
void rt_vw_chunks_free(struct rt_vw_chunks *pool);

#endif
