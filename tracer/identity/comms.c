/* SPDX-License-Identifier: MIT */
/* comms.c - communicator identities and per-communicator sequence numbers.
 *
 * A communicator's identity (comm_id) is the same on every member: a hash
 * of the ncclUniqueId it was created from (the first of
 * ncclCommInitRankScalable's); for ncclCommSplit, a hash of the parent's
 * identity, the split's ordinal on the parent and the color; for
 * ncclCommShrink, of the parent's identity, the shrink's ordinal on the
 * parent and the excluded ranks; for ncclCommInitAll, of the process and
 * call. Each collective gets the next sequence number of its communicator,
 * as PyTorch's Flight Recorder numbers them, so the viewer can match "the
 * 17th collective of communicator X" across ranks; each point-to-point call
 * the next of its communicator, peer and direction (the 17th Send from 2 to
 * 3 matches 3's 17th Recv from 2).
 *
 * A fixed open-addressing table keyed by the ncclComm_t pointer: inserts use
 * compare-and-swap (at init, rare), lookups and counters are lock-free
 * atomics. The point-to-point counters of a communicator (two per member)
 * are carved from one arena reserved once (mmap, pages touched as used),
 * never freed. Table or arena full: untracked (id 0, seq 0), one warning.
 * Nothing here is on the hot path of CUDA calls. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base.h"
#include "identity.h"
#include "inject.h" /* rt_inj_host_comm: answered here */

#define SLOTS 256
#define EMPTY ((uintptr_t)0)
#define TOMBSTONE ((uintptr_t)1)
#define ARENA_COUNTERS ((size_t)16 << 20) /* 64 MiB of address space */
#define PENDING 64

struct comm_slot {
	_Atomic uintptr_t key;
	struct rt_tr_comm_info info;
	_Atomic uint32_t coll_seq, splits, shrinks;
	_Atomic uint32_t *peers; /* [0, n): Sends to r; [n, 2n): Recvs from r; NULL: none */
};

static struct comm_slot slots[SLOTS];
static _Atomic uint32_t init_all_calls, init_calls, split_calls, shrink_calls;
static _Atomic uint32_t *arena;
static _Atomic size_t arena_used;
static int warned_full, warned_arena, warned_pending;

/* Splits and shrinks whose new handle NCCL writes later (in a group, or a
 * non-blocking communicator): where it will be, and what is known. used: 0
 * free, 1 waiting, 2 being taken. */
static struct {
	_Atomic int used;
	const void *const *where;
	struct rt_tr_comm_info info;
} pending[PENDING];
static _Atomic int npending;

static unsigned slot_of(uintptr_t key)
{
	return (unsigned)(((uint64_t)key >> 4) * 0x9E3779B97F4A7C15ull >> 56) & (SLOTS - 1);
}

static struct comm_slot *lookup(const void *comm)
{
	uintptr_t key = (uintptr_t)comm;
	unsigned i = slot_of(key);

	if (key <= TOMBSTONE)
		return NULL;
	for (unsigned n = 0; n < SLOTS; n++, i = (i + 1) & (SLOTS - 1)) {
		uintptr_t k = atomic_load_explicit(&slots[i].key, memory_order_acquire);

		if (k == key)
			return &slots[i];
		if (k == EMPTY)
			return NULL;
	}
	return NULL;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

uint64_t rt_tr_id_hash(const void *unique_id)
{
	const unsigned char *p = unique_id;
	uint64_t h = 0xcbf29ce484222325ull;

	for (int i = 0; i < 128; i++) /* NCCL_UNIQUE_ID_BYTES */
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h ? h : 1;
}

/* 2 * n counters from the arena, or NULL (reserved at the first use). */
static _Atomic uint32_t *peer_counters(int n)
{
	_Atomic uint32_t *a = atomic_load(&arena);
	size_t at;

	if (n <= 0)
		return NULL;
	if (!a) {
		void *m = mmap(NULL, ARENA_COUNTERS * sizeof(uint32_t), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		_Atomic uint32_t *none = NULL;

		if (m == MAP_FAILED)
			return NULL;
		if (!atomic_compare_exchange_strong(&arena, &none, (_Atomic uint32_t *)m))
			munmap(m, ARENA_COUNTERS * sizeof(uint32_t));
		a = atomic_load(&arena);
	}
	at = atomic_fetch_add(&arena_used, 2 * (size_t)n);
	if (at + 2 * (size_t)n > ARENA_COUNTERS) {
		rt_tr_warn_once(&warned_arena, "point-to-point counters for more than %zu ranks of "
				"communicators: the newest communicators' Send/Recv are not numbered",
				ARENA_COUNTERS / 2);
		return NULL;
	}
	return a + at;
}

bool rt_tr_comm_register(const struct rt_tr_comm_info *info)
{
	uintptr_t key = (uintptr_t)info->comm;
	unsigned i = slot_of(key);

	if (key <= TOMBSTONE)
		return false;
	for (unsigned n = 0; n < SLOTS; n++, i = (i + 1) & (SLOTS - 1)) {
		uintptr_t k = atomic_load(&slots[i].key);

		if (k != EMPTY && k != TOMBSTONE && k != key)
			continue;
		/* fill the slot before publishing its key */
		slots[i].info = *info;
		atomic_store(&slots[i].coll_seq, 0);
		atomic_store(&slots[i].splits, 0);
		atomic_store(&slots[i].shrinks, 0);
		atomic_store(&slots[i].peers, peer_counters(info->nranks));
		if (k == key || atomic_compare_exchange_strong(&slots[i].key, &k, key))
			return true;
	}
	rt_tr_warn_once(&warned_full, "more than %d live NCCL communicators: the newest are not "
			"matched across ranks", SLOTS);
	return false;
}

int rt_tr_comm_ordinal(int how)
{
	switch (how) {
	case RT_COMM_SPLIT:
		return (int)atomic_fetch_add(&split_calls, 1) + 1;
	case RT_COMM_SHRINK:
		return (int)atomic_fetch_add(&shrink_calls, 1) + 1;
	case RT_COMM_INIT_ALL:
		return (int)atomic_fetch_add(&init_all_calls, 1) + 1;
	default:
		return (int)atomic_fetch_add(&init_calls, 1) + 1;
	}
}

uint64_t rt_tr_comm_init_all_id(int ordinal)
{
	return mix(mix(0x1a11, (uint64_t)getpid()), (uint64_t)ordinal - 1);
}

uint64_t rt_tr_comm_child_id(const void *parent, int how, int color, const int *excl, int nexcl,
			     uint64_t *parent_id)
{
	struct comm_slot *p = lookup(parent);
	uint32_t ordinal;
	uint64_t h;

	*parent_id = p ? p->info.id : 0;
	if (!p)
		return 0;
	/* every rank counts the split, with or without a color (NCCL_SPLIT_NOCOLOR) */
	if (how == RT_COMM_SPLIT) {
		ordinal = atomic_fetch_add(&p->splits, 1) + 1;
		return mix(mix(p->info.id, ordinal), (uint64_t)(uint32_t)color);
	}
	ordinal = atomic_fetch_add(&p->shrinks, 1) + 1;
	h = mix(mix(p->info.id ^ 0x5a5a5a5a5a5a5a5aull, ordinal), (uint64_t)nexcl);
	for (int i = 0; excl && i < nexcl; i++) /* NCCL sorted the list */
		h = mix(h, (uint64_t)(uint32_t)excl[i]);
	return h;
}

bool rt_tr_comm_set_state(const void *comm, int state, struct rt_tr_comm_info *out)
{
	struct comm_slot *s = lookup(comm);

	if (!s || s->info.state != RT_TR_COMM_BEING_MADE || state == RT_TR_COMM_BEING_MADE)
		return false;
	s->info.state = state;
	*out = s->info;
	return true;
}

void rt_tr_comm_forget(const void *comm)
{
	struct comm_slot *s = lookup(comm);

	if (s)
		atomic_store(&s->key, TOMBSTONE);
}

uint64_t rt_tr_comm_id(const void *comm)
{
	struct comm_slot *s = lookup(comm);

	return s ? s->info.id : 0;
}

bool rt_tr_comm_info(const void *comm, struct rt_tr_comm_info *out)
{
	struct comm_slot *s = lookup(comm);

	if (s)
		*out = s->info;
	return s != NULL;
}

/* The number of ranks in comm, or this process's rank in it, from NCCL's
 * own ncclCommCount / ncclCommUserRank (not interposed), or -1. */
static int ask_nccl(const void *comm, int (**fn)(const void *, int *), const char *name)
{
	int n = -1;

	if (!comm)
		return -1;
	if (!*fn)
		*fn = (int (*)(const void *, int *))rt_tr_resolve(name, RT_LIB_NCCL);
	return *fn && (*fn)(comm, &n) == 0 ? n : -1;
}

int rt_tr_comm_count(const void *comm)
{
	static int (*count)(const void *, int *);
	int n = ask_nccl(comm, &count, "ncclCommCount");

	return n < 0 ? 0 : n;
}

int rt_tr_comm_user_rank(const void *comm)
{
	static int (*user_rank)(const void *, int *);

	return ask_nccl(comm, &user_rank, "ncclCommUserRank");
}

bool rt_tr_comm_next_coll(const void *comm, uint64_t *id, uint32_t *seq, int *dev)
{
	struct comm_slot *s = lookup(comm);

	*seq = 0;
	if (!s)
		return false;
	*id = s->info.id;
	*dev = s->info.device;
	*seq = atomic_fetch_add_explicit(&s->coll_seq, 1, memory_order_relaxed) + 1;
	return true;
}

bool rt_tr_comm_next_p2p(const void *comm, int peer, bool send, uint64_t *id, uint32_t *seq,
			 int *dev)
{
	struct comm_slot *s = lookup(comm);
	_Atomic uint32_t *c;

	*seq = 0;
	if (!s)
		return false;
	*id = s->info.id;
	*dev = s->info.device;
	c = atomic_load_explicit(&s->peers, memory_order_relaxed);
	if (!c || peer < 0 || peer >= s->info.nranks)
		return true; /* a peer NCCL refuses: numbered 0 */
	*seq = atomic_fetch_add_explicit(&c[send ? peer : s->info.nranks + peer], 1,
					 memory_order_relaxed) + 1;
	return true;
}

int rt_tr_comm_device(const void *comm)
{
	struct comm_slot *s = lookup(comm);

	return s ? s->info.device : rt_tr_cur_dev;
}

bool rt_tr_comm_pend(const void *const *where, const struct rt_tr_comm_info *info)
{
	for (int i = 0; where && i < PENDING; i++) {
		int free_ = 0;

		if (!atomic_compare_exchange_strong(&pending[i].used, &free_, 2))
			continue;
		pending[i].where = where;
		pending[i].info = *info;
		atomic_store(&pending[i].used, 1);
		atomic_fetch_add(&npending, 1);
		return true;
	}
	rt_tr_warn_once(&warned_pending, "more than %d communicators being made at once: the "
			"newest are not numbered", PENDING);
	return false;
}

/* NCCL writes the handle once the communicator is made; the caller's
 * variable is valid until then (NCCL writes it), and read at the first
 * sign that it is done: the group's end, a poll that says so. */
bool rt_tr_comm_pending_ready(struct rt_tr_comm_info *out)
{
	if (atomic_load_explicit(&npending, memory_order_relaxed) == 0)
		return false;
	for (int i = 0; i < PENDING; i++) {
		int waiting = 1;
		const void *comm;

		if (atomic_load(&pending[i].used) != 1 ||
		    !atomic_compare_exchange_strong(&pending[i].used, &waiting, 2))
			continue;
		comm = __atomic_load_n(pending[i].where, __ATOMIC_ACQUIRE);
		if (!comm) {
			atomic_store(&pending[i].used, 1);
			continue;
		}
		*out = pending[i].info;
		out->comm = comm;
		atomic_fetch_sub(&npending, 1);
		atomic_store(&pending[i].used, 0);
		return true;
	}
	return false;
}

bool rt_inj_host_comm(const void *comm, struct rt_inj_comm *c)
{
	struct comm_slot *s = lookup(comm);

	if (!s)
		return false;
	c->id = s->info.id;
	c->ordinal = s->info.ordinal;
	c->color = s->info.color;
	c->how = s->info.how == RT_COMM_SPLIT	 ? RT_INJ_MADE_SPLIT
		 : s->info.how == RT_COMM_SHRINK ? RT_INJ_MADE_SHRINK
		 : s->info.how != RT_COMM_UNKNOWN ? RT_INJ_MADE_INIT
						  : RT_INJ_MADE_UNKNOWN;
	return true;
}
