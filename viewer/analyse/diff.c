/* SPDX-License-Identifier: MIT */
/* diff.c - two traces compared, the decisive difference first: the probe's
 * counts per rank (a run whose FSDP root forward never ran against one where
 * it ran 3 times a rank), where each parameter lives and its shape (latest
 * report), then each rank's collectives (the matcher's rule for "the same
 * collective"), allocations and ending.
 *
 * A view of two loaded models; allocates its own arrays (rt_vw_diff_free),
 * no limit on ranks or parameters. Not thread-safe per diff. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "model_int.h"
#include "rt_util.h"

const char *const rt_vw_diff_count_ids[RT_VW_DC_COUNT] = {
#define RT_VW_DC_ID(id, label, field) #id,
	RT_VW_DIFF_COUNTS(RT_VW_DC_ID)
#undef RT_VW_DC_ID
};
const char *const rt_vw_diff_count_labels[RT_VW_DC_COUNT] = {
#define RT_VW_DC_LABEL(id, label, field) label,
	RT_VW_DIFF_COUNTS(RT_VW_DC_LABEL)
#undef RT_VW_DC_LABEL
};

static uint64_t count_of(const struct rt_vw_rank *r, int c)
{
	static const size_t off[RT_VW_DC_COUNT] = {
#define RT_VW_DC_OFF(id, label, field) offsetof(struct rt_vw_rank, field),
		RT_VW_DIFF_COUNTS(RT_VW_DC_OFF)
#undef RT_VW_DC_OFF
	};
	uint64_t v;

	memcpy(&v, (const char *)r + off[c], sizeof(v));
	return v;
}

const char *rt_vw_diff_section_id(int s)
{
	static const char *const ids[] = { "placement", "shapes", "collectives", "ends", "ranks" };

	if (s >= 0 && s < RT_VW_DC_COUNT)
		return rt_vw_diff_count_ids[s];
	return s >= RT_VW_DS_PLACEMENT && s < RT_VW_DS_NONE ? ids[s - RT_VW_DS_PLACEMENT] : NULL;
}

/* ---- one text per rank, said as a phrase ---- */

#define TEXT 96 /* bytes of one rank's text */

struct ref {
	const char *s;
	int i;
};

/* A run of equal texts in the sorted refs: from, how many, its first rank index. */
struct group {
	int from, n, first;
};

static int by_text_then_index(const void *x, const void *y)
{
	const struct ref *a = x, *b = y;
	int c = strcmp(a->s, b->s);

	return c ? c : a->i - b->i;
}

static int by_first(const void *x, const void *y)
{
	return ((const struct group *)x)->first - ((const struct group *)y)->first;
}

/* Scratch for phrases: room for the ranks of the larger trace. */
struct scratch {
	char *text;        /* nranks * TEXT */
	struct ref *refs;
	struct group *groups;
	int *ranks;
	uint32_t *hint[2]; /* per rank of A and of B: where to look for the next name */
	const struct rt_vw_param **ps; /* per rank: its record of the parameter compared */
};

/* t's ranks' texts (s->text) in one phrase: "X on every rank" (plain "X"
 * when X is bare_all), else "ranks 0-1 X, rank 2 Y" in rank order. Sorting
 * keeps it O(R log R) when every rank differs (1-D views of a flat shard). */
static void phrase(const struct rt_vw_trace *t, struct scratch *s, const char *bare_all, char *out,
		   size_t n)
{
	int nr = t->nranks, ng = 0;
	size_t len = 0;

	out[0] = '\0';
	for (int i = 0; i < nr; i++)
		s->refs[i] = (struct ref){ s->text + (size_t)i * TEXT, i };
	qsort(s->refs, (size_t)nr, sizeof(*s->refs), by_text_then_index);
	for (int i = 0; i < nr; i++) {
		if (!i || strcmp(s->refs[i].s, s->refs[i - 1].s))
			s->groups[ng++] = (struct group){ i, 0, s->refs[i].i };
		s->groups[ng - 1].n++;
	}
	if (ng == 1) {
		snprintf(out, n, bare_all && !strcmp(s->refs[0].s, bare_all) ? "%s" : "%s on every rank",
			 s->refs[0].s);
		return;
	}
	qsort(s->groups, (size_t)ng, sizeof(*s->groups), by_first);
	for (int g = 0; g < ng && len < n; g++) {
		const struct group *gr = &s->groups[g];
		char list[160];

		for (int k = 0; k < gr->n; k++)
			s->ranks[k] = t->ranks[s->refs[gr->from + k].i].meta.rank;
		rt_int_ranges(s->ranks, gr->n, list, sizeof(list));
		len += (size_t)snprintf(out + len, n - len, "%s%s %s %s", len ? ", " : "",
					gr->n > 1 ? "ranks" : "rank", list, s->refs[gr->from].s);
	}
}

void rt_vw_diff_count_phrase(const struct rt_vw_diff *d, int c, int side, char *out, size_t n)
{
	const struct rt_vw_trace *t = side ? d->b : d->a;
	struct scratch s = { 0 };
	int nr = t->nranks;

	s.text = calloc((size_t)nr + 1, TEXT);
	s.refs = calloc((size_t)nr + 1, sizeof(*s.refs));
	s.groups = calloc((size_t)nr + 1, sizeof(*s.groups));
	s.ranks = calloc((size_t)nr + 1, sizeof(*s.ranks));
	if (!s.text || !s.refs || !s.groups || !s.ranks)
		snprintf(out, n, "?");
	else if (!nr)
		snprintf(out, n, "no rank");
	else {
		for (int i = 0; i < nr; i++)
			snprintf(s.text + (size_t)i * TEXT, TEXT, "%llu",
				 (unsigned long long)count_of(&t->ranks[i], c));
		phrase(t, &s, NULL, out, n);
	}
	free(s.text);
	free(s.refs);
	free(s.groups);
	free(s.ranks);
}

/* ---- parameters: where and which shape, A against B ---- */

/* Rank r's record of name: where the last name was found, else a scan. */
static const struct rt_vw_param *find(const struct rt_vw_rank *r, const char *name, uint32_t *hint)
{
	if (*hint < r->nparams && !strcmp(r->params[*hint].name, name))
		return &r->params[(*hint)++];
	for (uint32_t q = 0; q < r->nparams; q++)
		if (!strcmp(r->params[q].name, name)) {
			*hint = q + 1;
			return &r->params[q];
		}
	return NULL;
}

/* One side's phrases for a parameter: where ("cuda:N" for a rank's own
 * device), its shape, its dimensions ("2-D"); false when no rank of the side
 * reported a shape for it. */
static bool side(const struct rt_vw_trace *t, struct scratch *s, int sd, const char *name,
		 struct rt_vw_diff_param *out, char *ndims, size_t n)
{
	char *place = sd ? out->place_b : out->place_a, *shape = sd ? out->shape_b : out->shape_a;
	bool known = false;

	for (int i = 0; i < t->nranks; i++)
		s->ps[i] = find(&t->ranks[i], name, &s->hint[sd][i]);
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		const struct rt_vw_param *p = s->ps[i];
		int own = r->meta.local_rank >= 0 ? r->meta.local_rank : r->meta.rank;
		char *x = s->text + (size_t)i * TEXT;

		if (!p)
			snprintf(x, TEXT, "not reported");
		else if (p->last.place == RT_P_CUDA && p->last.device == own)
			snprintf(x, TEXT, "cuda:N");
		else
			rt_vw_placement_str(&p->last, x, TEXT);
	}
	phrase(t, s, "cuda:N", place, sizeof(out->place_a));
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_param *p = s->ps[i];

		known |= p && p->last.shape.known;
		rt_vw_shape_str(p ? &p->last.shape : &(struct rt_vw_shape){ 0 }, s->text + (size_t)i * TEXT,
				TEXT);
	}
	phrase(t, s, NULL, shape, sizeof(out->shape_a));
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_param *p = s->ps[i];

		if (p && p->last.shape.known)
			snprintf(s->text + (size_t)i * TEXT, TEXT, "%u-D", p->last.shape.ndim);
		else
			snprintf(s->text + (size_t)i * TEXT, TEXT, "-");
	}
	phrase(t, s, NULL, ndims, n);
	return known;
}

/* Count one more parameter in the kind keyed (ka, kb), shown as (a, b). */
static void add_kind(struct rt_vw_diff_kind *kinds, int *nk, size_t *other, const char *ka,
		     const char *kb, const char *a, const char *b, const char *name)
{
	int k;

	for (k = 0; k < *nk; k++)
		if (!strcmp(kinds[k].key_a, ka) && !strcmp(kinds[k].key_b, kb))
			break;
	if (k == *nk) {
		if (k == RT_VW_DIFF_KINDS) {
			(*other)++;
			return;
		}
		kinds[k] = (struct rt_vw_diff_kind){ .example = name };
		snprintf(kinds[k].key_a, sizeof(kinds[k].key_a), "%s", ka);
		snprintf(kinds[k].key_b, sizeof(kinds[k].key_b), "%s", kb);
		snprintf(kinds[k].a, sizeof(kinds[k].a), "%s", a);
		snprintf(kinds[k].b, sizeof(kinds[k].b), "%s", b);
		(*nk)++;
	}
	kinds[k].n++;
}

/* Compare one parameter; keep it in d->params when it differs. */
static void diff_param(struct rt_vw_diff *d, struct scratch *s, const char *name)
{
	struct rt_vw_diff_param *p = &d->params[d->nparams_differ];
	char na[200], nb[200];
	bool ka, kb;

	*p = (struct rt_vw_diff_param){ .name = name };
	ka = side(d->a, s, 0, name, p, na, sizeof(na));
	kb = side(d->b, s, 1, name, p, nb, sizeof(nb));
	p->placement = strcmp(p->place_a, p->place_b) != 0;
	p->shape = ka && kb && strcmp(p->shape_a, p->shape_b) != 0; /* both sides know shapes */
	if (p->placement) {
		d->placement_differ++;
		add_kind(d->place_kinds, &d->nplace_kinds, &d->place_other, p->place_a, p->place_b,
			 p->place_a, p->place_b, name);
	}
	if (p->shape) {
		d->shape_differ++;
		add_kind(d->shape_kinds, &d->nshape_kinds, &d->shape_other, na, nb, p->shape_a,
			 p->shape_b, name);
	}
	if (p->placement || p->shape)
		d->nparams_differ++;
}

static int by_name(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Every parameter name of A, then those only B reported. */
static int diff_params(struct rt_vw_diff *d, struct scratch *s)
{
	struct rt_vw_names na = { 0 }, nb = { 0 };
	const char **sorted = NULL;
	int rc = -1;

	if (rt_vw_param_names(d->a, NULL, &na) || rt_vw_param_names(d->b, NULL, &nb))
		goto out;
	sorted = malloc((na.n + 1) * sizeof(*sorted));
	d->params = calloc(na.n + nb.n + 1, sizeof(*d->params));
	if (!sorted || !d->params)
		goto out;
	memcpy(sorted, na.v, na.n * sizeof(*sorted));
	qsort(sorted, na.n, sizeof(*sorted), by_name);
	for (size_t q = 0; q < na.n; q++)
		diff_param(d, s, na.v[q]);
	d->nparams = na.n;
	for (size_t q = 0; q < nb.n; q++)
		if (!bsearch(&nb.v[q], sorted, na.n, sizeof(*sorted), by_name)) {
			diff_param(d, s, nb.v[q]);
			d->nparams++;
		}
	rc = 0;
out:
	free(sorted);
	free(na.v);
	free(nb.v);
	return rc;
}

/* ---- ranks: counts, collectives, ends ---- */

static void diff_calls(struct rt_vw_diff_rank *dr)
{
	const struct rt_vw_rank *ra = dr->a, *rb = dr->b;
	uint32_t k = 0;

	while (k < ra->ncalls && k < rb->ncalls && rt_vw_same_call(&ra->calls[k], &rb->calls[k]))
		k++;
	dr->same_calls = k;
	dr->calls_differ = k < ra->ncalls || k < rb->ncalls;
	dr->next_a = k < ra->ncalls ? &ra->calls[k] : NULL;
	dr->next_b = k < rb->ncalls ? &rb->calls[k] : NULL;
	dr->init_broadcasts = dr->calls_differ && k && ra->calls[k - 1].kind == RT_CK_Broadcast &&
			      ra->broadcasts_before_allgather == k;
}

static void diff_rank(struct rt_vw_diff *d, struct rt_vw_diff_rank *dr)
{
	for (int c = 0; c < RT_VW_DC_COUNT; c++) {
		dr->count[c][0] = dr->a ? count_of(dr->a, c) : 0;
		dr->count[c][1] = dr->b ? count_of(dr->b, c) : 0;
		if (dr->a && dr->b && dr->count[c][0] != dr->count[c][1])
			d->count_differs[c] = true;
	}
	if (dr->a)
		rt_vw_rank_end(dr->a, dr->end_a, sizeof(dr->end_a));
	if (dr->b)
		rt_vw_rank_end(dr->b, dr->end_b, sizeof(dr->end_b));
	if (dr->a && dr->b)
		diff_calls(dr);
}

static int diff_ranks(struct rt_vw_diff *d)
{
	const struct rt_vw_trace *a = d->a, *b = d->b;

	d->ranks = calloc((size_t)a->nranks + (size_t)b->nranks + 1, sizeof(*d->ranks));
	if (!d->ranks)
		return -1;
	for (int i = 0; i < a->nranks; i++) {
		int j = rt_vw_rank_index(b, a->ranks[i].meta.rank);

		d->ranks[d->nranks++] = (struct rt_vw_diff_rank){
			.rank = a->ranks[i].meta.rank, .a = &a->ranks[i], .b = j >= 0 ? &b->ranks[j] : NULL,
		};
	}
	for (int j = 0; j < b->nranks; j++)
		if (rt_vw_rank_index(a, b->ranks[j].meta.rank) < 0)
			d->ranks[d->nranks++] = (struct rt_vw_diff_rank){ .rank = b->ranks[j].meta.rank,
									 .b = &b->ranks[j] };
	for (int i = 0; i < d->nranks; i++)
		diff_rank(d, &d->ranks[i]);
	return 0;
}

/* The first section, in the order they decide, that differs. */
static int decisive(const struct rt_vw_diff *d)
{
	bool calls = false, ends = false, alone = false;

	for (int c = 0; c < RT_VW_DC_COUNT; c++)
		if (d->count_differs[c])
			return c;
	if (d->placement_differ)
		return RT_VW_DS_PLACEMENT;
	if (d->shape_differ)
		return RT_VW_DS_SHAPES;
	for (int i = 0; i < d->nranks; i++) {
		const struct rt_vw_diff_rank *r = &d->ranks[i];

		calls |= r->calls_differ;
		ends |= r->a && r->b && strcmp(r->end_a, r->end_b);
		alone |= !r->a || !r->b;
	}
	return calls ? RT_VW_DS_COLLECTIVES : ends ? RT_VW_DS_ENDS : alone ? RT_VW_DS_RANKS
									   : RT_VW_DS_NONE;
}

int rt_vw_diff(const struct rt_vw_trace *a, const struct rt_vw_trace *b, struct rt_vw_diff *out)
{
	size_t nr = (size_t)(a->nranks > b->nranks ? a->nranks : b->nranks) + 1;
	struct scratch s = {
		.text = calloc(nr, TEXT), .refs = calloc(nr, sizeof(*s.refs)),
		.groups = calloc(nr, sizeof(*s.groups)), .ranks = calloc(nr, sizeof(int)),
		.hint = { calloc(nr, sizeof(uint32_t)), calloc(nr, sizeof(uint32_t)) },
		.ps = calloc(nr, sizeof(*s.ps)),
	};
	int rc = -1;

	*out = (struct rt_vw_diff){ .a = a, .b = b };
	if (s.text && s.refs && s.groups && s.ranks && s.hint[0] && s.hint[1] && s.ps &&
	    diff_params(out, &s) == 0 && diff_ranks(out) == 0)
		rc = 0;
	free(s.text);
	free(s.refs);
	free(s.groups);
	free(s.ranks);
	free(s.hint[0]);
	free(s.hint[1]);
	free(s.ps);
	if (rc) {
		rt_vw_diff_free(out);
		return rc;
	}
	out->decisive = decisive(out);
	out->same_verdict = a->verdict == b->verdict;
	return 0;
}

void rt_vw_diff_free(struct rt_vw_diff *d)
{
	free(d->params);
	free(d->ranks);
	d->params = NULL;
	d->ranks = NULL;
}
