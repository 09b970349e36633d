/* SPDX-License-Identifier: MIT */
/* nccl_coll.c - simulated NCCL entry points for operations: argument checks,
 * groups (ncclGroupStart/End, per thread) and the collective and
 * point-to-point calls. Split out of nccl.c. */
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

static __thread int group_depth;
static __thread struct op *group_ops;
static __thread size_t group_n, group_cap;
static __thread ncclResult_t group_error;


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
