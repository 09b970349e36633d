/* SPDX-License-Identifier: MIT */
/* devhang.c - a hang seen on device truth. With asynchronous collectives a
 * hung job's host threads sit in a stream synchronisation (or further on):
 * the collective that never completed shows only in the device records
 * (device.c). "AllGather #4 (comm 3f2a, 512 KiB) was enqueued by ranks
 * 0,1,3 and never completed on any device; rank 2 never enqueued #4: its
 * host thread has been inside cudaMalloc for 31 s (last collective it
 * enqueued: #3)". A trace without device records gets hang.c's analysis. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "model_int.h"

static bool in_comm(const struct rt_vw_rank *r, uint64_t comm)
{
	return rt_vw_entered_seq(r, comm) > 0;
}

/* Did c complete on some device? A completion counts only on a rank that
 * had not aborted the communicator before (devevents: a CUDA event after a
 * failed or aborted collective completes too), and only when every rank of
 * the communicator enqueued it: without one of them no collective can
 * complete, so that completion was a failure's. */
static bool completed(const struct rt_vw_trace *t, const struct rt_vw_devcoll *c)
{
	bool done = false;

	for (int k = 0; k < t->nranks; k++) {
		const struct rt_vw_rank *r = &t->ranks[k];

		if (!r->readable)
			continue;
		if (in_comm(r, c->comm_id) && rt_vw_entered_seq(r, c->comm_id) < c->seq)
			return false;
		done = done || rt_vw_dev_done(r->dev, rt_vw_dev_find(r->dev, c->comm_id, c->seq));
	}
	return done;
}

static bool has_device_records(const struct rt_vw_trace *t)
{
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].readable && t->ranks[i].dev &&
		    (t->ranks[i].dev->started || t->ranks[i].dev->source_seen))
			return true;
	return false;
}

/* The subject: the earliest collective (lowest seq, then earliest enqueue)
 * some rank enqueued and no device completed. */
static const struct rt_vw_devcoll *subject(const struct rt_vw_trace *t)
{
	const struct rt_vw_devcoll *best = NULL;

	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_devlog *d = t->ranks[i].dev;

		for (uint32_t j = 0; t->ranks[i].readable && d && j < d->n; j++) {
			const struct rt_vw_devcoll *c = &d->v[j];

			if (!c->enq_ts || rt_vw_dev_done(d, c) || (best && c->seq > best->seq))
				continue;
			if ((!best || c->seq < best->seq || c->enq_ts < best->enq_ts) && !completed(t, c))
				best = c;
		}
	}
	return best;
}

/* "its host thread has been inside cudaMalloc for 31 s" or how it ended */
static void host_of(char *out, size_t n, const struct rt_vw_rank *r)
{
	const struct rt_vw_open_call *o = rt_vw_oldest_open(r);
	char name[80];

	if (!rt_vw_frozen(r) && o && r->state == RT_S_KILLED) {
		rt_vw_call_name(name, sizeof(name), o);
		snprintf(out, n, "it was killed (signal %d) inside %s", r->signo, name);
	} else if (!rt_vw_frozen(r)) {
		snprintf(out, n, "%s", r->state == RT_S_KILLED ? "it was killed" :
			 r->state == RT_S_EXITED ? "it exited" : "its process is gone");
	} else if (o) {
		rt_vw_call_name(name, sizeof(name), o);
		snprintf(out, n, "its host thread has been inside %s for %.0f s", name, o->age_s);
	} else {
		snprintf(out, n, "no call open, idle for %.0f s", r->idle_s);
	}
}

static void size_of(char *out, size_t n, uint64_t b)
{
	if (b >= 1024 * 1024 && !(b % (1024 * 1024)))
		snprintf(out, n, ", %" PRIu64 " MiB", b / (1024 * 1024));
	else if (b >= 1024 && !(b % 1024))
		snprintf(out, n, ", %" PRIu64 " KiB", b / 1024);
	else if (b)
		snprintf(out, n, ", %" PRIu64 " B", b);
	else
		out[0] = '\0';
}

/* "; it started on the devices of ranks 0,1,3, never on rank 2's": the
 * device-side laggard, when some devices started c and others that had it
 * enqueued did not. */
static size_t not_started(const struct rt_vw_trace *t, const struct rt_vw_devcoll *c, char *out,
			  size_t n)
{
	char on[200] = "", off[200] = "";
	size_t a = 0, b = 0;

	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_devcoll *o = rt_vw_dev_find(t->ranks[i].dev, c->comm_id, c->seq);

		if (!t->ranks[i].readable || !o || !o->enq_ts)
			continue;
		if (o->start_ts && a < sizeof(on) - 12)
			a += (size_t)snprintf(on + a, sizeof(on) - a, "%s%d", a ? "," : "",
					      t->ranks[i].meta.rank);
		else if (!o->start_ts && b < sizeof(off) - 12)
			b += (size_t)snprintf(off + b, sizeof(off) - b, "%s%d", b ? "," : "",
					      t->ranks[i].meta.rank);
	}
	if (!a || !b)
		return 0;
	a = (size_t)snprintf(out, n, "; it started on the device%s of rank%s %s, never on rank%s %s'%s",
			     strchr(on, ',') ? "s" : "", strchr(on, ',') ? "s" : "", on,
			     strchr(off, ',') ? "s" : "", off, strchr(off, ',') ? "" : "s");
	return a < n ? a : n - 1;
}

/* "AllGather #4 (comm 3f2a, 512 KiB)" */
static size_t coll_name(char *out, size_t n, const struct rt_vw_devcoll *c)
{
	char size[40];
	int k;

	size_of(size, sizeof(size), c->bytes);
	k = snprintf(out, n, "%s #%u (comm %04" PRIx64 "%s)",
		     c->kind < RT_CK_COUNT ? rt_coll_names[c->kind] : "collective", c->seq,
		     c->comm_id & 0xffff, size);
	return k < 0 ? 0 : (size_t)k < n ? (size_t)k : n - 1;
}

/* Killed by SIGABRT after its call enqueued c had returned: a watchdog's
 * abort (one inside the call is the call's, an injected abort's). */
static bool watchdogged(const struct rt_vw_rank *r, const struct rt_vw_devcoll *c)
{
	if (r->state != RT_S_KILLED || r->signo != SIGABRT)
		return false;
	for (int k = 0; k < r->nopen; k++)
		if (r->open[k].comm_id == c->comm_id && r->open[k].seq == c->seq)
			return false;
	return true;
}

/* "ranks 0,1,3": the readable ranks that enqueued c (aborted: and died by
 * SIGABRT); c, the subject, completed on no device */
static void enqueuers(const struct rt_vw_trace *t, const struct rt_vw_devcoll *c, bool aborted,
		      char *out, size_t n)
{
	size_t el = 0;

	out[0] = '\0';
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		const struct rt_vw_devcoll *o = rt_vw_dev_find(r->dev, c->comm_id, c->seq);

		if (!r->readable || !o || !o->enq_ts || (aborted && !watchdogged(r, c)) || el >= n - 12)
			continue;
		el += (size_t)snprintf(out + el, n - el, "%s%d", el ? "," : "", r->meta.rank);
	}
}

/* "; rank 2 never enqueued #4: ..." for each rank of c's communicator that
 * never enqueued it */
static size_t missing(const struct rt_vw_trace *t, const struct rt_vw_devcoll *c, char *out, size_t n)
{
	char host[200];
	size_t len = 0;

	for (int i = 0; i < t->nranks && len < n - 1; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		const struct rt_vw_devcoll *o = rt_vw_dev_find(r->dev, c->comm_id, c->seq);
		uint32_t last = rt_vw_entered_seq(r, c->comm_id);

		if (!r->readable || (o && o->enq_ts) || !in_comm(r, c->comm_id) || last >= c->seq)
			continue;
		host_of(host, sizeof(host), r);
		len += (size_t)snprintf(out + len, n - len, "; rank %d never enqueued #%u: %s (last "
					"collective it enqueued: #%u)", r->meta.rank, c->seq, host, last);
	}
	return len < n ? len : n - 1;
}

/* "; which device never started it is not known (...)": every rank of the
 * communicator enqueued c and their records, from CUDA events, hold no
 * device start (a tracer before devevents.c recorded start events, or its
 * start events all lost): which device held it up cannot be told. */
static size_t start_unknown(const struct rt_vw_trace *t, const struct rt_vw_devcoll *c, char *out,
			    size_t n)
{
	int k;

	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_devlog *d = t->ranks[i].dev;
		const struct rt_vw_devcoll *o = rt_vw_dev_find(d, c->comm_id, c->seq);

		if (t->ranks[i].readable && o && o->enq_ts &&
		    (d->started || d->source != RT_DEV_SRC_EVENT))
			return 0;
	}
	k = snprintf(out, n, "; which device never started it is not known (the CUDA-event records "
		     "hold completions only)");
	return k < 0 ? 0 : (size_t)k < n ? (size_t)k : n - 1;
}

size_t rt_vw_dev_hang(const struct rt_vw_trace *t, char *out, size_t n)
{
	const struct rt_vw_devcoll *c;
	char enq[200];
	size_t len, more;

	if (n < 2 || !has_device_records(t) || !(c = subject(t)))
		return 0;
	enqueuers(t, c, false, enq, sizeof(enq));
	len = coll_name(out, n, c);
	len += (size_t)snprintf(out + len, n - len, " was enqueued by rank%s %s and never completed "
				"on any device", strchr(enq, ',') ? "s" : "", enq);
	if (len >= n)
		return n - 1;
	len += not_started(t, c, out + len, n - len);
	more = missing(t, c, out + len, n - len);
	if (!more && len < n - 1)
		more = start_unknown(t, c, out + len, n - len);
	len += more;
	return len < n ? len : n - 1;
}

/* The NCCL watchdog's ending (PyTorch's: SIGABRT after its timeout while a
 * collective had not completed): the ranks that died by SIGABRT with the
 * subject collective enqueued and never completed on any device, named as
 * ended by the watchdog on it; the rank that never enqueued it as the cause. */
void rt_vw_dev_watchdog(struct rt_vw_trace *t)
{
	const struct rt_vw_devcoll *c;
	struct rt_vw_finding *f;
	char ab[200], text[600];
	size_t len;
	bool sigabrt = false;

	for (int i = 0; i < t->nranks; i++) /* no SIGABRT: no watchdog (and no search) */
		sigabrt = sigabrt || (t->ranks[i].readable && t->ranks[i].state == RT_S_KILLED &&
				      t->ranks[i].signo == SIGABRT);
	if (!sigabrt || t->hung || !has_device_records(t) || !(c = subject(t)))
		return;
	enqueuers(t, c, true, ab, sizeof(ab));
	if (!ab[0])
		return;
	len = (size_t)snprintf(text, sizeof(text), "rank%s %s %s ended by the NCCL watchdog (SIGABRT) "
			       "on ", strchr(ab, ',') ? "s" : "", ab, strchr(ab, ',') ? "were" : "was");
	len += coll_name(text + len, sizeof(text) - len, c);
	len += (size_t)snprintf(text + len, sizeof(text) - len, ", enqueued and never completed on "
				"any device");
	if (len < sizeof(text))
		missing(t, c, text + len, sizeof(text) - len);
	f = rt_vw_add_finding(t, 1, RT_V_CRASHED, "%s", text);
	if (f) { /* view --json: the collective it timed out on */
		f->comm = c->comm_id;
		f->seq = c->seq;
	}
}
