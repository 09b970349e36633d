/* SPDX-License-Identifier: MIT */
/* test_logs.c - the parallel pass's logs (viewer/load/logs.c): a replay
 * takes the records below its bound, in clock order, and leaves the rest
 * for the next one; a round cut short (windows.c) depends on it. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "logs.h"
#include "model.h"
#include "model_int.h"

struct bench {
	struct rt_vw_trace t;
	struct rt_vw_matcher m;
	struct rt_vw_chunks pool;
	struct rt_vw_chunk_cache cc;
	struct rt_vw_log logs[2];
	struct rt_vw_replay_room rm;
};

static void bench_init(struct bench *b, size_t slice)
{
	*b = (struct bench){ .rm.slice = slice };
	b->m.t = &b->t;
	cr_assert_eq(rt_vw_chunks_init(&b->pool), 0);
	for (int i = 0; i < 2; i++)
		b->logs[i] = (struct rt_vw_log){ .ri = i, .pool = &b->pool, .cache = &b->cc };
}

/* Rank ri learns that communicator id has nranks ranks, at clock ts. */
static void learn(struct bench *b, int ri, uint64_t ts, uint64_t id, int nranks)
{
	struct rt_vw_sink s = rt_vw_log_sink(&b->logs[ri]);

	b->logs[ri].clock = ts;
	s.learn(s.ctx, id, nranks, false);
}

static int replay(struct bench *b, uint64_t bound)
{
	uint64_t lim[2] = { b->logs[0].n, b->logs[1].n };

	return rt_vw_logs_replay(b->logs, 2, lim, bound, &b->m, &b->rm);
}

static void bench_free(struct bench *b)
{
	rt_vw_replay_room_free(&b->rm);
	rt_vw_chunks_free(&b->pool);
	free(b->t.comms);
	free(b->t.comm_slots);
}

/* The first size learned wins (matcher.c). Rank 0 read ahead of a round cut
 * short at 25 and logged communicator A's size 4 at clock 30; rank 1 logs
 * size 8 at clock 20 only in the next round. The first replay, bounded at
 * 25, leaves the record at 30; the second takes both in clock order: 8. A
 * replay that took the record at 30 first would make it 4. Whole replays
 * and slices of one record alike. */
Test(logs, a_replay_leaves_the_records_at_or_past_its_bound_for_the_next)
{
	for (size_t slice = 0; slice <= 1; slice++) {
		struct bench b;

		bench_init(&b, slice);
		learn(&b, 0, 10, 0xB, 2); /* below the bound: taken */
		learn(&b, 0, 30, 0xA, 4);
		cr_assert_eq(replay(&b, 25), 0);
		cr_assert_eq(b.t.ncomms, 1, "slice %zu: only the record below 25 (%d comms)", slice, b.t.ncomms);
		cr_assert_eq(b.t.comms[0].id, 0xB);
		cr_assert_eq(b.logs[0].used, 1, "the record at 30 is left in its log");
		learn(&b, 1, 20, 0xA, 8);
		cr_assert_eq(replay(&b, UINT64_MAX), 0);
		cr_assert_eq(b.t.ncomms, 2);
		cr_assert_eq(b.t.comms[1].id, 0xA);
		cr_assert_eq(b.t.comms[1].nranks, 8, "slice %zu: the size at clock 20 first", slice);
		cr_assert_eq(b.logs[0].used, 2);
		cr_assert_eq(b.logs[1].used, 1);
		bench_free(&b);
	}
}

/* A bound below every record takes none and leaves every log as it was;
 * bound 0 (nothing complete yet) likewise. */
Test(logs, a_bound_below_every_record_takes_none)
{
	struct bench b;

	bench_init(&b, 0);
	learn(&b, 0, 50, 0xA, 4);
	learn(&b, 1, 60, 0xB, 4);
	cr_assert_eq(replay(&b, 0), 0);
	cr_assert_eq(replay(&b, 50), 0);
	cr_assert_eq(b.t.ncomms, 0);
	cr_assert_eq(b.logs[0].used + b.logs[1].used, 0);
	cr_assert_eq(replay(&b, 51), 0);
	cr_assert_eq(b.t.ncomms, 1);
	cr_assert_eq(b.logs[1].used, 0);
	bench_free(&b);
}

/* A log of 40 records (its first chunks hold 16, 16, then 32): a bound in
 * its second chunk takes the 24 below it, in order, and the next replay
 * the rest, across the chunk it stopped in; log 1's records between them
 * land in clock order. */
Test(logs, a_bound_inside_a_chunk_leaves_the_rest_of_it)
{
	for (size_t slice = 0; slice <= 7; slice += 7) {
		struct bench b;

		bench_init(&b, slice);
		for (uint64_t k = 1; k <= 40; k++)
			learn(&b, 0, k * 10, 0x100 + k, 2);
		cr_assert_eq(replay(&b, 245), 0);
		cr_assert_eq(b.t.ncomms, 24, "slice %zu: %d comms", slice, b.t.ncomms);
		cr_assert_eq(b.logs[0].used, 24);
		learn(&b, 1, 255, 0x999, 2); /* between records 25 and 26 */
		cr_assert_eq(replay(&b, UINT64_MAX), 0);
		cr_assert_eq(b.t.ncomms, 41);
		for (int k = 0; k < 41; k++) {
			uint64_t want = k < 25 ? 0x101 + (uint64_t)k : k == 25 ? 0x999 : 0x100 + (uint64_t)k;

			cr_assert_eq(b.t.comms[k].id, want, "slice %zu: comm %d is %#llx", slice, k,
				     (unsigned long long)b.t.comms[k].id);
		}
		bench_free(&b);
	}
}

/* A log that asks for a class of chunk none is given back in takes a
 * smaller one given back before it cuts a new one: a first round's small
 * chunks serve the next rounds' larger asks (collectives only at 16,384
 * ranks: 671 MB of slabs for rounds of 212 MB of records when they did
 * not). Log 0's 40 records fill chunks of 16, 16 and 32; the replay gives
 * the two of 16 back; log 1, whose last round logged 1,000, asks for 512. */
Test(logs, a_log_short_of_its_class_takes_a_smaller_chunk_given_back)
{
	struct bench b;
	size_t left;

	bench_init(&b, 0);
	for (uint64_t k = 1; k <= 40; k++)
		learn(&b, 0, k, 0x100 + k, 2);
	cr_assert_eq(replay(&b, UINT64_MAX), 0);
	left = b.cc.left;
	b.logs[1].last_n = 1000;
	learn(&b, 1, 50, 0x999, 2);
	cr_assert_eq(b.cc.left, left, "a chunk was cut (%zu bytes) though two were given back", left - b.cc.left);
	cr_assert_eq(replay(&b, UINT64_MAX), 0);
	cr_assert_eq(b.t.ncomms, 41);
	bench_free(&b);
}
