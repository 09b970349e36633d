/* SPDX-License-Identifier: MIT */
/* straggler.c - who the others wait for when nothing hangs, from device
 * truth: per collective that every rank of its communicator started on the
 * device, the last rank to start it and how long the others waited; per
 * rank, the share of collectives it was last into and its lateness then
 * (its start minus the mean of the others' starts): the mean, and the median
 * the finding says (one collective in which a loaded host stalled the rank
 * or its event poller by 2 s moved a 20 ms straggler's mean to 94 ms).
 *
 * A straggler is named when one rank was last into at least half of at
 * least RT_VW_STRAGGLE_MIN_COLLS collectives, late by a median of at least
 * RT_VW_STRAGGLE_MIN_NS and at least RT_VW_STRAGGLE_NOISE times the noise
 * (a healthy rank stalled once by its host is no straggler): in a healthy job the last rank changes from one collective to the
 * next, and is late by scheduling noise only. The noise is what the job
 * shows without a straggler: how far apart the other ranks start (median over
 * collectives of the spread of the starts but the last), or, where that
 * says more, how late the last rank but the suspect was (median over every
 * collective of three ranks or more but it: one stall of another rank's
 * host or poller is not the job's noise). A rank a
 * loaded host schedules a millisecond late is noise there; the same
 * millisecond among GPUs that start within microseconds is a straggler.
 * Where a rank's times come from CUDA events they are poll times, each
 * rank's poller with its own phase and scheduling: a lateness below
 * RT_VW_STRAGGLE_POLLS poll periods is not told apart from that, and names
 * nobody (a healthy 4-rank job on 2 cores read one rank last into half of
 * the collectives, 1.1-1.5 ms late, without it).
 * A group (ncclGroupStart/End) is one launch: judged once, keyed by its
 * first collective, started when its first collective started. A launch
 * one member was seen to start well after another saw it complete is not
 * judged: that start was seen late (seen_in_time).
 * Times are the ranks' clocks, aligned to the reference host's by each
 * host's estimated offset (hosts.c); a collective whose members are on
 * hosts whose clocks could not be compared is not judged. Runs after the
 * model's pass,
 * single-threaded; allocates its result once (t->straggle). The report's
 * chart asks for one rank's lateness per collective (rt_vw_straggle_series). */
#include <stdio.h>
#include <stdlib.h>

#include "device.h"
#include "model_int.h"

#define RT_VW_STRAGGLE_MIN_COLLS 8
#define RT_VW_STRAGGLE_MIN_NS 1000000.0
#define RT_VW_STRAGGLE_NOISE 3.0
#define RT_VW_STRAGGLE_POLLS 4

struct start {
	uint64_t comm_id;
	uint32_t seq;
	uint8_t kind;
	int ri;
	uint64_t ts;
	uint64_t done; /* its earliest completion on this rank's device (0: none seen) */
};

static uint64_t min_seen(uint64_t a, uint64_t b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

static int cmp_start(const void *a, const void *b)
{
	const struct start *x = a, *y = b;

	if (x->comm_id != y->comm_id)
		return x->comm_id < y->comm_id ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->ri - y->ri;
}

/* Rank index ri's launches into v from *k: a collective not in a group is
 * one, a group (rt_group) is one, keyed by its first collective and started
 * when its first collective started (NCCL launches a group at once: a rank
 * late into it is late once, not once per collective). Times on the
 * reference host's clock (hosts.c). */
static void launches(const struct rt_vw_trace *t, int ri, struct start *v, size_t *k)
{
	const struct rt_vw_devlog *d = t->ranks[ri].dev;
	int64_t shift = rt_vw_host_shift(t, ri);
	size_t open = SIZE_MAX; /* v's entry of the group being read */
	uint32_t lead = UINT32_MAX;

	for (uint32_t j = 0; d && j < d->n; j++) {
		const struct rt_vw_devcoll *c = &d->v[j], *key = c;
		uint64_t ts = c->start_ts ? (uint64_t)((int64_t)c->start_ts - shift) : 0;
		uint64_t dn = rt_vw_dev_done(d, c) ? (uint64_t)((int64_t)c->done_ts - shift) : 0;

		if (c->group && lead < d->n && d->v[lead].group == c->group) {
			if (open != SIZE_MAX) {
				v[open].ts = min_seen(v[open].ts, ts);
				v[open].done = min_seen(v[open].done, dn);
				continue;
			}
			key = &d->v[lead];
		} else {
			lead = c->group ? j : UINT32_MAX;
			open = SIZE_MAX;
		}
		if (ts)
			v[open = (*k)++] = (struct start){ key->comm_id, key->seq, key->kind, ri, ts, dn };
	}
}

/* Every device launch of every rank, sorted by collective; *n of them. */
static struct start *gather(const struct rt_vw_trace *t, size_t *n)
{
	size_t total = 0, k = 0;
	struct start *v;

	for (int i = 0; i < t->nranks; i++)
		total += t->ranks[i].dev ? t->ranks[i].dev->n : 0;
	v = malloc(sizeof(*v) * (total ? total : 1));
	if (!v)
		return NULL;
	for (int i = 0; i < t->nranks; i++)
		launches(t, i, v, &k);
	qsort(v, k, sizeof(*v), cmp_start);
	*n = k;
	return v;
}

/* The least lateness that names a straggler: more where times are polled. */
static double least_late(const struct rt_vw_trace *t)
{
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].dev && t->ranks[i].dev->source == RT_DEV_SRC_EVENT)
			return RT_VW_STRAGGLE_MIN_NS > RT_VW_STRAGGLE_POLLS * (double)RT_DEV_EVENT_POLL_NS
				       ? RT_VW_STRAGGLE_MIN_NS
				       : RT_VW_STRAGGLE_POLLS * (double)RT_DEV_EVENT_POLL_NS;
	return RT_VW_STRAGGLE_MIN_NS;
}

/* Were the starts g[0..k) seen in time? A launch cannot start on one
 * member's device after it completed on another's (none completes before
 * every member joined): a start seen later was seen late (a poller or a
 * report held up on a loaded host). Within slack_ns that is the sources'
 * own jitter (a CUDA-event poller sees a short collective start and end in
 * one pass); beyond it the launch is not judged rather than blamed on
 * whoever was seen last, by an amount no one knows. */
static bool seen_in_time(const struct start *g, size_t k, double slack_ns)
{
	uint64_t done = 0;

	for (size_t i = 0; i < k; i++)
		done = min_seen(done, g[i].done);
	for (size_t i = 0; done && i < k; i++)
		if ((double)g[i].ts > (double)done + slack_ns)
			return false;
	return true;
}

/* Are the starts g[0..k) one collective of every member, seen in time, on
 * clocks that compare (one host, or hosts whose offsets were estimated)? */
static bool judged(const struct rt_vw_trace *t, const struct start *g, size_t k)
{
	if (k < 2 || (int)k < rt_vw_comm_size(t, g[0].comm_id) || !seen_in_time(g, k, least_late(t)))
		return false;
	for (size_t i = 1; i < k; i++)
		if (!rt_vw_hosts_compare(t, g[0].ri, g[i].ri))
			return false;
	return true;
}

/* One collective's lateness of its last rank: rank index, ns; how far
 * apart the others started (the starts but the last, last minus first);
 * where its starts are (v[at..at + k), analyse's). */
struct lateness {
	int ri;
	double ns, spread;
	size_t at, k;
};

static int cmp_lateness(const void *a, const void *b)
{
	const struct lateness *x = a, *y = b;

	if (x->ri != y->ri)
		return x->ri - y->ri;
	return x->ns < y->ns ? -1 : x->ns > y->ns;
}

/* One collective's starts g[0..k): the last rank's lateness (returned in
 * *out), the wait. */
static void judge(struct rt_vw_straggle *s, const struct start *g, size_t k,
		  struct lateness *out)
{
	size_t last = 0;
	uint64_t first = g[0].ts, second = 0;
	double others = 0;

	for (size_t i = 1; i < k; i++) {
		if (g[i].ts > g[last].ts)
			last = i;
		if (g[i].ts < first)
			first = g[i].ts;
	}
	for (size_t i = 0; i < k; i++)
		if (i != last) {
			others += (double)g[i].ts;
			if (g[i].ts > second)
				second = g[i].ts;
		}
	others /= (double)(k - 1);
	s->colls++;
	s->wait_ns += (double)(g[last].ts - first);
	s->spread_ns += (double)(second - first);
	s->r[g[last].ri].last++;
	s->r[g[last].ri].late_ns += (double)g[last].ts - others;
	*out = (struct lateness){ g[last].ri, (double)g[last].ts - others, (double)(second - first), 0, k };
}

/* Each rank's median lateness over the collectives it was last into:
 * l[0..n), sorted here. */
static void medians(struct rt_vw_straggle *s, struct lateness *l, size_t n)
{
	qsort(l, n, sizeof(*l), cmp_lateness);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && l[j].ri == l[i].ri; j++)
			;
		s->r[l[i].ri].median_ns = (j - i) % 2 ? l[i + (j - i) / 2].ns
						      : (l[i + (j - i) / 2 - 1].ns + l[i + (j - i) / 2].ns) / 2;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorted here), 0 when n is 0. */
static double median_of(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* In the collective g[0..k): how late the last of its ranks but ri started
 * after the mean of the rest of them but ri; false when fewer than three
 * ranks but ri started it. */
static bool late_without(const struct start *g, size_t k, int ri, double *out)
{
	size_t last = k, m = 0;
	double sum = 0;

	for (size_t i = 0; i < k; i++)
		if (g[i].ri != ri) {
			m++;
			sum += (double)g[i].ts;
			if (last == k || g[i].ts > g[last].ts)
				last = i;
		}
	if (m < 3)
		return false;
	*out = (double)g[last].ts - (sum - (double)g[last].ts) / (double)(m - 1);
	return true;
}

/* The noise, from the n collectives judged (l, their starts in v): the
 * median over them of the others' spread, or where that says more, the
 * median over them of how late the last rank but best was (the job as it
 * would be without the suspect). Medians, as for the straggler's own
 * lateness, and every collective, not only those another rank was last
 * into: with a straggler those are the ones a stall made late by more than
 * it, so one stalled poll on another rank (the mean of those lateness
 * values, before) was noise enough to hide a 20 ms straggler. Out of
 * memory: the mean spread. */
static double noise(const struct rt_vw_straggle *s, const struct start *v, const struct lateness *l,
		    size_t n, int best)
{
	double *w = malloc(sizeof(*w) * (n ? n : 1)), spread, late;
	size_t k = 0;

	if (!w)
		return s->spread_ns;
	for (size_t i = 0; i < n; i++)
		w[i] = l[i].spread;
	spread = median_of(w, n);
	for (size_t i = 0; i < n; i++)
		k += late_without(&v[l[i].at], l[i].k, best, &w[k]);
	late = median_of(w, k);
	free(w);
	return late > spread ? late : spread;
}

static void name_straggler(struct rt_vw_straggle *s, const struct start *v, const struct lateness *l,
			   size_t nl, double least)
{
	int best = -1;

	for (int i = 0; i < s->nranks; i++) {
		if (s->r[i].last)
			s->r[i].late_ns /= (double)s->r[i].last;
		if (best < 0 || s->r[i].last > s->r[best].last)
			best = i;
	}
	if (s->colls) {
		s->wait_ns /= (double)s->colls;
		s->spread_ns /= (double)s->colls;
	}
	s->noise_ns = noise(s, v, l, nl, best);
	s->straggler = -1;
	if (best >= 0 && s->colls >= RT_VW_STRAGGLE_MIN_COLLS && 2 * s->r[best].last >= s->colls &&
	    s->r[best].median_ns >= least &&
	    s->r[best].median_ns >= RT_VW_STRAGGLE_NOISE * s->noise_ns)
		s->straggler = best;
}

static struct rt_vw_straggle *analyse(struct rt_vw_trace *t)
{
	struct rt_vw_straggle *s = calloc(1, sizeof(*s));
	size_t n = 0, nl = 0;
	struct start *v;
	struct lateness *l;

	if (!s)
		return NULL;
	rt_vw_hosts(t); /* the clocks aligned first */
	s->r = calloc((size_t)(t->nranks ? t->nranks : 1), sizeof(*s->r));
	v = gather(t, &n);
	l = malloc(sizeof(*l) * (n / 2 + 1)); /* a collective judged has >= 2 starts */
	if (!s->r || !v || !l) {
		free(l);
		free(v);
		free(s->r);
		free(s);
		return NULL;
	}
	s->nranks = t->nranks;
	for (int i = 0; i < t->nranks; i++)
		s->r[i].rank = t->ranks[i].meta.rank;
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && v[j].comm_id == v[i].comm_id && v[j].seq == v[i].seq; j++)
			;
		if (judged(t, &v[i], j - i)) {
			judge(s, &v[i], j - i, &l[nl]);
			l[nl++].at = i;
		}
	}
	medians(s, l, nl);
	name_straggler(s, v, l, nl, least_late(t));
	free(v);
	free(l);
	return s;
}

const struct rt_vw_straggle *rt_vw_stragglers(struct rt_vw_trace *t)
{
	if (!t->straggle_done) {
		t->straggle_done = true;
		t->straggle = analyse(t);
	}
	return t->straggle && t->straggle->colls ? t->straggle : NULL;
}

void rt_vw_straggler_detect(struct rt_vw_trace *t)
{
	const struct rt_vw_straggle *s = rt_vw_stragglers(t);
	const struct rt_vw_straggle_rank *r;
	struct rt_vw_finding *f;

	if (!s || s->straggler < 0)
		return;
	r = &s->r[s->straggler];
	f = rt_vw_finding_add(t, RT_FK_STRAGGLER, r->rank);
	rt_vw_fv_real(f, RT_FV_share_pct, 100.0 * (double)r->last / (double)s->colls);
	rt_vw_fv_int(f, RT_FV_last, (int64_t)r->last);
	rt_vw_fv_int(f, RT_FV_collectives, (int64_t)s->colls);
	rt_vw_fv_real(f, RT_FV_late_ms, r->median_ns / 1e6);
	rt_vw_fv_real(f, RT_FV_wait_ms, s->wait_ns / 1e6);
}

static int cmp_late(const void *a, const void *b)
{
	const struct rt_vw_late *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Rank index ri's lateness in the collective g[0..k), into *out. */
static void late_of(const struct start *g, size_t k, int ri, struct rt_vw_late *out)
{
	double others = 0;
	size_t me = k;

	for (size_t i = 0; i < k; i++)
		if (g[i].ri == ri && me == k)
			me = i;
		else
			others += (double)g[i].ts;
	*out = (struct rt_vw_late){ g[me].ts, (double)g[me].ts - others / (double)(k - 1), g[me].seq,
				    g[me].kind };
}

struct rt_vw_late *rt_vw_straggle_series(const struct rt_vw_trace *t, int ri, size_t *n)
{
	size_t nv = 0, m = 0;
	struct start *v = gather(t, &nv);
	struct rt_vw_late *l = v ? malloc(sizeof(*l) * (nv ? nv : 1)) : NULL;

	*n = 0;
	for (size_t i = 0, j; l && i < nv; i = j) {
		bool mine = false;

		for (j = i; j < nv && v[j].comm_id == v[i].comm_id && v[j].seq == v[i].seq; j++)
			mine = mine || v[j].ri == ri;
		if (mine && judged(t, &v[i], j - i))
			late_of(&v[i], j - i, ri, &l[m++]);
	}
	free(v);
	if (!m) {
		free(l);
		return NULL;
	}
	qsort(l, m, sizeof(*l), cmp_late);
	*n = m;
	return l;
}

void rt_vw_straggle_free(struct rt_vw_trace *t)
{
	if (t->straggle)
		free(t->straggle->r);
	free(t->straggle);
	t->straggle = NULL;
}
