/* SPDX-License-Identifier: MIT */
/* nccl_group.c - ncclGroupStart/End of the simulated NCCL: per thread, the
 * operations (nccl_coll.c) and communicator jobs (nccl_jobs.c) a group
 * gathers, and its outermost end, which runs the jobs (inits, splits,
 * shrinks), then launches the operations together on the device
 * (nccl_device.c), as NCCL's group end does. A call inside the group that
 * failed is reported again by ncclGroupEnd. */
#include <nccl.h>
#include <stdlib.h>

#include "nccl_int.h"

static __thread int depth;
static __thread struct op *ops;
static __thread size_t nops, cap;
static __thread struct comm_job *jobs, **jobs_tail;
static __thread ncclResult_t error;

bool group_open(void)
{
	return depth > 0;
}

void group_note_error(ncclResult_t r)
{
	if (depth > 0 && error == ncclSuccess)
		error = r;
}

ncclResult_t group_add_op(const struct op *o)
{
	if (nops == cap) {
		size_t c = cap ? cap * 2 : 16;
		struct op *p = realloc(ops, c * sizeof(*p));

		if (!p)
			return ncclSystemError;
		ops = p;
		cap = c;
	}
	ops[nops++] = *o;
	return ncclSuccess;
}

void group_add_job(struct comm_job *j)
{
	if (!jobs)
		jobs_tail = &jobs;
	*jobs_tail = j;
	jobs_tail = &j->next;
}

EXPORT ncclResult_t ncclGroupStart(void)
{
	if (depth == 0) {
		nops = 0;
		jobs = NULL;
		error = ncclSuccess;
	}
	depth++;
	return ncclSuccess;
}

EXPORT ncclResult_t ncclGroupEnd(void)
{
	struct comm_job *list = jobs;
	ncclResult_t r, rj = ncclSuccess;

	if (depth == 0) {
		warn("ncclGroupEnd: not in a group call");
		return ncclInvalidUsage;
	}
	if (--depth > 0)
		return ncclSuccess;
	r = error;
	jobs = NULL;
	if (list)
		rj = jobs_run(list);
	if (r == ncclSuccess && nops && (r = forked_child("ncclGroupEnd") ? ncclUnhandledCudaError
									 : ncclSuccess) == ncclSuccess)
		r = launch(ops, nops);
	nops = 0;
	error = ncclSuccess;
	return r != ncclSuccess ? r : rj;
}
