/* SPDX-License-Identifier: MIT */
/* finding_text.c - a finding's sentence, made from its data: the kind's
 * template in format/findings.def, or the kind's own renderer
 * (finding_say.c) where the sentence lists ranks and collectives. The one
 * place sentences are made: view, the report, the diagnosis and verdict
 * all say a finding through rt_vw_finding_text.
 *
 * A template's tokens: {rank} the rank it is about ("rank 3": a subject,
 * the diagnosis says "ranks 0-3" for several), {ranks} the ranks it names
 * ("0,1,3"), {NAME} value NAME as its type prints, {s:NAME} "s" unless
 * NAME is 1, [NAME:...] the inside only when the finding carries NAME,
 * {is} {was} {has} {its} {it} {es}: words that agree with the subject (one rank,
 * or several alike in the diagnosis: "ranks 0-2 were killed").
 * Writes at most n - 1 bytes and a NUL (a sentence longer is cut, as
 * snprintf cuts); allocates nothing; thread-safe. */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "comms.h"
#include "finding_say.h"

void rt_vw_sb_printf(struct rt_vw_sb *b, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (b->full || b->n == 0)
		return;
	va_start(ap, fmt);
	w = vsnprintf(b->p + b->len, b->n - b->len, fmt, ap);
	va_end(ap);
	if (w < 0)
		w = 0;
	if ((size_t)w >= b->n - b->len) {
		b->len = b->n - 1;
		b->full = true;
	} else {
		b->len += (size_t)w;
	}
}

struct rt_vw_sb rt_vw_sb_init(char *out, size_t n)
{
	if (n)
		out[0] = '\0';
	return (struct rt_vw_sb){ out, n, 0, false };
}

const char *rt_vw_signal_name(int signo)
{
	switch (signo) {
	case SIGINT: return "SIGINT";
	case SIGTERM: return "SIGTERM";
	case SIGHUP: return "SIGHUP";
	case SIGKILL: return "SIGKILL";
	case SIGABRT: return "SIGABRT";
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	default: return NULL;
	}
}

void rt_vw_say_call(struct rt_vw_sb *b, struct rt_vw_callref c)
{
	if (c.id >= RT_ID_COUNT)
		rt_vw_sb_printf(b, "?");
	else if (c.coll)
		rt_vw_sb_printf(b, "%s #%u", rt_events[c.id].name, c.seq);
	else
		rt_vw_sb_printf(b, "%s", rt_events[c.id].name);
}

void rt_vw_say_value(struct rt_vw_sb *b, const struct rt_vw_fval *v)
{
	char end[160];

	switch (rt_fvalues[v->name].type) {
	case RT_FT_INT: rt_vw_sb_printf(b, "%" PRId64, v->v.i); break;
	case RT_FT_REAL0: rt_vw_sb_printf(b, "%.0f", v->v.d); break;
	case RT_FT_REAL1: rt_vw_sb_printf(b, "%.1f", v->v.d); break;
	case RT_FT_REAL3: rt_vw_sb_printf(b, "%.3f", v->v.d); break;
	case RT_FT_TEXT: rt_vw_sb_printf(b, "%s", v->v.s); break;
	case RT_FT_CALL: rt_vw_say_call(b, v->v.call); break;
	case RT_FT_SIGNAL:
		if (rt_vw_signal_name((int)v->v.i))
			rt_vw_sb_printf(b, "%s", rt_vw_signal_name((int)v->v.i));
		else
			rt_vw_sb_printf(b, "signal %" PRId64, v->v.i);
		break;
	case RT_FT_END:
		rt_vw_rank_end(v->v.rank, end, sizeof(end));
		rt_vw_sb_printf(b, "%s", end);
		break;
	case RT_FT_FLAG:
	case RT_FT_TRACE:
		break;
	}
}

void rt_vw_say_ranks(struct rt_vw_sb *b, const int *v, int n, size_t cap)
{
	size_t start = b->len;

	for (int i = 0; i < n && i < RT_VW_FINDING_RANKS && b->len - start < cap - 12; i++)
		rt_vw_sb_printf(b, "%s%d", i ? "," : "", v[i]);
}

void rt_vw_say_parent(struct rt_vw_sb *b, const struct rt_vw_trace *t, uint64_t id)
{
	const struct rt_vw_rank_comm *p = rt_vw_comm_any(t, id);

	if (p && p->how != RT_COMM_SPLIT && p->how != RT_COMM_SHRINK && p->nranks >= t->world_size)
		rt_vw_sb_printf(b, "the world");
	else
		rt_vw_sb_printf(b, "communicator %04" PRIx64, id & 0xffff);
}

void rt_vw_say_comm(struct rt_vw_sb *b, const struct rt_vw_trace *t, uint64_t id, const char *lead)
{
	const struct rt_vw_rank_comm *k = rt_vw_comm_any(t, id);
	int m[RT_VW_FINDING_RANKS], n;

	if (!k || (k->how != RT_COMM_SPLIT && k->how != RT_COMM_SHRINK && k->nranks >= t->world_size))
		return;
	n = rt_vw_comm_members(t, id, m, RT_VW_FINDING_RANKS);
	rt_vw_sb_printf(b, "%s{", lead);
	rt_vw_say_ranks(b, m, n, 200);
	if (n < k->nranks)
		rt_vw_sb_printf(b, "%s%d of %d recorded", n ? "; " : "", n, k->nranks);
	rt_vw_sb_printf(b, "}, ");
	if (k->how == RT_COMM_SPLIT) {
		rt_vw_sb_printf(b, "split from ");
		rt_vw_say_parent(b, t, k->parent);
		rt_vw_sb_printf(b, " with color %d", k->color);
	} else if (k->how == RT_COMM_SHRINK) {
		rt_vw_sb_printf(b, "shrunk from ");
		rt_vw_say_parent(b, t, k->parent);
		rt_vw_sb_printf(b, " without its ranks %s", k->excluded);
	} else {
		rt_vw_sb_printf(b, "made by %s", k->how < RT_COMM_HOW_COUNT ? rt_comm_how_calls[k->how] : "?");
	}
}

/* The token at p ({...}), its end in *end; the value it names, or -1. */
static int token_value(const char *p, const char **end, bool *plural)
{
	const char *close = strchr(p, '}');

	*plural = !strncmp(p, "{s:", 3);
	*end = close ? close + 1 : p + strlen(p);
	if (!close)
		return -1;
	p += *plural ? 3 : 1;
	return rt_fvalue_parse(p, (unsigned long)(close - p));
}

/* A word of a subject's sentence ({is}, {was}, {has}, {its}, {it}, {es}),
 * agreeing with one rank or several; its length in *len, or NULL. */
static const char *verb(const char *p, bool several, size_t *len)
{
	static const char *const words[][3] = { { "{is}", "is", "are" },   { "{was}", "was", "were" },
						{ "{has}", "has", "have" }, { "{its}", "its", "their" },
						{ "{it}", "it", "they" },   { "{es}", "", "es" } };

	for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
		*len = strlen(words[k][0]);
		if (!strncmp(p, words[k][0], *len))
			return words[k][several ? 2 : 1];
	}
	return NULL;
}

/* The template from p to stop (or its end) into b; several: the subject
 * is several ranks (verb tokens agree). */
static void say_template(struct rt_vw_sb *b, const struct rt_vw_finding *f, const char *p,
			 const char *stop, bool several)
{
	while (*p && p != stop && !b->full) {
		const char *end, *colon, *close;
		const struct rt_vw_fval *v;
		const char *word;
		bool plural;
		size_t wlen;
		int name;

		if (*p == '[' && (colon = strchr(p, ':')) && (close = strchr(p, ']'))) {
			name = rt_fvalue_parse(p + 1, (unsigned long)(colon - p - 1));
			if (name >= 0 && rt_vw_fv(f, (enum rt_fvalue)name))
				say_template(b, f, colon + 1, close, several);
			p = close + 1;
		} else if (*p == '{' && (word = verb(p, several, &wlen)) != NULL) {
			rt_vw_sb_printf(b, "%s", word);
			p += wlen;
		} else if (!strncmp(p, "{rank}", 6)) {
			rt_vw_sb_printf(b, "rank %d", f->rank);
			p += 6;
		} else if (!strncmp(p, "{ranks}", 7)) {
			rt_vw_say_ranks(b, f->ranks, f->nranks, 256);
			p += 7;
		} else if (*p == '{') {
			name = token_value(p, &end, &plural);
			v = name >= 0 ? rt_vw_fv(f, (enum rt_fvalue)name) : NULL;
			if (v && plural)
				rt_vw_sb_printf(b, "%s", v->v.i == 1 ? "" : "s");
			else if (v)
				rt_vw_say_value(b, v);
			p = end;
		} else {
			const char *q = p + strcspn(p, "{[");

			if (stop && q > stop)
				q = stop;
			if (q == p)
				q++;
			rt_vw_sb_printf(b, "%.*s", (int)(q - p), p);
			p = q;
		}
	}
}

bool rt_vw_finding_subject(const struct rt_vw_finding *f)
{
	const char *tpl = rt_findings[f->kind].text;

	return f->rank >= 0 && tpl && !strncmp(tpl, "{rank}", 6);
}

void rt_vw_finding_body(const struct rt_vw_trace *t, const struct rt_vw_finding *f, char *out,
			size_t n, bool several)
{
	struct rt_vw_sb b = rt_vw_sb_init(out, n);
	const char *tpl = rt_findings[f->kind].text;

	if (!tpl)
		rt_vw_say_kind(&b, t, f);
	else
		say_template(&b, f, rt_vw_finding_subject(f) ? tpl + 6 : tpl, NULL,
			     several && rt_vw_finding_subject(f));
}

void rt_vw_finding_text(const struct rt_vw_trace *t, const struct rt_vw_finding *f, char *out,
			size_t n)
{
	int k = rt_vw_finding_subject(f) ? snprintf(out, n, "rank %d", f->rank) : 0;

	if (k < 0 || (size_t)k >= n)
		return;
	rt_vw_finding_body(t, f, out + k, n - (size_t)k, false);
}
