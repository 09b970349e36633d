/* SPDX-License-Identifier: MIT */
/* hosts.c - the job's hosts and how their clocks compare: each clock domain
 * (a host's boot: its clock_uuid, else its hostname) is a host; the first
 * rank's host is the reference, and every other host's clock offset against
 * it is estimated from the collectives themselves.
 *
 * A collective completes on every member's device at nearly the same moment
 * (none can finish before the last has joined), whoever was late into it:
 * a straggler moves when it completes, not how far apart. Each rank learns
 * of a completion a little late (the plugin's report, a CUDA-event poll),
 * never early, so per collective and host the earliest completion any of
 * its ranks saw is the host's best reading (the lower envelope); the
 * offset is the median over shared collectives of the difference between
 * the host's reading and the reference's, and its uncertainty half the
 * interquartile range of those differences. A host sharing fewer than
 * RT_VW_CLOCK_MIN completed collectives with the reference gets no
 * estimate: lateness across it is not judged (straggler.c).
 *
 * Computed once per trace after the model's pass (t->hosts), single
 * threaded; allocates its result and scratch once. */
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "model_int.h"

#define RT_VW_CLOCK_MIN 3

struct done {
	uint64_t comm_id;
	uint32_t seq;
	int host;
	uint64_t ts;
};

static int cmp_done(const void *a, const void *b)
{
	const struct done *x = a, *y = b;

	if (x->comm_id != y->comm_id)
		return x->comm_id < y->comm_id ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->host - y->host;
}

static int cmp_f64(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Rank r's clock domain: its boot (clock_uuid), else its hostname. */
static const char *domain_of(const struct rt_vw_rank *r)
{
	return r->meta.clock_uuid[0] ? r->meta.clock_uuid : r->meta.hostname;
}

/* Each readable rank index's host (h->of; -1: its metadata not read), the
 * hosts in the order of their first rank. */
static void assign(const struct rt_vw_trace *t, struct rt_vw_hosts *h)
{
	for (int i = 0; i < t->nranks; i++) {
		const char *dom = domain_of(&t->ranks[i]);
		int k = 0;

		h->of[i] = -1;
		if (!t->ranks[i].readable)
			continue;

		while (k < h->n && strcmp(domain_of(&t->ranks[h->h[k].first]), dom))
			k++;
		if (k == h->n) {
			h->h[k] = (struct rt_vw_host){ .first = i, .estimated = k == 0 };
			memcpy(h->h[k].name, t->ranks[i].meta.hostname, sizeof(h->h[k].name));
			h->n++;
		}
		h->h[k].nranks++;
		h->of[i] = k;
	}
}

/* Every completion on the device, host by host; *n of them. */
static struct done *completions(const struct rt_vw_trace *t, const struct rt_vw_hosts *h, size_t *n)
{
	size_t total = 0, k = 0;
	struct done *v;

	for (int i = 0; i < t->nranks; i++)
		total += t->ranks[i].dev ? t->ranks[i].dev->n : 0;
	v = malloc(sizeof(*v) * (total ? total : 1));
	if (!v)
		return NULL;
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_devlog *d = t->ranks[i].dev;

		for (uint32_t j = 0; d && h->of[i] >= 0 && j < d->n; j++)
			if (d->v[j].done_ts && rt_vw_dev_done(d, &d->v[j]))
				v[k++] = (struct done){ d->v[j].comm_id, d->v[j].seq, h->of[i],
							d->v[j].done_ts };
	}
	qsort(v, k, sizeof(*v), cmp_done);
	*n = k;
	return v;
}

/* Per collective the reference's reading and each other host's: their
 * differences into diff[] as (host, ns) pairs, *nd of them. */
static void differences(const struct done *v, size_t n, struct rt_vw_clock_diff *diff, size_t *nd)
{
	for (size_t i = 0, j; i < n; i = j) {
		uint64_t ref = 0;

		for (j = i; j < n && v[j].comm_id == v[i].comm_id && v[j].seq == v[i].seq; j++)
			if (v[j].host == 0 && (!ref || v[j].ts < ref))
				ref = v[j].ts;
		for (size_t k = i; ref && k < j; k++) {
			uint64_t low = v[k].ts;

			if (v[k].host == 0 || (k > i && v[k - 1].host == v[k].host))
				continue; /* the host's first (sorted by host), its lowest below */
			for (size_t m = k + 1; m < j && v[m].host == v[k].host; m++)
				low = v[m].ts < low ? v[m].ts : low;
			diff[(*nd)++] = (struct rt_vw_clock_diff){ v[k].host,
								   (double)low - (double)ref };
		}
	}
}

static int cmp_diff(const void *a, const void *b)
{
	const struct rt_vw_clock_diff *x = a, *y = b;

	if (x->host != y->host)
		return x->host - y->host;
	return cmp_f64(&x->ns, &y->ns);
}

/* Host h's estimate from its differences d[0..n), sorted. */
static void estimate(struct rt_vw_host *h, const struct rt_vw_clock_diff *d, size_t n)
{
	double q1 = d[n / 4].ns, q3 = d[(3 * n) / 4].ns;

	h->shared = n;
	if (n < RT_VW_CLOCK_MIN)
		return;
	h->estimated = true;
	h->offset_ns = n % 2 ? d[n / 2].ns : (d[n / 2 - 1].ns + d[n / 2].ns) / 2;
	h->err_ns = (q3 - q1) / 2;
}

static void estimate_all(const struct rt_vw_trace *t, struct rt_vw_hosts *h)
{
	size_t n = 0, nd = 0;
	struct done *v = completions(t, h, &n);
	struct rt_vw_clock_diff *d = v ? malloc(sizeof(*d) * (n ? n : 1)) : NULL;

	if (!d) {
		free(v);
		return;
	}
	differences(v, n, d, &nd);
	qsort(d, nd, sizeof(*d), cmp_diff);
	for (size_t i = 0, j; i < nd; i = j) {
		for (j = i; j < nd && d[j].host == d[i].host; j++)
			;
		estimate(&h->h[d[i].host], &d[i], j - i);
	}
	free(d);
	free(v);
}

const struct rt_vw_hosts *rt_vw_hosts(struct rt_vw_trace *t)
{
	struct rt_vw_hosts *h;

	if (t->hosts_done)
		return t->hosts;
	t->hosts_done = true;
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->h = calloc((size_t)(t->nranks ? t->nranks : 1), sizeof(*h->h));
	h->of = calloc((size_t)(t->nranks ? t->nranks : 1), sizeof(*h->of));
	if (!h->h || !h->of) {
		rt_vw_hosts_free(h);
		return NULL;
	}
	assign(t, h);
	if (h->n > 1)
		estimate_all(t, h);
	return t->hosts = h;
}

int64_t rt_vw_host_shift(const struct rt_vw_trace *t, int ri)
{
	const struct rt_vw_host *h = t->hosts && ri < t->nranks && t->hosts->of[ri] >= 0
					     ? &t->hosts->h[t->hosts->of[ri]]
					     : NULL;

	return h && h->estimated ? (int64_t)h->offset_ns : 0;
}

bool rt_vw_hosts_compare(const struct rt_vw_trace *t, int a, int b)
{
	const struct rt_vw_hosts *h = t->hosts;

	if (!h || h->of[a] == h->of[b] || h->of[a] < 0 || h->of[b] < 0)
		return true; /* one clock; or a rank whose metadata was not read: no times */
	return h->h[h->of[a]].estimated && h->h[h->of[b]].estimated;
}

void rt_vw_hosts_free(struct rt_vw_hosts *h)
{
	if (!h)
		return;
	free(h->h);
	free(h->of);
	free(h);
}
