/* SPDX-License-Identifier: MIT */
/* device.c - each rank's collectives on the device: enqueued (the API
 * call), started and completed (rt_dev_coll, from ranktrace's NCCL profiler
 * plugin or CUDA events), keyed by (comm_id, seq).
 *
 * Called from the model's pass, one rank per thread: everything here is the
 * rank's own. Memory grows with the rank's collectives (an open-addressing
 * index over an array in enqueue order) once it has device records; before
 * its first, only its newest RT_VW_DEV_WINDOW enqueues are kept (a trace
 * without device records holds 64 per rank, not one per collective: 930 MB
 * of 2 GB at 16,384 ranks x 2,000 events, 700 MB at 8 x 4.1 M). A device record NCCL could not tie
 * to a call (comm_id 0) is only counted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "model_int.h"

static uint64_t hash(uint64_t comm, uint32_t seq)
{
	uint64_t h = (comm ^ ((uint64_t)seq * 0x9E3779B97F4A7C15ull)) * 0xff51afd7ed558ccdull;

	return h ^ (h >> 29);
}

/* The index over d->v[0..n) rebuilt for cap records (2 x cap slots). */
static int reindex(struct rt_vw_devlog *d, uint32_t cap)
{
	uint32_t icap = cap * 2, *ix = malloc(sizeof(*ix) * icap);

	if (!ix)
		return -1;
	memset(ix, 0xff, sizeof(*ix) * icap);
	for (uint32_t i = 0; i < d->n; i++) {
		uint32_t k = (uint32_t)hash(d->v[i].comm_id, d->v[i].seq) & (icap - 1);

		while (ix[k] != UINT32_MAX)
			k = (k + 1) & (icap - 1);
		ix[k] = i;
	}
	free(d->ix);
	d->ix = ix;
	d->cap = cap;
	return 0;
}

/* Room for one more record: the log doubles (16 records first). A rank with
 * no device record yet keeps only its newest RT_VW_DEV_WINDOW enqueues: the
 * oldest half goes when it is full (what devhang asks of them, whether the
 * rank enqueued a collective, its entered sequence answers: dropped). */
static int grow(struct rt_vw_devlog *d)
{
	uint32_t cap = d->cap ? d->cap * 2 : 16;
	struct rt_vw_devcoll *v;

	if (!d->records && d->cap >= RT_VW_DEV_WINDOW) {
		uint32_t keep = RT_VW_DEV_WINDOW / 2;

		memmove(d->v, d->v + d->n - keep, sizeof(*d->v) * keep);
		d->dropped += d->n - keep;
		d->n = keep;
		return reindex(d, d->cap);
	}
	v = realloc(d->v, sizeof(*v) * cap);
	if (!v)
		return -1;
	d->v = v;
	return reindex(d, cap);
}

/* Where (comm, seq) stands in d's index, or the empty slot it would take. */
static uint32_t slot(const struct rt_vw_devlog *d, uint64_t comm, uint32_t seq)
{
	uint32_t k = (uint32_t)hash(comm, seq) & (d->cap * 2 - 1);

	while (d->ix[k] != UINT32_MAX &&
	       (d->v[d->ix[k]].comm_id != comm || d->v[d->ix[k]].seq != seq))
		k = (k + 1) & (d->cap * 2 - 1);
	return k;
}

/* The record of (comm, seq), made when missing; NULL out of memory. */
static struct rt_vw_devcoll *entry(struct rt_vw_devlog *d, uint64_t comm, uint32_t seq)
{
	uint32_t k;

	if (d->n == d->cap && grow(d) != 0)
		return NULL;
	k = slot(d, comm, seq);
	if (d->ix[k] != UINT32_MAX)
		return &d->v[d->ix[k]];
	d->ix[k] = d->n;
	d->v[d->n] = (struct rt_vw_devcoll){ .comm_id = comm, .seq = seq };
	return &d->v[d->n++];
}

const struct rt_vw_devcoll *rt_vw_dev_find(const struct rt_vw_devlog *d, uint64_t comm, uint32_t seq)
{
	uint32_t k;

	if (!d || !d->cap)
		return NULL;
	k = slot(d, comm, seq);
	return d->ix[k] == UINT32_MAX ? NULL : &d->v[d->ix[k]];
}

bool rt_vw_dev_done(const struct rt_vw_devlog *d, const struct rt_vw_devcoll *c)
{
	if (!c || !c->done_ts)
		return false;
	for (int k = 0; d && k < d->naborted; k++)
		if (d->aborted[k].comm_id == c->comm_id && d->aborted[k].ts <= c->done_ts)
			return false;
	return true;
}

/* ncclCommAbort of comm entered at ts (the first; a few communicators) */
static void on_abort(struct rt_vw_devlog *d, uint64_t comm, uint64_t ts)
{
	int k;

	for (k = 0; k < d->naborted; k++)
		if (d->aborted[k].comm_id == comm)
			return;
	if (comm && k < (int)(sizeof(d->aborted) / sizeof(d->aborted[0]))) {
		d->aborted[k].comm_id = comm;
		d->aborted[k].ts = ts;
		d->naborted++;
	}
}

static struct rt_vw_devlog *log_of(struct rt_vw_rank *r)
{
	if (!r->dev)
		r->dev = calloc(1, sizeof(*r->dev));
	return r->dev;
}

static void on_dev_coll(struct rt_vw_devlog *d, const struct rt_vw_event *e)
{
	uint64_t comm = (uint64_t)rt_vw_fld(e, RT_FN_comm_id);
	int phase = (int)rt_vw_fld(e, RT_FN_dev_phase);
	struct rt_vw_devcoll *c;

	if (!d->source)
		d->source = (uint8_t)rt_vw_fld(e, RT_FN_source);
	d->started += phase == RT_DEV_STARTED;
	d->completed += phase == RT_DEV_COMPLETED;
	if (!comm) {
		d->unbound++;
		return;
	}
	c = entry(d, comm, (uint32_t)rt_vw_fld(e, RT_FN_seq));
	if (!c)
		return;
	if (phase == RT_DEV_STARTED && !c->start_ts)
		c->start_ts = e->ts;
	else if (phase == RT_DEV_COMPLETED)
		c->done_ts = e->ts;
}

/* A device record the tracer could not keep: counted, and its collective
 * (when the drop names one) marked as not known on this device. */
static void on_dev_drop(struct rt_vw_devlog *d, const struct rt_vw_event *e)
{
	uint64_t comm = (uint64_t)rt_vw_fld(e, RT_FN_comm_id);
	uint32_t seq = (uint32_t)rt_vw_fld(e, RT_FN_seq);
	unsigned why = (unsigned)rt_vw_fld(e, RT_FN_drop_reason);
	struct rt_vw_devcoll *c;

	if (why == RT_DROP_NONE || why >= RT_DROP_COUNT_)
		why = RT_DROP_NO_EVENTS; /* dropped all the same; the reader says a bad reason */
	d->ndrops++;
	d->drop_by[why]++;
	if (!comm || !seq)
		return;
	d->drop_lo = !d->drop_lo || seq < d->drop_lo ? seq : d->drop_lo;
	d->drop_hi = seq > d->drop_hi ? seq : d->drop_hi;
	c = entry(d, comm, seq);
	if (c)
		c->dropped = (uint8_t)why;
}

bool rt_vw_dev_dropped(const struct rt_vw_trace *t, uint64_t comm, uint32_t seq)
{
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_devlog *d = t->ranks[i].dev;
		const struct rt_vw_devcoll *c;

		if (!t->ranks[i].readable || !d || !d->ndrops)
			continue;
		c = rt_vw_dev_find(d, comm, seq);
		if (c && c->dropped)
			return true;
	}
	return false;
}

uint64_t rt_vw_dev_drops(const struct rt_vw_trace *t)
{
	uint64_t n = 0;

	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].readable && t->ranks[i].dev)
			n += t->ranks[i].dev->ndrops;
	return n;
}

/* rt_group (recorded at the outermost ncclGroupEnd, after the calls it
 * holds): its collectives are this rank's newest colls enqueues, launched
 * at once. A thread's group holds its own calls; calls
 * another thread made inside it would be counted in (none seen so far). */
static void on_group(struct rt_vw_devlog *d, const struct rt_vw_event *e)
{
	uint32_t g = (uint32_t)rt_vw_fld(e, RT_FN_group), colls = (uint32_t)rt_vw_fld(e, RT_FN_colls);

	/* no further back than colls entries: a call the log does not hold
	 * (comm_id 0) leaves an older one out rather than pulling it in */
	for (uint32_t i = d->n; g && colls && i-- > 0 && d->n - i <= colls;)
		if (!d->v[i].group && d->v[i].enq_ts)
			d->v[i].group = g;
}

bool rt_vw_dev_event(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	struct rt_vw_devlog *d;
	uint64_t comm;

	if (e->id == RT_ID_rt_dev_coll || e->id == RT_ID_rt_dev_source ||
	    e->id == RT_ID_rt_dev_drop) {
		d = log_of(r);
		if (!d)
			return true;
		d->records = true; /* from now on every collective is kept */
		if (e->id == RT_ID_rt_dev_coll)
			on_dev_coll(d, e);
		else if (e->id == RT_ID_rt_dev_drop)
			on_dev_drop(d, e);
		else if (!d->source_seen) {
			d->source_seen = true;
			d->source = (uint8_t)rt_vw_fld(e, RT_FN_source);
			d->version = (int)rt_vw_fld(e, RT_FN_version);
		}
		return true;
	}
	/* a rank with collectives has its log already */
	if (e->id == RT_ID_ncclCommAbort && r->dev)
		on_abort(r->dev, (uint64_t)rt_vw_fld(e, RT_FN_comm_id), e->ts);
	if (e->id == RT_ID_rt_group && r->dev) /* comms.c counts it too */
		on_group(r->dev, e);
	if (rt_events[e->id].role != RT_R_COLL)
		return false;
	comm = (uint64_t)rt_vw_fld(e, RT_FN_comm_id);
	if (!comm || !(d = log_of(r)))
		return false;
	struct rt_vw_devcoll *c = entry(d, comm, (uint32_t)rt_vw_fld(e, RT_FN_seq));

	if (c) {
		c->enq_ts = e->ts;
		c->kind = (uint8_t)rt_coll_kind_of(e->id);
		c->bytes = (uint64_t)rt_vw_fld(e, RT_FN_count) *
			   rt_nccl_dtype_size(rt_vw_fld(e, RT_FN_datatype));
		d->enqueued++;
	}
	return false;
}

bool rt_vw_dev_any(const struct rt_vw_trace *t)
{
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].dev && (t->ranks[i].dev->started || t->ranks[i].dev->source_seen ||
					t->ranks[i].dev->ndrops))
			return true;
	return false;
}

void rt_vw_dev_free(struct rt_vw_rank *r)
{
	if (!r->dev)
		return;
	free(r->dev->v);
	free(r->dev->ix);
	free(r->dev);
	r->dev = NULL;
}

