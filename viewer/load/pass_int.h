/* SPDX-License-Identifier: MIT */
/* pass_int.h - the parallel pass's state (parallel.c: its threads and
 * jobs), shared with windows.c (how far each round reads). Nothing else
 * sees it. */
#ifndef RT_VW_PASS_INT_H
#define RT_VW_PASS_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "logs.h"
#include "model.h"
#include "model_int.h"

/* rounds the rank jobs run ahead of the replay */
enum { RT_LOOKAHEAD = 2 };
/* a round's target: RT_JOB_EVENTS events a rank, RT_ROUND_EVENTS at least
 * (parallel.c's plan) ... */
#define RT_ROUND_EVENTS 262144
#define RT_JOB_EVENTS 2048
/* ... but no more than this per round: the logs hold the records of
 * RT_LOOKAHEAD + 1 rounds (a round of every rank at once was all of 16,384
 * ranks x 2,000 events: 11 M records, 436 MB). Each round costs every rank
 * a job (its cursors faulted in and released, its model and log touched
 * cold, ~9 us at 16,384 ranks): 16,384 x 2,000 read in five rounds at 8 Mi,
 * three at 16 Mi (5-12 % faster in paired runs; 620 MiB at peak, not 490;
 * the goal: 1 GiB). */
#define RT_ROUND_MAX_EVENTS ((uint64_t)16 << 20)
/* ... and no more records logged than this: the logs hold RT_LOOKAHEAD + 1
 * rounds of them (40 bytes each; the replay sorted a round's at once, 16
 * bytes twice, before it took slices). bench's mix logs one record in
 * three events (16 Mi events: 5.6 M records); a trace of collectives only,
 * one an event: at 16,384 ranks rounds of 8 Mi records held 1.3 GiB, of 6
 * Mi 870 MiB, of 5 Mi 690 MiB. */
#define RT_ROUND_MAX_RECORDS ((uint64_t)5 << 20)
/* A round's pace of records is checked each time another part of its
 * rank jobs is done (rt_vw_pass_check_window): the window is cut short for
 * the rest where the round would log over RT_CHECK_OVER times rec_cap. */
#define RT_CHECK_PART 16
#define RT_CHECK_OVER 1.25
/* the first window when nothing says it: this over the rank count */
#define RT_FIRST_WINDOW_NS 1000000ull

/* One rank's streams and where its merge stands between rounds. Its
 * sources are a copy on cache lines of their own (src and live change with
 * every event; neighbouring ranks run on other threads). */
struct rank_job {
	int ri, n;           /* trace rank index, its streams */
	struct rt_vw_src *s; /* copies of its sources (same cursors) */
	bool *live;          /* per stream: an event is waiting */
	bool started, more;
	uint64_t next;       /* order time of its next event (more) */
	double pace;         /* its streams' first packets' bytes per ns */
};

struct pass {
	struct rt_vw_trace *t;
	struct rt_vw_matcher *m;
	struct rt_vw_src *srcs;
	struct rt_vw_log *logs;
	struct rt_vw_chunks chunks; /* the logs' */
	struct rank_job *rj;
	int nrj;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* under mu */
	int *todo, ntodo;    /* this round's rank jobs (indices into rj) */
	bool *taken;         /* per todo entry */
	int next, done;      /* taken, finished */
	int threads;         /* thread i prefers the i-th slice of todo */
	int pos[256], back;  /* where thread i's search of its slice, and the steal from the end, stand */
	int rounds_done, replayed;
	bool replaying, finished, failed;
	bool peeked;         /* the first window from the first packets: no round 0 */
	uint64_t w, width;   /* window end, its width */
	uint64_t round_lo;   /* where this round's window begins */
	uint64_t rec_cap;    /* records a round aims at (RT_ROUND_MAX_RECORDS) */
	int check_at;        /* rank jobs done at the round's next check (rt_vw_pass_check_window) */
	int cut_done;        /* ... and at its last cut, with the records then */
	uint64_t cut_records;
	uint64_t pub_bound;  /* the published records' clocks are complete below this */
	uint64_t round_events, round_target;
	uint64_t round_records; /* logged by this round's jobs */
	size_t slice;        /* records a replay sorts at once */
	size_t drop;         /* read bytes a cursor drops at once (RT_READ_BUDGET) */
	bool release;        /* a paused rank job unmaps its cursors' pages */
	struct rt_vw_dontneed drops; /* under mu: pages of paused cursors to drop, at once */
	/* under mu: the work after reading (rt_vw_after_read): once taken, chunks taken, done */
	const struct rt_vw_after_read *after;
	bool once_taken;
	int after_next, after_done, after_chunks;
};

/* windows.c, under the pass's mutex: the first window from the streams'
 * first packets, before the threads start (no round 0 when they all say);
 * the next window once a round ended, round 0 included (lo: the smallest
 * order time of the ranks' next events). */
void rt_vw_pass_peek_first_window(struct pass *p);
void rt_vw_pass_next_window(struct pass *p, uint64_t lo);
/* windows.c, under the mutex, each time another part of a round's rank
 * jobs is done: the window cut short for the jobs still to run when the
 * round, at the pace of those since the last cut, would log far more
 * records than rec_cap; the next check set. */
void rt_vw_pass_check_window(struct pass *p);

#endif
