/* SPDX-License-Identifier: MIT */
/* read_bt2_ranks.c - an LTTng trace's processes (read by read_bt2.c) grouped
 * into ranks, the way a native trace has one directory per rank.
 *
 * A process is identified by ranktrace:rt_identity (launcher environment) or,
 * when that gave no rank, by the rank NCCL gave it later (rt_rank); a
 * process with no rank is its own (rank-pPID). A forked child of a rank's
 * process (its identity names its parent's pid as the rank's) is not that
 * rank: its events are left out, as the native trace keeps them in fork-*
 * files apart from the rank's streams. A rank's events are put in begin order, the order of the
 * native merge.
 *
 * A call emitted when it started (dur_ns pending: NCCL's, see
 * tracer/lttng_backend.c) and again when it returned is one call: the start
 * is dropped. Per thread, in emission order, starts nest like calls do, so a
 * return closes the innermost open start of its event; a start never closed
 * is a call the process died in, kept as pending, as the native reader shows
 * it.
 *
 * A session records every process of the user that emits ranktrace:*
 * events, including those of another `ranktrace run` at the same time:
 * `run` writes its run id to DIR/ranktrace-run, and only the processes
 * whose rt_identity carries it are kept (all, without that file).
 * Allocates; not thread-safe. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read_bt2_int.h"

struct emit {
	uint64_t at;   /* when LTTng recorded it: start, or start + duration */
	uint32_t tid;
	uint32_t i;
};

static int cmp_emit(const void *a, const void *b)
{
	const struct emit *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Pair each start with its return; mark the starts that returned. */
static int pair_starts(struct proc *p)
{
	struct emit *order = malloc(sizeof(*order) * (p->n ? p->n : 1));
	uint32_t *open = malloc(sizeof(*open) * (p->n ? p->n : 1));
	size_t nopen = 0;

	if (!order || !open) {
		free(order);
		free(open);
		return -1;
	}
	for (size_t i = 0; i < p->n; i++)
		order[i] = (struct emit){ p->recs[i].ts + (p->recs[i].pending ? 0 : p->recs[i].dur),
					  p->recs[i].tid, (uint32_t)i };
	qsort(order, p->n, sizeof(*order), cmp_emit);
	for (size_t k = 0; k < p->n; k++) {
		struct rec *rc = &p->recs[order[k].i];

		if (k && order[k].tid != order[k - 1].tid)
			nopen = 0; /* another thread: its own nesting */
		if (rc->pending)
			open[nopen++] = order[k].i;
		else if (nopen && p->recs[open[nopen - 1]].id == rc->id)
			p->recs[open[--nopen]].drop = 1;
	}
	free(order);
	free(open);
	return 0;
}

/* The rank a process belongs to, as its identity (or NCCL, later) says. */
static void settle_identity(struct proc *p)
{
	if (p->meta.rank < 0 && p->nccl_rank >= 0) {
		p->meta.rank = p->nccl_rank;
		p->meta.world_size = p->nccl_world;
		snprintf(p->meta.rank_source, sizeof(p->meta.rank_source), "nccl");
	}
	if (!p->identified)
		snprintf(p->meta.rank_source, sizeof(p->meta.rank_source), "unknown");
}

static int cmp_proc(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;
	int64_t kx = x->meta.rank >= 0 ? x->meta.rank : ((int64_t)1 << 40) + x->rank_pid;
	int64_t ky = y->meta.rank >= 0 ? y->meta.rank : ((int64_t)1 << 40) + y->rank_pid;

	if (kx != ky)
		return kx < ky ? -1 : 1;
	return x->vpid < y->vpid ? -1 : x->vpid > y->vpid;
}

struct item {
	uint64_t ts, seq;
	struct rt_vw_event e;
};

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Procs [a, b) are one rank: its events in begin order (the native order). */
static int build_rank(struct reader *r, int a, int b, struct rt_vw_bt2_rank *out)
{
	size_t n = 0, k = 0;
	uint64_t mask = 0;
	struct item *items;

	for (int i = a; i < b; i++) {
		n += r->procs[i].n;
		mask |= r->procs[i].streams;
	}
	out->meta = r->procs[a].meta;
	for (int i = a; i < b; i++) /* the rank's own process, not a forked child */
		if (r->procs[i].vpid == r->procs[i].rank_pid)
			out->meta = r->procs[i].meta;
	if (out->meta.rank >= 0)
		snprintf(out->name, sizeof(out->name), "rank-%05d", out->meta.rank);
	else
		snprintf(out->name, sizeof(out->name), "rank-p%d", out->meta.pid);
	for (int s = 0; s < r->nstreams; s++)
		if (mask & (1ull << s))
			out->discarded += r->stream_discarded[s];
	items = malloc(sizeof(*items) * (n ? n : 1));
	out->ev = malloc(sizeof(*out->ev) * (n ? n : 1));
	if (!items || !out->ev) {
		free(items);
		return -1;
	}
	for (int i = a; i < b; i++) {
		const struct proc *p = &r->procs[i];

		if (p->rank_pid && p->vpid != p->rank_pid) /* a forked child: not the rank */
			continue;
		for (size_t j = 0; j < p->n; j++) {
			const struct rec *rc = &p->recs[j];

			if (rc->drop)
				continue;
			items[k].ts = rc->ts;
			items[k].seq = (uint64_t)(i - a) << 40 | j;
			items[k].e = (struct rt_vw_event){ .id = rc->id, .ts = rc->ts, .dur = rc->dur,
							   .ret = rc->ret, .dev = rc->dev,
							   .pending = rc->pending,
							   .fields = p->bytes + rc->off,
							   .pid = (uint32_t)p->vpid, .tid = rc->tid };
			k++;
		}
	}
	n = k; /* starts paired with their return are gone */
	qsort(items, n, sizeof(*items), cmp_item);
	for (k = 0; k < n; k++)
		out->ev[k] = items[k].e;
	out->n = n;
	free(items);
	return 0;
}

static int build_ranks(struct reader *r, struct rt_vw_bt2 *b)
{
	for (int i = 0; i < r->nprocs; i++) {
		settle_identity(&r->procs[i]);
		if (pair_starts(&r->procs[i]) != 0)
			return -1;
	}
	qsort(r->procs, (size_t)r->nprocs, sizeof(*r->procs), cmp_proc);
	b->ranks = calloc((size_t)r->nprocs + 1, sizeof(*b->ranks));
	if (!b->ranks)
		return -1;
	for (int a = 0; a < r->nprocs;) {
		int e = a + 1;

		while (e < r->nprocs && r->procs[e].meta.rank == r->procs[a].meta.rank &&
		       (r->procs[a].meta.rank >= 0 || r->procs[e].rank_pid == r->procs[a].rank_pid))
			e++;
		if (build_rank(r, a, e, &b->ranks[b->nranks++]) != 0)
			return -1;
		a = e;
	}
	return 0;
}

/* The run id `ranktrace run` wrote in dir, or "". */
static void read_run_id(const char *dir, char run[40])
{
	char path[4200];
	FILE *f;

	run[0] = '\0';
	snprintf(path, sizeof(path), "%s/" RT_VW_LTTNG_RUN_FILE, dir);
	f = fopen(path, "re");
	if (!f)
		return;
	if (!fgets(run, 40, f))
		run[0] = '\0';
	fclose(f);
	run[strcspn(run, "\n")] = '\0';
}

/* Keep the processes of run `run` only ("": all). */
static void keep_run(struct reader *r, const char *run)
{
	int k = 0;

	if (!run[0])
		return;
	for (int i = 0; i < r->nprocs; i++) {
		struct proc *p = &r->procs[i];

		if (p->identified && strcmp(p->run_id, run) == 0) {
			r->procs[k++] = *p;
			continue;
		}
		r->foreign += p->n; /* another run's, or no identity: not this trace's */
		r->events -= p->n;
		free(p->recs);
		free(p->bytes);
	}
	r->nprocs = k;
}

static void reader_free(struct reader *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->nprocs; i++) {
		free(r->procs[i].recs);
		free(r->procs[i].bytes);
	}
	free(r->procs);
	free(r);
}

struct rt_vw_bt2 *rt_vw_bt2_load(const char *dir, char *err, size_t n)
{
	struct reader *r = calloc(1, sizeof(*r));
	char run[40];

	if (!r) {
		snprintf(err, n, "%s: out of memory", dir);
		return NULL;
	}
	if (rt_vw_bt2_read(r, dir, err, n) != 0) {
		reader_free(r);
		return NULL;
	}
	read_run_id(dir, run);
	return rt_vw_bt2_build(r, run, dir, err, n);
}

struct rt_vw_bt2 *rt_vw_bt2_build(struct reader *r, const char *run, const char *dir, char *err,
				  size_t n)
{
	struct rt_vw_bt2 *b = calloc(1, sizeof(*b));

	if (!b) {
		snprintf(err, n, "%s: out of memory", dir);
		reader_free(r);
		return NULL;
	}
	keep_run(r, run);
	if (r->events == 0 && r->nprocs == 0) {
		snprintf(err, n, "%s: an LTTng trace without ranktrace events (%llu other events)",
			 dir, (unsigned long long)r->foreign);
		reader_free(r);
		free(b);
		return NULL;
	}
	b->priv = r;
	b->events = r->events;
	b->foreign = r->foreign;
	if (build_ranks(r, b) != 0) {
		snprintf(err, n, "%s: out of memory", dir);
		rt_vw_bt2_free(b);
		return NULL;
	}
	return b;
}

void rt_vw_bt2_free(struct rt_vw_bt2 *b)
{
	if (!b)
		return;
	for (int i = 0; b->ranks && i < b->nranks; i++)
		free(b->ranks[i].ev);
	free(b->ranks);
	reader_free(b->priv);
	free(b);
}

/* LTTng's session output (DIR/ust, DIR/kernel) or one LTTng CTF trace (its
 * metadata in packets, which our writer never uses). */
bool rt_vw_is_lttng(const char *dir)
{
	char path[4200];
	struct stat st;
	uint32_t magic = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/ust", dir);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return true;
	snprintf(path, sizeof(path), "%s/kernel", dir);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return true;
	snprintf(path, sizeof(path), "%s/metadata", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (read(fd, &magic, 4) != 4)
		magic = 0;
	close(fd);
	return magic == 0x75d11d57u;
}
