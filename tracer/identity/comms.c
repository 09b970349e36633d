/* SPDX-License-Identifier: MIT */
/* comms.c - communicator identities and per-communicator sequence numbers.
 *
 * A communicator's identity (comm_id) is the same on every rank: a hash of
 * the ncclUniqueId it was created from; for ncclCommSplit, a hash of the
 * parent's identity, the split's ordinal on the parent and the color; for
 * ncclCommInitAll, of the process and call. Each collective gets the next
 * sequence number of its communicator (point-to-point calls have their own
 * counter), as PyTorch's Flight Recorder numbers them, so the viewer can
 * match "the 17th collective of communicator X" across ranks.
 *
 * A fixed open-addressing table keyed by the ncclComm_t pointer: inserts use
 * compare-and-swap (at init, rare), lookups and counters are lock-free
 * atomics. Nothing allocates. Table full: the communicator is untracked
 * (id 0, seq 0) and one warning is printed. */
#include <stdatomic.h>
#include <unistd.h>

#include "base.h"
#include "identity.h"

#define SLOTS 256
#define EMPTY ((uintptr_t)0)
#define TOMBSTONE ((uintptr_t)1)

struct comm_slot {
	_Atomic uintptr_t key;
	uint64_t id;
	int device, nranks, rank;
	_Atomic uint32_t coll_seq, p2p_seq, splits;
};

static struct comm_slot slots[SLOTS];
static _Atomic uint32_t init_all_calls;
static int warned_full;

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

static void insert(const void *comm, uint64_t id, int device, int nranks, int rank)
{
	uintptr_t key = (uintptr_t)comm;
	unsigned i = slot_of(key);

	if (key <= TOMBSTONE)
		return;
	for (unsigned n = 0; n < SLOTS; n++, i = (i + 1) & (SLOTS - 1)) {
		uintptr_t k = atomic_load(&slots[i].key);

		if (k != EMPTY && k != TOMBSTONE && k != key)
			continue;
		/* fill the slot before publishing its key */
		slots[i].id = id;
		slots[i].device = device;
		slots[i].nranks = nranks;
		slots[i].rank = rank;
		atomic_store(&slots[i].coll_seq, 0);
		atomic_store(&slots[i].p2p_seq, 0);
		atomic_store(&slots[i].splits, 0);
		if (k == key || atomic_compare_exchange_strong(&slots[i].key, &k, key))
			return;
	}
	rt_tr_warn_once(&warned_full, "more than %d live NCCL communicators: the newest are not "
			"matched across ranks", SLOTS);
}

void rt_tr_comm_add(const void *comm, uint64_t id, int dev, int nranks, int rank)
{
	insert(comm, id, dev, nranks, rank);
}

void rt_tr_comm_init_all(const void *comms, int ndev, const int *devlist)
{
	const void *const *c = comms;
	uint64_t id = mix(mix(0x1a11, (uint64_t)getpid()), atomic_fetch_add(&init_all_calls, 1));

	for (int i = 0; i < ndev; i++)
		insert(c[i], id, devlist ? devlist[i] : i, ndev, i);
}

void rt_tr_comm_split(const void *parent, int color, const void *newcomm)
{
	struct comm_slot *p = lookup(parent);
	uint32_t ordinal;

	if (!p)
		return;
	/* every rank counts the split, with or without a color (NCCL_SPLIT_NOCOLOR) */
	ordinal = atomic_fetch_add(&p->splits, 1) + 1;
	if (!newcomm)
		return;
	insert(newcomm, mix(mix(p->id, ordinal), (uint64_t)(uint32_t)color), p->device, -1, -1);
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

	return s ? s->id : 0;
}

/* The number of ranks in comm, from NCCL's own ncclCommCount (not
 * interposed), or 0. Once per split: the viewer needs a split's size. */
int rt_tr_comm_count(const void *comm)
{
	static int (*count)(const void *, int *);
	int n = 0;

	if (!comm)
		return 0;
	if (!count)
		count = (int (*)(const void *, int *))rt_tr_resolve("ncclCommCount", RT_LIB_NCCL);
	return count && count(comm, &n) == 0 ? n : 0;
}

bool rt_tr_comm_next_coll(const void *comm, uint64_t *id, uint32_t *seq, int *dev)
{
	struct comm_slot *s = lookup(comm);

	*seq = 0;
	if (!s)
		return false;
	*id = s->id;
	*dev = s->device;
	*seq = atomic_fetch_add_explicit(&s->coll_seq, 1, memory_order_relaxed) + 1;
	return true;
}

uint32_t rt_tr_p2p_seq(const void *comm)
{
	struct comm_slot *s = lookup(comm);

	return s ? atomic_fetch_add_explicit(&s->p2p_seq, 1, memory_order_relaxed) + 1 : 0;
}

int rt_tr_comm_device(const void *comm)
{
	struct comm_slot *s = lookup(comm);

	return s ? s->device : rt_tr_cur_dev;
}
