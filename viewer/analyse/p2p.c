/* SPDX-License-Identifier: MIT */
/* p2p.c - point to point across ranks: each ncclSend paired with the
 * ncclRecv NCCL pairs it with, and what is left unpaired.
 *
 * NCCL matches a pair's calls in order: rank A's k-th Send to B on a
 * communicator goes to B's k-th Recv from A there, and both must name the
 * same count and datatype. The tracer numbers each call per (communicator,
 * peer, direction) (rt_tr_p2p_seq), so the pair is the key (communicator,
 * sender's place, receiver's place, number): every rank's calls
 * (model/comms.c keeps them) sorted by that key, each key holds a Send and
 * a Recv, or one of them alone. Peers are places in the communicator; the
 * findings say global ranks (the members' rt_comm records; a trace without
 * them: the world, place = rank).
 *
 * Two uses: the p2p analysis (analyses.c's row after the matcher) finds the
 * first pair whose sides differ (p2p-mismatch) and the first call whose
 * peer, whose whole run the trace holds, never made its counterpart
 * (p2p-unmatched); the hang (hang.c) asks who waits on whom
 * (rt_vw_p2p_hang_evidence). One thread, after the pass; allocates the
 * sorted index for the duration of one call. */
#include <stdlib.h>

#include "analyse.h"
#include "comms.h"

/* One call, keyed as NCCL pairs it. */
struct pref {
	uint64_t comm;
	int from, to;  /* places in comm: sender, receiver */
	uint32_t seq;
	bool send;
	int ri;        /* the trace rank index that made it */
	uint32_t k;    /* its index in that rank's calls */
};

/* A rank's place in a communicator, by its rt_comm record. */
struct place {
	uint64_t comm;
	int place, ri;
};

struct index {
	struct pref *v;
	size_t n;
	struct place *pl;
	size_t npl;
};

static int cmp_pref(const void *a, const void *b)
{
	const struct pref *x = a, *y = b;

	if (x->comm != y->comm)
		return x->comm < y->comm ? -1 : 1;
	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	if (x->to != y->to)
		return x->to < y->to ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return (int)y->send - (int)x->send; /* the Send first */
}

static int cmp_place(const void *a, const void *b)
{
	const struct place *x = a, *y = b;

	if (x->comm != y->comm)
		return x->comm < y->comm ? -1 : 1;
	return x->place < y->place ? -1 : x->place > y->place;
}

static const struct rt_vw_p2p *call_of(const struct rt_vw_trace *t, const struct pref *p)
{
	return &t->ranks[p->ri].rcomms->p[p->k];
}

/* Rank ri's place in comm: its rt_comm record's, else (no record of it:
 * a trace before them) its rank in the job. */
static int own_place(const struct rt_vw_rank *r, uint64_t comm)
{
	const struct rt_vw_rank_comm *k = rt_vw_rank_comm_of(r, comm);

	return k && k->rank >= 0 ? k->rank : r->meta.rank;
}

/* The trace rank index at place in comm, or -1. */
static int rank_at(const struct rt_vw_trace *t, const struct index *x, uint64_t comm, int place)
{
	struct place key = { comm, place, -1 };
	const struct place *p = bsearch(&key, x->pl, x->npl, sizeof(*p), cmp_place);

	if (p)
		return p->ri;
	for (int i = 0; i < t->nranks; i++) /* no record names it: the world */
		if (t->ranks[i].meta.rank == place && !rt_vw_rank_comm_of(&t->ranks[i], comm))
			return i;
	return -1;
}

static int global_at(const struct rt_vw_trace *t, const struct index *x, uint64_t comm, int place)
{
	int ri = rank_at(t, x, comm, place);

	return ri >= 0 ? t->ranks[ri].meta.rank : place;
}

static size_t count_calls(const struct rt_vw_trace *t, size_t *nplaces)
{
	size_t n = 0;

	*nplaces = 0;
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].readable && t->ranks[i].rcomms) {
			n += t->ranks[i].rcomms->np;
			*nplaces += (size_t)t->ranks[i].rcomms->n;
		}
	return n;
}

/* Every readable rank's numbered calls, sorted by pair; 0 or -ENOMEM. */
static int index_build(const struct rt_vw_trace *t, struct index *x)
{
	size_t npl, n = count_calls(t, &npl);

	*x = (struct index){ 0 };
	if (!n)
		return 0;
	x->v = malloc(n * sizeof(*x->v));
	x->pl = malloc((npl ? npl : 1) * sizeof(*x->pl));
	if (!x->v || !x->pl) {
		free(x->v);
		free(x->pl);
		*x = (struct index){ 0 };
		return -12;
	}
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		const struct rt_vw_rank_comms *c = r->rcomms;

		for (int j = 0; r->readable && c && j < c->n; j++)
			if (c->v[j].rank >= 0)
				x->pl[x->npl++] = (struct place){ c->v[j].id, c->v[j].rank, i };
		for (uint32_t k = 0; r->readable && c && k < c->np; k++) {
			const struct rt_vw_p2p *p = &c->p[k];
			int me;

			if (!p->comm_id || !p->seq) /* no communicator known; a skipped call */
				continue;
			me = own_place(r, p->comm_id);
			x->v[x->n++] = (struct pref){ p->comm_id, p->send ? me : p->peer,
						      p->send ? p->peer : me, p->seq, p->send, i, k };
		}
	}
	qsort(x->v, x->n, sizeof(*x->v), cmp_pref);
	qsort(x->pl, x->npl, sizeof(*x->pl), cmp_place);
	return 0;
}

static void index_free(struct index *x)
{
	free(x->v);
	free(x->pl);
}

static bool same_pair(const struct pref *a, const struct pref *b)
{
	return a->comm == b->comm && a->from == b->from && a->to == b->to && a->seq == b->seq;
}

/* The pair at x->v[*i]: its Send and Recv (NULL: not made); *i moves past it. */
static void next_pair(const struct index *x, size_t *i, const struct pref **s, const struct pref **r)
{
	size_t j = *i;

	*s = *r = NULL;
	for (; j < x->n && same_pair(&x->v[j], &x->v[*i]); j++) {
		if (x->v[j].send && !*s)
			*s = &x->v[j];
		else if (!x->v[j].send && !*r)
			*r = &x->v[j];
	}
	*i = j;
}

/* The call c as a finding's collective: kind, count, datatype, number. */
static struct rt_vw_fcall fcall_of(const struct rt_vw_p2p *c)
{
	int kind = rt_vw_coll_kind(c->send ? RT_ID_ncclSend : RT_ID_ncclRecv);

	return (struct rt_vw_fcall){ .comm = c->comm_id, .seq = c->seq, .sig = true,
				     .kind = (uint8_t)kind, .dtype = c->dtype, .count = c->count,
				     .bytes = c->count * rt_nccl_dtype_size(c->dtype) };
}

/* How many calls of the pair's channel (comm, from, to) of direction send
 * were made: the highest number among them. */
static uint32_t made(const struct index *x, const struct pref *p, bool send)
{
	uint32_t n = 0;

	for (size_t i = 0; i < x->n; i++) {
		const struct pref *q = &x->v[i];

		if (q->comm == p->comm && q->from == p->from && q->to == p->to && q->send == send &&
		    q->seq > n)
			n = q->seq;
	}
	return n;
}

/* May rank ri's lack of a call be relied on? never-called's rule: its
 * whole run is in the trace, not stopped from outside, not killed, not
 * dead inside a call (its death is then the failure). */
static bool lack_certain(const struct rt_vw_trace *t, int ri)
{
	const struct rt_vw_rank *r = &t->ranks[ri];

	return rt_vw_evidence_complete(t, ri) && !r->interrupted && !r->signo && !r->died;
}

/* The rank that lacks the counterpart of lone p (trace index, -1: none). */
static int lacking(const struct rt_vw_trace *t, const struct index *x, const struct pref *p)
{
	return rank_at(t, x, p->comm, p->send ? p->to : p->from);
}

static void mismatch_finding(struct rt_vw_trace *t, const struct pref *s, const struct pref *r)
{
	struct rt_vw_finding *f = rt_vw_finding_add(t, RT_FK_P2P_MISMATCH, -1);
	int from = t->ranks[s->ri].meta.rank, to = t->ranks[r->ri].meta.rank;

	rt_vw_finding_rank(f, from);
	rt_vw_finding_rank(f, to);
	rt_vw_fv_int(f, RT_FV_sender, from);
	rt_vw_fv_int(f, RT_FV_receiver, to);
	if (f) {
		f->coll = fcall_of(call_of(t, s));
		f->other = fcall_of(call_of(t, r));
	}
}

static void unmatched_finding(struct rt_vw_trace *t, const struct index *x, const struct pref *p)
{
	struct rt_vw_finding *f = rt_vw_finding_add(t, RT_FK_P2P_UNMATCHED, -1);
	int me = t->ranks[p->ri].meta.rank, other = t->ranks[lacking(t, x, p)].meta.rank;

	rt_vw_finding_rank(f, other);
	rt_vw_fv_int(f, RT_FV_sender, p->send ? me : other);
	rt_vw_fv_int(f, RT_FV_receiver, p->send ? other : me);
	rt_vw_fv_int(f, RT_FV_made, made(x, p, !p->send));
	if (f)
		f->coll = fcall_of(call_of(t, p));
}

static bool differ(const struct rt_vw_p2p *a, const struct rt_vw_p2p *b)
{
	return a->count != b->count || a->dtype != b->dtype;
}

static bool before(const struct rt_vw_trace *t, const struct pref *a, const struct pref *b)
{
	return !b || call_of(t, a)->ts < call_of(t, b)->ts;
}

void rt_vw_p2p_match(struct rt_vw_trace *t)
{
	const struct pref *bad_s = NULL, *bad_r = NULL, *lone = NULL;
	struct index x;

	if (index_build(t, &x))
		return;
	for (size_t i = 0; i < x.n;) {
		const struct pref *s, *r, *p;
		int ri;

		next_pair(&x, &i, &s, &r);
		if (s && r) {
			if (differ(call_of(t, s), call_of(t, r)) && before(t, s, bad_s)) {
				bad_s = s;
				bad_r = r;
			}
			continue;
		}
		p = s ? s : r;
		ri = lacking(t, &x, p);
		if (ri >= 0 && !t->nmissing && lack_certain(t, ri) && before(t, p, lone))
			lone = p;
	}
	if (bad_s)
		mismatch_finding(t, bad_s, bad_r);
	if (lone && !bad_s) /* after a mismatch NCCL's pairs fail: no evidence of their own */
		unmatched_finding(t, &x, lone);
	index_free(&x);
}

/* What a live (or interrupted) rank waits in: its earliest call whose
 * peer never made the counterpart (hard: NCCL cannot complete it), else
 * its earliest call made on both sides that its device never completed
 * (its device records say so). */
struct wait {
	const struct pref *p;
	bool hard;
};

/* Did rank r's device complete any Send or Recv (its device source
 * records them)? */
static bool dev_p2p(const struct rt_vw_rank *r)
{
	for (uint32_t k = 0; r->rcomms && k < r->rcomms->np; k++)
		if (r->rcomms->p[k].dev_done)
			return true;
	return false;
}

static void wait_on(const struct rt_vw_trace *t, struct wait *w, const struct pref *p, bool hard)
{
	struct wait *o = &w[p->ri];

	if (!o->p || (hard && !o->hard) || (hard == o->hard && before(t, p, o->p)))
		*o = (struct wait){ p, hard };
}

/* Each frozen rank's wait into w (by trace index); true when some is hard. */
static bool waits(const struct rt_vw_trace *t, const struct index *x, struct wait *w, const bool *dev)
{
	bool any = false;

	for (size_t i = 0; i < x->n;) {
		const struct pref *s, *r, *two[2];

		next_pair(x, &i, &s, &r);
		two[0] = s;
		two[1] = r;
		for (int k = 0; k < 2; k++) {
			const struct pref *p = two[k];

			if (!p || !rt_vw_frozen(&t->ranks[p->ri]))
				continue;
			if (!s || !r) {
				wait_on(t, w, p, true);
				any = true;
			} else if (dev[p->ri] && !call_of(t, p)->dev_done) {
				wait_on(t, w, p, false);
			}
		}
	}
	return any;
}

static struct rt_vw_callref ref_of(bool send, uint32_t seq)
{
	return (struct rt_vw_callref){ send ? RT_ID_ncclSend : RT_ID_ncclRecv, true, seq };
}

/* The evidence of a rank that waits (w) into f. */
static void waiter_evidence(const struct rt_vw_trace *t, const struct index *x,
			    const struct wait *w, struct rt_vw_finding *f)
{
	const struct rt_vw_rank *r = &t->ranks[w->p->ri];
	struct rt_vw_evidence *e;
	int peer = w->p->send ? w->p->to : w->p->from;

	e = rt_vw_finding_ev(f, r->meta.rank, w->hard ? RT_EV_WAITS_P2P : RT_EV_WAITS_P2P_DEVICE);
	rt_vw_ev_where(e, r);
	if (!e)
		return;
	e->op = ref_of(w->p->send, w->p->seq);
	e->peer = global_at(t, x, w->p->comm, peer);
	e->comm = w->p->comm;
}

/* The evidence of the culprit c, which never made the counterpart of w's call. */
static void culprit_evidence(const struct rt_vw_trace *t, const struct index *x, int c,
			     const struct wait *w, struct rt_vw_finding *f)
{
	struct rt_vw_evidence *e = rt_vw_finding_ev(f, t->ranks[c].meta.rank, RT_EV_NEVER_MADE);

	rt_vw_ev_where(e, &t->ranks[c]);
	if (!e)
		return;
	e->op = ref_of(!w->p->send, w->p->seq);
	e->peer = t->ranks[w->p->ri].meta.rank;
	e->comm = w->p->comm;
	e->last_seq = made(x, w->p, !w->p->send);
}

/* The culprits into culprit[] (by trace index): the ranks some rank waits
 * on in a call they never made the counterpart of, and which wait in no
 * such call themselves (they are elsewhere: the others wait for them);
 * where every such rank waits so too (a cycle: each waits for the next),
 * all of them. False when none is known. */
static bool culprits(const struct rt_vw_trace *t, const struct index *x, const struct wait *w,
		     bool *culprit)
{
	bool found = false;

	for (int pass = 0; pass < 2 && !found; pass++)
		for (int i = 0; i < t->nranks; i++) {
			int l = w[i].p && w[i].hard ? lacking(t, x, w[i].p) : -1;

			if (l >= 0 && (pass || !(w[l].p && w[l].hard))) {
				culprit[l] = true;
				found = true;
			}
		}
	return found;
}

struct by_time {
	uint64_t ts;
	int i;
};

static int cmp_time(const void *a, const void *b)
{
	const struct by_time *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->i - y->i;
}

/* The evidence of w and c (who waits, who never made what: the calls the
 * culprits never made in the order they were waited on), the culprits as
 * f's ranks, the earliest call waited on a culprit as f's collective. */
static void hang_evidence(const struct rt_vw_trace *t, const struct index *x, const struct wait *w,
			  const bool *culprit, struct rt_vw_finding *f)
{
	struct by_time *v = calloc((size_t)t->nranks, sizeof(*v));
	int n = 0;

	for (int i = 0; i < t->nranks; i++) {
		int l = w[i].p && w[i].hard ? lacking(t, x, w[i].p) : -1;

		if (w[i].p && !culprit[i])
			waiter_evidence(t, x, &w[i], f);
		if (v && l >= 0 && culprit[l])
			v[n++] = (struct by_time){ call_of(t, w[i].p)->ts, i };
	}
	if (v)
		qsort(v, (size_t)n, sizeof(*v), cmp_time);
	for (int k = 0; k < n; k++)
		culprit_evidence(t, x, lacking(t, x, w[v[k].i].p), &w[v[k].i], f);
	for (int i = 0; i < t->nranks; i++)
		if (culprit[i])
			rt_vw_finding_rank(f, t->ranks[i].meta.rank);
	if (f && n)
		f->coll = fcall_of(call_of(t, w[v[0].i].p));
	free(v);
}

bool rt_vw_p2p_hang_evidence(const struct rt_vw_trace *t, struct rt_vw_finding *f)
{
	size_t n = t->nranks > 0 ? (size_t)t->nranks : 1;
	struct wait *w = calloc(n, sizeof(*w));
	bool *dev = calloc(n, sizeof(*dev)), *culprit = calloc(n, sizeof(*culprit)), ok = false;
	struct index x = { 0 };

	if (!w || !dev || !culprit || index_build(t, &x) || !x.n)
		goto out_free;
	for (int i = 0; i < t->nranks; i++)
		dev[i] = t->ranks[i].readable && dev_p2p(&t->ranks[i]);
	if (!waits(t, &x, w, dev) || !culprits(t, &x, w, culprit))
		goto out_free;
	hang_evidence(t, &x, w, culprit, f);
	ok = true;
out_free:
	index_free(&x);
	free(culprit);
	free(dev);
	free(w);
	return ok;
}
