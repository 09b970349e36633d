/* SPDX-License-Identifier: MIT */
/* windows.c - how far each round of the parallel pass reads (parallel.c):
 * its window's end, sized to about the round's target of events and
 * records from what the round before read. Windows change the pass's cost
 * and memory, never its result. */
#include "pass_int.h"
#include "reader.h"

/* round_growth; a round without events: the window x RT_GROW_EMPTY */
#define RT_GROW_FAR 16u
#define RT_GROW_FAR_MAX 64.0
#define RT_GROW_EMPTY 16u
/* bytes an event, to guess a window's events from its packets' pace (the
 * tracer's mix: 22-37) */
#define RT_PACE_BYTES 32.0

/* How much wider the next window may be than the last, whose round had
 * round_events: x4 near the target; x64 when that round was under a 16th
 * of it. Every round runs a job per rank with events left (its cursors
 * faulted in and released, its log begun): at 16,384 ranks a window
 * growing x4 from 61 ns took 7 rounds of 1 to 10 events a rank before
 * the first of 4 Mi events (15 rounds in all, now 12). */
static double round_growth(const struct pass *p)
{
	return p->round_events * RT_GROW_FAR <= p->round_target ? RT_GROW_FAR_MAX : 4;
}

/* Rank jobs between a round's checks of its records (rt_vw_pass_check_window). */
static int check_step(const struct pass *p)
{
	return p->ntodo / RT_CHECK_PART > 0 ? p->ntodo / RT_CHECK_PART : 1;
}

/* A round begins (its window set): no cut yet, its first check due. */
static void round_begins(struct pass *p, uint64_t lo)
{
	p->round_lo = lo;
	p->check_at = check_step(p);
	p->cut_done = 0;
	p->cut_records = 0;
}

/* After round 0 (or the peek): the first window from the pace of every
 * rank's first packet (RT_PACE_BYTES an event), the round's target where
 * the packets say it; else as planned (it grows x64 while rounds are
 * small). At 16,384 x 2,000 three rounds of 0 to 98 k events, each a job
 * per rank, came before the first full one. What a trace logs an event
 * is not known before it is read: rt_vw_pass_check_window cuts a first
 * round that logs too much short. (A quarter of the target, before that
 * check: 16,384 x 2,000 read in rounds of 3.5, 14.1 and 15.2 M events,
 * the last one's replay alone at the end.) */
static void first_width(struct pass *p)
{
	double pace = 0, w;

	for (int k = 0; k < p->nrj; k++)
		pace += p->rj[k].pace;
	if (pace <= 0)
		return;
	w = (double)p->round_target * RT_PACE_BYTES / pace;
	if (w > (double)p->width)
		p->width = w < 1e18 ? (uint64_t)w : (uint64_t)1e18;
}

/* Before any read, the first window as round 0 would set it, from each
 * stream's first packet as mapped (rt_vw_cursor_peek), and no round 0: a
 * job per rank for one event, each file's first pages faulted in (64 KiB
 * around) and dropped again before round 1. Only where every stream says
 * (not an LTTng trace, no damaged or unused first packet): a stream that
 * does not could begin long before the others, and round 1 would take all
 * of it up to their window. Windows do not change the result (parallel.c). */
void rt_vw_pass_peek_first_window(struct pass *p)
{
	uint64_t lo = UINT64_MAX, ts, bytes, ns;

	for (int k = 0; k < p->nrj; k++)
		for (int i = 0; i < p->rj[k].n; i++) {
			if (rt_vw_pass_no_peek || !rt_vw_cursor_peek(p->rj[k].s[i].c, &ts, &bytes, &ns)) {
				for (int j = 0; j <= k; j++)
					p->rj[j].pace = 0; /* round 0 sums it */
				return;
			}
			p->rj[k].pace += (double)bytes / (double)ns;
			lo = ts < lo ? ts : lo;
		}
	if (lo == UINT64_MAX)
		return;
	p->peeked = true; /* before the threads start: read-only in them */
	first_width(p);
	round_begins(p, lo);
	p->w = lo > UINT64_MAX - p->width ? UINT64_MAX : lo + p->width;
	p->rounds_done = p->replayed = 1; /* round 0: nothing logged, nothing to replay */
}

/* The next window, once a round ended: about round_target events and
 * RT_ROUND_MAX_RECORDS records, from the last round's. */
void rt_vw_pass_next_window(struct pass *p, uint64_t lo)
{
	if (p->rounds_done++ == 0) { /* round 0 only read each rank's first event */
		first_width(p);
	} else if (p->round_events) { /* aim at round_target events, RT_ROUND_MAX_RECORDS records */
		double f = (double)p->round_target / (double)p->round_events;

		if (p->round_records && (double)p->rec_cap / (double)p->round_records < f)
			f = (double)p->rec_cap / (double)p->round_records;
		f = f > round_growth(p) ? round_growth(p) : f < 0.25 ? 0.25 : f;
		p->width = (uint64_t)((double)p->width * f) + 1;
	} else {
		p->width = p->width > UINT64_MAX / RT_GROW_EMPTY ? UINT64_MAX : p->width * RT_GROW_EMPTY;
	}
	p->round_events = 0;
	p->round_records = 0;
	if (lo < p->w)
		lo = p->w;
	round_begins(p, lo);
	p->w = lo > UINT64_MAX - p->width ? UINT64_MAX : lo + p->width;
}

/* Each time another RT_CHECK_PART of a round's rank jobs is done (under
 * the mutex): the records the round would log if the jobs still to run
 * log at the pace of those since the last cut; over RT_CHECK_OVER times
 * rec_cap, the window ends earlier for the jobs still to run, so that they
 * log what is left of rec_cap (a RT_CHECK_PART of it at least). The jobs
 * done read to the old end: their records past the new one wait in the
 * logs, since every record below it, and only those, is known complete at
 * the round's end (parallel.c: end_round, the replay's bound). The first
 * window is sized from the packets' bytes alone: a trace that logs a record
 * an event (collectives only) logged 9 M records in a first round of 16 Mi
 * events (944 MiB at peak at 16,384 ranks); checked again and again, a
 * round whose first ranks log little and its last ones much is cut too. */
void rt_vw_pass_check_window(struct pass *p)
{
	int ran = p->done - p->cut_done, untaken = p->ntodo - p->next;
	uint64_t recent = p->round_records - p->cut_records, span;
	double pace, rest, left;

	p->check_at = p->done + check_step(p);
	/* a cut reaches only the jobs not taken yet: none, no cut (it would
	 * hold records back and start the next round where ranks have read) */
	if (ran <= 0 || !recent || untaken <= 0 || p->w == UINT64_MAX || p->w <= p->round_lo)
		return;
	pace = (double)recent / ran; /* records a job since the last cut */
	if ((double)p->round_records + pace * (double)(p->ntodo - p->done) <= (double)p->rec_cap * RT_CHECK_OVER)
		return;
	/* what is left of rec_cap for the jobs not taken, those running at
	 * the old end counted (a RT_CHECK_PART of it at least) */
	left = (double)p->rec_cap - (double)p->round_records - pace * (double)(p->next - p->done);
	if (left < (double)p->rec_cap / RT_CHECK_PART)
		left = (double)p->rec_cap / RT_CHECK_PART;
	rest = pace * (double)untaken;
	if (left >= rest) /* (and no span past the window's) */
		return;
	span = (uint64_t)((double)(p->w - p->round_lo) * (left / rest)) + 1;
	if (span >= p->w - p->round_lo)
		return;
	p->width = span;
	p->w = p->round_lo + span;
	p->cut_done = p->done;
	p->cut_records = p->round_records;
	__atomic_fetch_add(&rt_vw_pass_cuts, 1, __ATOMIC_RELAXED);
}
