/* SPDX-License-Identifier: MIT */
/* test_lttng_read.c - how an LTTng trace's processes become ranks
 * (viewer/read/read_bt2_ranks.c), on processes built in memory as read_bt2.c
 * would leave them: starts paired with returns, the call a process died in,
 * forked children, other runs' processes, NCCL-learned ranks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read_bt2_int.h"

static struct reader *reader(void)
{
	struct reader *r = calloc(1, sizeof(*r));

	cr_assert_not_null(r);
	r->procs = calloc(8, sizeof(*r->procs));
	r->procs_cap = 8;
	return r;
}

static struct proc *proc(struct reader *r, int64_t vpid, int rank, int64_t rank_pid,
			 const char *run)
{
	struct proc *p = &r->procs[r->nprocs++];

	p->vpid = vpid;
	p->rank_pid = rank_pid;
	p->identified = run != NULL;
	p->meta.rank = rank;
	p->meta.pid = (int)vpid;
	p->nccl_rank = -1;
	snprintf(p->run_id, sizeof(p->run_id), "%s", run ? run : "");
	p->cap = p->bytes_cap = 64;
	p->recs = calloc(p->cap, sizeof(*p->recs));
	p->bytes = calloc(p->bytes_cap, RT_EVENT_MAX_BYTES);
	return p;
}

/* One record of event id: begin ts, duration (RT_DUR_PENDING: a start). */
static void rec(struct reader *r, struct proc *p, unsigned id, uint32_t tid, uint64_t ts,
		uint64_t dur)
{
	struct rec *rc = &p->recs[p->n++];

	rc->id = (uint16_t)id;
	rc->tid = tid;
	rc->ts = ts;
	rc->dur = dur;
	rc->pending = dur == RT_DUR_PENDING;
	rc->off = (uint32_t)p->nbytes;
	p->nbytes += rt_events[id].size;
	r->events++;
}

static struct rt_vw_bt2 *build(struct reader *r, const char *run)
{
	char err[256] = "";
	struct rt_vw_bt2 *b = rt_vw_bt2_build(r, run, "T", err, sizeof(err));

	cr_assert_not_null(b, "%s", err);
	return b;
}

Test(lttng_ranks, a_start_and_its_return_are_one_call)
{
	struct reader *r = reader();
	struct proc *p = proc(r, 100, 0, 100, "R");
	struct rt_vw_bt2 *b;

	rec(r, p, RT_ID_ncclAllReduce, 7, 1000, RT_DUR_PENDING);
	rec(r, p, RT_ID_ncclAllReduce, 7, 1000, 50);
	b = build(r, "R");
	cr_assert_eq(b->nranks, 1);
	cr_assert_str_eq(b->ranks[0].name, "rank-00000");
	cr_assert_eq(b->ranks[0].n, 1);
	cr_assert_not(b->ranks[0].ev[0].pending);
	cr_assert_eq(b->ranks[0].ev[0].dur, 50);
	rt_vw_bt2_free(b);
}

Test(lttng_ranks, a_start_without_return_is_the_call_the_process_died_in)
{
	struct reader *r = reader();
	struct proc *p = proc(r, 100, 1, 100, "R");
	struct rt_vw_bt2 *b;

	rec(r, p, RT_ID_ncclAllReduce, 7, 1000, RT_DUR_PENDING);
	rec(r, p, RT_ID_ncclAllReduce, 7, 1000, 40);
	rec(r, p, RT_ID_ncclBroadcast, 7, 2000, RT_DUR_PENDING);
	b = build(r, "R");
	cr_assert_eq(b->ranks[0].n, 2);
	cr_assert_eq(b->ranks[0].ev[1].id, RT_ID_ncclBroadcast);
	cr_assert(b->ranks[0].ev[1].pending);
	cr_assert_not(b->ranks[0].ev[0].pending);
	rt_vw_bt2_free(b);
}

Test(lttng_ranks, returns_close_the_innermost_start_of_their_own_thread)
{
	struct reader *r = reader();
	struct proc *p = proc(r, 100, 0, 100, "R");
	struct rt_vw_bt2 *b;

	/* thread 1: A(10..40) around B(20..25); thread 2: C starts at 15, never returns */
	rec(r, p, RT_ID_ncclGroupEnd, 1, 10, RT_DUR_PENDING);
	rec(r, p, RT_ID_ncclAllGather, 1, 20, RT_DUR_PENDING);
	rec(r, p, RT_ID_ncclAllGather, 1, 20, 5);
	rec(r, p, RT_ID_ncclGroupEnd, 1, 10, 30);
	rec(r, p, RT_ID_ncclAllGather, 2, 15, RT_DUR_PENDING);
	b = build(r, "R");
	cr_assert_eq(b->ranks[0].n, 3);
	cr_assert_eq(b->ranks[0].ev[0].id, RT_ID_ncclGroupEnd); /* begin order */
	cr_assert_eq(b->ranks[0].ev[1].tid, 2);
	cr_assert(b->ranks[0].ev[1].pending);
	cr_assert_eq(b->ranks[0].ev[2].id, RT_ID_ncclAllGather);
	cr_assert_not(b->ranks[0].ev[2].pending);
	rt_vw_bt2_free(b);
}

/* A forked child of a rank's process is not that rank (issue 27: its
 * calls on the parent's communicator read as the parent's): its events are
 * left out, as the native trace keeps them in fork-* files. */
Test(lttng_ranks, a_forked_child_is_not_its_parents_rank)
{
	struct reader *r = reader();
	struct proc *child = proc(r, 90, -1, 300, "R"); /* pid wrapped: child below parent */
	struct proc *parent = proc(r, 300, -1, 300, "R");
	struct proc *other = proc(r, 400, -1, 400, "R");
	struct rt_vw_bt2 *b;

	rec(r, parent, RT_ID_cudaMalloc, 300, 10, 5);
	rec(r, child, RT_ID_cudaMalloc, 90, 20, 5);
	rec(r, parent, RT_ID_cudaFree, 300, 30, 5);
	rec(r, other, RT_ID_cudaMalloc, 400, 15, 5);
	b = build(r, "R");
	cr_assert_eq(b->nranks, 2);
	cr_assert_str_eq(b->ranks[0].name, "rank-p300");
	cr_assert_eq(b->ranks[0].meta.pid, 300, "the rank's own process speaks for it");
	cr_assert_eq(b->ranks[0].n, 2, "the child's call is not the rank's");
	cr_assert_eq(b->ranks[0].ev[0].pid, 300);
	cr_assert_eq(b->ranks[0].ev[1].pid, 300);
	cr_assert_str_eq(b->ranks[1].name, "rank-p400");
	rt_vw_bt2_free(b);
}

Test(lttng_ranks, processes_of_other_runs_are_left_out)
{
	struct reader *r = reader();
	struct proc *mine = proc(r, 100, 0, 100, "R");
	struct proc *theirs = proc(r, 200, 0, 200, "S");
	struct proc *anon = proc(r, 300, -1, 300, NULL);
	struct rt_vw_bt2 *b;

	rec(r, mine, RT_ID_cudaMalloc, 100, 10, 5);
	rec(r, theirs, RT_ID_cudaMalloc, 200, 11, 5);
	rec(r, theirs, RT_ID_cudaFree, 200, 12, 5);
	rec(r, anon, RT_ID_cudaFree, 300, 13, 5);
	b = build(r, "R");
	cr_assert_eq(b->nranks, 1);
	cr_assert_eq(b->ranks[0].n, 1);
	cr_assert_eq(b->events, 1);
	cr_assert_eq(b->foreign, 3);
	rt_vw_bt2_free(b);
}

Test(lttng_ranks, without_a_run_id_every_process_is_kept)
{
	struct reader *r = reader();
	struct rt_vw_bt2 *b;

	rec(r, proc(r, 100, 0, 100, "R"), RT_ID_cudaMalloc, 100, 10, 5);
	rec(r, proc(r, 200, 1, 200, "S"), RT_ID_cudaMalloc, 200, 10, 5);
	b = build(r, "");
	cr_assert_eq(b->nranks, 2);
	rt_vw_bt2_free(b);
}

Test(lttng_ranks, nccl_names_a_rank_the_launcher_did_not)
{
	struct reader *r = reader();
	struct proc *p = proc(r, 100, -1, 100, "R");
	struct rt_vw_bt2 *b;

	p->nccl_rank = 3;
	p->nccl_world = 4;
	rec(r, p, RT_ID_cudaMalloc, 100, 10, 5);
	b = build(r, "R");
	cr_assert_str_eq(b->ranks[0].name, "rank-00003");
	cr_assert_eq(b->ranks[0].meta.world_size, 4);
	cr_assert_str_eq(b->ranks[0].meta.rank_source, "nccl");
	rt_vw_bt2_free(b);
}

Test(lttng_ranks, discards_are_charged_to_the_ranks_that_wrote_into_the_buffer)
{
	struct reader *r = reader();
	struct proc *a = proc(r, 100, 0, 100, "R"), *c = proc(r, 200, 1, 200, "R");
	struct rt_vw_bt2 *b;

	rec(r, a, RT_ID_cudaMalloc, 100, 10, 5);
	rec(r, c, RT_ID_cudaMalloc, 200, 10, 5);
	r->nstreams = 2;
	r->stream_discarded[0] = 7;
	r->stream_discarded[1] = 5;
	a->streams = 1u << 0 | 1u << 1;
	c->streams = 1u << 1;
	b = build(r, "R");
	cr_assert_eq(b->ranks[0].discarded, 12);
	cr_assert_eq(b->ranks[1].discarded, 5);
	rt_vw_bt2_free(b);
}

Test(lttng_ranks, an_empty_trace_is_refused_with_the_reason)
{
	struct reader *r = reader();
	char err[256] = "";

	r->foreign = 42;
	cr_assert_null(rt_vw_bt2_build(r, "", "T", err, sizeof(err)));
	cr_assert(strstr(err, "without ranktrace events (42 other events)"), "%s", err);
}
