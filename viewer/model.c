/* SPDX-License-Identifier: MIT */
/* model.c - one streaming pass over all ranks: rank models, cross-rank
 * collective matching, findings, verdict.
 *
 * Every stream of every rank is merged by time (a heap of cursors). Each
 * event updates its rank's model (live allocation map, bytes per device,
 * devices used, communicator init, collectives, errors, how it ended), and
 * each collective joins its (communicator, sequence) entry in the matcher,
 * as PyTorch's Flight Recorder analyser does; an entry is checked and freed
 * once every rank of the communicator has reported it. What stays open at
 * the end is a collective some ranks never reached. Memory: live
 * allocations + open collectives + a capped list of calls per rank (diff). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

const char *const rt_vw_coll_names[RT_CK_COUNT] = { "AllReduce", "Broadcast", "Reduce",
						    "AllGather", "ReduceScatter", "Send", "Recv" };
const char *const rt_vw_verdict_names[RT_V_COUNT] = {
	"healthy", "skipped-fsdp-root", "device-misplacement", "collective-mismatch", "crashed",
	"inconclusive",
};

/* ---- live allocation map: open addressing, grows ---- */

struct alloc {
	uint64_t ptr, size;
	int8_t dev;   /* -1: host memory */
	uint8_t used; /* 0 empty, 1 live, 2 deleted */
};

struct rt_vw_alloc_map {
	struct alloc *slots;
	size_t cap, live, used;
};

static size_t hash_ptr(uint64_t p, size_t cap)
{
	return (size_t)((p >> 8) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
}

/* Rehash: double when half full of live entries, else just drop tombstones. */
static bool map_grow(struct rt_vw_alloc_map *m)
{
	size_t cap = !m->cap ? 1024 : (m->live + 1) * 4 > m->cap ? m->cap * 2 : m->cap;
	struct alloc *n = calloc(cap, sizeof(*n));

	if (!n)
		return false;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (m->slots[i].used != 1)
			continue;
		for (j = hash_ptr(m->slots[i].ptr, cap); n[j].used; j = (j + 1) & (cap - 1))
			;
		n[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = n;
	m->cap = cap;
	m->used = m->live;
	return true;
}

static void map_put(struct rt_vw_alloc_map *m, uint64_t ptr, uint64_t size, int dev)
{
	size_t j, reuse = SIZE_MAX;

	if ((m->used + 1) * 2 > m->cap && !map_grow(m))
		return;
	for (j = hash_ptr(ptr, m->cap); m->slots[j].used; j = (j + 1) & (m->cap - 1)) {
		if (m->slots[j].used == 1 && m->slots[j].ptr == ptr) {
			m->slots[j].size = size; /* allocated again without a free we saw */
			m->slots[j].dev = (int8_t)dev;
			return;
		}
		if (m->slots[j].used == 2 && reuse == SIZE_MAX)
			reuse = j;
	}
	if (reuse == SIZE_MAX)
		m->used++;
	else
		j = reuse;
	m->live++;
	m->slots[j] = (struct alloc){ ptr, size, (int8_t)dev, 1 };
}

static struct alloc *map_find(struct rt_vw_alloc_map *m, uint64_t ptr)
{
	if (!m->cap)
		return NULL;
	for (size_t j = hash_ptr(ptr, m->cap); m->slots[j].used; j = (j + 1) & (m->cap - 1))
		if (m->slots[j].used == 1 && m->slots[j].ptr == ptr)
			return &m->slots[j];
	return NULL;
}

/* ---- collective matcher ---- */

struct sig {
	uint8_t kind, dtype, op, seen;
	int32_t root;
	uint64_t count;
	int ret;
	bool pending;
};

struct centry {
	uint64_t comm_id;
	uint32_t seq;
	int nranks;     /* ranks expected */
	int seen;
	struct sig *by_rank; /* indexed by trace rank index */
	struct centry *next;
};

#define CBUCKETS 4096

struct matcher {
	struct centry *buckets[CBUCKETS];
	struct rt_vw_trace *t;
	/* comm_id -> nranks, learned from init events */
	struct { uint64_t id; int nranks; } comms[512];
	int ncomms;
	size_t open, open_peak;
	bool mismatch_reported;
};

static int comm_nranks(struct matcher *m, uint64_t id)
{
	for (int i = 0; i < m->ncomms; i++)
		if (m->comms[i].id == id)
			return m->comms[i].nranks;
	return m->t->nranks;
}

static void comm_learn(struct matcher *m, uint64_t id, int nranks)
{
	for (int i = 0; i < m->ncomms; i++)
		if (m->comms[i].id == id)
			return;
	if (m->ncomms < (int)(sizeof(m->comms) / sizeof(m->comms[0])) && nranks > 0) {
		m->comms[m->ncomms].id = id;
		m->comms[m->ncomms++].nranks = nranks;
	}
}

static void add_finding(struct rt_vw_trace *t, int severity, enum rt_vw_verdict sigv,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void add_finding(struct rt_vw_trace *t, int severity, enum rt_vw_verdict sigv,
			const char *fmt, ...)
{
	struct rt_vw_finding *f;
	va_list ap;

	f = realloc(t->findings, sizeof(*f) * (size_t)(t->nfindings + 1));
	if (!f)
		return;
	t->findings = f;
	f = &t->findings[t->nfindings++];
	f->severity = severity;
	f->signature = sigv;
	va_start(ap, fmt);
	vsnprintf(f->text, sizeof(f->text), fmt, ap);
	va_end(ap);
}

static void describe(char *out, size_t n, const struct sig *s)
{
	snprintf(out, n, "%s(count %" PRIu64 "%s)", rt_vw_coll_names[s->kind], s->count,
		 s->kind == RT_CK_BROADCAST || s->kind == RT_CK_REDUCE ? ", root" : "");
	if (s->kind == RT_CK_BROADCAST || s->kind == RT_CK_REDUCE) {
		size_t k = strlen(out);

		snprintf(out + k - 1, n - k + 1, " %d)", s->root);
	}
}

static bool same_sig(const struct sig *a, const struct sig *b)
{
	return a->kind == b->kind && a->count == b->count && a->dtype == b->dtype &&
	       a->root == b->root && (a->op == b->op || a->kind == RT_CK_ALLGATHER ||
				      a->kind == RT_CK_BROADCAST);
}

/* All ranks that reported seq: the minority signature is the divergence. */
static void check_entry(struct matcher *m, struct centry *e)
{
	struct rt_vw_trace *t = m->t;
	int groups[64], sizes[64], ng = 0;
	char ranks[256] = "", a[96], b[96];
	size_t len = 0;
	int major = 0, minor;

	for (int r = 0; r < t->nranks && ng < 64; r++) {
		int g;

		if (!e->by_rank[r].seen)
			continue;
		for (g = 0; g < ng; g++)
			if (same_sig(&e->by_rank[groups[g]], &e->by_rank[r]))
				break;
		if (g == ng) {
			groups[ng] = r;
			sizes[ng++] = 0;
		}
		sizes[g]++;
	}
	if (ng <= 1)
		return;
	for (int g = 1; g < ng; g++)
		if (sizes[g] > sizes[major])
			major = g;
	minor = major == 0 ? 1 : 0;
	for (int r = 0; r < t->nranks; r++)
		if (e->by_rank[r].seen && !same_sig(&e->by_rank[r], &e->by_rank[groups[major]]) &&
		    len < sizeof(ranks) - 16)
			len += (size_t)snprintf(ranks + len, sizeof(ranks) - len, "%s%d", len ? "," : "",
						t->ranks[r].meta.rank);
	describe(a, sizeof(a), &e->by_rank[groups[major]]);
	describe(b, sizeof(b), &e->by_rank[groups[minor]]);
	if (!t->diverged || e->seq < t->div_seq) {
		t->diverged = true;
		t->div_comm = e->comm_id;
		t->div_seq = e->seq;
	}
	if (m->mismatch_reported)
		return;
	m->mismatch_reported = true;
	add_finding(t, 20, RT_V_COLLECTIVE_MISMATCH,
		    "collective mismatch at sequence %u of communicator %016" PRIx64 ": rank%s %s "
		    "called %s where %d rank%s called %s (a rank skipped or added a collective)",
		    e->seq, e->comm_id, strchr(ranks, ',') ? "s" : "", ranks, b, sizes[major],
		    sizes[major] == 1 ? "" : "s", a);
}

static void entry_free(struct centry *e)
{
	free(e->by_rank);
	free(e);
}

static void match(struct matcher *m, int ri, uint64_t comm_id, uint32_t seq, struct sig s)
{
	size_t b = (size_t)((comm_id ^ (seq * 0x9E3779B97F4A7C15ull)) % CBUCKETS);
	struct centry **link, *e;

	for (link = &m->buckets[b]; (e = *link); link = &e->next)
		if (e->comm_id == comm_id && e->seq == seq)
			break;
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		e->by_rank = calloc((size_t)m->t->nranks, sizeof(*e->by_rank));
		if (!e->by_rank) {
			free(e);
			return;
		}
		e->comm_id = comm_id;
		e->seq = seq;
		e->nranks = comm_nranks(m, comm_id);
		e->next = m->buckets[b];
		m->buckets[b] = e;
		link = &m->buckets[b];
		if (++m->open > m->open_peak)
			m->open_peak = m->open;
	}
	if (e->by_rank[ri].seen)
		return;
	s.seen = 1;
	e->by_rank[ri] = s;
	if (++e->seen < e->nranks)
		return;
	check_entry(m, e);
	*link = e->next;
	entry_free(e);
	m->open--;
}

/* Collectives some ranks reached and others did not. */
static void matcher_finish(struct matcher *m)
{
	struct rt_vw_trace *t = m->t;
	struct centry *first = NULL;

	for (int b = 0; b < CBUCKETS; b++)
		for (struct centry *e = m->buckets[b]; e; e = e->next) {
			check_entry(m, e);
			if (!first || e->seq < first->seq)
				first = e;
		}
	if (first && !m->mismatch_reported) {
		char missing[256] = "", a[96] = "?";
		size_t len = 0;
		int any = -1;

		for (int r = 0; r < t->nranks; r++) {
			if (first->by_rank[r].seen) {
				any = r;
				continue;
			}
			if (len < sizeof(missing) - 16)
				len += (size_t)snprintf(missing + len, sizeof(missing) - len, "%s%d",
							len ? "," : "", t->ranks[r].meta.rank);
		}
		if (any >= 0)
			describe(a, sizeof(a), &first->by_rank[any]);
		if (len) {
			add_finding(t, 25, RT_V_COLLECTIVE_MISMATCH,
				    "collective %s at sequence %u of communicator %016" PRIx64
				    " was never called by rank%s %s", a, first->seq, first->comm_id,
				    strchr(missing, ',') ? "s" : "", missing);
			if (!t->diverged) {
				t->diverged = true;
				t->div_comm = first->comm_id;
				t->div_seq = first->seq;
			}
		}
	}
	for (int b = 0; b < CBUCKETS; b++) {
		struct centry *e = m->buckets[b];

		while (e) {
			struct centry *n = e->next;

			entry_free(e);
			e = n;
		}
		m->buckets[b] = NULL;
	}
}

/* ---- per-event model update ---- */

int rt_vw_coll_kind(unsigned id)
{
	switch (id) {
	case RT_ID_ncclAllReduce: return RT_CK_ALLREDUCE;
	case RT_ID_ncclBroadcast: case RT_ID_ncclBcast: return RT_CK_BROADCAST;
	case RT_ID_ncclReduce: return RT_CK_REDUCE;
	case RT_ID_ncclAllGather: return RT_CK_ALLGATHER;
	case RT_ID_ncclReduceScatter: return RT_CK_REDUCESCATTER;
	case RT_ID_ncclSend: return RT_CK_SEND;
	case RT_ID_ncclRecv: return RT_CK_RECV;
	default: return -1;
	}
}

static void use_device(struct rt_vw_rank *r, int dev)
{
	if (dev >= 0 && dev < RT_VW_MAX_DEV)
		r->devices_used |= 1ull << dev;
}

static void on_alloc(struct rt_vw_rank *r, const struct rt_vw_event *e, bool host)
{
	uint64_t ptr = (uint64_t)rt_vw_fld(e, RT_F_PTR), size = (uint64_t)rt_vw_fld(e, RT_F_SIZE);

	if (e->id == RT_ID_cudaMallocPitch)
		size = (uint64_t)rt_vw_fld(e, RT_F_PITCH) * (uint64_t)rt_vw_fld(e, RT_F_HEIGHT);
	if (e->pending)
		return;
	if (e->ret != 0) {
		r->failed_allocs++;
		return;
	}
	r->allocs++;
	map_put(r->live, ptr, size, host ? -1 : e->dev);
	if (host) {
		r->host_bytes += size;
		if (r->host_bytes > r->host_peak)
			r->host_peak = r->host_bytes;
	} else if (e->dev >= 0 && e->dev < RT_VW_MAX_DEV) {
		r->dev_bytes[e->dev] += size;
		if (r->dev_bytes[e->dev] > r->dev_peak[e->dev])
			r->dev_peak[e->dev] = r->dev_bytes[e->dev];
		use_device(r, e->dev);
	}
}

static void on_free(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	uint64_t ptr = (uint64_t)rt_vw_fld(e, RT_F_PTR);
	struct alloc *a;

	if (e->pending || e->ret != 0 || ptr == 0)
		return;
	a = map_find(r->live, ptr);
	if (!a) {
		r->unknown_frees++;
		return;
	}
	r->frees++;
	if (a->dev < 0)
		r->host_bytes -= a->size;
	else
		r->dev_bytes[a->dev] -= a->size;
	a->used = 2;
	r->live->live--;
}

/* Device of the live allocation holding ptr, or -1 (host, unknown). The
 * tracer records copy pointers; their devices are resolved here. */
/* The live allocation holding ptr: its base first, then (when scan) every
 * live allocation's range. NULL if none. */
static struct alloc *alloc_holding(struct rt_vw_rank *r, uint64_t ptr, bool scan)
{
	struct alloc *a = ptr ? map_find(r->live, ptr) : NULL;

	for (size_t j = 0; !a && ptr && scan && j < r->live->cap; j++)
		if (r->live->slots[j].used == 1 && ptr >= r->live->slots[j].ptr &&
		    ptr < r->live->slots[j].ptr + r->live->slots[j].size)
			a = &r->live->slots[j];
	return a;
}

static int device_of(struct rt_vw_rank *r, uint64_t ptr)
{
	/* copies are many: scan only small maps */
	struct alloc *a = alloc_holding(r, ptr, r->live->live < 4096);

	return a ? a->dev : -1;
}

/* The latest placement of each parameter; its pointer checked against the
 * rank's live allocations (tensor on cuda:N, data in device M's memory?). */
static void on_param(struct rt_vw_rank *r, const struct rt_vw_event *e)
{
	char name[65];
	int devtype = (int)rt_vw_fld(e, RT_F_DEVTYPE), dev = (int)rt_vw_fld(e, RT_F_DEVICE);
	uint64_t numel = (uint64_t)rt_vw_fld(e, RT_F_NUMEL), bytes = (uint64_t)rt_vw_fld(e, RT_F_BYTES);
	uint64_t ptr = (uint64_t)rt_vw_fld(e, RT_F_PTR);
	struct rt_vw_param *p = NULL;
	uint8_t place;

	rt_field_str(e->id, e->fields, rt_field_index(e->id, "name"), name);
	if (devtype == 2)
		place = RT_P_META;
	else if (numel > 0 && bytes == 0)
		place = RT_P_FREED;
	else if (devtype == 1)
		place = RT_P_CPU;
	else
		place = RT_P_CUDA;
	if (place == RT_P_CUDA && ptr) {
		struct alloc *a = alloc_holding(r, ptr, true);

		if (a && a->dev >= 0 && a->dev != dev) {
			place = RT_P_WRONG_DEVICE;
			r->params_misplaced++;
		}
	}
	for (uint32_t i = 0; i < r->nparams; i++)
		if (!strcmp(r->params[i].name, name)) {
			p = &r->params[i];
			break;
		}
	if (!p) {
		if (r->nparams == r->params_cap) {
			uint32_t cap = r->params_cap ? r->params_cap * 2 : 64;
			void *q = realloc(r->params, sizeof(*r->params) * cap);

			if (!q)
				return;
			r->params = q;
			r->params_cap = cap;
		}
		p = &r->params[r->nparams++];
		snprintf(p->name, sizeof(p->name), "%s", name);
	}
	if (place == RT_P_META && !p->was_meta) {
		p->was_meta = true;
		r->params_ever_meta++;
	}
	p->place = place;
	p->device = (int8_t)dev;
	p->numel = numel;
	p->bytes = bytes;
	r->params_reported++;
}

static void on_event(struct matcher *m, int ri, const struct rt_vw_event *e)
{
	struct rt_vw_rank *r = &m->t->ranks[ri];
	int ck;

	r->events++;
	if (!r->first_ts || e->ts < r->first_ts)
		r->first_ts = e->ts;
	if (e->ts > r->last_ts)
		r->last_ts = e->ts;
	/* only the rank's main process decides how the rank ended */
	if (e->pending && (int)e->pid == r->meta.pid)
		snprintf(r->died_in, sizeof(r->died_in), "%s", rt_events[e->id].name);
	if (!e->pending && e->ret != 0 && e->id < RT_ID_FIRST_TRACER) {
		r->errors++;
		if (!r->first_error[0])
			snprintf(r->first_error, sizeof(r->first_error), "%s returned %d",
				 rt_events[e->id].name, e->ret);
	}
	switch (e->id) {
	case RT_ID_cudaMalloc: case RT_ID_cudaMallocAsync: case RT_ID_cudaMallocFromPoolAsync:
	case RT_ID_cudaMallocManaged: case RT_ID_cudaMallocPitch:
		on_alloc(r, e, false);
		return;
	case RT_ID_cudaMallocHost: case RT_ID_cudaHostAlloc:
		on_alloc(r, e, true);
		return;
	case RT_ID_cudaFree: case RT_ID_cudaFreeAsync: case RT_ID_cudaFreeHost:
		on_free(r, e);
		return;
	case RT_ID_cudaMemcpy: case RT_ID_cudaMemcpyAsync:
		use_device(r, e->dev);
		if (e->ret == 0 && !e->pending) {
			use_device(r, device_of(r, (uint64_t)rt_vw_fld(e, RT_F_DST)));
			use_device(r, device_of(r, (uint64_t)rt_vw_fld(e, RT_F_SRC)));
		}
		return;
	case RT_ID_cudaMemcpyPeer: case RT_ID_cudaMemcpyPeerAsync:
		if (e->ret == 0 && !e->pending) {
			use_device(r, (int)rt_vw_fld(e, RT_F_DST_DEVICE));
			use_device(r, (int)rt_vw_fld(e, RT_F_SRC_DEVICE));
		}
		return;
	case RT_ID_cudaMemset: case RT_ID_cudaMemsetAsync:
		use_device(r, e->dev);
		return;
	case RT_ID_cudaStreamCreate: case RT_ID_cudaStreamCreateWithFlags:
	case RT_ID_cudaStreamCreateWithPriority:
		if (e->ret == 0 && !e->pending)
			r->streams_created++;
		return;
	case RT_ID_ncclCommInitRank: case RT_ID_ncclCommInitRankConfig:
		if (r->init_device < 0) {
			r->init_device = e->dev;
			r->init_ret = e->pending ? -1 : e->ret;
		}
		if (e->ret == 0 && !e->pending) {
			if (r->comm_device < 0)
				r->comm_device = e->dev;
			comm_learn(m, (uint64_t)rt_vw_fld(e, RT_F_COMM_ID), (int)rt_vw_fld(e, RT_F_NRANKS));
			use_device(r, e->dev);
		}
		return;
	case RT_ID_ncclCommInitAll:
		if (e->ret == 0)
			comm_learn(m, (uint64_t)rt_vw_fld(e, RT_F_COMM_ID), (int)rt_vw_fld(e, RT_F_NRANKS));
		return;
	case RT_ID_rt_param:
		on_param(r, e);
		return;
	case RT_ID_rt_fsdp_forward:
		if (rt_vw_fld(e, RT_F_PHASE) == 0)
			r->fsdp_root_forwards++;
		return;
	case RT_ID_rt_marker:
		r->markers++;
		return;
	case RT_ID_rt_fault:
		r->faults++;
		if (!r->first_fault[0]) {
			char target[65];
			int a = (int)rt_vw_fld(e, RT_F_ACTION);
			static const char *const acts[] = { "", "error", "delay", "skip", "hang", "device",
							    "corrupt", "abort", "kill", "bypass" };

			snprintf(r->first_fault, sizeof(r->first_fault), "%s:%s at call %lld",
				 rt_field_str(e->id, e->fields, rt_field_index(e->id, "target"), target),
				 a >= 0 && a < 10 ? acts[a] : "?", (long long)rt_vw_fld(e, RT_F_CALL));
		}
		return;
	case RT_ID_rt_exit:
		if ((int)e->pid == r->meta.pid) {
			r->exit_seen = true;
			r->exit_status = (int)rt_vw_fld(e, RT_F_STATUS);
		}
		return;
	case RT_ID_rt_signal:
		if ((int)e->pid == r->meta.pid) {
			r->exit_seen = true;
			r->signo = (int)rt_vw_fld(e, RT_F_SIGNO);
		}
		return;
	default:
		break;
	}
	ck = rt_vw_coll_kind(e->id);
	if (ck < 0)
		return;
	r->colls[ck]++;
	use_device(r, e->dev);
	if (ck == RT_CK_BROADCAST && r->colls[RT_CK_ALLGATHER] == 0)
		r->broadcasts_before_allgather++;
	{
		struct sig s = { .kind = (uint8_t)ck, .dtype = (uint8_t)rt_vw_fld(e, RT_F_DATATYPE),
				 .op = (uint8_t)rt_vw_fld(e, RT_F_OP), .root = (int32_t)rt_vw_fld(e, RT_F_ROOT),
				 .count = (uint64_t)rt_vw_fld(e, RT_F_COUNT), .ret = e->ret,
				 .pending = e->pending };
		uint64_t comm = (uint64_t)rt_vw_fld(e, RT_F_COMM_ID);
		uint32_t seq = (uint32_t)rt_vw_fld(e, RT_F_SEQ);

		if (ck == RT_CK_SEND || ck == RT_CK_RECV)
			s.root = (int32_t)rt_vw_fld(e, RT_F_PEER);
		if ((m->t->flags & RT_VW_KEEP_CALLS) && r->ncalls < RT_VW_MAX_CALLS) {
			if (r->ncalls == r->calls_cap) {
				uint32_t cap = r->calls_cap ? r->calls_cap * 2 : 64;
				void *p = realloc(r->calls, sizeof(*r->calls) * cap);

				if (p) {
					r->calls = p;
					r->calls_cap = cap;
				}
			}
			if (r->ncalls < r->calls_cap)
				r->calls[r->ncalls++] = (struct rt_vw_call_sig){ s.kind, s.dtype, s.op, s.root,
										 s.count, comm, seq };
		}
		if (ck != RT_CK_SEND && ck != RT_CK_RECV && comm)
			match(m, ri, comm, seq, s);
	}
}

/* ---- the merge ---- */

struct src {
	struct rt_vw_cursor *c;
	struct rt_vw_event e;
	int rank;
};

/* Heap entries carry the key inline: with a thousand ranks, comparing
 * through pointers to the sources costs a cache miss per level. */
struct hnode {
	uint64_t ts;
	struct src *s;
};

static void heap_down(struct hnode *h, int n, int i)
{
	struct hnode x = h[i];

	for (;;) {
		int l = 2 * i + 1, c;

		if (l >= n)
			break;
		c = l + 1 < n && h[l + 1].ts < h[l].ts ? l + 1 : l;
		if (h[c].ts >= x.ts)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

static void note_damage(struct rt_vw_trace *t, int ri, const char *msg)
{
	if (!t->ranks[ri].damaged[0]) {
		snprintf(t->ranks[ri].damaged, sizeof(t->ranks[ri].damaged), "%s", msg);
		t->damaged++;
	}
}

int rt_vw_rank_index(const struct rt_vw_trace *t, int rank)
{
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].meta.rank == rank)
			return i;
	return -1;
}

static void analyse(struct rt_vw_trace *t);

/* Deliver every event of srcs in time order; closes nothing. */
static int merge_streams(struct rt_vw_trace *t, struct src *srcs, int nsrc,
			 void (*fn)(void *arg, int rank, const struct rt_vw_event *e), void *arg)
{
	struct hnode *heap = calloc((size_t)nsrc + 1, sizeof(*heap));
	int hn = 0;

	if (!heap)
		return -1;
	for (int k = 0; k < nsrc; k++) {
		int rc = rt_vw_cursor_next(srcs[k].c, &srcs[k].e);

		if (rc == 1)
			heap[hn++] = (struct hnode){ srcs[k].e.ts, &srcs[k] };
		else if (rc < 0 && t)
			note_damage(t, srcs[k].rank, rt_vw_cursor_error(srcs[k].c));
	}
	for (int i = hn / 2 - 1; i >= 0; i--)
		heap_down(heap, hn, i);
	while (hn > 0) {
		struct src *s = heap[0].s;
		int rc;

		fn(arg, s->rank, &s->e);
		rc = rt_vw_cursor_next(s->c, &s->e);
		if (rc == 1) {
			heap[0].ts = s->e.ts;
		} else {
			if (rc < 0 && t)
				note_damage(t, s->rank, rt_vw_cursor_error(s->c));
			if (t)
				t->ranks[s->rank].discarded += rt_vw_cursor_info(s->c)->discarded;
			heap[0] = heap[--hn];
		}
		if (hn > 1)
			heap_down(heap, hn, 0);
	}
	free(heap);
	return 0;
}

/* The model's pass: time windows, rank by rank inside a window, each rank's
 * own streams merged exactly. Matching needs no order across ranks, and
 * touching one rank's state for a run of events keeps it in cache. Open
 * collectives stay bounded by what a window holds. srcs must be grouped by
 * rank (open_sources does). */
#define WINDOW_NS 20000000ull /* 20 ms of trace time */

static int merge_windowed(struct rt_vw_trace *t, struct src *srcs, int nsrc,
			  void (*fn)(void *arg, int rank, const struct rt_vw_event *e), void *arg)
{
	bool *live = calloc((size_t)nsrc + 1, sizeof(*live));
	int left = 0;

	if (!live)
		return -1;
	for (int k = 0; k < nsrc; k++) {
		int rc = rt_vw_cursor_next(srcs[k].c, &srcs[k].e);

		live[k] = rc == 1;
		left += live[k];
		if (rc < 0)
			note_damage(t, srcs[k].rank, rt_vw_cursor_error(srcs[k].c));
	}
	while (left > 0) {
		uint64_t tmin = UINT64_MAX, wend;

		for (int k = 0; k < nsrc; k++)
			if (live[k] && srcs[k].e.ts < tmin)
				tmin = srcs[k].e.ts;
		wend = tmin + WINDOW_NS;
		for (int a = 0; a < nsrc;) {
			int b = a;

			while (b < nsrc && srcs[b].rank == srcs[a].rank)
				b++;
			/* this rank's streams [a, b): smallest timestamp first */
			for (;;) {
				int best = -1;

				for (int k = a; k < b; k++)
					if (live[k] && srcs[k].e.ts < wend &&
					    (best < 0 || srcs[k].e.ts < srcs[best].e.ts))
						best = k;
				if (best < 0)
					break;
				for (;;) { /* a run from one stream while it stays first */
					int rc;

					fn(arg, srcs[best].rank, &srcs[best].e);
					rc = rt_vw_cursor_next(srcs[best].c, &srcs[best].e);
					if (rc != 1) {
						if (rc < 0)
							note_damage(t, srcs[best].rank,
								    rt_vw_cursor_error(srcs[best].c));
						t->ranks[srcs[best].rank].discarded +=
							rt_vw_cursor_info(srcs[best].c)->discarded;
						live[best] = false;
						left--;
						break;
					}
					if (srcs[best].e.ts >= wend || b - a > 1)
						break;
				}
			}
			a = b;
		}
	}
	free(live);
	return 0;
}

static void model_event(void *arg, int rank, const struct rt_vw_event *e)
{
	struct matcher *m = arg;

	on_event(m, rank, e);
	m->t->events++;
}

/* Open a cursor on every stream of every readable rank of t. */
static int open_sources(struct rt_vw_trace *t, struct src **out, int *nout)
{
	struct src *srcs = NULL;
	int nsrc = 0, cap = 0;

	for (int i = 0; i < t->nranks; i++) {
		char rd[4400], e2[512], **streams;
		int ns;

		if (!t->ranks[i].readable)
			continue;
		snprintf(rd, sizeof(rd), "%s/%s", t->dir, t->ranks[i].name);
		ns = rt_vw_list_streams(rd, &streams);
		for (int k = 0; k < ns; k++) {
			char sp[4700];

			if (nsrc == cap) {
				void *p = realloc(srcs, sizeof(*srcs) * (size_t)(cap = cap ? cap * 2 : 64));

				if (!p) {
					rt_vw_free_names(streams, ns);
					free(srcs);
					return -1;
				}
				srcs = p;
			}
			snprintf(sp, sizeof(sp), "%s/%s", rd, streams[k]);
			srcs[nsrc].c = rt_vw_cursor_open(sp, e2, sizeof(e2));
			srcs[nsrc].rank = i;
			if (srcs[nsrc].c)
				nsrc++;
			else
				note_damage(t, i, e2);
		}
		rt_vw_free_names(streams, ns > 0 ? ns : 0);
	}
	*out = srcs;
	*nout = nsrc;
	return 0;
}

int rt_vw_foreach(const struct rt_vw_trace *t, void (*fn)(void *arg, int rank, const struct rt_vw_event *e),
		  void *arg)
{
	struct src *srcs;
	int nsrc, rc;

	if (open_sources((struct rt_vw_trace *)t, &srcs, &nsrc) != 0)
		return -1;
	rc = merge_streams(NULL, srcs, nsrc, fn, arg);
	for (int k = 0; k < nsrc; k++)
		rt_vw_cursor_close(srcs[k].c);
	free(srcs);
	return rc;
}

struct rt_vw_trace *rt_vw_load(const char *dir, unsigned flags, char *err, size_t errlen)
{
	struct rt_vw_trace *t = calloc(1, sizeof(*t));
	struct matcher *m = calloc(1, sizeof(*m));
	struct src *srcs = NULL;
	char **names = NULL;
	int n, nsrc = 0, readable = 0;

	if (!t || !m)
		goto out_oom;
	snprintf(t->dir, sizeof(t->dir), "%s", dir);
	t->flags = flags;
	n = rt_vw_list_ranks(dir, &names);
	if (n <= 0) {
		snprintf(err, errlen, "%s: no rank traces (rank-*/ directories) here", dir);
		goto out_fail;
	}
	t->nranks = n;
	t->ranks = calloc((size_t)n, sizeof(*t->ranks));
	if (!t->ranks)
		goto out_oom;
	m->t = t;
	for (int i = 0; i < n; i++) {
		struct rt_vw_rank *r = &t->ranks[i];
		char rd[4400], e2[512];

		snprintf(r->name, sizeof(r->name), "%s", names[i]);
		r->comm_device = r->init_device = -1;
		r->live = calloc(1, sizeof(*r->live));
		snprintf(rd, sizeof(rd), "%s/%s", dir, names[i]);
		if (rt_vw_read_metadata(rd, &r->meta, e2, sizeof(e2)) != 0) {
			r->meta.rank = -1;
			note_damage(t, i, e2);
			continue;
		}
		if (r->meta.rank < 0)
			r->meta.rank = 100000 + i; /* pid-named: keep them apart */
		r->readable = true;
		readable++;
	}
	if (!readable) {
		snprintf(err, errlen, "%s: no readable rank trace (%s)", dir, t->ranks[0].damaged);
		goto out_fail;
	}
	if (open_sources(t, &srcs, &nsrc) != 0)
		goto out_oom;
	if (merge_windowed(t, srcs, nsrc, model_event, m) != 0)
		goto out_oom;
	for (int k = 0; k < nsrc; k++)
		rt_vw_cursor_close(srcs[k].c);
	nsrc = 0;
	matcher_finish(m);
	analyse(t);
	free(srcs);
	free(m);
	rt_vw_free_names(names, n);
	return t;

out_oom:
	snprintf(err, errlen, "%s: out of memory", dir);
out_fail:
	for (int k = 0; k < nsrc; k++)
		rt_vw_cursor_close(srcs[k].c);
	free(srcs);
	free(m);
	if (names)
		rt_vw_free_names(names, t && t->nranks ? t->nranks : 0);
	rt_vw_free(t);
	return NULL;
}

void rt_vw_free(struct rt_vw_trace *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->nranks && t->ranks; i++) {
		if (t->ranks[i].live)
			free(t->ranks[i].live->slots);
		free(t->ranks[i].live);
		free(t->ranks[i].calls);
		free(t->ranks[i].params);
	}
	free(t->ranks);
	free(t->findings);
	free(t);
}

/* ---- findings and verdict ---- */

static bool crashed(const struct rt_vw_rank *r)
{
	return r->signo || (r->exit_seen && r->exit_status > 0) || r->died_in[0] ||
	       (!r->exit_seen && r->readable);
}

static void list_ranks(char *out, size_t n, const struct rt_vw_trace *t, const int *idx, int k)
{
	size_t len = 0;

	out[0] = '\0';
	for (int i = 0; i < k && len < n - 12; i++)
		len += (size_t)snprintf(out + len, n - len, "%s%d", i ? "," : "",
					t->ranks[idx[i]].meta.rank);
}

static int cmp_finding(const void *a, const void *b)
{
	const struct rt_vw_finding *x = a, *y = b;

	return x->severity - y->severity;
}

static void analyse(struct rt_vw_trace *t)
{
	int idx[1024], k;
	bool all_crashed = true, any_crashed = false, all_bcast_no_ag = true;
	char list[256];

	for (int i = 0; i < t->nranks; i++) {
		struct rt_vw_rank *r = &t->ranks[i];

		if (!r->readable)
			continue;
		if (crashed(r))
			any_crashed = true;
		else
			all_crashed = false;
		if (!(r->broadcasts_before_allgather > 0 && r->colls[RT_CK_ALLGATHER] == 0))
			all_bcast_no_ag = false;
	}
	/* FSDP root forward never ran: inferred from NCCL alone, confirmed by the
	 * probe when it reported (no root forward, parameters with freed storage) */
	{
		bool probed = true, confirmed = true;
		uint64_t freed = 0;

		for (int i = 0; i < t->nranks; i++) {
			const struct rt_vw_rank *r = &t->ranks[i];
			uint64_t f = 0;

			if (!r->readable)
				continue;
			for (uint32_t q = 0; q < r->nparams; q++)
				f += r->params[q].place == RT_P_FREED;
			freed += f;
			if (!r->params_reported)
				probed = false;
			else if (r->fsdp_root_forwards || !f)
				confirmed = false;
		}
		if (probed && confirmed && all_crashed && t->nranks > 0)
			add_finding(t, 9, RT_V_SKIPPED_FSDP_ROOT,
				    "FSDP root forward never ran (probe): no rank ran the root forward, "
				    "%llu parameter views across ranks point at storage FSDP freed, and every "
				    "rank crashed", (unsigned long long)freed);
		else if (all_crashed && all_bcast_no_ag && t->nranks > 0 && (!probed || confirmed))
			add_finding(t, 10, RT_V_SKIPPED_FSDP_ROOT,
				    "FSDP root forward never ran: every rank did its init broadcasts "
				    "(sync_module_states) but no all-gather followed, and every rank crashed "
				    "(the trainer called the unwrapped module; cf. transformers 4.53.0)");
	}
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		uint64_t meta = 0;

		if (r->faults)
			add_finding(t, 30, RT_V_HEALTHY, "rank %d: %llu injected fault%s fired (first: %s)",
				    r->meta.rank, (unsigned long long)r->faults, r->faults == 1 ? "" : "s",
				    r->first_fault);
		if (r->params_misplaced)
			add_finding(t, 7, RT_V_DEVICE_MISPLACEMENT,
				    "rank %d: %llu parameter report%s point into memory of another device",
				    r->meta.rank, (unsigned long long)r->params_misplaced,
				    r->params_misplaced == 1 ? "" : "s");
		for (uint32_t q = 0; q < r->nparams; q++) {
			meta += r->params[q].place == RT_P_META;
			((struct rt_vw_rank *)r)->params_freed += r->params[q].place == RT_P_FREED;
		}
		((struct rt_vw_rank *)r)->params_meta = meta;
		if (r->params_ever_meta && !meta)
			add_finding(t, 58, RT_V_HEALTHY, "rank %d: %llu parameter%s arrived on meta "
				    "(cpu_ram_efficient_loading) and were materialised later",
				    r->meta.rank, (unsigned long long)r->params_ever_meta,
				    r->params_ever_meta == 1 ? "" : "s");
		if (meta && crashed(r))
			add_finding(t, 35, RT_V_HEALTHY, "rank %d: %llu parameter%s still on meta when it "
				    "ended (never materialised: cpu_ram_efficient_loading without the "
				    "sync_module_states broadcast?)", r->meta.rank, (unsigned long long)meta,
				    meta == 1 ? "" : "s");
	}
	/* several ranks on one device of one host */
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *a = &t->ranks[i];
		bool first = true;

		if (a->init_device < 0)
			continue;
		k = 0;
		for (int j = 0; j < t->nranks; j++) {
			const struct rt_vw_rank *b = &t->ranks[j];

			if (b->init_device != a->init_device || strcmp(a->meta.hostname, b->meta.hostname))
				continue;
			if (j < i)
				first = false;
			if (k < 1024)
				idx[k++] = j;
		}
		if (k > 1 && first) {
			list_ranks(list, sizeof(list), t, idx, k);
			add_finding(t, 5, RT_V_DEVICE_MISPLACEMENT,
				    "ranks %s all use device %d on host %s (NCCL allows one rank per "
				    "device: \"Duplicate GPU detected\")%s",
				    list, a->init_device, a->meta.hostname,
				    a->init_ret ? "; their communicator init failed" : "");
		}
	}
	/* a rank working on a device other than its own */
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		int expect = r->meta.local_rank >= 0 ? r->meta.local_rank : r->comm_device;
		uint64_t others;

		if (expect < 0 || expect >= RT_VW_MAX_DEV || !r->readable)
			continue;
		others = r->devices_used & ~(1ull << expect);
		if (!others)
			continue;
		for (int d = 0; d < RT_VW_MAX_DEV; d++)
			if (others & (1ull << d)) {
				add_finding(t, 6, RT_V_DEVICE_MISPLACEMENT,
					    "rank %d used device %d, expected device %d (%s)", r->meta.rank,
					    d, expect, r->meta.local_rank >= 0 ? "LOCAL_RANK" : "its communicator's");
				break;
			}
	}
	/* how ranks ended */
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];

		if (!r->readable)
			continue;
		if (r->signo)
			add_finding(t, 40, RT_V_CRASHED, "rank %d was killed by signal %d%s%s", r->meta.rank,
				    r->signo, r->died_in[0] ? " inside " : "", r->died_in);
		else if (r->died_in[0])
			add_finding(t, 40, RT_V_CRASHED, "rank %d died inside %s (the call never returned)",
				    r->meta.rank, r->died_in);
		else if (r->exit_seen && r->exit_status > 0)
			add_finding(t, 45, RT_V_CRASHED, "rank %d exited with status %d%s%s", r->meta.rank,
				    r->exit_status, r->first_error[0] ? "; first error: " : "",
				    r->first_error);
		else if (!r->exit_seen && !r->discarded)
			add_finding(t, 42, RT_V_CRASHED, "rank %d has no recorded end (killed with SIGKILL?); "
				    "last event at +%.3f s", r->meta.rank,
				    (double)(r->last_ts - r->first_ts) / 1e9);
		if (r->unknown_frees)
			add_finding(t, 60, RT_V_HEALTHY, "rank %d freed %" PRIu64 " pointer(s) it never "
				    "allocated (allocated before tracing, or invalid)", r->meta.rank,
				    r->unknown_frees);
		if (r->discarded)
			add_finding(t, 55, RT_V_HEALTHY, "rank %d: %" PRIu64 " events discarded (size cap)",
				    r->meta.rank, r->discarded);
	}
	if (t->damaged)
		for (int i = 0; i < t->nranks; i++)
			if (t->ranks[i].damaged[0])
				add_finding(t, 50, RT_V_INCONCLUSIVE, "%s is damaged: %s", t->ranks[i].name,
					    t->ranks[i].damaged);
	if (t->nfindings > 1)
		qsort(t->findings, (size_t)t->nfindings, sizeof(*t->findings), cmp_finding);
	t->verdict = RT_V_HEALTHY;
	for (int i = 0; i < t->nfindings; i++)
		if (t->findings[i].signature != RT_V_HEALTHY &&
		    t->findings[i].signature != RT_V_INCONCLUSIVE) {
			t->verdict = t->findings[i].signature;
			break;
		}
	if (t->verdict == RT_V_HEALTHY && (any_crashed || t->damaged))
		t->verdict = any_crashed ? RT_V_CRASHED : RT_V_INCONCLUSIVE;
}
