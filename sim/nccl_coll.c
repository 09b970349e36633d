/* SPDX-License-Identifier: MIT */
/* nccl_coll.c - simulated NCCL entry points for operations: argument checks
 * and the collective and point-to-point calls; inside a group they wait for
 * its end (nccl_group.c). Split out of nccl.c. */
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

/* The communicator can take an operation now (NCCL's EnsureReady). */
static ncclResult_t comm_ready(struct ncclComm *c, const char *what)
{
	ncclResult_t r;

	if (!comm_ok(c)) {
		warn("%s : invalid communicator", what);
		return ncclInvalidArgument;
	}
	if (atomic_load(&c->revoked)) {
		warn("%s: communicator was revoked", what);
		return ncclInvalidUsage;
	}
	r = get_async_error(c);
	if (r == ncclInProgress) {
		warn("Attempt to use communicator before the previous operation returned ncclSuccess");
		return ncclInvalidArgument;
	}
	if (r != ncclSuccess)
		warn("%s : communicator has an error (%s)", what, ncclGetErrorString(r));
	return r;
}

/* Validate and either queue (inside a group) or run an op. */
static ncclResult_t submit(struct op o)
{
	struct ncclComm *c = o.comm;
	size_t es, in_bytes, out_bytes;
	ncclResult_t r;

	r = comm_ready(c, op_names[o.type]);
	if (r != ncclSuccess)
		goto out;
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
	if (forked_child(op_names[o.type])) {
		r = ncclUnhandledCudaError;
		goto out;
	}
	if (is_collective(o.type))
		o.seq = ++c->colls;
	if (group_open()) {
		r = group_add_op(&o);
		if (r != ncclSuccess)
			goto out;
		return ncclSuccess;
	}
	return launch(&o, 1);
out:
	group_note_error(r);
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
