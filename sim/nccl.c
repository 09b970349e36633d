/* SPDX-License-Identifier: MIT */
/* nccl.c - simulated NCCL (sim/libnccl.so.2) spanning rank processes.
 *
 * Compiled against NVIDIA's nccl.h. A communicator is a shared-memory segment
 * named after the ncclUniqueId, mapped by every rank process that joins it.
 * Collectives move real data: each round, every rank copies its part into its
 * staging slot, all ranks meet at a barrier, each computes its output from all
 * slots, and all meet again before slots are reused. Point-to-point uses one
 * mailbox per (sender, receiver) pair.
 *
 * Every operation is a small state machine that never blocks inside a step,
 * so a group (ncclGroupStart/End) can progress several communicators from one
 * thread (ncclCommInitAll). Waits are bounded: a rank that never arrives makes
 * the others fail with ncclSystemError after SIMGPU_TIMEOUT seconds, a rank
 * whose process died or aborted with ncclRemoteError. NCCL's rule that two
 * ranks of one communicator may not share a device gives ncclInvalidUsage.
 *
 * Thread-safety: as NCCL's; a communicator is used by one thread at a time.
 * Group state is per thread. */
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

const char *const op_names[] = { "AllReduce", "Broadcast", "Reduce", "AllGather",
					"ReduceScatter", "Send", "Recv" };

static __thread int group_depth;
static __thread struct op *group_ops;
static __thread size_t group_n, group_cap;
static __thread ncclResult_t group_error;
/* process-wide, as asynchronous errors are found on the device workers */
static char last_error[512];
static pthread_mutex_t last_error_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- messages ---- */

void warn(const char *fmt, ...)
{
	char host[64] = "?";
	va_list ap;

	gethostname(host, sizeof(host) - 1);
	pthread_mutex_lock(&last_error_lock);
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s:%d:%ld [%d] NCCL WARN %s\n", host, (int)getpid(),
		(long)syscall(SYS_gettid), simgpu_current_device(), last_error);
	pthread_mutex_unlock(&last_error_lock);
}

static const char *const nccl_texts[] = {
#define RT_NCCL_ERR(c, n, t) t,
#include "errors.def"
#undef RT_NCCL_ERR
};

EXPORT const char *ncclGetErrorString(ncclResult_t r)
{
	size_t n = sizeof(nccl_texts) / sizeof(nccl_texts[0]);

	return (size_t)r < n - 1 ? nccl_texts[r] : nccl_texts[n - 1];
}

EXPORT const char *ncclGetLastError(ncclComm_t comm)
{
	(void)comm;
	return last_error;
}

EXPORT ncclResult_t ncclGetVersion(int *version)
{
	if (!version)
		return ncclInvalidArgument;
	*version = NCCL_VERSION_CODE;
	return ncclSuccess;
}

/* ---- time and waiting ---- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bump(struct shm_hdr *h)
{
	atomic_fetch_add(&h->wake, 1);
	syscall(SYS_futex, &h->wake, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

static void wait_change(struct shm_hdr *h, uint32_t seen, long ns)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ns };

	syscall(SYS_futex, &h->wake, FUTEX_WAIT, seen, &ts, NULL, 0);
}

/* Has process pid exited? A zombie (not yet reaped by its launcher) counts. */
static bool process_gone(int pid)
{
	char path[64], buf[256];
	const char *state;
	FILE *f;
	size_t n;

	if (kill(pid, 0) != 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	state = strrchr(buf, ')');
	return state && state[1] == ' ' && (state[2] == 'Z' || state[2] == 'X');
}

/* Any rank process of this communicator gone, or aborted? */
static ncclResult_t peers_alive(struct ncclComm *c)
{
	int ab = atomic_load(&c->shm->aborted);

	if (ab) {
		warn("rank %d aborted the communicator (ncclCommAbort)", ab - 1);
		return ncclRemoteError;
	}
	for (int r = 0; r < c->nranks; r++) {
		int pid = c->shm->ranks[r].pid;

		if (r == c->rank || !atomic_load(&c->shm->ranks[r].joined))
			continue;
		if (process_gone(pid)) {
			warn("remote process exited: rank %d (pid %d) is gone", r, pid);
			return ncclRemoteError;
		}
	}
	return ncclSuccess;
}

static void barrier_arrive(struct ncclComm *c, struct op *o)
{
	o->wait_for = ++c->barriers * (uint64_t)c->nranks;
	atomic_fetch_add(&c->shm->arrived, 1);
	bump(c->shm);
}

static bool barrier_reached(struct ncclComm *c, struct op *o)
{
	return atomic_load(&c->shm->arrived) >= o->wait_for;
}

/* ---- shared segment ---- */

static size_t shm_bytes(int nranks)
{
	return sizeof(struct shm_hdr) + (size_t)nranks * SLOT_BYTES +
	       (size_t)nranks * (size_t)nranks * P2P_BYTES;
}

static char *slot(struct ncclComm *c, int r)
{
	return (char *)(c->shm + 1) + (size_t)r * SLOT_BYTES;
}

static char *p2p_buf(struct ncclComm *c, int from, int to)
{
	return (char *)(c->shm + 1) + (size_t)c->nranks * SLOT_BYTES +
	       ((size_t)from * (size_t)c->nranks + (size_t)to) * P2P_BYTES;
}

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

/* ---- reductions ---- */

static size_t dtype_size(ncclDataType_t t)
{
	switch (t) {
	case ncclInt8: case ncclUint8: return 1;
	case ncclFloat16: case ncclBfloat16: return 2;
	case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
	case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
	default: return 0;
	}
}

static float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
	uint32_t bits;
	float f;

	if (exp == 0) {
		f = ldexpf((float)man, -24);
		return sign ? -f : f;
	}
	if (exp == 31)
		bits = sign | 0x7f800000u | (man << 13);
	else
		bits = sign | ((exp + 112) << 23) | (man << 13);
	memcpy(&f, &bits, 4);
	return f;
}

static uint16_t float_to_half(float f)
{
	uint32_t x, sign, man;
	int exp;

	memcpy(&x, &f, 4);
	sign = (x >> 16) & 0x8000;
	exp = (int)((x >> 23) & 0xff) - 127 + 15;
	man = x & 0x7fffff;
	if (((x >> 23) & 0xff) == 0xff)
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (exp <= 0) {
		if (exp < -10)
			return (uint16_t)sign;
		man |= 0x800000;
		uint32_t shift = (uint32_t)(14 - exp);
		uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);

		if (rem > half || (rem == half && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t h = sign | ((uint32_t)exp << 10) | (man >> 13), rem = man & 0x1fff;

	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++;
	return (uint16_t)h;
}

static float bf16_to_float(uint16_t b)
{
	uint32_t x = (uint32_t)b << 16;
	float f;

	memcpy(&f, &x, 4);
	return f;
}

static uint16_t float_to_bf16(float f)
{
	uint32_t x;

	memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

/* Combine element i of every rank's staging area (rank order, as all ranks
 * must agree) into out[i]. src(r) gives rank r's first element. */
#define REDUCE_LOOP(T, ACC, LOAD, STORE, DIV)                                                  \
	for (size_t i = 0; i < n; i++) {                                                       \
		ACC acc = LOAD(((const T *)src[0])[i]);                                        \
		for (int r = 1; r < nr; r++) {                                                 \
			ACC v = LOAD(((const T *)src[r])[i]);                                  \
			switch (op) {                                                          \
			case ncclProd: acc = (ACC)(acc * v); break;                            \
			case ncclMax: acc = v > acc ? v : acc; break;                          \
			case ncclMin: acc = v < acc ? v : acc; break;                          \
			default: acc = (ACC)(acc + v); break;                                  \
			}                                                                      \
		}                                                                              \
		if (op == ncclAvg)                                                             \
			acc = DIV(acc, nr);                                                    \
		((T *)out)[i] = STORE(acc);                                                    \
	}

#define ID(x) (x)
#define FDIV(a, n) ((a) / (n))
#define IDIV(a, n) ((a) / (n))

static void reduce(void *out, const char *const *src, int nr, size_t n, ncclDataType_t t,
		   ncclRedOp_t op)
{
	switch (t) {
	case ncclInt8: REDUCE_LOOP(int8_t, int32_t, ID, (int8_t), IDIV) break;
	case ncclUint8: REDUCE_LOOP(uint8_t, uint32_t, ID, (uint8_t), IDIV) break;
	case ncclInt32: REDUCE_LOOP(int32_t, int64_t, ID, (int32_t), IDIV) break;
	case ncclUint32: REDUCE_LOOP(uint32_t, uint32_t, ID, ID, IDIV) break;
	case ncclInt64: REDUCE_LOOP(int64_t, int64_t, ID, ID, IDIV) break; /* -fwrapv */
	case ncclUint64: REDUCE_LOOP(uint64_t, uint64_t, ID, ID, IDIV) break;
	case ncclFloat16: REDUCE_LOOP(uint16_t, float, half_to_float, float_to_half, FDIV) break;
	case ncclBfloat16: REDUCE_LOOP(uint16_t, float, bf16_to_float, float_to_bf16, FDIV) break;
	case ncclFloat32: REDUCE_LOOP(float, float, ID, ID, FDIV) break;
	case ncclFloat64: REDUCE_LOOP(double, double, ID, ID, FDIV) break;
	default: break;
	}
}

/* ---- operations ---- */

enum step { STEP_DONE, STEP_PROGRESS, STEP_WAIT, STEP_ERROR };

static bool is_collective(enum op_type t)
{
	return t != OP_SEND && t != OP_RECV;
}

static void post_signature(struct op *o)
{
	struct shm_rank *me = &o->comm->shm->ranks[o->comm->rank];

	me->sig_type = (int)o->type;
	me->sig_dtype = (int)o->dtype;
	me->sig_op = (int)o->redop;
	me->sig_root = o->root;
	me->sig_count = o->count;
}

/* All ranks see the same slots, so all reach the same verdict. */
static bool signatures_match(struct op *o)
{
	struct ncclComm *c = o->comm;
	struct shm_rank *a = &c->shm->ranks[0];

	for (int r = 1; r < c->nranks; r++) {
		struct shm_rank *b = &c->shm->ranks[r];

		if (a->sig_type != b->sig_type || a->sig_dtype != b->sig_dtype ||
		    a->sig_count != b->sig_count || a->sig_root != b->sig_root ||
		    (a->sig_type != OP_ALLGATHER && a->sig_type != OP_BROADCAST &&
		     a->sig_op != b->sig_op)) {
			warn("collective mismatch at sequence %llu: rank 0 called %s(count %zu), rank %d called %s(count %zu)",
			     (unsigned long long)o->seq, op_names[a->sig_type], a->sig_count, r,
			     op_names[b->sig_type], b->sig_count);
			return false;
		}
	}
	return true;
}

/* Elements of this op handled in one round. */
static size_t round_elems(struct op *o)
{
	size_t es = dtype_size(o->dtype), per = SLOT_BYTES / es;

	if (o->type == OP_REDUCESCATTER)
		per = SLOT_BYTES / (es * (size_t)o->comm->nranks);
	return o->count - o->done < per ? o->count - o->done : per;
}

/* Phase 0: copy this rank's part of the round into its slot. */
static void post_round(struct op *o)
{
	struct ncclComm *c = o->comm;
	size_t es = dtype_size(o->dtype), m = o->round, off = o->done * es;
	char *mine = slot(c, c->rank);

	switch (o->type) {
	case OP_REDUCESCATTER:
		for (int r = 0; r < c->nranks; r++)
			memcpy(mine + (size_t)r * m * es, o->send + ((size_t)r * o->count) * es + off,
			       m * es);
		break;
	case OP_BROADCAST:
		if (c->rank == o->root)
			memcpy(mine, o->send + off, m * es);
		break;
	default:
		memcpy(mine, o->send + off, m * es);
		break;
	}
}

/* Phase 1: compute this rank's output for the round from every slot. */
static void finish_round(struct op *o)
{
	struct ncclComm *c = o->comm;
	size_t es = dtype_size(o->dtype), m = o->round, off = o->done * es;
	const char *src[MAX_RANKS];

	switch (o->type) {
	case OP_ALLREDUCE:
	case OP_REDUCE:
		if (o->type == OP_REDUCE && c->rank != o->root)
			break;
		for (int r = 0; r < c->nranks; r++)
			src[r] = slot(c, r);
		reduce(o->recv + off, src, c->nranks, m, o->dtype, o->redop);
		break;
	case OP_BROADCAST:
		if (c->rank != o->root)
			memcpy(o->recv + off, slot(c, o->root), m * es);
		else if (o->recv != o->send)
			memcpy(o->recv + off, o->send + off, m * es);
		break;
	case OP_ALLGATHER:
		for (int r = 0; r < c->nranks; r++)
			memcpy(o->recv + ((size_t)r * o->count) * es + off, slot(c, r), m * es);
		break;
	case OP_REDUCESCATTER:
		for (int r = 0; r < c->nranks; r++)
			src[r] = slot(c, r) + (size_t)c->rank * m * es;
		reduce(o->recv + off, src, c->nranks, m, o->dtype, o->redop);
		break;
	default:
		break;
	}
}

static enum step step_collective(struct op *o)
{
	struct ncclComm *c = o->comm;

	switch (o->phase) {
	case 0:
		o->round = round_elems(o);
		post_signature(o);
		post_round(o);
		barrier_arrive(c, o);
		o->phase = 1;
		return STEP_PROGRESS;
	case 1:
		if (!barrier_reached(c, o))
			return STEP_WAIT;
		if (!signatures_match(o)) {
			o->result = ncclInvalidUsage;
			return STEP_ERROR;
		}
		finish_round(o);
		barrier_arrive(c, o);
		o->phase = 2;
		return STEP_PROGRESS;
	default:
		if (!barrier_reached(c, o))
			return STEP_WAIT;
		o->done += o->round;
		o->phase = 0;
		return o->done >= o->count ? STEP_DONE : STEP_PROGRESS;
	}
}

static enum step step_p2p(struct op *o)
{
	struct ncclComm *c = o->comm;
	size_t es = dtype_size(o->dtype), left = (o->count - o->done) * es;
	size_t m = left < P2P_BYTES ? left : P2P_BYTES;
	struct mailbox *mb;

	if (o->type == OP_SEND) {
		mb = &c->shm->mbox[c->rank][o->root];
		if (atomic_load(&mb->posted) != atomic_load(&mb->consumed))
			return STEP_WAIT;
		memcpy(p2p_buf(c, c->rank, o->root), o->send + o->done * es, m);
		mb->bytes = m;
		atomic_fetch_add(&mb->posted, 1);
	} else {
		mb = &c->shm->mbox[o->root][c->rank];
		if (atomic_load(&mb->posted) == atomic_load(&mb->consumed))
			return STEP_WAIT;
		if (mb->bytes != m) {
			warn("Recv from rank %d: peer sent %zu bytes where %zu were expected", o->root,
			     mb->bytes, m);
			o->result = ncclInvalidUsage;
			return STEP_ERROR;
		}
		memcpy(o->recv + o->done * es, p2p_buf(c, o->root, c->rank), m);
		atomic_fetch_add(&mb->consumed, 1);
	}
	bump(c->shm);
	o->done += m / es;
	return o->done >= o->count ? STEP_DONE : STEP_PROGRESS;
}

/* Collectives on one communicator share its staging slots: in a group, one
 * starts only when the earlier ones on that communicator are done. */
static bool blocked_behind(const struct op *ops, size_t i)
{
	if (!is_collective(ops[i].type))
		return false;
	for (size_t j = 0; j < i; j++)
		if (ops[j].phase >= 0 && ops[j].comm == ops[i].comm && is_collective(ops[j].type))
			return true;
	return false;
}

static void run_begin(struct op *ops, size_t n, struct run_state *st)
{
	st->last_progress = st->last_check = now_s();
	st->left = 0;
	st->begun = true;
	for (size_t i = 0; i < n; i++)
		if (ops[i].count == 0)
			ops[i].phase = -1; /* nothing to move */
		else
			st->left++;
}

/* No progress: dead or aborted peers (every 0.1 s), then SIMGPU_TIMEOUT. */
static ncclResult_t run_checks(struct op *ops, size_t n, struct run_state *st)
{
	double t = now_s();

	if (t - st->last_check > 0.1) {
		st->last_check = t;
		for (size_t i = 0; i < n; i++) {
			ncclResult_t r = ops[i].phase < 0 ? ncclSuccess : peers_alive(ops[i].comm);

			if (r != ncclSuccess) {
				set_async_error(ops[i].comm, r);
				return r;
			}
		}
	}
	if (t - st->last_progress <= simgpu_timeout_s())
		return ncclSuccess;
	for (size_t i = 0; i < n; i++) {
		if (ops[i].phase < 0)
			continue;
		warn("timeout after %.0f s in %s (sequence %llu): not every rank arrived",
		     simgpu_timeout_s(), op_names[ops[i].type], (unsigned long long)ops[i].seq);
		set_async_error(ops[i].comm, ncclSystemError);
		break;
	}
	return ncclSystemError;
}

/* One pass over ops: SIMGPU_DONE, SIMGPU_PROGRESS, SIMGPU_WAIT (with the
 * futex word to sleep on), or -1 with the failure in *err. Never blocks. */
int run_pass(struct op *ops, size_t n, struct run_state *st, ncclResult_t *err,
		    _Atomic uint32_t **wake, uint32_t *seen)
{
	bool progress = false;

	*wake = NULL;
	if (!st->begun)
		run_begin(ops, n, st);
	for (size_t i = 0; i < n && st->left; i++) {
		struct op *o = &ops[i];
		enum step s;

		if (o->phase < 0 || blocked_behind(ops, i))
			continue;
		if (!*wake) {
			*wake = &o->comm->shm->wake;
			*seen = atomic_load(*wake);
		}
		s = is_collective(o->type) ? step_collective(o) : step_p2p(o);
		if (s == STEP_ERROR) {
			set_async_error(o->comm, o->result);
			*err = o->result;
			return -1;
		}
		if (s == STEP_WAIT)
			continue;
		progress = true;
		if (s == STEP_DONE) {
			o->phase = -1;
			st->left--;
		}
	}
	if (!st->left)
		return SIMGPU_DONE;
	if (progress) {
		st->last_progress = now_s();
		return SIMGPU_PROGRESS;
	}
	*err = run_checks(ops, n, st);
	return *err == ncclSuccess ? SIMGPU_WAIT : -1;
}

/* Run ops on the calling thread until all are done or one fails; bounded by
 * SIMGPU_TIMEOUT without progress. */
ncclResult_t run_ops(struct op *ops, size_t n)
{
	struct run_state st = { 0 };
	ncclResult_t err = ncclSuccess;

	for (;;) {
		_Atomic uint32_t *wake;
		uint32_t seen = 0;
		int r = run_pass(ops, n, &st, &err, &wake, &seen);

		if (r == SIMGPU_DONE)
			return ncclSuccess;
		if (r < 0)
			return err;
		if (r == SIMGPU_WAIT && wake)
			syscall(SYS_futex, wake, FUTEX_WAIT, seen,
				&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL, 0);
	}
}

/* Validate and either queue (inside a group) or run an op. */
static ncclResult_t submit(struct op o)
{
	struct ncclComm *c = o.comm;
	size_t es, in_bytes, out_bytes;
	ncclResult_t r;

	if (!comm_ok(c)) {
		warn("%s : invalid communicator", op_names[o.type]);
		r = ncclInvalidArgument;
		goto out;
	}
	es = dtype_size(o.dtype);
	if (es == 0) {
		warn("%s : invalid type %d (the simulated NCCL has no fp8)", op_names[o.type],
		     (int)o.dtype);
		r = ncclInvalidArgument;
		goto out;
	}
	if ((int)o.redop < 0 || o.redop >= ncclNumOps) {
		warn("%s : invalid reduction operation %d", op_names[o.type], (int)o.redop);
		r = ncclInvalidArgument;
		goto out;
	}
	if (o.root < 0 || o.root >= c->nranks) {
		warn("%s : invalid root/peer %d (nranks %d)", op_names[o.type], o.root, c->nranks);
		r = ncclInvalidArgument;
		goto out;
	}
	r = get_async_error(c);
	if (r != ncclSuccess) {
		if (r != ncclInProgress)
			warn("%s : communicator has an error (%s)", op_names[o.type],
			     ncclGetErrorString(r));
		goto out;
	}
	in_bytes = out_bytes = o.count * es;
	if (o.type == OP_ALLGATHER)
		out_bytes *= (size_t)c->nranks;
	if (o.type == OP_REDUCESCATTER)
		in_bytes *= (size_t)c->nranks;
	if (o.count && o.type != OP_RECV &&
	    !(o.type == OP_BROADCAST && c->rank != o.root) &&
	    simgpu_range_device(o.send, in_bytes) < 0) {
		warn("%s : sendbuff %p (%zu bytes) is not device memory", op_names[o.type], o.send,
		     in_bytes);
		r = ncclInvalidArgument;
		goto out;
	}
	if (o.count && o.type != OP_SEND && !(o.type == OP_REDUCE && c->rank != o.root) &&
	    simgpu_range_device(o.recv, out_bytes) < 0) {
		warn("%s : recvbuff %p (%zu bytes) is not device memory", op_names[o.type], o.recv,
		     out_bytes);
		r = ncclInvalidArgument;
		goto out;
	}
	if (is_collective(o.type))
		o.seq = ++c->colls;
	if (group_depth > 0) {
		if (group_n == group_cap) {
			size_t cap = group_cap ? group_cap * 2 : 16;
			struct op *p = realloc(group_ops, cap * sizeof(*p));

			if (!p) {
				r = ncclSystemError;
				goto out;
			}
			group_ops = p;
			group_cap = cap;
		}
		group_ops[group_n++] = o;
		return ncclSuccess;
	}
	return launch(&o, 1);
out:
	if (group_depth > 0 && group_error == ncclSuccess)
		group_error = r;
	return r;
}

EXPORT ncclResult_t ncclGroupStart(void)
{
	if (group_depth == 0) {
		group_n = 0;
		group_error = ncclSuccess;
	}
	group_depth++;
	return ncclSuccess;
}

EXPORT ncclResult_t ncclGroupEnd(void)
{
	ncclResult_t r;

	if (group_depth == 0) {
		warn("ncclGroupEnd: not in a group call");
		return ncclInvalidUsage;
	}
	if (--group_depth > 0)
		return ncclSuccess;
	r = group_error;
	if (r == ncclSuccess && group_n)
		r = launch(group_ops, group_n);
	group_n = 0;
	group_error = ncclSuccess;
	return r;
}

EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
				  ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
				  cudaStream_t stream)
{
	return submit((struct op){ .stream = stream, .type = OP_ALLREDUCE, .comm = comm, .send = sendbuff,
				   .recv = recvbuff, .count = count, .dtype = datatype,
				   .redop = op });
}

EXPORT ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
			       ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
			       cudaStream_t stream)
{
	return submit((struct op){ .stream = stream, .type = OP_REDUCE, .comm = comm, .send = sendbuff,
				   .recv = recvbuff, .count = count, .dtype = datatype,
				   .redop = op, .root = root });
}

EXPORT ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
				  ncclDataType_t datatype, int root, ncclComm_t comm,
				  cudaStream_t stream)
{
	return submit((struct op){ .stream = stream, .type = OP_BROADCAST, .comm = comm, .send = sendbuff,
				   .recv = recvbuff, .count = count, .dtype = datatype,
				   .root = root });
}

EXPORT ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
			      ncclComm_t comm, cudaStream_t stream)
{
	return submit((struct op){ .stream = stream, .type = OP_BROADCAST, .comm = comm, .send = buff,
				   .recv = buff, .count = count, .dtype = datatype,
				   .root = root });
}

EXPORT ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
				  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	return submit((struct op){ .stream = stream, .type = OP_ALLGATHER, .comm = comm, .send = sendbuff,
				   .recv = recvbuff, .count = sendcount, .dtype = datatype });
}

EXPORT ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
				      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
				      cudaStream_t stream)
{
	return submit((struct op){ .stream = stream, .type = OP_REDUCESCATTER, .comm = comm, .send = sendbuff,
				   .recv = recvbuff, .count = recvcount, .dtype = datatype,
				   .redop = op });
}

EXPORT ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
			     ncclComm_t comm, cudaStream_t stream)
{
	return submit((struct op){ .stream = stream, .type = OP_SEND, .comm = comm, .send = sendbuff,
				   .count = count, .dtype = datatype, .root = peer });
}

EXPORT ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
			     ncclComm_t comm, cudaStream_t stream)
{
	return submit((struct op){ .stream = stream, .type = OP_RECV, .comm = comm, .recv = recvbuff,
				   .count = count, .dtype = datatype, .root = peer });
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
