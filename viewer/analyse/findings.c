/* SPDX-License-Identifier: MIT */
/* findings.c - the trace's findings as the analyses make them: a finding of
 * a kind (format/findings.def) about a rank or several, the ranks it names,
 * its named values and its evidence, rank by rank. Nothing here writes a
 * sentence: render/finding_text.c does, from these.
 *
 * One thread, after the rank models (the replay, then the analyses). A
 * finding that cannot be stored (out of memory) is dropped: the adder
 * returns NULL and the setters take NULL; a value or an evidence that
 * cannot be stored is dropped alone (RT_VW_FINDING_VALUES per finding). */
#include <stdlib.h>
#include <string.h>

#include "model_int.h"

const char *const rt_vw_ev_role_names[RT_EV_COUNT] = {
	"stopped", "waits", "never_entered", "enqueued", "aborted", "started", "not_started",
	"never_enqueued", "dropped", "waits_p2p", "waits_p2p_device", "never_made",
};

struct rt_vw_finding *rt_vw_finding_add(struct rt_vw_trace *t, enum rt_finding_kind kind, int rank)
{
	struct rt_vw_finding *f;

	f = realloc(t->findings, sizeof(*f) * (size_t)(t->nfindings + 1));
	if (!f)
		return NULL;
	t->findings = f;
	f = &t->findings[t->nfindings++];
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->rank = rank;
	if (rank >= 0)
		rt_vw_finding_rank(f, rank);
	return f;
}

void rt_vw_finding_rank(struct rt_vw_finding *f, int rank)
{
	if (!f)
		return;
	if (f->nranks < RT_VW_FINDING_RANKS)
		f->ranks[f->nranks] = rank;
	f->nranks++;
}

/* The slot for value name (set again: replaced), NULL when full. */
static struct rt_vw_fval *slot(struct rt_vw_finding *f, enum rt_fvalue name)
{
	for (int i = 0; i < f->nvals; i++)
		if (f->vals[i].name == name)
			return &f->vals[i];
	if (f->nvals == RT_VW_FINDING_VALUES)
		return NULL;
	f->vals[f->nvals].name = (uint8_t)name;
	return &f->vals[f->nvals++];
}

void rt_vw_fv_int(struct rt_vw_finding *f, enum rt_fvalue name, int64_t v)
{
	struct rt_vw_fval *s = f ? slot(f, name) : NULL;

	if (s)
		s->v.i = v;
}

void rt_vw_fv_real(struct rt_vw_finding *f, enum rt_fvalue name, double v)
{
	struct rt_vw_fval *s = f ? slot(f, name) : NULL;

	if (s)
		s->v.d = v;
}

void rt_vw_fv_text(struct rt_vw_finding *f, enum rt_fvalue name, const char *v)
{
	struct rt_vw_fval *s = f && v && v[0] ? slot(f, name) : NULL;

	if (s)
		s->v.s = v;
}

void rt_vw_fv_flag(struct rt_vw_finding *f, enum rt_fvalue name, bool v)
{
	if (v)
		rt_vw_fv_int(f, name, 1);
}

void rt_vw_fv_call(struct rt_vw_finding *f, enum rt_fvalue name, struct rt_vw_callref c)
{
	struct rt_vw_fval *s = f && c.id < RT_ID_COUNT ? slot(f, name) : NULL;

	if (s)
		s->v.call = c;
}

void rt_vw_fv_end(struct rt_vw_finding *f, enum rt_fvalue name, const struct rt_vw_rank *r)
{
	struct rt_vw_fval *s = f ? slot(f, name) : NULL;

	if (s)
		s->v.rank = r;
}

const struct rt_vw_fval *rt_vw_fv(const struct rt_vw_finding *f, enum rt_fvalue name)
{
	for (int i = 0; i < f->nvals; i++)
		if (f->vals[i].name == name)
			return &f->vals[i];
	return NULL;
}

struct rt_vw_evidence *rt_vw_finding_ev(struct rt_vw_finding *f, int rank, enum rt_vw_ev_role role)
{
	struct rt_vw_evidence *e;

	if (!f)
		return NULL;
	e = realloc(f->ev, sizeof(*e) * (size_t)(f->nev + 1));
	if (!e)
		return NULL;
	f->ev = e;
	e = &f->ev[f->nev++];
	memset(e, 0, sizeof(*e));
	e->rank = rank;
	e->role = (uint8_t)role;
	e->call.id = RT_ID_COUNT;
	e->op.id = RT_ID_COUNT;
	e->peer = -1;
	return e;
}

struct rt_vw_callref rt_vw_callref_of(const struct rt_vw_open_call *o)
{
	if (!o)
		return (struct rt_vw_callref){ .id = RT_ID_COUNT };
	return (struct rt_vw_callref){ (uint16_t)o->id, rt_vw_coll_kind(o->id) >= 0 && o->comm_id,
				       o->seq };
}

void rt_vw_findings_free(struct rt_vw_trace *t)
{
	for (int i = 0; i < t->nfindings; i++)
		free(t->findings[i].ev);
	free(t->findings);
	t->findings = NULL;
	t->nfindings = 0;
}
