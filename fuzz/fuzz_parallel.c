/* SPDX-License-Identifier: MIT */
/* fuzz_parallel.c - libFuzzer target: the model's parallel pass
 * (viewer/load/parallel.c) on hostile event times.
 *
 * The input picks a job of 1-6 ranks with 1-3 streams each and up to 512
 * events (communicator inits, ncclCommInitAll, collectives, allocations,
 * frees, calls that never returned, exits), each at a time from a hostile
 * set: 0, 1, 2^64-1 and its neighbours, 2^63, the limit no clock reaches
 * (2^62) and just below it, the stream's last time minus a little or a lot
 * (going back), another rank's latest time (equal across ranks), forward by
 * a little or by 2^40; durations up to 2^64-1 (ts + dur overflows). The
 * pass must end (libFuzzer's -timeout: a window end saturated at 2^64-1 once
 * repeated its rounds forever), never crash, and give the same model on one
 * thread with one window as on three threads with windows of one and of
 * seven events: verdict, findings, events, completeness, communicators.
 * Device records (rt_dev_coll, started or completed, of the collective just
 * enqueued or the one before) at those times reach the straggler analysis
 * and the report's device section, which must draw no NaN or Infinity. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "export_int.h"
#include "model_int.h"

#define MAXR 6
#define MAXS 3
#define MAXE 512
#define PAYLOAD 256

struct in {
	const uint8_t *p;
	size_t n;
};

static unsigned take(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static struct rt_vw_event ev[MAXR][MAXS][MAXE];
static uint8_t payload[MAXR * MAXS * MAXE][PAYLOAD];
static size_t nev[MAXR][MAXS];
static int nranks, nstreams[MAXR];

static void put(uint8_t *f, unsigned id, enum rt_fname fn, uint64_t v)
{
	int i = rt_field_at[id][fn];

	if (i >= 0)
		rt_fmt_put_field(f + rt_events[id].fields[i].offset,
				 (enum rt_kind)rt_events[id].fields[i].kind, v, NULL);
}

/* A hostile time for rank r's stream s, after last (its stream's) and
 * other (another rank's latest). */
static uint64_t pick_time(unsigned c, uint64_t last, uint64_t other)
{
	static const uint64_t fixed[] = { 0, 1, UINT64_MAX, UINT64_MAX - 1, 1ull << 63,
					  RT_TS_UNUSED, RT_TS_UNUSED - 1, RT_TS_UNUSED - 1000 };

	if (c < 8)
		return fixed[c];
	switch (c % 6) {
	case 0: return last - (c & 15);        /* back a little (wraps at 0) */
	case 1: return last / 2;               /* back a lot */
	case 2: return other;                  /* equal across ranks */
	case 3: return last + 1000;
	case 4: return last + (1ull << 40);    /* may wrap */
	default: return last;                  /* equal within the stream */
	}
}

static void one_event(struct in *in, uint32_t *seq, uint64_t *latest)
{
	static const unsigned ids[] = { RT_ID_ncclCommInitRank, RT_ID_ncclAllReduce, RT_ID_ncclAllGather,
					RT_ID_cudaMalloc, RT_ID_cudaFree, RT_ID_rt_exit, RT_ID_ncclCommInitAll,
					RT_ID_rt_dev_coll };
	unsigned b = take(in), r = b % (unsigned)nranks, s = (b >> 3) % (unsigned)nstreams[r];
	unsigned k = take(in), id = ids[k % 8], t = take(in);
	size_t i = nev[r][s];
	struct rt_vw_event *e;
	uint8_t *f;
	uint64_t last = i ? ev[r][s][i - 1].ts : 1000, other = latest[(r + 1) % (unsigned)nranks];

	if (i >= MAXE)
		return;
	e = &ev[r][s][i];
	f = payload[(r * MAXS + s) * MAXE + i];
	memset(f, 0, PAYLOAD);
	put(f, id, RT_FN_comm_id, id == RT_ID_ncclCommInitAll ? 0xA11 + r : 0xC0);
	put(f, id, RT_FN_nranks, id == RT_ID_ncclCommInitAll ? 1 + (k >> 4) % 3 : (unsigned)nranks);
	put(f, id, RT_FN_rank, r);
	put(f, id, RT_FN_seq, k & 8 ? seq[r] : ++seq[r]);
	put(f, id, RT_FN_count, 64);
	put(f, id, RT_FN_ptr, 0x7f0000000000ull + ((uint64_t)(k >> 5) << 12));
	put(f, id, RT_FN_size, 4096);
	if (id == RT_ID_rt_dev_coll) {
		put(f, id, RT_FN_seq, seq[r] - ((k >> 4) & 1));
		put(f, id, RT_FN_dev_phase, k & 32 ? RT_DEV_COMPLETED : RT_DEV_STARTED);
		put(f, id, RT_FN_source, RT_DEV_SRC_PLUGIN);
	}
	*e = (struct rt_vw_event){ .id = id, .ts = pick_time(t, last, other), .fields = f,
				   .dur = t & 64 ? UINT64_MAX - (t & 7) : t & 32 ? RT_DUR_MAX : 10,
				   .pending = (k >> 7) && id != RT_ID_rt_exit, .dev = (int)r,
				   .pid = 100u + r, .tid = 100u + r + 1000u * s };
	latest[r] = e->ts;
	nev[r][s]++;
}

/* The report's device section of the model: finite numbers only. */
static void report_device(const struct rt_vw_trace *t)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		abort();
	rt_vw_report_device(t, f);
	fclose(f);
	for (size_t i = 0; i + 3 <= len; i++)
		if ((!strncmp(out + i, "nan", 3) || !strncmp(out + i, "inf", 3)) &&
		    (i == 0 || out[i - 1] == '"' || out[i - 1] == '-' || out[i - 1] == ' ' ||
		     out[i - 1] == ',' || out[i - 1] == '>') && (i + 3 == len || !isalpha((unsigned char)out[i + 3]))) {
			fprintf(stderr, "NaN or Infinity in the report's device section:\n%s\n", out);
			abort();
		}
	free(out);
}

/* The model of the job on `jobs` threads, windows of `window` events (0:
 * the default), as one string (malloc'd). */
static char *model(int jobs, int window)
{
	struct rt_vw_matcher *m = calloc(1, sizeof(*m));
	struct rt_vw_trace *t = calloc(1, sizeof(*t));
	struct rt_vw_src srcs[MAXR * MAXS];
	char *out = NULL, num[16], why[600];
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int nsrc = 0;

	if (!m || !t || !f)
		abort();
	m->t = t;
	snprintf(t->dir, sizeof(t->dir), "/nonexistent/ranktrace-fuzz");
	t->nranks = nranks;
	t->ranks = calloc((size_t)nranks, sizeof(*t->ranks));
	for (int r = 0; r < nranks; r++) {
		struct rt_vw_rank *rk = &t->ranks[r];

		snprintf(rk->name, sizeof(rk->name), "rank-%05d", r);
		rk->readable = true;
		rk->meta.rank = rk->meta.local_rank = r;
		rk->meta.world_size = nranks;
		rk->meta.pid = 100 + r;
		rk->live = rt_vw_map_new();
		rk->comm_device = rk->init_device = rk->dup_of = -1;
		for (int s = 0; s < nstreams[r]; s++)
			srcs[nsrc++] = (struct rt_vw_src){ .c = rt_vw_cursor_mem(ev[r][s], nev[r][s], 0), .rank = r };
	}
	snprintf(num, sizeof(num), "%d", window);
	if (window)
		setenv("RANKTRACE_ROUND_EVENTS", num, 1);
	else
		unsetenv("RANKTRACE_ROUND_EVENTS");
	rt_vw_set_jobs(jobs);
	if (rt_vw_parallel_pass(t, m, srcs, nsrc) != 0)
		abort(); /* only out of memory fails the pass */
	for (int k = 0; k < nsrc; k++)
		rt_vw_cursor_close(srcs[k].c);
	rt_vw_model_finish(m);
	rt_vw_inconclusive_text(t, why, sizeof(why));
	fprintf(f, "%s %llu %s|%s\n", rt_verdicts[t->verdict].word, (unsigned long long)t->events,
		rt_vw_completeness_names[t->completeness], why);
	for (int i = 0; i < t->nfindings; i++) {
		char text[RT_VW_FINDING_TEXT];

		rt_vw_finding_text(t, &t->findings[i], text, sizeof(text));
		fprintf(f, "%d %s\n", t->findings[i].rank, text);
	}
	for (int i = 0; i < t->ncomms; i++)
		fprintf(f, "comm %llx %d\n", (unsigned long long)t->comms[i].id, t->comms[i].nranks);
	for (int r = 0; r < nranks; r++)
		fprintf(f, "rank %d %llu %s\n", r, (unsigned long long)t->ranks[r].events, t->ranks[r].damaged);
	report_device(t);
	fclose(f);
	rt_vw_free(t);
	free(m);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	uint32_t seq[MAXR] = { 0 };
	uint64_t latest[MAXR] = { 0 };
	char *a, *b, *c;

	memset(nev, 0, sizeof(nev));
	nranks = 1 + (int)(take(&in) % MAXR);
	for (int r = 0; r < nranks; r++)
		nstreams[r] = 1 + (int)(take(&in) % MAXS);
	while (in.n >= 3)
		one_event(&in, seq, latest);
	a = model(1, 0);
	b = model(3, 1);
	c = model(3, 7);
	if (strcmp(a, b) || strcmp(a, c)) {
		fprintf(stderr, "the model depends on threads or windows:\n%s\n---\n%s\n---\n%s\n", a, b, c);
		abort();
	}
	free(a);
	free(b);
	free(c);
	return 0;
}
