/* SPDX-License-Identifier: MIT */
/* perfetto_findings.c - the Perfetto export's findings: each finding an
 * instant event on the track of each rank it names, with what view --json
 * says of it (its index there, kind, level, verdict, sentence, ranks, the
 * collective). A finding about a collective sits on the rank's call of it
 * (same track, same time) and names it as the flow arrows do ("COMM-SEQ");
 * on a rank that never called it, or for a finding about no collective, at
 * the rank's last event on its main thread. A rank with no trace to draw
 * (missing, unreadable) gets a process of its own for its findings.
 *
 * perfetto.c shows every call to rt_vw_pf_findings_see while it streams
 * the events, then asks for the instants. Allocates one array. */
#include <stdlib.h>

#include "export.h"
#include "export_int.h"
#include "json.h"
#include "json_keys.h"

/* One finding on one rank: where it goes. */
struct spot {
	int finding, rank;
	bool found;        /* the rank's call of the finding's collective seen */
	uint64_t ts, tid;  /* that call's time and track */
};

struct rt_vw_pf_findings {
	const struct rt_vw_trace *t;
	struct spot *v;
	int n, colls;      /* spots, spots whose finding is about a collective */
};

/* The ranks finding f names (the one it is about when it names none). */
static int named(const struct rt_vw_finding *f, const int **ranks)
{
	*ranks = f->nranks ? f->ranks : &f->rank;
	if (f->nranks)
		return f->nranks < RT_VW_FINDING_RANKS ? f->nranks : RT_VW_FINDING_RANKS;
	return f->rank >= 0;
}

struct rt_vw_pf_findings *rt_vw_pf_findings_new(const struct rt_vw_trace *t)
{
	struct rt_vw_pf_findings *fs = calloc(1, sizeof(*fs));
	int n = 0;

	if (!fs)
		return NULL;
	fs->t = t;
	for (int i = 0; i < t->nfindings; i++) {
		const int *r;

		n += named(&t->findings[i], &r);
	}
	fs->v = calloc((size_t)n + 1, sizeof(*fs->v));
	if (!fs->v) {
		free(fs);
		return NULL;
	}
	for (int i = 0; i < t->nfindings; i++) {
		const int *r;
		int k = named(&t->findings[i], &r);

		for (int j = 0; j < k; j++)
			fs->v[fs->n++] = (struct spot){ .finding = i, .rank = r[j] };
		fs->colls += t->findings[i].coll.comm ? k : 0;
	}
	return fs;
}

void rt_vw_pf_findings_see(struct rt_vw_pf_findings *fs, int ri, const struct rt_vw_event *e,
			   uint64_t tid)
{
	uint64_t comm;
	uint32_t seq;

	if (!fs || !fs->colls || rt_field_at[e->id][RT_FN_comm_id] < 0 ||
	    rt_field_at[e->id][RT_FN_seq] < 0 || rt_events[e->id].lib != RT_LIB_NCCL)
		return;
	comm = (uint64_t)rt_vw_fld(e, RT_FN_comm_id);
	seq = (uint32_t)rt_vw_fld(e, RT_FN_seq);
	for (int k = 0; k < fs->n; k++) {
		struct spot *s = &fs->v[k];
		const struct rt_vw_finding *f = &fs->t->findings[s->finding];

		if (!s->found && f->coll.comm == comm && f->coll.seq == seq &&
		    s->rank == fs->t->ranks[ri].meta.rank) {
			s->found = true;
			s->ts = e->ts;
			s->tid = tid;
		}
	}
}

/* A process for a rank the export drew nothing of (missing, unreadable),
 * once, so its findings have a track. */
static void ghost_process(struct rt_json *w, const struct rt_vw_trace *t, int rank, bool *done)
{
	int ri = rt_vw_rank_index(t, rank);

	if (*done || (ri >= 0 && t->ranks[ri].readable))
		return;
	*done = true;
	rt_json_obj(w, NULL);
	rt_json_str(w, RT_JK(ph), "M");
	rt_json_str(w, RT_JK(name), "process_name");
	rt_json_int(w, RT_JK(pid), rank);
	rt_json_obj(w, RT_JK(args));
	rt_json_strf(w, RT_JK(name), "rank %d (%s)", rank, ri < 0 ? "no trace" : "trace unreadable");
	rt_json_end(w);
	rt_json_end(w);
}

/* The finding's args: what view --json says of it. */
static void finding_args(struct rt_json *w, const struct rt_vw_trace *t, int i)
{
	const struct rt_vw_finding *f = &t->findings[i];
	const struct rt_finding_info *kind = &rt_findings[f->kind];
	char text[RT_VW_FINDING_TEXT];

	rt_vw_finding_text(t, f, text, sizeof(text));
	rt_json_obj(w, RT_JK(args));
	rt_json_int(w, RT_JK(finding), i);
	rt_json_str(w, RT_JK(kind), kind->id);
	rt_json_str(w, RT_JK(level), rt_level_names[kind->level]);
	rt_json_str(w, RT_JK(signature), rt_verdicts[kind->verdict].word);
	rt_json_str(w, RT_JK(text), text);
	rt_json_arr(w, RT_JK(ranks));
	for (int k = 0; k < f->nranks && k < RT_VW_FINDING_RANKS; k++)
		rt_json_int(w, NULL, f->ranks[k]);
	rt_json_end(w);
	if (f->coll.comm) {
		rt_json_strf(w, RT_JK(comm), "%016llx", (unsigned long long)f->coll.comm);
		rt_json_uint(w, RT_JK(seq), f->coll.seq);
		rt_json_strf(w, RT_JK(collective), "%016llx-%u", (unsigned long long)f->coll.comm,
			     f->coll.seq);
	}
	rt_json_end(w);
}

void rt_vw_pf_findings_write(struct rt_vw_pf_findings *fs, struct rt_json *w, uint64_t t0)
{
	bool *ghost = fs ? calloc((size_t)fs->n + 1, sizeof(bool)) : NULL;

	for (int k = 0; ghost && k < fs->n; k++) {
		const struct spot *s = &fs->v[k];
		const struct rt_vw_finding *f = &fs->t->findings[s->finding];
		int ri = rt_vw_rank_index(fs->t, s->rank);
		const struct rt_vw_rank *r = ri >= 0 ? &fs->t->ranks[ri] : NULL;
		uint64_t ts = s->found ? s->ts : r && r->readable && r->last_ts > t0 ? r->last_ts : t0;

		for (int j = 0; j <= k; j++) /* one process per rank, the first time */
			if (fs->v[j].rank == s->rank) {
				ghost_process(w, fs->t, s->rank, &ghost[j]);
				break;
			}
		rt_json_obj(w, NULL);
		rt_json_str(w, RT_JK(ph), "i");
		rt_json_str(w, RT_JK(s), "t");
		rt_json_int(w, RT_JK(pid), s->rank);
		rt_json_uint(w, RT_JK(tid), s->found ? s->tid : r ? (uint64_t)r->meta.pid : 0);
		rt_json_fixed(w, RT_JK(ts), (double)(ts - t0) / 1000.0, 3);
		rt_json_str(w, RT_JK(cat), "finding");
		rt_json_strf(w, RT_JK(name), "%s %s", rt_level_names[rt_findings[f->kind].level],
			     rt_findings[f->kind].id);
		finding_args(w, fs->t, s->finding);
		rt_json_end(w);
	}
	free(ghost);
}

void rt_vw_pf_findings_free(struct rt_vw_pf_findings *fs)
{
	if (fs)
		free(fs->v);
	free(fs);
}
