/* SPDX-License-Identifier: MIT */
/* nccl_comm.c - simulated NCCL communicators: unique ids, joining the shared
 * segment and the bootstrap (every rank there, NCCL's device rule),
 * ncclCommInitRank and ncclCommInitAll, destruction, abort and the queries.
 * The other ways to make one (config, scalable, split, shrink) and the jobs
 * that make them are in nccl_jobs.c. */
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

bool config_blocking(const ncclConfig_t *config)
{
	const char *env = getenv("NCCL_COMM_BLOCKING");

	if (config && config->blocking != NCCL_CONFIG_UNDEF_INT)
		return config->blocking != 0;
	return !(env && *env && atoi(env) == 0);
}

ncclResult_t config_check(const ncclConfig_t *config)
{
	if (config && config->magic != 0xcafebeef) {
		warn("ncclConfig_t not initialised with NCCL_CONFIG_INITIALIZER");
		return ncclInvalidArgument;
	}
	return ncclSuccess;
}

/* NCCL's calls reach the device through CUDA: in a child forked after CUDA
 * was initialised they fail as CUDA's calls do (simgpu.h). */
bool forked_child(const char *what)
{
	if (!simgpu_forked())
		return false;
	warn("%s : Cuda failure 3 'initialization error' (CUDA cannot be used in a process "
	     "forked after CUDA was initialised)", what);
	return true;
}

struct ncclComm *comm_new(const ncclConfig_t *config)
{
	struct ncclComm *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->magic = COMM_MAGIC;
	c->blocking = config_blocking(config);
	c->device = simgpu_current_device();
	return c;
}

/* Map the segment and claim slot `rank`. Does not wait for the others. */
static ncclResult_t comm_attach(struct ncclComm *c, int nranks, const char *name, int rank,
				int device)
{
	struct shm_rank *me;
	int fd;

	if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks) {
		warn("Invalid rank requested : %d/%d (simulated NCCL supports up to %d ranks)",
		     rank, nranks, MAX_RANKS);
		return ncclInvalidArgument;
	}
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
		return ncclSystemError;
	}
	c->shm = mmap(NULL, c->shm_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (c->shm == MAP_FAILED) {
		warn("cannot map shared segment %s: %s", name, strerror(errno));
		c->shm = NULL;
		return ncclSystemError;
	}
	me = &c->shm->ranks[rank];
	if (atomic_load(&me->joined)) {
		warn("rank %d of this communicator joined twice", rank);
		munmap(c->shm, c->shm_size);
		c->shm = NULL;
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
	return ncclSuccess;
}

void comm_release(struct ncclComm *c, bool unlink_name)
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

static void warn_missing(struct ncclComm *c)
{
	char missing[256] = "";
	size_t len = 0;

	for (int r = 0; r < c->nranks && len < sizeof(missing) - 8; r++)
		if (!atomic_load(&c->shm->ranks[r].joined))
			len += (size_t)snprintf(missing + len, sizeof(missing) - len, "%s%d",
						len ? "," : "", r);
	warn("bootstrap timeout after %.0f s: rank(s) %s never joined the communicator",
	     simgpu_timeout_s(), missing);
}

/* Wait, bounded, until all nranks have joined (or c or stop is aborted). */
static ncclResult_t wait_joined(struct ncclComm *c, struct ncclComm *stop)
{
	double deadline = now_s() + simgpu_timeout_s();

	for (;;) {
		uint32_t seen = atomic_load(&c->shm->wake);
		int joined = 0;

		for (int r = 0; r < c->nranks; r++)
			joined += atomic_load(&c->shm->ranks[r].joined);
		if (joined == c->nranks)
			return ncclSuccess;
		if (atomic_load(&c->aborted_local) || (stop && atomic_load(&stop->aborted_local))) {
			warn("communicator init aborted (ncclCommAbort)");
			return ncclRemoteError;
		}
		if (now_s() > deadline) {
			warn_missing(c);
			return ncclSystemError;
		}
		wait_change(c->shm, seen, 50 * 1000 * 1000);
	}
}

ncclResult_t init_rank_into(struct ncclComm *c, int nranks, const char *name, int rank,
			    int device, struct ncclComm *stop)
{
	ncclResult_t r = comm_attach(c, nranks, name, rank, device);

	if (r != ncclSuccess)
		return r;
	r = wait_joined(c, stop);
	if (r == ncclSuccess)
		r = check_devices(c);
	/* everyone has mapped it (or never will): the name is no longer needed */
	if (rank == 0 || r != ncclSuccess)
		shm_unlink(c->shm_name);
	if (r != ncclSuccess) {
		munmap(c->shm, c->shm_size);
		c->shm = NULL;
		return r;
	}
	sim_prof_init(&c->prof, c->shm_name, nranks, rank);
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
	return ncclCommInitRankConfig(comm, nranks, commId, rank, NULL);
}

EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	ncclUniqueId id;
	char name[64];
	ncclResult_t r;
	int i;

	if (!comms || ndev < 1)
		return ncclInvalidArgument;
	if (forked_child("ncclCommInitAll"))
		return ncclUnhandledCudaError;
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
		comms[i] = comm_new(NULL);
		r = comms[i] ? comm_attach(comms[i], ndev, name, i, dev) : ncclSystemError;
		if (r != ncclSuccess) {
			if (comms[i])
				comm_release(comms[i], false);
			goto out_release;
		}
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
	if (forked_child("ncclCommDestroy"))
		return ncclUnhandledCudaError;
	jobs_wait(comm);
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
	if (forked_child("ncclCommAbort"))
		return ncclUnhandledCudaError;
	atomic_store(&comm->aborted_local, 1);
	jobs_wait(comm); /* a job in its bootstrap sees the abort */
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
