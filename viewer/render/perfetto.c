/* SPDX-License-Identifier: MIT */
/* perfetto.c - a loaded trace as Chrome trace-event JSON (Perfetto UI,
 * chrome://tracing): a process per rank, tracks per thread and CUDA stream,
 * device-memory counters, and flow arrows linking one collective across
 * ranks (opened by the first rank to call it, closed by the last). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "export.h"
#include "export_int.h"

/* Open collectives: (comm, seq) -> ranks seen so far, for flow phases. */
struct flow {
	uint64_t comm;
	uint32_t seq;
	int seen;
	struct flow *next;
};

#define FLOW_BUCKETS 4096

/* ---- Perfetto / Chrome trace JSON ---- */

struct pf {
	FILE *f;
	const struct rt_vw_trace *t;
	uint64_t t0;
	uint32_t *mem_at;    /* per rank: next memory change of the model's */
	uint64_t *ev;        /* per rank: events replayed */
	struct flow *flows[FLOW_BUCKETS];
	bool first;
};

static void pf_sep(struct pf *p)
{
	fputs(p->first ? "\n" : ",\n", p->f);
	p->first = false;
}

static double us(const struct pf *p, uint64_t ns)
{
	return (double)(ns - p->t0) / 1000.0;
}

/* The event's categories: its library, then its role in the call table
 * ("cuda,alloc", "nccl,coll"); the tracer's own events are "ranktrace". */
static const char *category(const struct rt_event_desc *d, char *out, size_t n)
{
	const char *lib = d->lib == RT_LIB_NCCL ? "nccl" : d->lib == RT_LIB_CUDA ? "cuda"
			  : d->lib == RT_LIB_DRIVER ? "cuda_driver" : "ranktrace";
	size_t len;

	if (d->role == RT_R_NONE)
		return lib;
	len = (size_t)snprintf(out, n, "%s,", lib);
	for (const char *p = rt_role_names[d->role]; *p && len + 1 < n; p++)
		out[len++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	out[len] = '\0';
	return out;
}

/* The flow arrow of a collective: started by the first rank to call it,
 * finished by the last of its communicator (rt_vw_comm_size); none for a
 * communicator of one rank (nothing to link: it would start and never end). */
static void pf_flow(struct pf *p, const struct rt_vw_rank *r, const struct rt_vw_event *e,
		    const struct rt_event_desc *d, uint64_t tid)
{
	uint64_t comm = (uint64_t)rt_vw_fld(e, RT_FN_comm_id);
	uint32_t seq = (uint32_t)rt_vw_fld(e, RT_FN_seq);
	size_t b = (size_t)((comm ^ seq * 0x9E3779B97F4A7C15ull) % FLOW_BUCKETS);
	struct flow **l = &p->flows[b], *fl;
	const char *ph;

	if (rt_vw_comm_size(p->t, comm) <= 1)
		return;
	while (*l && ((*l)->comm != comm || (*l)->seq != seq))
		l = &(*l)->next;
	fl = *l;
	if (!fl) {
		fl = calloc(1, sizeof(*fl));
		if (!fl)
			return;
		fl->comm = comm;
		fl->seq = seq;
		fl->next = p->flows[b];
		p->flows[b] = fl;
		l = &p->flows[b];
	}
	fl->seen++;
	/* the communicator's size, not the trace's: a split's flows close */
	ph = fl->seen == 1 ? "s" : fl->seen >= rt_vw_comm_size(p->t, comm) ? "f" : "t";
	pf_sep(p);
	fprintf(p->f, "{\"ph\":\"%s\",\"id\":\"%016" PRIx64 "-%u\",\"name\":\"%s #%u\",\"cat\":\"collective\","
		"\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":%.3f%s}", ph, comm, seq, d->name, seq,
		r->meta.rank, tid, us(p, e->ts), ph[0] == 'f' ? ",\"bp\":\"e\"" : "");
	if (ph[0] == 'f') {
		*l = fl->next;
		free(fl);
	}
}

/* The event's fields as args: strings as strings (parameter and marker names,
 * fault targets), pointers in hex, u64 as exact decimal strings; a fault's spec. */
static void pf_args(struct pf *p, const struct rt_vw_event *e, const struct rt_event_desc *d)
{
	for (int i = 0; i < d->nfields; i++) {
		int64_t v = rt_field_get(e->id, e->fields, i);
		char s[65];

		if (d->fields[i].kind == RT_K_STR) { /* parameter and marker names, fault targets */
			fprintf(p->f, ",\"%s\":\"", d->fields[i].name);
			rt_vw_json_esc(p->f, rt_field_str(e->id, e->fields, i, s));
			fputc('"', p->f);
		} else if (d->fields[i].kind == RT_K_PTR) {
			fprintf(p->f, ",\"%s\":\"0x%" PRIx64 "\"", d->fields[i].name, (uint64_t)v);
		} else if (d->fields[i].kind == RT_K_U64) { /* a string: exact beyond 2^53 */
			fprintf(p->f, ",\"%s\":\"%" PRIu64 "\"", d->fields[i].name, (uint64_t)v);
		} else {
			fprintf(p->f, ",\"%s\":%" PRId64, d->fields[i].name, v);
		}
	}
	if (e->id == RT_ID_rt_fault) {
		char spec[160];

		rt_vw_fault_spec(e, spec, sizeof(spec));
		fputs(",\"spec\":\"", p->f);
		rt_vw_json_esc(p->f, spec);
		fputc('"', p->f);
	}
}

static void pf_event(void *arg, int ri, const struct rt_vw_event *e)
{
	struct pf *p = arg;
	const struct rt_vw_rank *r = &p->t->ranks[ri];
	const struct rt_event_desc *d = &rt_events[e->id];
	uint64_t stream = (uint64_t)rt_vw_fld(e, RT_FN_stream);
	uint64_t tid = e->tid;
	char cat[48];

	if (e->ts < p->t0)
		return;
	/* work queued on a CUDA stream (a call with a stream argument that
	 * copies, sets or communicates) goes on that stream's track */
	if (rt_field_at[e->id][RT_FN_stream] >= 0 &&
	    (d->role == RT_R_COLL || d->role == RT_R_P2P || d->role == RT_R_COPY ||
	     d->role == RT_R_COPY_PEER || d->role == RT_R_MEMSET))
		tid = stream ? (0x10000000ull | ((stream >> 4) & 0xfffffff)) : tid;
	pf_sep(p);
	fprintf(p->f, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":%.3f,\"dur\":%.3f,\"name\":\"%s\","
		"\"cat\":\"%s\",\"args\":{\"ret\":%d,\"device\":%d%s", r->meta.rank, tid, us(p, e->ts),
		e->pending ? us(p, r->last_ts) - us(p, e->ts) : (double)e->dur / 1000.0, d->name,
		category(d, cat, sizeof(cat)), e->ret,
		e->dev, e->pending ? ",\"never_returned\":true" : "");
	pf_args(p, e, d);
	fputs("}}", p->f);
	if (rt_vw_is_coll(e->id))
		pf_flow(p, r, e, d, tid);
	/* device memory as the model counted it, changed by this event */
	p->ev[ri]++;
	for (; p->mem_at[ri] < r->nmem && r->mem[p->mem_at[ri]].ev <= p->ev[ri]; p->mem_at[ri]++) {
		const struct rt_vw_mem_change *c = &r->mem[p->mem_at[ri]];

		pf_sep(p);
		fprintf(p->f, "{\"ph\":\"C\",\"pid\":%d,\"ts\":%.3f,\"name\":\"device %d memory\",\"args\":{\"bytes\":%"
			PRIu64 "}}", r->meta.rank, us(p, e->ts), c->dev, c->bytes);
	}
}

/* The model's parameter placement changes, as instants on the rank's track. */
static void pf_placement_changes(struct pf *p, const struct rt_vw_rank *r)
{
	for (uint32_t c = 0; c < r->nchanges; c++) {
		const struct rt_vw_param_change *ch = &r->changes[c];
		struct rt_vw_placement from = { .seen = true, .place = ch->from, .device = ch->from_dev },
				       to = { .seen = true, .place = ch->to, .device = ch->to_dev };
		char a[64], b[64];

		if (ch->ts < p->t0 || ch->param >= r->nparams)
			continue;
		rt_vw_placement_str(&from, a, sizeof(a));
		rt_vw_placement_str(&to, b, sizeof(b));
		pf_sep(p);
		fprintf(p->f, "{\"ph\":\"i\",\"s\":\"p\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
			"\"cat\":\"placement\",\"name\":\"", r->meta.rank, r->meta.pid, us(p, ch->ts));
		rt_vw_json_esc(p->f, r->params[ch->param].name);
		fprintf(p->f, ": %s -> %s\",\"args\":{\"param\":\"", a, b);
		rt_vw_json_esc(p->f, r->params[ch->param].name);
		fprintf(p->f, "\",\"from\":\"%s\",\"to\":\"%s\",\"at\":\"%s\"}}", a, b,
			rt_vw_param_point_names[ch->point < RT_PP_COUNT ? ch->point : 0]);
	}
}

int rt_vw_export_perfetto(const struct rt_vw_trace *t, FILE *f)
{
	struct pf p = { .f = f, .t = t, .first = true };
	int rc;

	p.t0 = rt_vw_trace_start(t);
	p.mem_at = calloc((size_t)t->nranks, sizeof(*p.mem_at));
	p.ev = calloc((size_t)t->nranks, sizeof(*p.ev));
	if (!p.mem_at || !p.ev) {
		free(p.mem_at);
		free(p.ev);
		return -1;
	}
	fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"ranktrace\",\"verdict\":\"", f);
	fputs(rt_vw_verdict_names[t->verdict], f);
	fputs("\"},\"traceEvents\":[", f);
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		char end[96];

		if (!r->readable)
			continue;
		pf_sep(&p);
		fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"rank %d (",
			r->meta.rank, r->meta.rank);
		rt_vw_json_esc(f, r->meta.hostname);
		fputs(")\"}}", f);
		pf_sep(&p);
		fprintf(f, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
			r->meta.rank, r->meta.rank);
		/* how the rank ended, as every output words it */
		rt_vw_rank_end(r, end, sizeof(end));
		pf_sep(&p);
		fprintf(f, "{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":%d,\"args\":{\"labels\":\"",
			r->meta.rank);
		rt_vw_json_esc(f, end);
		fputs("\"}}", f);
	}
	rc = rt_vw_foreach(t, pf_event, &p);
	if (!p.first)
		rt_vw_dev_perfetto(f, t, p.t0); /* device.c: collectives on the device */
	for (int i = 0; i < t->nranks; i++)
		pf_placement_changes(&p, &t->ranks[i]);
	fputs("\n]}\n", f);
	free(p.mem_at);
	free(p.ev);
	for (int b = 0; b < FLOW_BUCKETS; b++)
		while (p.flows[b]) {
			struct flow *x = p.flows[b];

			p.flows[b] = x->next;
			free(x);
		}
	return rc || ferror(f) ? -1 : 0;
}
