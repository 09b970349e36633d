/* SPDX-License-Identifier: MIT */
/* comms.c - a rank's communicators and point-to-point calls, read from its
 * trace (comms.h): rt_comm (each communicator, however made: the latest
 * record wins, a non-blocking one's second says it was made), the end of
 * one (ncclCommDestroy/Abort, ncclCommRevoke), ncclSend/ncclRecv with their
 * peer and per-peer number, rt_dev_p2p tied to them by (communicator,
 * peer, direction, number), rt_group. Allocates as the trace grows (the
 * model's pass, one rank per thread). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "model_int.h"
#include "rt_util.h"

static struct rt_vw_rank_comms *comms_of(struct rt_vw_rank *r)
{
	if (!r->rcomms)
		r->rcomms = calloc(1, sizeof(*r->rcomms));
	return r->rcomms;
}

static struct rt_vw_rank_comm *find(struct rt_vw_rank_comms *c, uint64_t id)
{
	if (c->last < c->n && c->v[c->last].id == id)
		return &c->v[c->last];
	for (int i = 0; i < c->n; i++)
		if (c->v[i].id == id) {
			c->last = i;
			return &c->v[i];
		}
	return NULL;
}

const struct rt_vw_rank_comm *rt_vw_rank_comm_of(const struct rt_vw_rank *r, uint64_t id)
{
	return r->rcomms ? find(r->rcomms, id) : NULL;
}

bool rt_vw_comm_outside(const struct rt_vw_rank *r, uint64_t id)
{
	return id && r->rcomms && r->rcomms->n > 0 && !find(r->rcomms, id);
}

const struct rt_vw_rank_comm *rt_vw_comm_any(const struct rt_vw_trace *t, uint64_t id)
{
	const struct rt_vw_comm_entry *c = rt_vw_comm_entry(t, id);

	return c ? c->k : NULL;
}

int rt_vw_comm_members(const struct rt_vw_trace *t, uint64_t id, int *out, int cap)
{
	const struct rt_vw_comm_entry *c = rt_vw_comm_entry(t, id);
	int n = 0;

	for (; c && n < c->nmembers && n < cap && n < RT_VW_FINDING_RANKS; n++)
		out[n] = c->members[n].global;
	return n;
}

static void on_comm(struct rt_vw_rank_comms *c, const struct rt_vw_event *e)
{
	uint64_t id = (uint64_t)rt_vw_fld(e, RT_FN_comm_id);
	struct rt_vw_rank_comm *k = find(c, id);
	char text[65];

	if (!id)
		return;
	if (!k) {
		if (!RT_GROW(c->v, c->n, c->cap, 8, INT32_MAX))
			return;
		k = &c->v[c->n++];
		*k = (struct rt_vw_rank_comm){ .id = id, .made_ts = e->ts };
	}
	k->parent = (uint64_t)rt_vw_fld(e, RT_FN_parent_id);
	k->nranks = (int)rt_vw_fld(e, RT_FN_nranks);
	k->rank = (int)rt_vw_fld(e, RT_FN_rank);
	k->global_rank = (int)rt_vw_fld(e, RT_FN_global_rank);
	k->how = (int)rt_vw_fld(e, RT_FN_how);
	k->color = (int)rt_vw_fld(e, RT_FN_color);
	k->key = (int)rt_vw_fld(e, RT_FN_key);
	k->ordinal = (int)rt_vw_fld(e, RT_FN_ordinal);
	k->device = (int)rt_vw_fld(e, RT_FN_device);
	k->state = (int)rt_vw_fld(e, RT_FN_state);
	rt_field_text(e->id, e->fields, RT_FN_excluded, text);
	snprintf(k->excluded, sizeof(k->excluded), "%s", text);
}

static void on_p2p_call(struct rt_vw_rank_comms *c, const struct rt_vw_event *e)
{
	struct rt_vw_p2p *p;

	struct rt_vw_rank_comm *k = find(c, (uint64_t)rt_vw_fld(e, RT_FN_comm_id));
	bool send = rt_field_at[e->id][RT_FN_sendbuff] >= 0; /* a Recv has a receive buffer */

	if (k && rt_vw_fld(e, RT_FN_seq)) {
		k->sends += send;
		k->recvs += !send;
	}
	if (!RT_GROW(c->p, c->np, c->pcap, 64, UINT32_MAX))
		return;
	p = &c->p[c->np++];
	*p = (struct rt_vw_p2p){ .comm_id = (uint64_t)rt_vw_fld(e, RT_FN_comm_id), .ts = e->ts,
				 .dur = e->dur, .seq = (uint32_t)rt_vw_fld(e, RT_FN_seq),
				 .peer = (int)rt_vw_fld(e, RT_FN_peer), .ret = e->ret,
				 .count = (uint64_t)rt_vw_fld(e, RT_FN_count),
				 .dtype = (uint8_t)rt_vw_fld(e, RT_FN_datatype), .pending = e->pending,
				 .send = send };
}

/* rt_dev_p2p: the call it is, searched from the newest. */
static void on_dev_p2p(struct rt_vw_rank_comms *c, const struct rt_vw_event *e)
{
	uint64_t comm = (uint64_t)rt_vw_fld(e, RT_FN_comm_id);
	uint32_t seq = (uint32_t)rt_vw_fld(e, RT_FN_seq);
	int peer = (int)rt_vw_fld(e, RT_FN_peer);
	bool send = rt_vw_fld(e, RT_FN_p2p_send) != 0;

	for (uint32_t i = c->np; comm && i-- > 0;) {
		struct rt_vw_p2p *p = &c->p[i];

		if (p->comm_id != comm || p->seq != seq || p->peer != peer || p->send != send)
			continue;
		if (rt_vw_fld(e, RT_FN_dev_phase) == RT_DEV_STARTED)
			p->dev_start = e->ts;
		else
			p->dev_done = e->ts;
		return;
	}
	c->unbound_p2p++;
}

static void on_end(struct rt_vw_rank_comms *c, const struct rt_vw_event *e, int role)
{
	struct rt_vw_rank_comm *k = find(c, (uint64_t)rt_vw_fld(e, RT_FN_comm_id));

	if (k && !k->end_ts && !e->pending && e->ret == 0) {
		k->end_ts = e->ts;
		k->end_role = role;
	}
}

/* A collective on a communicator of this rank: counted there when numbered
 * (an injected skip is not: NCCL never saw it). */
static void on_coll(struct rt_vw_rank_comms *c, const struct rt_vw_event *e)
{
	struct rt_vw_rank_comm *k;
	int ck = rt_vw_coll_kind(e->id);

	if (ck < 0 || !rt_ck_is_collective(ck) || !rt_vw_fld(e, RT_FN_seq))
		return;
	if ((k = find(c, (uint64_t)rt_vw_fld(e, RT_FN_comm_id))) != NULL)
		k->colls++;
}

bool rt_vw_comms_event(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	int role = rt_events[e->id].role;
	struct rt_vw_rank_comms *c;

	if (role == RT_R_COLL) {
		if (r->rcomms)
			on_coll(r->rcomms, e);
		return false;
	}
	if (e->id != RT_ID_rt_comm && e->id != RT_ID_rt_dev_p2p && e->id != RT_ID_rt_group &&
	    role != RT_R_P2P && role != RT_R_COMM_END && role != RT_R_COMM_REVOKE)
		return false;
	if (!(c = comms_of(r)))
		return e->id == RT_ID_rt_comm || e->id == RT_ID_rt_dev_p2p || e->id == RT_ID_rt_group;
	switch (e->id) {
	case RT_ID_rt_comm:
		on_comm(c, e);
		return true;
	case RT_ID_rt_dev_p2p:
		on_dev_p2p(c, e);
		return true;
	case RT_ID_rt_group:
		c->groups++;
		c->group_calls += (uint64_t)rt_vw_fld(e, RT_FN_colls) + (uint64_t)rt_vw_fld(e, RT_FN_p2ps);
		return true;
	default:
		break;
	}
	if (role == RT_R_P2P)
		on_p2p_call(c, e);
	else
		on_end(c, e, role);
	return false;
}

void rt_vw_comms_free(struct rt_vw_rank *r)
{
	if (!r->rcomms)
		return;
	free(r->rcomms->v);
	free(r->rcomms->p);
	free(r->rcomms);
	r->rcomms = NULL;
}
