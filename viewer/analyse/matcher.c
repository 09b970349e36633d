/* SPDX-License-Identifier: MIT */
/* matcher.c - collectives matched across ranks, as PyTorch's Flight
 * Recorder analyser does.
 *
 * Each collective joins its (communicator, sequence) entry; an entry is
 * checked (same kind, count, datatype, op, root on every rank) and freed
 * once every rank of the communicator has reported it. The communicator's
 * size is learned from its init events (a split records its size, from
 * ncclCommCount; without it the ranks that joined are counted) and from
 * the rt_comm record of every communicator (the only word of a non-blocking
 * split's size: its call returns before NCCL knows it). Each rank's
 * own init precedes its collectives, whatever the merge's window does. What
 * stays open at the end is a collective some ranks never reached
 * (matcher_finish). Memory: open collectives only.
 *
 * One thread: the parallel pass's replay (parallel.c) or a test feeding
 * rank models through rt_vw_matcher_sink. Calls nothing of the pass. */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "model.h"
#include "model_int.h"
#include "rt_util.h"

struct rt_vw_centry {
	uint64_t comm_id;
	uint32_t seq;
	int nranks;     /* ranks expected */
	int seen;
	bool local;     /* a ncclCommInitAll communicator: all its ranks are one trace rank's */
	struct rt_vw_sig *by_rank; /* indexed by trace rank index */
	struct rt_vw_centry *next;
};

static size_t comm_hash(uint64_t id)
{
	id ^= id >> 33;
	id *= 0xff51afd7ed558ccdull;
	return (size_t)(id ^ (id >> 33));
}

/* t->comms by id: open addressing on t->comm_slots (index + 1; 0 empty),
 * so a trace of 16,384 ranks and as many communicators looks one up in
 * constant time (every collective's entry and every rank's learn asks). */
static struct rt_vw_comm *comm_find(const struct rt_vw_trace *t, uint64_t id)
{
	for (size_t i = comm_hash(id) & t->comm_mask; t->comm_slots && t->comm_slots[i];
	     i = (i + 1) & t->comm_mask)
		if (t->comms[t->comm_slots[i] - 1].id == id)
			return &t->comms[t->comm_slots[i] - 1];
	return NULL;
}

static void comm_slot(struct rt_vw_trace *t, int k)
{
	size_t i = comm_hash(t->comms[k].id) & t->comm_mask;

	while (t->comm_slots[i])
		i = (i + 1) & t->comm_mask;
	t->comm_slots[i] = k + 1;
}

/* The slots at most half full: twice as many, every communicator placed again. */
static bool comm_slots_grow(struct rt_vw_trace *t)
{
	size_t cap = t->comm_slots ? 2 * (t->comm_mask + 1) : 64;
	int *slots;

	if ((size_t)t->ncomms + 1 <= (t->comm_slots ? (t->comm_mask + 1) / 2 : 0))
		return true;
	if (!(slots = calloc(cap, sizeof(*slots))))
		return false;
	free(t->comm_slots);
	t->comm_slots = slots;
	t->comm_mask = cap - 1;
	for (int k = 0; k < t->ncomms; k++)
		comm_slot(t, k);
	return true;
}

static struct rt_vw_comm *comm_add(struct rt_vw_trace *t, uint64_t id)
{
	if (!comm_slots_grow(t) || !RT_GROW(t->comms, t->ncomms, t->comms_cap, 16, INT_MAX))
		return NULL;
	t->comms[t->ncomms] = (struct rt_vw_comm){ id, 0, false, false };
	comm_slot(t, t->ncomms);
	return &t->comms[t->ncomms++];
}

int rt_vw_comm_size(const struct rt_vw_trace *t, uint64_t id)
{
	const struct rt_vw_comm *c = comm_find(t, id);

	return c && c->nranks > 0 ? c->nranks : t->nranks;
}

static int comm_nranks(struct rt_vw_matcher *m, uint64_t id)
{
	return rt_vw_comm_size(m->t, id);
}

static bool comm_local(struct rt_vw_matcher *m, uint64_t id)
{
	const struct rt_vw_comm *c = comm_find(m->t, id);

	return c && c->local;
}

void rt_vw_comm_learn(struct rt_vw_matcher *m, uint64_t id, int nranks, bool local)
{
	struct rt_vw_comm *c;

	if (nranks <= 0)
		return;
	c = comm_find(m->t, id);
	if (c && c->split) { /* counted as its ranks joined: the recorded size wins */
		c->nranks = nranks;
		c->split = false;
		return;
	}
	if (c)
		return;
	c = comm_add(m->t, id);
	if (c) {
		c->nranks = nranks;
		c->local = local;
	}
}

void rt_vw_comm_join(struct rt_vw_matcher *m, uint64_t id)
{
	struct rt_vw_comm *c;

	c = comm_find(m->t, id);
	if (!c && (c = comm_add(m->t, id)) != NULL)
		c->split = true;
	if (c && c->split)
		c->nranks++;
}

static bool same_sig(const struct rt_vw_sig *a, const struct rt_vw_sig *b)
{
	return a->kind == b->kind && a->count == b->count && a->dtype == b->dtype &&
	       a->root == b->root && (a->op == b->op || !rt_ck_has_op(a->kind));
}

bool rt_vw_same_call(const struct rt_vw_call_sig *a, const struct rt_vw_call_sig *b)
{
	struct rt_vw_sig x = { a->kind, a->dtype, a->op, 1, a->root, a->count };
	struct rt_vw_sig y = { b->kind, b->dtype, b->op, 1, b->root, b->count };

	return same_sig(&x, &y);
}

/* The earliest divergence so far is kept for the stall analysis; true only
 * for the first mismatch, the one reported (the rest follow from it). */
static bool first_mismatch(struct rt_vw_matcher *m, const struct rt_vw_centry *e)
{
	struct rt_vw_trace *t = m->t;

	if (!t->diverged || e->seq < t->div_seq) {
		t->diverged = true;
		t->div_comm = e->comm_id;
		t->div_seq = e->seq;
	}
	if (m->mismatch_reported)
		return false;
	m->mismatch_reported = true;
	return true;
}

/* The collective of entry e as rank signature g called it. */
static struct rt_vw_fcall fcall(const struct rt_vw_centry *e, const struct rt_vw_sig *g)
{
	return (struct rt_vw_fcall){ .comm = e->comm_id, .seq = e->seq, .sig = true, .kind = g->kind,
				     .dtype = g->dtype, .op = g->op, .root = g->root,
				     .count = g->count,
				     .bytes = g->count * rt_nccl_dtype_size(g->dtype) };
}

static bool skipped_here(const struct rt_vw_trace *t, int r, const struct rt_vw_centry *e)
{
	return t->ranks[r].skip_matched == e->comm_id;
}

/* All ranks that reported seq: the minority signature is the divergence. */
static void check_entry(struct rt_vw_matcher *m, struct rt_vw_centry *e)
{
	struct rt_vw_trace *t = m->t;
	int groups[64], sizes[64], ng = 0;
	int major = 0, minor;
	struct rt_vw_finding *f;

	for (int r = 0; r < t->nranks && ng < 64; r++) {
		int g;

		if (!e->by_rank[r].seen)
			continue;
		for (g = 0; g < ng; g++)
			if (same_sig(&e->by_rank[groups[g]], &e->by_rank[r]))
				break;
		if (g == ng) {
			groups[ng] = r;
			sizes[ng++] = 0;
		}
		sizes[g]++;
	}
	if (ng <= 1)
		return;
	for (int g = 1; g < ng; g++)
		if (sizes[g] > sizes[major])
			major = g;
	/* a tie (1 against 1 in a group of 2): the side of a rank an injected
	 * skip left a collective short on this communicator is the divergence */
	for (int g = 0; g < ng; g++)
		if (g != major && sizes[g] == sizes[major] && skipped_here(t, groups[major], e) &&
		    !skipped_here(t, groups[g], e))
			major = g;
	minor = major == 0 ? 1 : 0;
	if (!first_mismatch(m, e))
		return;
	f = rt_vw_finding_add(t, RT_FK_COLLECTIVE_MISMATCH, -1);
	for (int r = 0; f && r < t->nranks; r++)
		if (e->by_rank[r].seen && !same_sig(&e->by_rank[r], &e->by_rank[groups[major]]))
			rt_vw_finding_rank(f, t->ranks[r].meta.rank);
	rt_vw_fv_int(f, RT_FV_ranks_same, sizes[major]);
	if (f) {
		f->coll = fcall(e, &e->by_rank[groups[major]]);
		f->other = fcall(e, &e->by_rank[groups[minor]]);
	}
}

/* Two devices of one process called different collectives at one sequence
 * of their ncclCommInitAll communicator. */
static void local_mismatch(struct rt_vw_matcher *m, struct rt_vw_centry *e, int ri, const struct rt_vw_sig *s)
{
	struct rt_vw_finding *f;

	if (!first_mismatch(m, e))
		return;
	f = rt_vw_finding_add(m->t, RT_FK_DEVICES_MISMATCH, -1);
	rt_vw_finding_rank(f, m->t->ranks[ri].meta.rank);
	if (f) {
		f->coll = fcall(e, &e->by_rank[ri]);
		f->other = fcall(e, s);
	}
}

static void entry_free(struct rt_vw_centry *e)
{
	free(e->by_rank);
	free(e);
}

void rt_vw_match(struct rt_vw_matcher *m, int ri, uint64_t comm_id, uint32_t seq, struct rt_vw_sig s)
{
	size_t b = (size_t)((comm_id ^ (seq * 0x9E3779B97F4A7C15ull)) % RT_VW_CBUCKETS);
	struct rt_vw_centry **link, *e;

	if (!seq) { /* a rank's first injected skip (model.c): no collective to match */
		m->t->ranks[ri].skip_matched = comm_id;
		return;
	}

	for (link = &m->buckets[b]; (e = *link); link = &e->next)
		if (e->comm_id == comm_id && e->seq == seq)
			break;
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		e->by_rank = calloc((size_t)m->t->nranks, sizeof(*e->by_rank));
		if (!e->by_rank) {
			free(e);
			return;
		}
		e->comm_id = comm_id;
		e->seq = seq;
		e->nranks = comm_nranks(m, comm_id);
		e->local = comm_local(m, comm_id);
		e->next = m->buckets[b];
		m->buckets[b] = e;
		link = &m->buckets[b];
		if (++m->open > m->open_peak)
			m->open_peak = m->open;
	}
	if (e->by_rank[ri].seen) {
		/* one process, several devices (ncclCommInitAll): each of its
		 * ranks arrives from the same trace rank */
		if (!e->local)
			return;
		if (!same_sig(&e->by_rank[ri], &s))
			local_mismatch(m, e, ri, &s);
	}
	s.seen = 1;
	if (!e->by_rank[ri].seen)
		e->by_rank[ri] = s;
	if (++e->seen < e->nranks)
		return;
	check_entry(m, e);
	*link = e->next;
	entry_free(e);
	m->open--;
}

static void sink_learn(void *m, uint64_t comm, int nranks, bool local)
{
	rt_vw_comm_learn(m, comm, nranks, local);
}

static void sink_join(void *m, uint64_t comm)
{
	rt_vw_comm_join(m, comm);
}

static void sink_match(void *m, int ri, uint64_t comm, uint32_t seq, const struct rt_vw_sig *s)
{
	rt_vw_match(m, ri, comm, seq, *s);
}

struct rt_vw_sink rt_vw_matcher_sink(struct rt_vw_matcher *m)
{
	return (struct rt_vw_sink){ sink_learn, sink_join, sink_match, m };
}

/* Did trace rank r lack entry e though a member of its communicator? Only
 * members are blamed: a rank whose records show it outside the
 * communicator never had the collective to call (issue 27). */
static bool lacks(const struct rt_vw_trace *t, const struct rt_vw_centry *e, int r)
{
	return !e->by_rank[r].seen && !rt_vw_comm_outside(&t->ranks[r], e->comm_id);
}

/* Does a member of e's communicator lack it? An entry stays open whose
 * communicator's size the matcher never learnt (a trace without rt_comm
 * records, of a non-blocking split), with every member in it. */
static bool lacking(const struct rt_vw_trace *t, const struct rt_vw_centry *e)
{
	for (int r = 0; r < t->nranks; r++)
		if (lacks(t, e, r))
			return true;
	return false;
}

/* The earliest collective still open at the end, when no mismatch was
 * reported: "never called by" the members of its communicator that lack it. */
static void never_called(struct rt_vw_trace *t, const struct rt_vw_centry *first)
{
	int any = -1, lack = 0;
	struct rt_vw_finding *f;

	for (int r = 0; r < t->nranks; r++) {
		if (first->by_rank[r].seen)
			any = r;
		else
			lack += lacks(t, first, r);
	}
	/* "never called" rests on the absence of events: only from ranks
	 * whose whole run is in the trace and that were not stopped from
	 * outside before they got there (an interrupted job's ranks are a
	 * collective apart; a hang before it is hang.c's to tell), and not
	 * when one that lacks it died: NCCL returns once a collective is
	 * enqueued, so the others are a collective further on when it dies
	 * (its death is the failure, the missing collective its consequence) */
	for (int r = 0; r < t->nranks && lack; r++)
		if (lacks(t, first, r) &&
		    (!rt_vw_evidence_complete(t, r) || t->ranks[r].interrupted ||
		     (t->ranks[r].signo && !t->ranks[r].interrupted) ||
		     t->ranks[r].died))
			lack = 0;
	if (!lack || t->nmissing)
		return;
	f = rt_vw_finding_add(t, RT_FK_NEVER_CALLED, -1);
	for (int r = 0; f && r < t->nranks; r++)
		if (lacks(t, first, r))
			rt_vw_finding_rank(f, t->ranks[r].meta.rank);
	if (f) {
		f->coll = (struct rt_vw_fcall){ .comm = first->comm_id, .seq = first->seq };
		if (any >= 0)
			f->coll = fcall(first, &first->by_rank[any]);
	}
	if (!t->diverged) {
		t->diverged = true;
		t->div_comm = first->comm_id;
		t->div_seq = first->seq;
	}
}

/* Collectives some ranks reached and others did not. */
void rt_vw_matcher_finish(struct rt_vw_matcher *m)
{
	struct rt_vw_centry *first = NULL;

	for (int b = 0; b < RT_VW_CBUCKETS; b++)
		for (struct rt_vw_centry *e = m->buckets[b]; e; e = e->next) {
			check_entry(m, e);
			if ((!first || e->seq < first->seq) && lacking(m->t, e))
				first = e;
		}
	if (first && !m->mismatch_reported)
		never_called(m->t, first);
	for (int b = 0; b < RT_VW_CBUCKETS; b++) {
		struct rt_vw_centry *e = m->buckets[b];

		while (e) {
			struct rt_vw_centry *n = e->next;

			entry_free(e);
			e = n;
		}
		m->buckets[b] = NULL;
	}
}
