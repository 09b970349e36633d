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

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void word_bump(_Atomic uint32_t *w)
{
	atomic_fetch_add(w, 1);
	syscall(SYS_futex, w, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

void word_wait(_Atomic uint32_t *w, uint32_t seen, long ns)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ns };

	syscall(SYS_futex, w, FUTEX_WAIT, seen, &ts, NULL, 0);
}

void bump(struct shm_hdr *h)
{
	word_bump(&h->wake);
}

void wait_change(struct shm_hdr *h, uint32_t seen, long ns)
{
	word_wait(&h->wake, seen, ns);
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

size_t shm_bytes(int nranks)
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

/* ---- operations ---- */

enum step { STEP_DONE, STEP_PROGRESS, STEP_WAIT, STEP_ERROR };

bool is_collective(enum op_type t)
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
