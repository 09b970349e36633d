/* SPDX-License-Identifier: MIT */
/* nccl_comm.c - simulated NCCL communicators: unique ids, creation and bootstrap
 * over the shared segment (ncclCommInitRank/InitAll/Split), destruction, abort
 * and the communicator queries. Split out of nccl.c. */
#include <nccl.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nccl_int.h"
#include "simgpu.h"

void id_name(const ncclUniqueId *id, const char *suffix, char *out, size_t n)
{
	uint64_t a, b;

	memcpy(&a, id->internal + 8, 8);
	memcpy(&b, id->internal + 16, 8);
	snprintf(out, n, "/simgpu-nccl-%016llx%016llx%s", (unsigned long long)a,
		 (unsigned long long)b, suffix);
}

EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	uint64_t magic = ID_MAGIC;

	if (!id)
		return ncclInvalidArgument;
	memset(id, 0, sizeof(*id));
	memcpy(id->internal, &magic, 8);
	if (getrandom(id->internal + 8, 16, 0) != 16) {
		warn("getrandom failed: %s", strerror(errno));
		return ncclSystemError;
	}
	return ncclSuccess;
}

bool comm_ok(struct ncclComm *c)
{
	return c && c->magic == COMM_MAGIC;
}

/* Map the segment and claim slot `rank`. Does not wait for the others. */
static ncclResult_t comm_attach(struct ncclComm **out, int nranks, const char *name, int rank,
				int device)
{
	struct ncclComm *c;
	struct shm_rank *me;
	int fd;

	if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks) {
		warn("Invalid rank requested : %d/%d (simulated NCCL supports up to %d ranks)",
		     rank, nranks, MAX_RANKS);
		return ncclInvalidArgument;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return ncclSystemError;
	c->magic = COMM_MAGIC;
	c->rank = rank;
	c->nranks = nranks;
	c->device = device;
	c->shm_size = shm_bytes(nranks);
	snprintf(c->shm_name, sizeof(c->shm_name), "%s", name);
	fd = shm_open(name, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)c->shm_size) != 0) {
		warn("cannot create shared segment %s: %s", name, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(c);
		return ncclSystemError;
	}
	c->shm = mmap(NULL, c->shm_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (c->shm == MAP_FAILED) {
		warn("cannot map shared segment %s: %s", name, strerror(errno));
		free(c);
		return ncclSystemError;
	}
	me = &c->shm->ranks[rank];
	if (atomic_load(&me->joined)) {
		warn("rank %d of this communicator joined twice", rank);
		munmap(c->shm, c->shm_size);
		free(c);
		return ncclInvalidUsage;
	}
	me->device = device;
	me->pid = (int)getpid();
	/* NCCL's host identity (getHostHash): NCCL_HOSTID when set, else the host */
	if (getenv("NCCL_HOSTID") && *getenv("NCCL_HOSTID"))
		snprintf(me->host, sizeof(me->host), "%s", getenv("NCCL_HOSTID"));
	else
		gethostname(me->host, sizeof(me->host) - 1);
	atomic_store(&me->joined, 1);
	bump(c->shm);
	*out = c;
	return ncclSuccess;
}

static void comm_release(struct ncclComm *c, bool unlink_name)
{
	sim_prof_fini(&c->prof);
	if (unlink_name)
		shm_unlink(c->shm_name);
	if (c->shm)
		munmap(c->shm, c->shm_size);
	c->magic = 0;
	free(c);
}

/* After every rank has joined: NCCL's duplicate-device rule. */
static ncclResult_t check_devices(struct ncclComm *c)
{
	struct shm_rank *me = &c->shm->ranks[c->rank];

	for (int r = 0; r < c->nranks; r++) {
		struct shm_rank *o = &c->shm->ranks[r];

		if (r == c->rank || o->device != me->device || strcmp(o->host, me->host) != 0)
			continue;
		warn("Duplicate GPU detected : rank %d and rank %d both on CUDA device %x",
		     c->rank, r, 0x18 + me->device);
		return ncclInvalidUsage;
	}
	return ncclSuccess;
}

/* Wait, bounded, until all nranks have joined. */
static ncclResult_t wait_joined(struct ncclComm *c)
{
	double deadline = now_s() + simgpu_timeout_s();

	for (;;) {
		uint32_t seen = atomic_load(&c->shm->wake);
		int joined = 0;

		for (int r = 0; r < c->nranks; r++)
			joined += atomic_load(&c->shm->ranks[r].joined);
		if (joined == c->nranks)
			return ncclSuccess;
		if (now_s() > deadline) {
			char missing[256] = "";
			size_t len = 0;

			for (int r = 0; r < c->nranks && len < sizeof(missing) - 8; r++)
				if (!atomic_load(&c->shm->ranks[r].joined))
					len += (size_t)snprintf(missing + len, sizeof(missing) - len,
								"%s%d", len ? "," : "", r);
			warn("bootstrap timeout after %.0f s: rank(s) %s never joined the communicator",
			     simgpu_timeout_s(), missing);
			return ncclSystemError;
		}
		wait_change(c->shm, seen, 50 * 1000 * 1000);
	}
}

ncclResult_t init_rank(ncclComm_t *out, int nranks, const char *name, int rank)
{
	struct ncclComm *c = NULL;
	ncclResult_t r;

	if (!out)
		return ncclInvalidArgument;
	r = comm_attach(&c, nranks, name, rank, simgpu_current_device());
	if (r != ncclSuccess)
		return r;
	r = wait_joined(c);
	if (r == ncclSuccess)
		r = check_devices(c);
	/* everyone has mapped it (or never will): the name is no longer needed */
	if (rank == 0 || r != ncclSuccess)
		shm_unlink(c->shm_name);
	if (r != ncclSuccess) {
		comm_release(c, false);
		return r;
	}
	sim_prof_init(&c->prof, c->shm_name, nranks, rank);
	*out = c;
	return ncclSuccess;
}

bool id_ok(const ncclUniqueId *id)
{
	uint64_t magic;

	memcpy(&magic, id->internal, 8);
	if (magic != ID_MAGIC) {
		warn("invalid ncclUniqueId (not made by ncclGetUniqueId)");
		return false;
	}
	return true;
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	char name[64];

	if (!id_ok(&commId))
		return ncclInvalidArgument;
	id_name(&commId, "", name, sizeof(name));
	return init_rank(comm, nranks, name, rank);
}

EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	ncclUniqueId id;
	char name[64];
	ncclResult_t r;
	int i;

	if (!comms || ndev < 1)
		return ncclInvalidArgument;
	r = ncclGetUniqueId(&id);
	if (r != ncclSuccess)
		return r;
	id_name(&id, "", name, sizeof(name));
	for (i = 0; i < ndev; i++) {
		int dev = devlist ? devlist[i] : i;

		if (dev < 0 || dev >= simgpu_device_count()) {
			warn("ncclCommInitAll: invalid device %d", dev);
			r = ncclInvalidArgument;
			goto out_release;
		}
		r = comm_attach(&comms[i], ndev, name, i, dev);
		if (r != ncclSuccess)
			goto out_release;
	}
	for (i = 0; i < ndev; i++) {
		r = check_devices(comms[i]);
		if (r != ncclSuccess) {
			i = ndev;
			goto out_release;
		}
	}
	shm_unlink(name);
	for (i = 0; i < ndev; i++)
		sim_prof_init(&comms[i]->prof, comms[i]->shm_name, ndev, i);
	return ncclSuccess;

out_release:
	while (i-- > 0)
		comm_release(comms[i], i == 0);
	shm_unlink(name);
	return r;
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	if (!comm)
		return ncclSuccess;
	if (!comm_ok(comm))
		return ncclInvalidArgument;
	init_join(comm);
	drain(comm); /* NCCL's destroy waits for the communicator's operations */
	comm_release(comm, false);
	return ncclSuccess;
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	if (!comm)
		return ncclSuccess;
	if (!comm_ok(comm))
		return ncclInvalidArgument;
	atomic_store(&comm->aborted_local, 1);
	init_join(comm);
	if (comm->shm) {
		atomic_store(&comm->shm->aborted, comm->rank + 1);
		bump(comm->shm);
	}
	drain(comm); /* queued ops end at once: the communicator is aborted */
	/* its memory is kept: another thread may still hold the handle (PyTorch's
	 * watchdog aborts while the main thread waits, then wakes and issues the
	 * next collective); a call on it then fails (ncclInvalidArgument) instead
	 * of reading freed memory (fsdp_mini died of SIGSEGV in 1 of ~10 watchdog
	 * runs). One communicator's bytes per abort. */
	sim_prof_fini(&comm->prof);
	comm->magic = 0;
	return ncclSuccess;
}

EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	if (!comm_ok(comm) || !count)
		return ncclInvalidArgument;
	*count = comm->nranks;
	return ncclSuccess;
}

EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
	if (!comm_ok(comm) || !device)
		return ncclInvalidArgument;
	*device = comm->device;
	return ncclSuccess;
}

EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	if (!comm_ok(comm) || !rank)
		return ncclInvalidArgument;
	*rank = comm->rank;
	return ncclSuccess;
}

EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
	if (!comm_ok(comm) || !asyncError)
		return ncclInvalidArgument;
	*asyncError = get_async_error(comm);
	return ncclSuccess;
}

struct split_entry {
	int color, key, rank;
};

static int split_cmp(const void *a, const void *b)
{
	const struct split_entry *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->rank - y->rank;
}

/* Every rank of comm exchanges (color, key) through the parent, then joins a
 * segment named after the parent, the split count and the color. */
EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
				  ncclConfig_t *config)
{
	struct split_entry mine, all[MAX_RANKS], same[MAX_RANKS];
	struct op o;
	char name[160];
	int n = 0, newrank = -1;
	ncclResult_t r;

	(void)config;
	if (!comm_ok(comm) || !newcomm)
		return ncclInvalidArgument;
	mine = (struct split_entry){ color, key, comm->rank };
	o = (struct op){ .type = OP_ALLGATHER, .comm = comm, .send = (const char *)&mine,
			 .recv = (char *)all, .count = 3, .dtype = ncclInt32 };
	o.seq = ++comm->colls;
	r = run_ops(&o, 1);
	if (r != ncclSuccess)
		return r;
	comm->splits++;
	*newcomm = NULL;
	if (color == NCCL_SPLIT_NOCOLOR)
		return ncclSuccess;
	for (int i = 0; i < comm->nranks; i++)
		if (all[i].color == color)
			same[n++] = all[i];
	qsort(same, (size_t)n, sizeof(same[0]), split_cmp);
	for (int i = 0; i < n; i++)
		if (same[i].rank == comm->rank)
			newrank = i;
	snprintf(name, sizeof(name), "%s-s%u-c%d", comm->shm_name, comm->splits, color);
	return init_rank(newcomm, n, name, newrank);
}
