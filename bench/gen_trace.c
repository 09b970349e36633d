/* SPDX-License-Identifier: MIT */
/* gen_trace.c - bench/gen_trace: write a synthetic ranktrace trace of N ranks
 * x M events with a realistic mix (allocations and frees, copies, FSDP-like
 * all-gathers, reduce-scatters and all-reduces matching across ranks), in
 * exactly the tracer's format, for benchmarking the viewer at scale.
 * --split S: the world's rt_comm record, and each rank's all-reduce on a
 * communicator of S ranks split from it (color rank / S, with its rt_comm
 * record): N / S communicators besides the world, as HSDP's shard groups.
 * --collectives: every event a collective but the first two and the last
 * (a training loop once PyTorch's caching allocator holds its memory): a
 * record for the matcher per event, three times the mix's.
 *   gen_trace --ranks N --events M [--split S] [--collectives] --out DIR */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "encode.h"
#include "schema.h"

#define PKT ((size_t)256 << 10)

struct w {
	FILE *f;
	uint8_t pkt[PKT];
	size_t pos;
	uint64_t ts0, last;
};

static void flush_packet(struct w *w, uint32_t pid)
{
	struct rt_fmt_packet h = { NULL, w->ts0, w->last, w->pos, PKT, 0, pid, pid };

	if (w->pos <= RT_PACKET_HEADER_BYTES)
		return;
	rt_fmt_packet_put(w->pkt, &h);
	memset(w->pkt + w->pos, 0, PKT - w->pos);
	fwrite(w->pkt, 1, PKT, w->f);
	w->pos = RT_PACKET_HEADER_BYTES;
}

static void ev(struct w *w, uint32_t pid, unsigned id, uint64_t ts, uint64_t dur, int dev,
	       const uint64_t *vals)
{
	const struct rt_event_desc *d = &rt_events[id];
	size_t need = RT_HEADER_EXTENDED_BYTES + RT_COMMON_BYTES + d->size;
	uint8_t *p;

	if (w->pos + need > PKT)
		flush_packet(w, pid);
	if (w->pos == RT_PACKET_HEADER_BYTES)
		w->ts0 = w->last = ts;
	p = rt_fmt_event_header(w->pkt + w->pos, id, ts, w->last);
	w->last = ts;
	p = rt_fmt_event_common(p, dur, 0, dev);
	for (int i = 0; i < d->nfields; i++)
		p = rt_fmt_put_field(p, (enum rt_kind)d->fields[i].kind, vals[i], "");
	w->pos = (size_t)(p - w->pkt);
}

/* Write rank r's metadata and stream of `events` events under out. */
/* The world's and the split's rt_comm records of rank r (split > 0). */
static void comm_records(struct w *w, uint32_t pid, uint64_t ts, int r, int ranks, int split,
			 uint64_t world, uint64_t half)
{
	uint64_t dev = (uint64_t)(r % 8), none = (uint64_t)-1;

	ev(w, pid, RT_ID_rt_comm, ts, 0, r % 8,
	   (uint64_t[]){ world, (uint64_t)ranks, (uint64_t)r, (uint64_t)r, RT_COMM_INIT, 0, none,
			 none, 1, 0, 0x5000, dev, 1 });
	ev(w, pid, RT_ID_rt_comm, ts + 1, 0, r % 8,
	   (uint64_t[]){ half, (uint64_t)split, (uint64_t)(r % split), (uint64_t)r, RT_COMM_SPLIT,
			 world, (uint64_t)(r / split), (uint64_t)r, 1, 0, 0x6000, dev, 1 });
}

static void write_rank(struct w *w, const char *out, int r, int ranks, long events, int split,
		       bool coll_only)
{
	char dir[4200], path[4300];
	static char meta[1 << 16];
	struct rt_trace_env env = { .pid = 1000 + r, .rank = r, .local_rank = r % 8,
				    .world_size = ranks, .rank_source = "env:RANK",
				    .packet_bytes = PKT };
	uint64_t ts = 1000000000ull, ptrs[8] = { 0 }, seq = 0, comm = 0xc0ffee, seq_ar = 0;
	uint64_t half = split ? 0x5b1000000000ull + (uint64_t)(r / split) : comm;
	uint32_t pid = (uint32_t)(1000 + r);
	FILE *mf;
	long n = 0;

	snprintf(env.hostname, sizeof(env.hostname), "node%d", r / 8);
	snprintf(dir, sizeof(dir), "%s/rank-%05d", out, r);
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/metadata", dir);
	mf = fopen(path, "w");
	fwrite(meta, 1, (size_t)rt_schema_tsdl(meta, sizeof(meta), &env), mf);
	fclose(mf);
	snprintf(path, sizeof(path), "%s/stream-%u-%u", dir, pid, pid);
	w->f = fopen(path, "wb");
	w->pos = RT_PACKET_HEADER_BYTES;
	/* one step: 8 allocations, 2 copies, 8 frees, 4 all-gathers, 4
	 * reduce-scatters, 1 all-reduce, plus one cudaSetDevice at start */
	ev(w, pid, RT_ID_cudaSetDevice, ts, 100, 0, (uint64_t[]){ (uint64_t)(r % 8) });
	ev(w, pid, RT_ID_ncclCommInitRank, ts += 1000, 5000000, r % 8,
	   (uint64_t[]){ 0x5000, comm, (uint64_t)ranks, (uint64_t)r });
	n = 2;
	if (split) {
		comm_records(w, pid, ts += 1000, r, ranks, split, comm, half);
		n += 2;
		ts += 10;
	}
	for (int k = 0; coll_only && k < 8; k++)
		ptrs[k] = 0x7f0000000000ull + ((uint64_t)k << 24);
	while (n < events - 1) {
		for (int k = 0; !coll_only && k < 8 && n < events - 1; k++, n++) {
			ptrs[k] = 0x7f0000000000ull + ((uint64_t)k << 24) + (uint64_t)(n & 0xff) * 4096;
			ev(w, pid, RT_ID_cudaMalloc, ts += 700, 300, r % 8,
			   (uint64_t[]){ ptrs[k], 4096ull << k });
		}
		for (int k = 0; k < 4 && n < events - 1; k++, n++)
			ev(w, pid, RT_ID_ncclAllGather, ts += 2000, 50000, r % 8,
			   (uint64_t[]){ comm, ++seq, ptrs[k], ptrs[k + 4], 1u << 20, 7, 0x9000 });
		for (int k = 0; !coll_only && k < 2 && n < events - 1; k++, n++)
			ev(w, pid, RT_ID_cudaMemcpy, ts += 500, 20000, r % 8,
			   (uint64_t[]){ ptrs[k], 0x1000, 65536, 1 });
		for (int k = 0; k < 4 && n < events - 1; k++, n++)
			ev(w, pid, RT_ID_ncclReduceScatter, ts += 2000, 60000, r % 8,
			   (uint64_t[]){ comm, ++seq, ptrs[k + 4], ptrs[k], 1u << 18, 7, 0, 0x9000 });
		if (n < events - 1) {
			ev(w, pid, RT_ID_ncclAllReduce, ts += 1500, 40000, r % 8,
			   (uint64_t[]){ half, split ? ++seq_ar : ++seq, ptrs[0], ptrs[0], 1, 8, 0, 0 });
			n++;
		}
		for (int k = 0; !coll_only && k < 8 && n < events - 1; k++, n++)
			ev(w, pid, RT_ID_cudaFree, ts += 400, 200, r % 8, (uint64_t[]){ ptrs[k] });
	}
	ev(w, pid, RT_ID_rt_exit, ts + 100, 10, r % 8, (uint64_t[]){ 0 });
	flush_packet(w, pid);
	fclose(w->f);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ranks", required_argument, NULL, 'r' },
		{ "events", required_argument, NULL, 'e' },
		{ "out", required_argument, NULL, 'o' },
		{ "split", required_argument, NULL, 's' },
		{ "collectives", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	int ranks = 4, split = 0, c;
	bool coll_only = false;
	long events = 100000;
	const char *out = NULL;
	static struct w w;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'r': ranks = atoi(optarg); break;
		case 'e': events = atol(optarg); break;
		case 'o': out = optarg; break;
		case 's': split = atoi(optarg); break;
		case 'c': coll_only = true; break;
		default: return 2;
		}
	}
	if (!out || ranks < 1 || events < 10 || split < 0 || (split && ranks % split)) {
		fprintf(stderr, "usage: gen_trace --ranks N --events M [--split S (dividing N)] "
			"[--collectives] --out DIR\n");
		return 2;
	}
	if (mkdir(out, 0700) != 0) {
		perror(out);
		return 1;
	}
	for (int r = 0; r < ranks; r++)
		write_rank(&w, out, r, ranks, events, split, coll_only);
	printf("gen_trace: %d ranks x %ld events in %s\n", ranks, events, out);
	return 0;
}
