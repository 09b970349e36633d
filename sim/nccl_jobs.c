/* SPDX-License-Identifier: MIT */
/* nccl_jobs.c - how the simulated NCCL makes communicators, as NCCL 2.28
 * does: every way to make one (ncclCommInitRank, InitRankConfig,
 * InitRankScalable, Split, Shrink) is a job that runs at the end of its
 * group (nccl_group.c; outside ncclGroupStart/End a call is its own group).
 *
 * Blocking communicators: the group end runs the group's jobs together, on
 * a thread each when there are several (ranks of one process on several
 * devices must meet), and returns once they are done. Non-blocking ones
 * (config blocking = 0, or NCCL_COMM_BLOCKING=0): the group end returns
 * ncclInProgress at once; the communicator that tracks the job answers
 * ncclInProgress to ncclCommGetAsyncError until it is done, then ncclSuccess
 * or its failure: the new communicator for an init (its handle is given out
 * at the call), the parent for a split or a shrink (whose new handle is
 * written to *newcomm only once it is made, NULL until then, as NCCL does).
 *
 * Split: every rank of the parent (NCCL_SPLIT_NOCOLOR too) exchanges
 * (color, key) through a bootstrap segment of its own, not through the
 * parent's collectives (NCCL bootstraps out of band), then each color joins
 * a segment named after the parent, the split's ordinal and the color.
 * Shrink: only the ranks that stay call it; they renumber in parent order
 * and join a segment named after the parent and the shrink's ordinal;
 * NCCL_SHRINK_ABORT first ends the parent's operations in flight.
 *
 * Thread-safety: a job touches its communicators only; a communicator
 * counts its running jobs (jobs), which destroy and abort wait for. */
#include <nccl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "nccl_int.h"
#include "simgpu.h"

/* ---- running jobs ---- */

static struct ncclComm *tracked(struct comm_job *j)
{
	return j->kind == JOB_INIT ? j->comm : j->parent;
}

static ncclResult_t split_run(struct comm_job *j);
static ncclResult_t shrink_run(struct comm_job *j);

static ncclResult_t job_run(struct comm_job *j)
{
	simgpu_set_current_device(j->device);
	switch (j->kind) {
	case JOB_INIT:
		return init_rank_into(j->comm, j->nranks, j->name, j->rank, j->device, NULL);
	case JOB_SPLIT:
		return split_run(j);
	default:
		return shrink_run(j);
	}
}

/* The job's end: its result where NCCL puts it. Frees j unless the caller
 * still reads it (a blocking group). */
static void job_done(struct comm_job *j, bool free_it)
{
	struct ncclComm *t = tracked(j);

	if (!j->blocking || j->kind == JOB_INIT)
		set_async_error(t, j->result);
	atomic_fetch_sub(&t->jobs, 1);
	if (free_it)
		free(j);
}

static void *job_thread(void *arg)
{
	struct comm_job *j = arg;

	j->result = job_run(j);
	if (!j->blocking)
		job_done(j, true);
	return NULL;
}

static bool job_start(struct comm_job *j)
{
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	if (!j->blocking)
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	j->threaded = pthread_create(&j->thread, &attr, job_thread, j) == 0;
	pthread_attr_destroy(&attr);
	return j->threaded;
}

/* A group mixing blocking and non-blocking communicators: refused. */
static ncclResult_t jobs_refuse(struct comm_job *list)
{
	struct comm_job *next;

	warn("Blocking and nonblocking communicators are not allowed in the same group.");
	for (struct comm_job *j = list; j; j = next) {
		next = j->next;
		if (j->kind == JOB_INIT)
			set_async_error(j->comm, ncclInvalidArgument);
		free(j);
	}
	return ncclInvalidArgument;
}

/* Run a group's jobs (a list); their results say how the group ended. */
ncclResult_t jobs_run(struct comm_job *list)
{
	bool blocking = list->blocking, several = list->next != NULL;
	ncclResult_t r = ncclSuccess;
	struct comm_job *next;

	for (struct comm_job *j = list; j; j = j->next)
		if (j->blocking != blocking)
			return jobs_refuse(list);
	for (struct comm_job *j = list; j; j = j->next) {
		atomic_fetch_add(&tracked(j)->jobs, 1);
		if (!blocking)
			set_async_error(tracked(j), ncclInProgress);
	}
	for (struct comm_job *j = list; j; j = next) {
		next = j->next;
		if ((several || !blocking) && job_start(j))
			continue;
		j->result = job_run(j); /* here: one blocking job, or no thread */
		if (!blocking)
			job_done(j, true);
	}
	for (struct comm_job *j = list; blocking && j; j = next) {
		next = j->next;
		if (j->threaded)
			pthread_join(j->thread, NULL);
		if (r == ncclSuccess)
			r = j->result;
		job_done(j, true);
	}
	return r != ncclSuccess ? r : blocking ? ncclSuccess : ncclInProgress;
}

ncclResult_t job_submit(struct comm_job *j)
{
	j->next = NULL;
	if (group_open()) {
		group_add_job(j);
		return ncclSuccess;
	}
	return jobs_run(j);
}

void jobs_wait(struct ncclComm *c)
{
	while (atomic_load(&c->jobs) > 0)
		nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
}

static struct comm_job *job_new(enum job_kind kind, const ncclConfig_t *config)
{
	struct comm_job *j = calloc(1, sizeof(*j));

	if (j) {
		j->kind = kind;
		j->blocking = config_blocking(config);
		j->device = simgpu_current_device();
	}
	return j;
}

/* ---- init ---- */

/* The handle is given out at the call, as NCCL does; the job joins it. */
static ncclResult_t init_submit(ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank,
				ncclConfig_t *config)
{
	struct comm_job *j;

	if (!comm || config_check(config) != ncclSuccess || !id_ok(id))
		return ncclInvalidArgument;
	if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks) {
		warn("Invalid rank requested : %d/%d (simulated NCCL supports up to %d ranks)",
		     rank, nranks, MAX_RANKS);
		return ncclInvalidArgument;
	}
	if (forked_child("ncclCommInitRank"))
		return ncclUnhandledCudaError;
	j = job_new(JOB_INIT, config);
	if (!j || !(j->comm = comm_new(config))) {
		free(j);
		return ncclSystemError;
	}
	j->nranks = nranks;
	j->rank = rank;
	id_name(id, "", j->name, sizeof(j->name));
	set_async_error(j->comm, ncclInProgress); /* NCCL's initState until the job is done */
	*comm = j->comm;
	return job_submit(j);
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
					   int rank, ncclConfig_t *config)
{
	return init_submit(comm, nranks, &commId, rank, config);
}

/* NCCL: every rank gives the same ids in the same order; only the first
 * names the communicator (and makes its hash). */
EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank,
					     int nId, ncclUniqueId *commIds,
					     ncclConfig_t *config)
{
	if (!commIds || nId < 1 || nId > nranks) {
		warn("ncclCommInitRankScalable : invalid number of ids %d (nranks %d)", nId, nranks);
		return ncclInvalidArgument;
	}
	for (int i = 1; i < nId; i++)
		if (!id_ok(&commIds[i]))
			return ncclInvalidArgument;
	return init_submit(newcomm, nranks, &commIds[0], myrank, config);
}

/* ---- split: (color, key) of every parent rank through a bootstrap segment ---- */

struct boot_seg {
	_Atomic uint32_t wake;
	struct {
		_Atomic int joined;
		int color, key;
	} r[MAX_RANKS];
};

static ncclResult_t boot_wait(struct boot_seg *b, int n, struct ncclComm *stop)
{
	double deadline = now_s() + simgpu_timeout_s();

	for (;;) {
		uint32_t seen = atomic_load(&b->wake);
		int joined = 0;

		for (int r = 0; r < n; r++)
			joined += atomic_load(&b->r[r].joined);
		if (joined == n)
			return ncclSuccess;
		if (atomic_load(&stop->aborted_local)) {
			warn("ncclCommSplit aborted (ncclCommAbort)");
			return ncclRemoteError;
		}
		if (now_s() > deadline) {
			warn("bootstrap timeout after %.0f s in ncclCommSplit: %d of %d ranks of the "
			     "parent called it", simgpu_timeout_s(), joined, n);
			return ncclSystemError;
		}
		word_wait(&b->wake, seen, 50 * 1000 * 1000);
	}
}

/* A name for a communicator made from parent: parent's name + suffix, or
 * a hash of them when that would not fit (splits of splits of ...). */
static void derive_name(const struct ncclComm *p, const char *suffix, char *out, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	if (strlen(p->shm_name) + strlen(suffix) < 100) {
		snprintf(out, n, "%s%s", p->shm_name, suffix);
		return;
	}
	for (const char *c = p->shm_name; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
	for (const char *c = suffix; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
	snprintf(out, n, "/simgpu-nccl-h%016llx", (unsigned long long)h);
}

/* Every rank of the parent posts (color, key) and reads everyone's. */
static ncclResult_t split_exchange(struct comm_job *j, int colors[], int keys[])
{
	struct ncclComm *p = j->parent;
	struct boot_seg *b;
	char name[128], suffix[32];
	ncclResult_t r;
	int fd;

	snprintf(suffix, sizeof(suffix), "-x%u", j->ordinal);
	derive_name(p, suffix, name, sizeof(name));
	fd = shm_open(name, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)sizeof(*b)) != 0) {
		warn("ncclCommSplit : cannot create segment %s: %s", name, strerror(errno));
		if (fd >= 0)
			close(fd);
		return ncclSystemError;
	}
	b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (b == MAP_FAILED)
		return ncclSystemError;
	b->r[p->rank].color = j->color;
	b->r[p->rank].key = j->key;
	atomic_store(&b->r[p->rank].joined, 1);
	word_bump(&b->wake);
	r = boot_wait(b, p->nranks, p);
	for (int i = 0; r == ncclSuccess && i < p->nranks; i++) {
		colors[i] = b->r[i].color;
		keys[i] = b->r[i].key;
	}
	if (p->rank == 0 || r != ncclSuccess) /* all have it mapped (or never will) */
		shm_unlink(name);
	munmap(b, sizeof(*b));
	return r;
}

/* The new rank of parent rank me among those of its color: by key, then
 * by parent rank (NCCL's order); the count in *n. */
static int split_rank(const int colors[], const int keys[], int nranks, int me, int *n)
{
	int below = 0;

	*n = 0;
	for (int i = 0; i < nranks; i++) {
		if (colors[i] != colors[me])
			continue;
		(*n)++;
		if (keys[i] < keys[me] || (keys[i] == keys[me] && i < me))
			below++;
	}
	return below;
}

/* Join the made communicator's segment; *out once it is made. */
static ncclResult_t child_join(struct comm_job *j, const char *suffix, int n, int newrank)
{
	struct ncclComm *c = comm_new(NULL);
	char name[128];
	ncclResult_t r;

	if (!c)
		return ncclSystemError;
	c->blocking = j->blocking;
	derive_name(j->parent, suffix, name, sizeof(name));
	r = init_rank_into(c, n, name, newrank, j->device, j->parent);
	if (r != ncclSuccess) {
		comm_release(c, false);
		return r;
	}
	set_async_error(c, ncclSuccess);
	__atomic_store_n(j->out, c, __ATOMIC_RELEASE);
	return ncclSuccess;
}

static ncclResult_t split_run(struct comm_job *j)
{
	int colors[MAX_RANKS], keys[MAX_RANKS], n, newrank;
	char suffix[48];
	ncclResult_t r = split_exchange(j, colors, keys);

	if (r != ncclSuccess || j->color == NCCL_SPLIT_NOCOLOR)
		return r;
	newrank = split_rank(colors, keys, j->parent->nranks, j->parent->rank, &n);
	snprintf(suffix, sizeof(suffix), "-s%u-c%d", j->ordinal, j->color);
	return child_join(j, suffix, n, newrank);
}

static ncclResult_t shrink_run(struct comm_job *j)
{
	struct ncclComm *p = j->parent;
	int below = 0;
	char suffix[32];

	if (j->flags & NCCL_SHRINK_ABORT) { /* end the parent's operations first */
		atomic_store(&p->aborted_local, 1);
		drain(p);
		atomic_store(&p->aborted_local, 0);
	}
	for (int i = 0; i < j->nexcl; i++)
		below += j->excl[i] < p->rank;
	snprintf(suffix, sizeof(suffix), "-k%u", j->ordinal);
	return child_join(j, suffix, p->nranks - j->nexcl, p->rank - below);
}

/* NCCL's ncclCommEnsureReady for the parent of a split or shrink. */
static ncclResult_t parent_ready(struct ncclComm *p, const char *what, bool ignore_error)
{
	ncclResult_t r;

	if (!comm_ok(p)) {
		warn("%s : invalid communicator", what);
		return ncclInvalidArgument;
	}
	if (forked_child(what))
		return ncclUnhandledCudaError;
	r = get_async_error(p);
	if (r == ncclInProgress) {
		warn("Attempt to use communicator before the previous operation returned ncclSuccess");
		return ncclInvalidArgument;
	}
	return ignore_error ? ncclSuccess : r;
}

EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
				  ncclConfig_t *config)
{
	ncclResult_t r = parent_ready(comm, "ncclCommSplit", false);
	struct comm_job *j;

	if (r != ncclSuccess)
		return r;
	if (!newcomm || config_check(config) != ncclSuccess || (color < 0 && color != NCCL_SPLIT_NOCOLOR))
		return ncclInvalidArgument;
	*newcomm = NULL; /* until the split is done */
	j = calloc(1, sizeof(*j));
	if (!j)
		return ncclSystemError;
	*j = (struct comm_job){ .kind = JOB_SPLIT, .parent = comm, .out = newcomm,
				.device = comm->device, .color = color, .key = key,
				.ordinal = ++comm->splits,
				.blocking = config ? config_blocking(config) : comm->blocking };
	return job_submit(j);
}

/* The excluded ranks: in range, each once, not the caller. */
static ncclResult_t shrink_check(struct ncclComm *p, const int *excl, int n)
{
	if (!excl || n < 1 || n >= p->nranks) {
		warn("ncclCommShrink : invalid excludeRanksList/Count (%d of %d ranks)", n, p->nranks);
		return ncclInvalidArgument;
	}
	for (int i = 0; i < n; i++) {
		bool dup = false;

		for (int k = 0; k < i; k++)
			dup |= excl[k] == excl[i];
		if (excl[i] < 0 || excl[i] >= p->nranks || excl[i] == p->rank || dup) {
			warn("ncclCommShrink : rank %d cannot be excluded (rank %d of %d calls it)",
			     excl[i], p->rank, p->nranks);
			return ncclInvalidArgument;
		}
	}
	return ncclSuccess;
}

EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
				   ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
	ncclResult_t r = parent_ready(comm, "ncclCommShrink", shrinkFlags & NCCL_SHRINK_ABORT);
	struct comm_job *j;

	if (r != ncclSuccess)
		return r;
	if (!newcomm || config_check(config) != ncclSuccess)
		return ncclInvalidArgument;
	r = shrink_check(comm, excludeRanksList, excludeRanksCount);
	if (r != ncclSuccess)
		return r;
	*newcomm = NULL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return ncclSystemError;
	*j = (struct comm_job){ .kind = JOB_SHRINK, .parent = comm, .out = newcomm,
				.device = comm->device, .flags = shrinkFlags,
				.nexcl = excludeRanksCount, .ordinal = ++comm->shrinks,
				.blocking = config ? config_blocking(config) : comm->blocking };
	memcpy(j->excl, excludeRanksList, (size_t)excludeRanksCount * sizeof(int));
	return job_submit(j);
}

/* ---- the end of a communicator's work ---- */

/* NCCL 2.28: in-flight operations stop; no new one is accepted; destroy,
 * split and shrink still work. Done once the communicator is quiet. */
EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags)
{
	if (!comm)
		return ncclSuccess;
	if (!comm_ok(comm) || revokeFlags != NCCL_REVOKE_DEFAULT || comm->finalized ||
	    atomic_load(&comm->revoked))
		return ncclInvalidArgument;
	if (forked_child("ncclCommRevoke"))
		return ncclUnhandledCudaError;
	atomic_store(&comm->revoked, 1);
	comm->finalized = true;
	atomic_store(&comm->aborted_local, 1); /* what is queued ends at once */
	drain(comm);
	atomic_store(&comm->aborted_local, 0);
	return ncclSuccess;
}

/* Every operation issued completes; then destroy frees without waiting. */
EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	ncclResult_t r;

	if (!comm)
		return ncclSuccess;
	r = parent_ready(comm, "ncclCommFinalize", true);
	if (r != ncclSuccess)
		return r;
	if (comm->finalized)
		return ncclInvalidArgument;
	comm->finalized = true;
	drain(comm);
	return get_async_error(comm);
}
