/* SPDX-License-Identifier: MIT */
/* pass_job.h - jobs built in memory for the parallel pass's tests
 * (test_parallel.c, test_pass_cut.c): ranks of streams of events, the
 * pass run on them with `jobs` threads and windows of `window` events, its
 * model as one string. */
#ifndef RT_TEST_PASS_JOB_H
#define RT_TEST_PASS_JOB_H

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode_args.h"
#include "model_int.h"

#define MAXR 96
#define MAXS 3

struct stream {
	struct rt_vw_event *ev;
	uint8_t **buf; /* each event's encoding */
	size_t n, cap;
	uint64_t clock;
	uint32_t tid;
};

struct job {
	int nranks, nstreams[MAXR];
	struct stream s[MAXR][MAXS];
	uint64_t rng;
	bool fixed; /* clocks set by the caller: ev() leaves them */
};

static inline uint32_t rnd(struct job *j, uint32_t n)
{
	j->rng ^= j->rng << 13;
	j->rng ^= j->rng >> 7;
	j->rng ^= j->rng << 17;
	return (uint32_t)(j->rng % n);
}

/* One event on rank ri's stream si: id, result, then (enum rt_fname,
 * value) pairs ending with -1. Its clock advances; now and then backwards. */
static inline void ev(struct job *j, int ri, int si, unsigned id, int ret, bool pending, ...)
{
	struct stream *s = &j->s[ri][si];
	uint8_t *buf = calloc(1, RT_EVENT_MAX_BYTES), *fields;
	struct rt_fmt_header h;
	uint64_t dur = j->fixed ? 10 : 50 + rnd(j, 3000);
	va_list ap;

	cr_assert_not_null(buf);
	if (!j->fixed) {
		s->clock += 100 + rnd(j, 5000);
		if (rnd(j, 50) == 0 && s->clock > 20000)
			s->clock -= rnd(j, 20000); /* a clock that went back */
	}
	fields = rt_fmt_event_common(rt_fmt_event_header(buf, id, s->clock, s->clock),
				     pending ? RT_DUR_PENDING : dur, (int16_t)ret, (int8_t)ri);
	va_start(ap, pending);
	encode_args(fields, id, ap);
	va_end(ap);
	cr_assert_eq(rt_fmt_event_header_get(buf, RT_EVENT_MAX_BYTES, &h), 0);
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->ev = realloc(s->ev, sizeof(*s->ev) * s->cap);
		s->buf = realloc(s->buf, sizeof(*s->buf) * s->cap);
		cr_assert(s->ev && s->buf);
	}
	s->buf[s->n] = buf;
	s->ev[s->n++] = (struct rt_vw_event){ .id = id, .ts = s->clock, .dur = dur, .pending = pending,
					      .ret = ret, .dev = ri, .fields = buf + h.bytes + RT_COMMON_BYTES,
					      .pid = 100u + (uint32_t)ri, .tid = s->tid };
	if (!pending && !j->fixed)
		s->clock += dur;
}

#define U(x) ((uint64_t)(x))
#define COMM 0xC0ull
#define SPLIT 0x5B11ull

/* Collective seq of comm on rank ri: now and then another count. */
static inline void coll(struct job *j, int ri, unsigned id, uint64_t comm, uint32_t seq)
{
	uint64_t count = rnd(j, 400) == 0 ? 7 : 1024;

	int s = (int)rnd(j, (uint32_t)j->nstreams[ri]);

	if (id == RT_ID_ncclAllGather) /* no reduction op */
		ev(j, ri, s, id, 0, false, RT_FN_comm_id, comm, RT_FN_seq, U(seq), RT_FN_count, count,
		   RT_FN_datatype, U(7), -1);
	else
		ev(j, ri, s, id, 0, false, RT_FN_comm_id, comm, RT_FN_seq, U(seq), RT_FN_count, count,
		   RT_FN_datatype, U(7), RT_FN_op, U(0), -1);
}

static inline void build(struct job *j, uint64_t seed)
{
	static const unsigned kinds[] = { RT_ID_ncclAllGather, RT_ID_ncclReduceScatter, RT_ID_ncclAllReduce };
	int steps;

	memset(j, 0, sizeof(*j));
	j->rng = seed * 0x9E3779B97F4A7C15ull + 1;
	/* every 8th seed up to MAXR ranks: rank jobs taken in batches, logs'
	 * chunks given back by the batch (parallel.c, logs.c) */
	j->nranks = 2 + (int)rnd(j, (seed % 8 == 0 ? MAXR : 8) - 1);
	steps = 20 + (int)rnd(j, 300);
	for (int r = 0; r < j->nranks; r++) {
		j->nstreams[r] = 1 + (int)rnd(j, MAXS);
		for (int s = 0; s < j->nstreams[r]; s++) {
			j->s[r][s].clock = 1000 + rnd(j, 100000);
			j->s[r][s].tid = 100u + (uint32_t)r + 1000u * (uint32_t)s;
		}
		ev(j, r, 0, RT_ID_cudaSetDevice, 0, false, RT_FN_device, U(r), -1);
		ev(j, r, 0, RT_ID_ncclCommInitRank, 0, false, RT_FN_comm_id, COMM, RT_FN_nranks,
		   U(j->nranks + (rnd(j, 8) == 0 ? 1 : 0)), RT_FN_rank, U(r), -1);
		if (r % 2 == 0) /* the even ranks split off; their size recorded or not */
			ev(j, r, 0, RT_ID_ncclCommSplit, 0, false, RT_FN_comm_id, SPLIT, RT_FN_nranks,
			   U(rnd(j, 2) ? (j->nranks + 1) / 2 : 0), -1);
	}
	for (int r = 0; r < j->nranks; r++) {
		uint32_t seq = 0, sseq = 0;
		bool dies = rnd(j, 6) == 0;

		for (int k = 0; k < steps; k++) {
			int s = (int)rnd(j, (uint32_t)j->nstreams[r]);
			uint64_t ptr = 0x7f0000000000ull + ((uint64_t)rnd(j, 64) << 16);

			if (rnd(j, 2))
				ev(j, r, s, RT_ID_cudaMalloc, 0, false, RT_FN_ptr, ptr, RT_FN_size, U(4096), -1);
			else
				ev(j, r, s, RT_ID_cudaFree, 0, false, RT_FN_ptr, ptr, -1);
			if (rnd(j, 300) != 0) /* now and then a rank skips one */
				coll(j, r, kinds[k % 3], COMM, ++seq);
			if (r % 2 == 0 && k % 4 == 0)
				coll(j, r, RT_ID_ncclAllReduce, SPLIT, ++sseq);
			if (dies && k == steps / 2) {
				coll(j, r, RT_ID_ncclAllReduce, COMM, ++seq);
				j->s[r][0].ev[j->s[r][0].n - 1].pending = true;
				break;
			}
		}
		if (!dies)
			ev(j, r, 0, RT_ID_rt_exit, 0, false, RT_FN_status, U(0), -1);
	}
}

static inline void job_free(struct job *j)
{
	for (int r = 0; r < j->nranks; r++)
		for (int s = 0; s < j->nstreams[r]; s++) {
			for (size_t i = 0; i < j->s[r][s].n; i++)
				free(j->s[r][s].buf[i]);
			free(j->s[r][s].ev);
			free(j->s[r][s].buf);
		}
}

/* The model of job j on `jobs` threads, windows of about `window` events
 * (0: the default), as one string. */
static inline char *model(struct job *j, int jobs, int window)
{
	struct rt_vw_matcher *m = calloc(1, sizeof(*m));
	struct rt_vw_trace *t = calloc(1, sizeof(*t));
	struct rt_vw_src srcs[MAXR * MAXS];
	int nsrc = 0;
	char *out = NULL, num[32];
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	cr_assert(m && t && f);
	m->t = t;
	snprintf(t->dir, sizeof(t->dir), "/nonexistent/ranktrace-test");
	t->nranks = j->nranks;
	t->ranks = calloc((size_t)j->nranks, sizeof(*t->ranks));
	for (int r = 0; r < j->nranks; r++) {
		struct rt_vw_rank *rk = &t->ranks[r];

		snprintf(rk->name, sizeof(rk->name), "rank-%05d", r);
		rk->readable = true;
		rk->meta.rank = rk->meta.local_rank = r;
		rk->meta.world_size = j->nranks;
		rk->meta.pid = 100 + r;
		rk->live = rt_vw_map_new();
		rk->comm_device = rk->init_device = rk->dup_of = -1;
		for (int s = 0; s < j->nstreams[r]; s++)
			srcs[nsrc++] = (struct rt_vw_src){ .c = rt_vw_cursor_mem(j->s[r][s].ev, j->s[r][s].n, 0),
							   .rank = r };
	}
	snprintf(num, sizeof(num), "%d", window);
	if (window)
		setenv("RANKTRACE_ROUND_EVENTS", num, 1);
	else
		unsetenv("RANKTRACE_ROUND_EVENTS");
	rt_vw_set_jobs(jobs);
	cr_assert_eq(rt_vw_parallel_pass(t, m, srcs, nsrc), 0);
	for (int k = 0; k < nsrc; k++)
		rt_vw_cursor_close(srcs[k].c);
	rt_vw_model_finish(m);
	fprintf(f, "verdict %s events %llu diverged %d %llx %u\n", rt_verdicts[t->verdict].word,
		(unsigned long long)t->events, t->diverged, (unsigned long long)t->div_comm, t->div_seq);
	{
		char why[600];

		rt_vw_inconclusive_text(t, why, sizeof(why));
		fprintf(f, "inconclusive %s\n", why);
	}
	for (int i = 0; i < t->nfindings; i++) {
		char text[RT_VW_FINDING_TEXT];

		rt_vw_finding_text(t, &t->findings[i], text, sizeof(text));
		fprintf(f, "finding %s %d %s\n", rt_findings[t->findings[i].kind].id, t->findings[i].rank,
			text);
	}
	for (int i = 0; i < t->ncomms; i++)
		fprintf(f, "comm %llx %d %d\n", (unsigned long long)t->comms[i].id, t->comms[i].nranks,
			t->comms[i].split);
	for (int r = 0; r < t->nranks; r++) {
		const struct rt_vw_rank *rk = &t->ranks[r];
		char end[128];

		rt_vw_rank_end(rk, end, sizeof(end));
		fprintf(f, "rank %d: %llu events, %llu allocs, %llu frees, %llu unknown, peak %llu, %s\n", r,
			(unsigned long long)rk->events, (unsigned long long)rk->allocs,
			(unsigned long long)rk->frees, (unsigned long long)rk->unknown_frees,
			(unsigned long long)rk->dev_peak[r % RT_VW_MAX_DEV], end);
	}
	fclose(f);
	rt_vw_free(t);
	free(m);
	return out;
}

/* Job j's model is ref for --jobs 1 and 2 and windows of 1 to 5 events
 * and the whole trace. */
static inline void same_everywhere(struct job *j, const char *ref)
{
	static const int jobs[] = { 1, 2 }, windows[] = { 1, 2, 3, 4, 5, 0 };

	for (size_t a = 0; a < sizeof(jobs) / sizeof(jobs[0]); a++)
		for (size_t b = 0; b < sizeof(windows) / sizeof(windows[0]); b++) {
			char *got = model(j, jobs[a], windows[b]);

			cr_assert_str_eq(got, ref, "--jobs %d, windows of %d events:\n%s\nexpected:\n%s",
					 jobs[a], windows[b], got, ref);
			free(got);
		}
}

static inline void at(struct job *j, int r, uint64_t clock)
{
	j->s[r][0].clock = clock;
}

static inline void allreduce(struct job *j, int r, uint64_t comm, uint64_t count)
{
	ev(j, r, 0, RT_ID_ncclAllReduce, 0, false, RT_FN_comm_id, comm, RT_FN_seq, U(1), RT_FN_count,
	   count, RT_FN_datatype, U(7), RT_FN_op, U(0), -1);
}

#endif
