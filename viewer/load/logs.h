/* SPDX-License-Identifier: MIT */
/* logs.h - the parallel pass's per-rank logs (logs.c): what a rank job
 * hands across ranks (communicator sizes learned, joins, collectives to
 * match), each record under the rank's clock, and their replay into the
 * matcher in (clock, rank, order logged). parallel.c writes one log per rank
 * from its rank jobs and replays the finished rounds'. */
#ifndef RT_VW_LOGS_H
#define RT_VW_LOGS_H

#include <stdbool.h>
#include <stdint.h>

#include "model_int.h"
#include "rt_sort.h"

struct chunk;

/* A rank's log: the writer's half (its rank job) and the reader's half (the
 * replay) on cache lines of their own. */
struct rt_vw_log {
	_Alignas(64) struct chunk *tail;
	uint32_t tail_n;     /* records in tail */
	uint32_t round_n;    /* records logged in this round's job so far */
	uint32_t last_n;     /* ... and in its last round's */
	int ri;              /* its rank index */
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
/* The records of every log i up to lim[i] into the matcher m, merged in
 * (clock, rank, order logged); their chunks freed. e, tmp: room for as
 * many entries as records. */
void rt_vw_logs_replay(struct rt_vw_log *logs, int nranks, const uint64_t *lim, struct rt_vw_matcher *m,
		       struct rt_sort_entry *e, struct rt_sort_entry *tmp);
/* Every chunk l holds freed. */
void rt_vw_log_free(struct rt_vw_log *l);

#endif
