/* SPDX-License-Identifier: MIT */
/* perfetto.c - a loaded trace as Chrome trace-event JSON (Perfetto UI,
 * chrome://tracing): a process per rank, tracks per thread and CUDA stream,
 * device-memory counters, flow arrows linking one collective across ranks
 * (opened by the first rank to call it, closed by the last), each rank's
 * collectives on its device, parameter placement changes, and each finding
 * on its ranks' tracks, on the collective it is about (perfetto_findings.c).
 *
 * Streams the events again (rt_vw_foreach) and writes them as it goes,
 * through util/'s JSON writer (compact, one event a line): memory in the
 * number of open flows, not of events. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "export.h"
#include "export_int.h"
#include "json.h"
#include "json_keys.h"
#include "view.h"

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
	struct rt_json w;
	const struct rt_vw_trace *t;
	uint64_t t0;
	uint32_t *mem_at;    /* per rank: next memory change of the model's */
	uint64_t *ev;        /* per rank: events replayed */
	struct rt_vw_pf_findings *fs; /* where each finding goes (perfetto_findings.c) */
	struct flow *flows[FLOW_BUCKETS];
};

/* An event's object opened: its phase, its rank's process. */
static void ev_open(struct rt_json *w, const char *ph, int pid)
{
	rt_json_obj(w, NULL);
	rt_json_str(w, RT_JK(ph), ph);
	rt_json_int(w, RT_JK(pid), pid);
}

/* A metadata event opened: what it names, for rank pid's process. */
static void meta_open(struct rt_json *w, const char *name, int pid)
{
	rt_json_obj(w, NULL);
	rt_json_str(w, RT_JK(ph), "M");
	rt_json_str(w, RT_JK(name), name);
	rt_json_int(w, RT_JK(pid), pid);
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
	rt_json_obj(&p->w, NULL);
	rt_json_str(&p->w, RT_JK(ph), ph);
	rt_json_strf(&p->w, RT_JK(id), "%016" PRIx64 "-%u", comm, seq);
	rt_json_strf(&p->w, RT_JK(name), "%s #%u", d->name, seq);
	rt_json_str(&p->w, RT_JK(cat), "collective");
	rt_json_int(&p->w, RT_JK(pid), r->meta.rank);
	rt_json_uint(&p->w, RT_JK(tid), tid);
	rt_json_fixed(&p->w, RT_JK(ts), us(p, e->ts), 3);
	if (ph[0] == 'f')
		rt_json_str(&p->w, RT_JK(bp), "e");
	rt_json_end(&p->w);
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
		const char *key = d->fields[i].name;
		char s[65];

		if (d->fields[i].kind == RT_K_STR) /* parameter and marker names, fault targets */
			rt_json_str(&p->w, key, rt_field_str(e->id, e->fields, i, s));
		else if (d->fields[i].kind == RT_K_PTR)
			rt_json_strf(&p->w, key, "0x%" PRIx64, (uint64_t)v);
		else if (d->fields[i].kind == RT_K_U64) /* a string: exact beyond 2^53 */
			rt_json_strf(&p->w, key, "%" PRIu64, (uint64_t)v);
		else
			rt_json_int(&p->w, key, v);
	}
	if (e->id == RT_ID_rt_fault) {
		char spec[160];

		rt_vw_fault_spec(e, spec, sizeof(spec));
		rt_json_str(&p->w, RT_JK(spec), spec);
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
	ev_open(&p->w, "X", r->meta.rank);
	rt_json_uint(&p->w, RT_JK(tid), tid);
	rt_json_fixed(&p->w, RT_JK(ts), us(p, e->ts), 3);
	rt_json_fixed(&p->w, RT_JK(dur), e->pending ? us(p, r->last_ts) - us(p, e->ts) : (double)e->dur / 1000.0, 3);
	rt_json_str(&p->w, RT_JK(name), d->name);
	rt_json_str(&p->w, RT_JK(cat), category(d, cat, sizeof(cat)));
	rt_json_obj(&p->w, RT_JK(args));
	rt_json_int(&p->w, RT_JK(ret), e->ret);
	if (rt_field_at[e->id][RT_FN_device] < 0) /* the call's own device argument says it */
		rt_json_int(&p->w, RT_JK(device), e->dev);
	if (e->pending)
		rt_json_bool(&p->w, RT_JK(never_returned), true);
	pf_args(p, e, d);
	rt_json_end(&p->w);
	rt_json_end(&p->w);
	rt_vw_pf_findings_see(p->fs, ri, e, tid);
	if (rt_vw_is_coll(e->id))
		pf_flow(p, r, e, d, tid);
	/* device memory as the model counted it, changed by this event */
	p->ev[ri]++;
	for (; p->mem_at[ri] < r->nmem && r->mem[p->mem_at[ri]].ev <= p->ev[ri]; p->mem_at[ri]++) {
		const struct rt_vw_mem_change *c = &r->mem[p->mem_at[ri]];

		ev_open(&p->w, "C", r->meta.rank);
		rt_json_fixed(&p->w, RT_JK(ts), us(p, e->ts), 3);
		rt_json_strf(&p->w, RT_JK(name), "device %d memory", c->dev);
		rt_json_obj(&p->w, RT_JK(args));
		rt_json_uint(&p->w, RT_JK(bytes), c->bytes);
		rt_json_end(&p->w);
		rt_json_end(&p->w);
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
		rt_json_obj(&p->w, NULL);
		rt_json_str(&p->w, RT_JK(ph), "i");
		rt_json_str(&p->w, RT_JK(s), "p");
		rt_json_int(&p->w, RT_JK(pid), r->meta.rank);
		rt_json_int(&p->w, RT_JK(tid), r->meta.pid);
		rt_json_fixed(&p->w, RT_JK(ts), us(p, ch->ts), 3);
		rt_json_str(&p->w, RT_JK(cat), "placement");
		rt_json_strf(&p->w, RT_JK(name), "%s: %s -> %s", r->params[ch->param].name, a, b);
		rt_json_obj(&p->w, RT_JK(args));
		rt_json_str(&p->w, RT_JK(param), r->params[ch->param].name);
		rt_json_str(&p->w, RT_JK(from), a);
		rt_json_str(&p->w, RT_JK(to), b);
		rt_json_str(&p->w, RT_JK(at), rt_vw_param_point_names[ch->point < RT_PP_COUNT ? ch->point : 0]);
		rt_json_end(&p->w);
		rt_json_end(&p->w);
	}
}

/* Each rank's collectives as slices from device start to completion on a
 * track of their own ("device: collectives"), with how long each waited on
 * its stream after the call enqueued it. One that started and never
 * completed (a hang on the device) lasts until the rank's last event,
 * marked never_completed, as a call that never returned is; a completion
 * before the start (damage) is not drawn. */
void rt_vw_perfetto_device(struct rt_json *w, const struct rt_vw_trace *t, uint64_t t0)
{
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		const struct rt_vw_devlog *d = r->dev;

		if (!r->readable || !d || !d->started)
			continue;
		meta_open(w, "thread_name", r->meta.rank);
		rt_json_uint(w, RT_JK(tid), RT_VW_DEV_TRACK);
		rt_json_obj(w, RT_JK(args));
		rt_json_str(w, RT_JK(name), "device: collectives");
		rt_json_end(w);
		rt_json_end(w);
		for (uint32_t j = 0; j < d->n; j++) {
			const struct rt_vw_devcoll *c = &d->v[j];
			uint64_t end = c->done_ts ? c->done_ts : r->last_ts;

			if (!c->start_ts || c->start_ts < t0 || end < c->start_ts)
				continue;
			ev_open(w, "X", r->meta.rank);
			rt_json_uint(w, RT_JK(tid), RT_VW_DEV_TRACK);
			rt_json_fixed(w, RT_JK(ts), (double)(c->start_ts - t0) / 1e3, 3);
			rt_json_fixed(w, RT_JK(dur), (double)(end - c->start_ts) / 1e3, 3);
			rt_json_strf(w, RT_JK(name), "%s #%u",
				     c->kind < RT_CK_COUNT ? rt_coll_names[c->kind] : "collective", c->seq);
			rt_json_str(w, RT_JK(cat), "device");
			rt_json_obj(w, RT_JK(args));
			rt_json_strf(w, RT_JK(comm_id), "%016llx", (unsigned long long)c->comm_id);
			rt_json_uint(w, RT_JK(seq), c->seq);
			rt_json_fixed(w, RT_JK(queued_us), c->enq_ts && c->enq_ts <= c->start_ts ?
					 (double)(c->start_ts - c->enq_ts) / 1e3 : 0.0, 3);
			if (!c->done_ts)
				rt_json_bool(w, RT_JK(never_completed), true);
			rt_json_end(w);
			rt_json_end(w);
		}
	}
}

/* A process per readable rank: its name (rank and host), its place in the
 * list, how it ended as every output says it (the report's). */
static void pf_processes(struct pf *p, const struct rt_vw_report *rp)
{
	for (int i = 0; i < rp->nranks; i++) {
		const struct rt_vw_rank *r = rp->ranks[i].r;

		if (!r->readable)
			continue;
		meta_open(&p->w, "process_name", r->meta.rank);
		rt_json_obj(&p->w, RT_JK(args));
		rt_json_strf(&p->w, RT_JK(name), "rank %d (%s)", r->meta.rank, r->meta.hostname);
		rt_json_end(&p->w);
		rt_json_end(&p->w);
		meta_open(&p->w, "process_sort_index", r->meta.rank);
		rt_json_obj(&p->w, RT_JK(args));
		rt_json_int(&p->w, RT_JK(sort_index), r->meta.rank);
		rt_json_end(&p->w);
		rt_json_end(&p->w);
		meta_open(&p->w, "process_labels", r->meta.rank);
		rt_json_obj(&p->w, RT_JK(args));
		rt_json_str(&p->w, RT_JK(labels), rp->ranks[i].end);
		rt_json_end(&p->w);
		rt_json_end(&p->w);
	}
}

int rt_vw_export_perfetto(const struct rt_vw_trace *t, FILE *f)
{
	struct pf p = { .t = t };
	struct rt_vw_report rp;
	int rc;

	p.t0 = rt_vw_trace_start(t);
	p.mem_at = calloc((size_t)t->nranks + 1, sizeof(*p.mem_at));
	p.ev = calloc((size_t)t->nranks + 1, sizeof(*p.ev));
	p.fs = rt_vw_pf_findings_new(t);
	if (!p.mem_at || !p.ev || !p.fs || rt_vw_report_make(t, -1, &rp) != 0) {
		free(p.mem_at);
		free(p.ev);
		rt_vw_pf_findings_free(p.fs);
		return -1;
	}
	rt_json_init(&p.w, f, true);
	rt_json_obj(&p.w, NULL);
	rt_json_str(&p.w, RT_JK(displayTimeUnit), "ns");
	rt_json_obj(&p.w, RT_JK(otherData));
	rt_json_str(&p.w, RT_JK(generator), "ranktrace");
	rt_json_str(&p.w, RT_JK(verdict), rt_verdicts[t->verdict].word);
	rt_json_end(&p.w);
	rt_json_arr(&p.w, RT_JK(traceEvents));
	rt_json_lines(&p.w, 0, true);
	pf_processes(&p, &rp);
	rc = rt_vw_foreach(t, pf_event, &p);
	rt_vw_perfetto_device(&p.w, t, p.t0);
	for (int i = 0; i < t->nranks; i++)
		pf_placement_changes(&p, &t->ranks[i]);
	rt_vw_pf_findings_write(p.fs, &p.w, p.t0);
	rt_json_end(&p.w);
	rt_json_end(&p.w);
	rc = rt_json_finish(&p.w) || rc ? -1 : 0;
	rt_vw_report_free(&rp);
	rt_vw_pf_findings_free(p.fs);
	free(p.mem_at);
	free(p.ev);
	for (int b = 0; b < FLOW_BUCKETS; b++)
		while (p.flows[b]) {
			struct flow *x = p.flows[b];

			p.flows[b] = x->next;
			free(x);
		}
	return rc;
}
