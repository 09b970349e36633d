/* SPDX-License-Identifier: MIT */
/* finding_say.c - the sentences of the kinds whose words are lists: a
 * hang's laggards, the NCCL watchdog's ranks, a collective mismatch, a
 * collective never called, the probe's unwrapped calls, an incomplete
 * trace, missing ranks; and the words for why a verdict would be a guess
 * (view's "completeness" line, verdict's stderr, view --json's
 * "inconclusive" and each rank's "incomplete").
 *
 * Made from the findings' data only (their ranks, collective, values and
 * evidence; the rank models for names). Every list is bounded as the
 * sentences always were (a list of ranks stops short of ~200 bytes); the
 * sentence is cut at the buffer's end. No allocation; thread-safe. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "finding_say.h"
#include "rt_util.h"

/* The evidence of role of f: their ranks, "0,1,3" (cut short of cap). */
static void ev_ranks(struct rt_vw_sb *b, const struct rt_vw_finding *f, enum rt_vw_ev_role role,
		     size_t cap, int *count)
{
	size_t start = b->len;
	int n = 0;

	for (int i = 0; i < f->nev; i++)
		if (f->ev[i].role == role) {
			if (b->len - start < cap - 12)
				rt_vw_sb_printf(b, "%s%d", n ? "," : "", f->ev[i].rank);
			n++;
		}
	if (count)
		*count = n;
}

/* A list of role's ranks into out (cap bytes), and how many there are. */
static int ev_list(char *out, size_t cap, const struct rt_vw_finding *f, enum rt_vw_ev_role role)
{
	struct rt_vw_sb b = rt_vw_sb_init(out, cap);
	int n;

	ev_ranks(&b, f, role, cap, &n);
	return n;
}

/* "AllGather(count 1048576)", with the datatype and the reduction op where
 * they differ from other's (NULL: none to compare). */
static void say_sig(char *out, size_t n, const struct rt_vw_fcall *s, const struct rt_vw_fcall *other)
{
	struct rt_vw_sb b = rt_vw_sb_init(out, n);
	const char *dt = rt_nccl_dtype_name(s->dtype);

	rt_vw_sb_printf(&b, "%s(count %" PRIu64, rt_coll_names[s->kind], s->count);
	if (rt_ck_has_root(s->kind))
		rt_vw_sb_printf(&b, ", root %d", s->root);
	if (other && other->dtype != s->dtype) {
		if (dt)
			rt_vw_sb_printf(&b, ", %s", dt);
		else
			rt_vw_sb_printf(&b, ", datatype %u", s->dtype);
	}
	if (other && other->op != s->op && rt_ck_has_op(s->kind))
		rt_vw_sb_printf(&b, ", op %u", s->op);
	rt_vw_sb_printf(&b, ")");
}

static void say_mismatch(struct rt_vw_sb *b, const struct rt_vw_trace *t, const struct rt_vw_finding *f)
{
	const struct rt_vw_fval *same = rt_vw_fv(f, RT_FV_ranks_same);
	int64_t n = same ? same->v.i : 0;
	char odd[256], a[96], c[96];
	struct rt_vw_sb ob = rt_vw_sb_init(odd, sizeof(odd));

	rt_vw_say_ranks(&ob, f->ranks, f->nranks, sizeof(odd) - 4);
	say_sig(a, sizeof(a), &f->coll, &f->other);
	say_sig(c, sizeof(c), &f->other, &f->coll);
	rt_vw_sb_printf(b, "collective mismatch at sequence %u of communicator %016" PRIx64,
			f->coll.seq, f->coll.comm);
	rt_vw_say_comm(b, t, f->coll.comm, " ");
	rt_vw_sb_printf(b, ": rank%s %s called %s where %" PRId64 " rank%s called %s (a rank "
			"skipped or added a collective)", f->nranks > 1 ? "s" : "", odd, c, n,
			n == 1 ? "" : "s", a);
}

static void say_devices_mismatch(struct rt_vw_sb *b, const struct rt_vw_finding *f)
{
	char a[96], c[96];

	say_sig(a, sizeof(a), &f->coll, &f->other);
	say_sig(c, sizeof(c), &f->other, &f->coll);
	rt_vw_sb_printf(b, "collective mismatch at sequence %u of communicator %016" PRIx64 ": the "
			"devices of rank %d (ncclCommInitAll) called %s and %s (a device skipped or "
			"added a collective)", f->coll.seq, f->coll.comm, f->nranks ? f->ranks[0] : -1,
			a, c);
}

static void say_never_called(struct rt_vw_sb *b, const struct rt_vw_trace *t,
			     const struct rt_vw_finding *f)
{
	char a[96] = "?", lacking[256];
	struct rt_vw_sb lb = rt_vw_sb_init(lacking, sizeof(lacking));

	if (f->coll.sig)
		say_sig(a, sizeof(a), &f->coll, NULL);
	rt_vw_say_ranks(&lb, f->ranks, f->nranks, sizeof(lacking) - 4);
	rt_vw_sb_printf(b, "collective %s at sequence %u of communicator %016" PRIx64, a,
			f->coll.seq, f->coll.comm);
	rt_vw_say_comm(b, t, f->coll.comm, " ");
	rt_vw_sb_printf(b, " was never called by rank%s %s", f->nranks > 1 ? "s" : "", lacking);
}

/* "ranks 0,1 called M from C while no FSDP root forward ran (...)": the
 * first rank's first (module, caller), the calls, the placement behind it. */
static void say_unwrapped_calls(char *out, size_t n, const struct rt_vw_finding *f)
{
	const struct rt_vw_fval *before = rt_vw_fv(f, RT_FV_root_forwards_before);
	const struct rt_vw_fval *any = rt_vw_fv(f, RT_FV_root_forwards_before_any);
	const struct rt_vw_fval *calls = rt_vw_fv(f, RT_FV_calls), *freed = rt_vw_fv(f, RT_FV_freed);
	const struct rt_vw_fval *views = rt_vw_fv(f, RT_FV_views);
	const struct rt_vw_fval *module = rt_vw_fv(f, RT_FV_module), *caller = rt_vw_fv(f, RT_FV_caller);
	int64_t nc = calls ? calls->v.i : 0, nf = freed ? freed->v.i : 0, nv = views ? views->v.i : 0;
	int64_t nb = before ? before->v.i : 0;
	char list[256], place[96] = "", when[48] = "no root forward ran before";
	int k = f->nranks;

	rt_int_ranges(f->ranks, k < RT_VW_FINDING_RANKS ? k : RT_VW_FINDING_RANKS, list, sizeof(list));
	if (any && any->v.i)
		snprintf(when, sizeof(when), "after %" PRId64 " root forward%s", nb, nb == 1 ? "" : "s");
	if (nf || nv)
		snprintf(place, sizeof(place), "; %s parameters then: %" PRId64 " shard views, %" PRId64
			 " at storage FSDP freed", k > 1 ? "their" : "its", nv, nf);
	/* the probe reports a (module, caller) at its 1st, 2nd, 4th... call: a lower bound */
	snprintf(out, n, "rank%s %s called %s from %s while no FSDP root forward ran (at least %" PRId64
		 " call%s in all%s; %s%s)", k > 1 ? "s" : "", list, module ? module->v.s : "",
		 caller ? caller->v.s : "", nc, nc == 1 ? "" : "s",
		 rt_vw_fv(f, RT_FV_more_pairs) ? ", more module/caller pairs" : "", when, place);
}

/* "; the exception that left it: RuntimeError: 'weight' must be 2-D" */
static void say_exception(struct rt_vw_sb *b, const struct rt_vw_finding *f)
{
	const struct rt_vw_fval *type = rt_vw_fv(f, RT_FV_exc_type), *msg = rt_vw_fv(f, RT_FV_exc_message);

	if (type)
		rt_vw_sb_printf(b, "; the exception that left it: %s%s%s", type->v.s, msg ? ": " : "",
				msg ? msg->v.s : "");
}

static void say_unwrapped(struct rt_vw_sb *b, const struct rt_vw_finding *f)
{
	const struct rt_vw_fval *crashed = rt_vw_fv(f, RT_FV_crashed);
	int64_t c = crashed ? crashed->v.i : 0;
	char what[360];

	say_unwrapped_calls(what, sizeof(what), f);
	/* the exception last: a sentence cut at its end loses its message's tail only */
	if (f->kind == RT_FK_UNWRAPPED_CALL)
		rt_vw_sb_printf(b, "%s; the root forward ran at other times and no rank crashed", what);
	else if (c)
		rt_vw_sb_printf(b, "FSDP root forward skipped (probe): %s; %s crashed", what,
				c == f->nranks ? (f->nranks > 1 ? "each of them" : "it") : "some of them");
	else /* every rank, and no root forward ever ran: crash or not */
		rt_vw_sb_printf(b, "FSDP root forward skipped (probe): %s; no rank crashed: the program "
				"went on (no root forward ran on any rank)", what);
	say_exception(b, f);
}

/* "AllGather #4 (comm 3f2a, 512 KiB)" */
static void say_devcoll(struct rt_vw_sb *b, const struct rt_vw_fcall *c)
{
	uint64_t by = c->bytes;
	char size[40] = "";

	if (by >= 1024 * 1024 && !(by % (1024 * 1024)))
		snprintf(size, sizeof(size), ", %" PRIu64 " MiB", by / (1024 * 1024));
	else if (by >= 1024 && !(by % 1024))
		snprintf(size, sizeof(size), ", %" PRIu64 " KiB", by / 1024);
	else if (by)
		snprintf(size, sizeof(size), ", %" PRIu64 " B", by);
	rt_vw_sb_printf(b, "%s #%u (comm %04" PRIx64 "%s)",
			c->kind < RT_CK_COUNT ? rt_coll_names[c->kind] : "collective", c->seq,
			c->comm & 0xffff, size);
}

void rt_vw_say_where(struct rt_vw_sb *b, const struct rt_vw_evidence *e)
{
	if (!e->frozen && e->call.id < RT_ID_COUNT && e->state == RT_S_KILLED) {
		rt_vw_sb_printf(b, "it was killed (signal %d) inside ", e->signo);
		rt_vw_say_call(b, e->call);
	} else if (!e->frozen) {
		rt_vw_sb_printf(b, "%s", e->state == RT_S_KILLED ? "it was killed" :
				e->state == RT_S_EXITED ? "it exited" : "its process is gone");
	} else if (e->call.id < RT_ID_COUNT) {
		rt_vw_sb_printf(b, "its host thread has been inside ");
		rt_vw_say_call(b, e->call);
		rt_vw_sb_printf(b, " for %.0f s", e->secs);
	} else {
		rt_vw_sb_printf(b, "no call open, idle for %.0f s", e->secs);
	}
}

/* "; rank 2 never enqueued #4: ... (last collective it enqueued: #3)"
 * ("called" when the host trace is the finding's only evidence) */
static void say_never_enqueued(struct rt_vw_sb *b, const struct rt_vw_finding *f)
{
	const char *did = rt_vw_fv(f, RT_FV_host_only) ? "called" : "enqueued";

	for (int i = 0; i < f->nev; i++) {
		const struct rt_vw_evidence *e = &f->ev[i];

		if (e->role != RT_EV_NEVER_ENQUEUED)
			continue;
		rt_vw_sb_printf(b, "; rank %d never %s #%u: ", e->rank, did, f->coll.seq);
		rt_vw_say_where(b, e);
		rt_vw_sb_printf(b, " (last collective it %s: #%u)", did, e->last_seq);
	}
}

/* "; it started on the devices of ranks 0,1,2, never on rank 3's" (the
 * devices that never started it: the ones the others wait for) */
static void say_started(struct rt_vw_sb *b, const struct rt_vw_finding *f)
{
	char on[200], off[200];
	int non = ev_list(on, sizeof(on), f, RT_EV_STARTED);
	int noff = ev_list(off, sizeof(off), f, RT_EV_NOT_STARTED);

	if (non && noff)
		rt_vw_sb_printf(b, "; it started on the device%s of rank%s %s, never on rank%s %s'%s",
				non > 1 ? "s" : "", non > 1 ? "s" : "", on, noff > 1 ? "s" : "", off,
				noff > 1 ? "" : "s");
}

/* "; its device records on ranks 0,2,3 were dropped (start not known)" */
static void say_dropped(struct rt_vw_sb *b, const struct rt_vw_finding *f)
{
	char dr[200];
	int n = ev_list(dr, sizeof(dr), f, RT_EV_DROPPED);

	if (n)
		rt_vw_sb_printf(b, "; its device record%s on rank%s %s %s dropped (start not known)",
				n > 1 ? "s" : "", n > 1 ? "s" : "", dr, n > 1 ? "were" : "was");
}

/* "; 47712 device records dropped in all, none taken as evidence" (the
 * findings that read device records: none rests on a dropped collective) */
static void say_dropped_all(struct rt_vw_sb *b, const struct rt_vw_finding *f)
{
	const struct rt_vw_fval *all = rt_vw_fv(f, RT_FV_dropped);

	if (all)
		rt_vw_sb_printf(b, "; %" PRId64 " device record%s dropped in all, none taken as "
				"evidence (view lists them)", all->v.i, all->v.i == 1 ? "" : "s");
}

/* A hang on device truth: the collective no device completed, who
 * enqueued it, whose device started it and whose did not, who never
 * enqueued it. */
static void say_device_hang(struct rt_vw_sb *b, const struct rt_vw_trace *t,
			    const struct rt_vw_finding *f)
{
	char enq[200];
	int n = ev_list(enq, sizeof(enq), f, RT_EV_ENQUEUED);

	say_devcoll(b, &f->coll);
	rt_vw_say_comm(b, t, f->coll.comm, " on ");
	if (rt_vw_fv(f, RT_FV_host_only)) {
		rt_vw_sb_printf(b, " was called by rank%s %s, not by every rank of its communicator "
				"(no device record shows it)", n > 1 ? "s" : "", enq);
		say_never_enqueued(b, f);
		return;
	}
	rt_vw_sb_printf(b, " was enqueued by rank%s %s and never completed on any device",
			n > 1 ? "s" : "", enq);
	say_started(b, f);
	say_dropped(b, f);
	say_never_enqueued(b, f);
	if (rt_vw_fv(f, RT_FV_start_unknown))
		rt_vw_sb_printf(b, "; which device never started it is not known (the CUDA-event "
				"records hold completions only)");
}

/* "; rank 2 never entered #58: it has been inside cudaMalloc for 121 s" */
static void say_never_entered(struct rt_vw_sb *b, const struct rt_vw_finding *f)
{
	for (int i = 0; i < f->nev && !b->full; i++) {
		const struct rt_vw_evidence *e = &f->ev[i];

		if (e->role != RT_EV_NEVER_ENTERED)
			continue;
		rt_vw_sb_printf(b, "; rank %d never entered #%u: ", e->rank, f->coll.seq);
		if (!e->frozen) {
			rt_vw_sb_printf(b, "%s", e->state == RT_S_KILLED ? "it was killed" :
					e->state == RT_S_EXITED ? "it exited" : "its process is gone");
		} else if (e->call.id < RT_ID_COUNT) {
			rt_vw_sb_printf(b, "it has been inside ");
			rt_vw_say_call(b, e->call);
			rt_vw_sb_printf(b, " for %.0f s", e->secs);
		} else {
			rt_vw_sb_printf(b, "no call open, idle for %.0f s", e->secs);
		}
	}
}

/* The laggard analysis: stopped ranks, then who waits in which collective
 * and who never entered it, or the device records' collective. */
static void say_laggards(struct rt_vw_sb *b, const struct rt_vw_trace *t, const struct rt_vw_finding *f)
{
	const struct rt_vw_fval *call = rt_vw_fv(f, RT_FV_call);
	char stopped[200], waiting[200], on[40];
	int ns = ev_list(stopped, sizeof(stopped), f, RT_EV_STOPPED), nw;
	double age = 0;

	if (ns)
		rt_vw_sb_printf(b, "rank%s %s %s stopped (process state T: SIGSTOP, Ctrl-Z or a "
				"debugger), the others wait for %s%s", ns > 1 ? "s" : "", stopped,
				ns > 1 ? "are" : "is", ns > 1 ? "them" : "it",
				call || f->coll.comm ? "; " : "");
	if (!call) {
		if (rt_vw_say_p2p_hang(b, t, f))
			return;
		if (f->coll.comm)
			say_device_hang(b, t, f);
		return;
	}
	nw = ev_list(waiting, sizeof(waiting), f, RT_EV_WAITS);
	for (int i = 0; i < f->nev; i++)
		if (f->ev[i].role == RT_EV_WAITS && f->ev[i].secs > age)
			age = f->ev[i].secs;
	rt_vw_sb_printf(b, "rank%s %s wait%s in ", nw > 1 ? "s" : "", waiting, nw > 1 ? "" : "s");
	rt_vw_say_call(b, call->v.call);
	snprintf(on, sizeof(on), " on communicator %04" PRIx64 " ", f->coll.comm & 0xffff);
	rt_vw_say_comm(b, t, f->coll.comm, on);
	rt_vw_sb_printf(b, " (%.0f s)", age);
	say_never_entered(b, f);
}

void rt_vw_laggard_text(const struct rt_vw_trace *t, char *out, size_t n)
{
	struct rt_vw_sb b = rt_vw_sb_init(out, n);

	for (int i = 0; i < t->nfindings; i++)
		if (t->findings[i].kind == RT_FK_HUNG) {
			say_laggards(&b, t, &t->findings[i]);
			return;
		}
}

static void say_hang(struct rt_vw_sb *b, const struct rt_vw_trace *t, const struct rt_vw_finding *f)
{
	const struct rt_vw_fval *stall = rt_vw_fv(f, RT_FV_stall_s);
	bool interrupted = rt_vw_fv(f, RT_FV_interrupted) != NULL;
	char lag[600];
	struct rt_vw_sb lb = rt_vw_sb_init(lag, sizeof(lag));

	say_laggards(&lb, t, f);
	if (lag[0])
		rt_vw_sb_printf(b, "hung%s: %s", interrupted ? " when the job was interrupted" : "", lag);
	else
		rt_vw_sb_printf(b, "hung%s: no call returned on any %srank for %.0f s",
				interrupted ? " when the job was interrupted" : "",
				interrupted ? "" : "live ", stall ? stall->v.d : 0);
	say_dropped_all(b, f);
}

static void say_watchdog(struct rt_vw_sb *b, const struct rt_vw_trace *t, const struct rt_vw_finding *f)
{
	char ab[200], text[600];
	struct rt_vw_sb tb = rt_vw_sb_init(text, sizeof(text));
	int n = ev_list(ab, sizeof(ab), f, RT_EV_ABORTED);

	rt_vw_sb_printf(&tb, "rank%s %s %s ended by the NCCL watchdog (SIGABRT) on ", n > 1 ? "s" : "",
			ab, n > 1 ? "were" : "was");
	say_devcoll(&tb, &f->coll);
	rt_vw_say_comm(&tb, t, f->coll.comm, " on ");
	rt_vw_sb_printf(&tb, ", enqueued and never completed on any device");
	say_started(&tb, f);
	say_dropped(&tb, f);
	say_never_enqueued(&tb, f);
	say_dropped_all(&tb, f);
	rt_vw_sb_printf(b, "%s", text);
}

/* "rank 3", or the directory when the rank is not known (rank-p1234) */
static void say_who(char *out, size_t n, const struct rt_vw_rank *r)
{
	int k = rt_vw_rank_number(r);

	if (k >= 0 && k < 100000)
		snprintf(out, n, "rank %d", k);
	else
		snprintf(out, n, "%s", r->name);
}

void rt_vw_incomplete_text(const struct rt_vw_trace *t, int ri, char *out, size_t n)
{
	const struct rt_vw_rank *r = &t->ranks[ri];
	const char *stop = rt_stop_prose(r->stop_reason);
	char who[80];

	say_who(who, sizeof(who), r);
	switch (r->incomplete) {
	case RT_I_LIVE:
		snprintf(out, n, "%s is still running: a live process holds its stream file's lock", who);
		break;
	case RT_I_DAMAGED:
		snprintf(out, n, "%s trace damaged: %s", who, r->damaged[0] ? r->damaged : "unreadable");
		break;
	case RT_I_EMPTY:
		snprintf(out, n, "%s trace damaged: %s/ holds no readable event (no stream file, or only "
			 "empty ones)", who, r->name);
		break;
	case RT_I_DUPLICATE:
		snprintf(out, n, "%s and %s both claim rank %d", r->name, t->ranks[r->dup_of].name,
			 rt_vw_rank_number(r));
		break;
	case RT_I_STOPPED:
		snprintf(out, n, "%s trace incomplete: %s at event %" PRIu64 "%s", who,
			 stop ? stop : "tracing stopped", r->stop_events,
			 r->discarded ? " (later events only counted)" : "");
		break;
	case RT_I_CAPPED:
		snprintf(out, n, "%s trace capped: %" PRIu64 " events discarded (tracing stopped early)",
			 who, r->discarded);
		break;
	default:
		snprintf(out, n, "%s", "");
	}
}

/* "ranks 1,3 missing: no directory holds them (world size 4)" */
static void say_missing(struct rt_vw_sb *b, const struct rt_vw_trace *t)
{
	char list[200];
	struct rt_vw_sb lb = rt_vw_sb_init(list, sizeof(list));

	for (int k = 0; k < t->nmissing && lb.len < sizeof(list) - 12; k++)
		rt_vw_sb_printf(&lb, "%s%d", k ? "," : "", t->missing[k]);
	rt_vw_sb_printf(b, "rank%s %s missing: no directory holds %s (world size %d)",
			t->nmissing > 1 ? "s" : "", list, t->nmissing > 1 ? "them" : "it", t->world_size);
}

bool rt_vw_probe_missing_text(const struct rt_vw_trace *t, char *out, size_t n)
{
	struct rt_vw_sb b = rt_vw_sb_init(out, n);
	const struct rt_vw_fval *why = NULL;
	int v[256], k = 0;
	char list[160];

	for (int i = 0; i < t->nfindings && k < 256; i++)
		if (t->findings[i].kind == RT_FK_PROBE_MISSING) {
			v[k++] = t->findings[i].rank;
			why = why ? why : rt_vw_fv(&t->findings[i], RT_FV_probe);
		}
	if (!k)
		return false;
	rt_int_ranges(v, k, list, sizeof(list));
	rt_vw_sb_printf(&b, "rank%s %s ran Python without the ranktrace probe (%s): no evidence "
			"of FSDP root forwards or unwrapped calls", k > 1 ? "s" : "", list,
			why ? why->v.s : "it did not load");
	return true;
}

void rt_vw_inconclusive_text(const struct rt_vw_trace *t, char *out, size_t n)
{
	struct rt_vw_sb b = rt_vw_sb_init(out, n);

	if (t->why == RT_W_MISSING) {
		say_missing(&b, t);
	} else if (t->why == RT_W_RANK) {
		rt_vw_incomplete_text(t, t->why_rank, out, n);
	} else if (t->why == RT_W_PROBE) {
		rt_vw_probe_missing_text(t, out, n);
	} else if (t->why == RT_W_INTERRUPTED) {
		for (int i = 0; i < t->nfindings; i++)
			if (t->findings[i].kind == RT_FK_INTERRUPTED) {
				rt_vw_finding_text(t, &t->findings[i], out, n < 300 ? n : 300);
				break;
			}
	}
}

static void say_incomplete(struct rt_vw_sb *b, const struct rt_vw_trace *t,
			   const struct rt_vw_finding *f)
{
	const struct rt_vw_fval *v = rt_vw_fv(f, RT_FV_trace);
	char why[400];

	if (!v)
		return;
	rt_vw_incomplete_text(t, (int)(v->v.rank - t->ranks), why, sizeof(why));
	rt_vw_sb_printf(b, "%s: %s", v->v.rank->name, why);
}

void rt_vw_say_kind(struct rt_vw_sb *b, const struct rt_vw_trace *t, const struct rt_vw_finding *f)
{
	switch (f->kind) {
	case RT_FK_HUNG: say_hang(b, t, f); break;
	case RT_FK_NCCL_WATCHDOG: say_watchdog(b, t, f); break;
	case RT_FK_COLLECTIVE_MISMATCH: say_mismatch(b, t, f); break;
	case RT_FK_DEVICES_MISMATCH: say_devices_mismatch(b, f); break;
	case RT_FK_NEVER_CALLED: say_never_called(b, t, f); break;
	case RT_FK_P2P_MISMATCH: rt_vw_say_p2p_mismatch(b, t, f); break;
	case RT_FK_P2P_UNMATCHED: rt_vw_say_p2p_unmatched(b, t, f); break;
	case RT_FK_ROOT_FORWARD_UNWRAPPED:
	case RT_FK_UNWRAPPED_CALL: say_unwrapped(b, f); break;
	case RT_FK_INCOMPLETE: say_incomplete(b, t, f); break;
	case RT_FK_MISSING_RANKS: say_missing(b, t); break;
	default: rt_vw_sb_printf(b, "%s", rt_findings[f->kind].title); break;
	}
}
