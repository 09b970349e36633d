/* SPDX-License-Identifier: MIT */
/* comm_index.c - the job's communicators across its ranks (comms.h): one
 * entry per communicator id that any rank's rt_comm records name, with its
 * members (global ranks, in the order of their places in it), how it was
 * made, its state and the calls its members made on it; kept in a hash by
 * id, so finding one and listing all cost the same at 16,384 ranks as at 4
 * (built once: every rank's communicators visited once, members sorted per
 * communicator). What `view` lists and findings say of a communicator.
 *
 * Built after the model's pass (load/load.c, before the analyses), one
 * thread; allocates; read-only afterwards. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "model_int.h"

struct rt_vw_comm_index {
	struct rt_vw_comm_entry *v; /* in by_made's order */
	int n;
	int *slot;                  /* open addressing on id: index + 1, 0 empty */
	size_t mask;
	struct rt_vw_comm_member *members; /* every entry's, one after another */
};

static size_t hash(uint64_t id)
{
	id ^= id >> 33;
	id *= 0xff51afd7ed558ccdull;
	return (size_t)(id ^ (id >> 33));
}

/* The slot of id: its entry's, or the empty one it would take. */
static int *slot_of(const struct rt_vw_comm_index *x, const struct rt_vw_comm_entry *v, uint64_t id)
{
	size_t i = hash(id) & x->mask;

	while (x->slot[i] && v[x->slot[i] - 1].id != id)
		i = (i + 1) & x->mask;
	return &x->slot[i];
}

/* Each member's record counted into its communicator's entry. */
static void count_member(struct rt_vw_comm_entry *c, const struct rt_vw_rank_comm *k)
{
	if (!c->nmembers++ || k->made_ts < c->made_ts)
		c->made_ts = k->made_ts;
	if (!c->k || (k->rank >= 0 && (c->k->rank < 0 || k->rank < c->k->rank)))
		c->k = k; /* the lowest place's record says how it was made */
	if (c->nmembers == 1 || k->colls > c->colls_most)
		c->colls_most = k->colls;
	if (c->nmembers == 1 || k->colls < c->colls_fewest)
		c->colls_fewest = k->colls;
	c->sends += k->sends;
	c->recvs += k->recvs;
	c->being_made += k->state == 0;
	c->failed += k->state == 2;
	c->ended += k->end_ts && k->end_role == RT_R_COMM_END;
	c->revoked += k->end_ts && k->end_role == RT_R_COMM_REVOKE;
}

/* Pass 1: an entry per id, its members counted. -ENOMEM. */
static int gather(struct rt_vw_comm_index *x, const struct rt_vw_trace *t, size_t records)
{
	size_t cap = 16;

	while (cap < 2 * records)
		cap *= 2;
	x->mask = cap - 1;
	if (!(x->slot = calloc(cap, sizeof(*x->slot))) || !(x->v = calloc(records, sizeof(*x->v))))
		return -ENOMEM;
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank_comms *rc = t->ranks[i].rcomms;

		for (int j = 0; rc && j < rc->n; j++) {
			int *s = slot_of(x, x->v, rc->v[j].id);

			if (!*s) {
				x->v[x->n] = (struct rt_vw_comm_entry){ .id = rc->v[j].id };
				*s = ++x->n;
			}
			count_member(&x->v[*s - 1], &rc->v[j]);
		}
	}
	return 0;
}

/* Inits before splits and shrinks; then the members' N-th call of that
 * kind (a mesh's shard groups before its replicate groups), its color,
 * when made. The same order on every run of a job. */
static int by_made(const void *a, const void *b)
{
	const struct rt_vw_comm_entry *x = a, *y = b;
	bool dx = x->k->how == RT_COMM_SPLIT || x->k->how == RT_COMM_SHRINK;
	bool dy = y->k->how == RT_COMM_SPLIT || y->k->how == RT_COMM_SHRINK;

	if (dx != dy)
		return dx ? 1 : -1;
	if (x->k->ordinal != y->k->ordinal)
		return x->k->ordinal < y->k->ordinal ? -1 : 1;
	if (x->k->color != y->k->color)
		return x->k->color < y->k->color ? -1 : 1;
	if (x->made_ts != y->made_ts)
		return x->made_ts < y->made_ts ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int by_place(const void *a, const void *b)
{
	const struct rt_vw_comm_member *x = a, *y = b;

	if (x->place != y->place)
		return x->place < y->place ? -1 : 1;
	return x->global < y->global ? -1 : x->global > y->global;
}

/* Pass 2: the entries in order, the hash rebuilt on it, each entry's
 * members placed and sorted by their places. -ENOMEM. */
static int place_members(struct rt_vw_comm_index *x, const struct rt_vw_trace *t, size_t records)
{
	size_t at = 0;

	qsort(x->v, (size_t)x->n, sizeof(*x->v), by_made);
	memset(x->slot, 0, (x->mask + 1) * sizeof(*x->slot));
	if (!(x->members = calloc(records ? records : 1, sizeof(*x->members))))
		return -ENOMEM;
	for (int i = 0; i < x->n; i++) {
		*slot_of(x, x->v, x->v[i].id) = i + 1;
		x->v[i].members = x->members + at;
		at += (size_t)x->v[i].nmembers;
		x->v[i].nmembers = 0; /* counted again as placed */
	}
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		for (int j = 0; r->rcomms && j < r->rcomms->n; j++) {
			const struct rt_vw_rank_comm *k = &r->rcomms->v[j];
			struct rt_vw_comm_entry *c = &x->v[*slot_of(x, x->v, k->id) - 1];

			c->members[c->nmembers++] = (struct rt_vw_comm_member){
				.place = k->rank, .key = k->key, .ri = i,
				.global = k->global_rank >= 0 ? k->global_rank : r->meta.rank };
		}
	}
	for (int i = 0; i < x->n; i++)
		qsort(x->v[i].members, (size_t)x->v[i].nmembers, sizeof(*x->members), by_place);
	return 0;
}

void rt_vw_comm_index_free(struct rt_vw_trace *t)
{
	struct rt_vw_comm_index *x = t->cindex;

	if (!x)
		return;
	free(x->v);
	free(x->slot);
	free(x->members);
	free(x);
	t->cindex = NULL;
}

int rt_vw_comm_index(struct rt_vw_trace *t)
{
	struct rt_vw_comm_index *x;
	size_t records = 0;
	int rc;

	rt_vw_comm_index_free(t);
	for (int i = 0; i < t->nranks; i++)
		records += t->ranks[i].rcomms ? (size_t)t->ranks[i].rcomms->n : 0;
	if (!records)
		return 0;
	if (!(x = calloc(1, sizeof(*x))))
		return -ENOMEM;
	t->cindex = x;
	rc = gather(x, t, records);
	if (!rc)
		rc = place_members(x, t, records);
	if (rc)
		rt_vw_comm_index_free(t);
	return rc;
}

int rt_vw_comm_count(const struct rt_vw_trace *t)
{
	return t->cindex ? t->cindex->n : 0;
}

const struct rt_vw_comm_entry *rt_vw_comm_at(const struct rt_vw_trace *t, int i)
{
	return t->cindex && i >= 0 && i < t->cindex->n ? &t->cindex->v[i] : NULL;
}

const struct rt_vw_comm_entry *rt_vw_comm_entry(const struct rt_vw_trace *t, uint64_t id)
{
	const struct rt_vw_comm_index *x = t->cindex;
	int s;

	if (!x || !id)
		return NULL;
	s = *slot_of(x, x->v, id);
	return s ? &x->v[s - 1] : NULL;
}
