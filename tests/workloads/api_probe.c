/* SPDX-License-Identifier: MIT */
/* api_probe.c - bin/api_probe: call every function ranktrace interposes, with
 * valid and invalid arguments, and print each result, errno and the data it
 * produced, one line per call. Tests run it with and without the tracer (on
 * the simulated cluster and on NVIDIA's libraries) and require identical
 * output: the tracer must not change any result. Addresses are printed as
 * "set"/"null" since they differ between runs. */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int line;

static void show(const char *what, int ret, const char *extra)
{
	printf("%3d %-44s ret=%-4d errno=%-3d %s\n", ++line, what, ret, errno, extra ? extra : "");
	errno = 0;
}

/* the call first, then what it produced */
#define CU(expr, extra)                                                                \
	do {                                                                           \
		int r_ = (int)(expr);                                                  \
		show(#expr, r_, extra);                                                \
	} while (0)
#define NC CU

static const char *ptr_state(const void *p)
{
	return p ? "ptr=set" : "ptr=null";
}

static unsigned sum(const unsigned char *p, size_t n)
{
	unsigned s = 0;

	for (size_t i = 0; i < n; i++)
		s = s * 31 + p[i];
	return s;
}

/* NCCL: the calls after the CUDA ones; host is main's host buffer (an
 * invalid device pointer for NCCL). */
static void probe_nccl(unsigned char *host)
{
	void *d = NULL;
	char extra[128];
	ncclComm_t comm = NULL, comms[2] = { NULL, NULL }, split = NULL;
	ncclUniqueId id;
	ncclResult_t async = ncclSuccess;
	float buf[4] = { 1, 2, 3, 4 };

	/* NCCL: one-rank communicator, collectives on it, and invalid uses */
	NC(ncclGetUniqueId(&id), NULL);
	CU(cudaSetDevice(0), NULL);
	NC(ncclCommInitRank(&comm, 1, id, 0), ptr_state(comm));
	NC(ncclCommInitRank(NULL, 1, id, 5), NULL);
	CU(cudaMalloc(&d, 64), NULL);
	CU(cudaMemcpy(d, buf, sizeof(buf), cudaMemcpyHostToDevice), NULL);
	NC(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, comm, NULL), NULL);
	NC(ncclAllGather(d, d, 4, ncclFloat32, comm, NULL), NULL);
	NC(ncclReduceScatter(d, d, 4, ncclFloat32, ncclSum, comm, NULL), NULL);
	NC(ncclBroadcast(d, d, 4, ncclFloat32, 0, comm, NULL), NULL);
	NC(ncclBcast(d, 4, ncclFloat32, 0, comm, NULL), NULL);
	NC(ncclReduce(d, d, 4, ncclFloat32, ncclMax, 0, comm, NULL), NULL);
	NC(ncclBroadcast(d, d, 4, ncclFloat32, 3, comm, NULL), NULL);
	NC(ncclAllReduce(host, host, 4, ncclFloat32, ncclSum, comm, NULL), NULL);
	NC(ncclGroupStart(), NULL);
	NC(ncclSend(d, 4, ncclFloat32, 0, comm, NULL), NULL);
	NC(ncclRecv((char *)d + 16, 4, ncclFloat32, 0, comm, NULL), NULL);
	NC(ncclGroupEnd(), NULL);
	NC(ncclGroupEnd(), NULL);
	CU(cudaMemcpy(buf, d, sizeof(buf), cudaMemcpyDeviceToHost),
	   (snprintf(extra, sizeof(extra), "buf=%g,%g,%g,%g", buf[0], buf[1], buf[2], buf[3]), extra));
	NC(ncclCommGetAsyncError(comm, &async), (snprintf(extra, sizeof(extra), "async=%d", async), extra));
	NC(ncclCommSplit(comm, 0, 0, &split, NULL), ptr_state(split));
	NC(ncclCommDestroy(split), NULL);
	NC(ncclCommDestroy(comm), NULL);
	NC(ncclCommInitAll(comms, 2, NULL), ptr_state(comms[1]));
	NC(ncclCommAbort(comms[0]), NULL);
	NC(ncclCommDestroy(comms[1]), NULL);
	{
		ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;

		NC(ncclGetUniqueId(&id), NULL);
		NC(ncclCommInitRankConfig(&comm, 1, id, 0, &cfg), ptr_state(comm));
		NC(ncclCommDestroy(comm), NULL);
	}
	CU(cudaFree(d), NULL);
}

int main(void)
{
	void *d = NULL, *d2 = NULL, *h = NULL, *m = NULL, *pool_ptr = NULL;
	size_t pitch = 0, freeb = 0, total = 0;
	unsigned char host[4096], back[4096] = { 0 };
	char extra[128];
	cudaStream_t s = NULL, s2 = NULL, s3 = NULL;
	cudaMemPool_t pool = NULL;
	int dev = -1, bad = 0;

	for (size_t i = 0; i < sizeof(host); i++)
		host[i] = (unsigned char)(i * 7);
	errno = 0;
	CU(cudaSetDevice(1), NULL);
	CU(cudaSetDevice(999), NULL);
	CU(cudaGetDevice(&dev), (snprintf(extra, sizeof(extra), "dev=%d", dev), extra));
	CU(cudaMalloc(&d, sizeof(host)), ptr_state(d));
	CU(cudaMalloc(&d2, (size_t)1 << 62), ptr_state(d2));
	CU(cudaMallocAsync(&d2, 1024, NULL), ptr_state(d2));
	CU(cudaFreeAsync(d2, NULL), NULL);
	CU(cudaDeviceGetDefaultMemPool(&pool, 1), NULL);
	CU(cudaMallocFromPoolAsync(&pool_ptr, 512, pool, NULL), ptr_state(pool_ptr));
	CU(cudaFree(pool_ptr), NULL);
	CU(cudaMallocHost(&h, 4096), ptr_state(h));
	CU(cudaFreeHost(h), NULL);
	CU(cudaHostAlloc(&h, 4096, cudaHostAllocDefault), ptr_state(h));
	CU(cudaFreeHost(&bad), NULL);
	CU(cudaMallocManaged(&m, 4096, cudaMemAttachGlobal), ptr_state(m));
	CU(cudaFree(m), NULL);
	CU(cudaMallocPitch(&d2, &pitch, 100, 10),
	   (snprintf(extra, sizeof(extra), "pitch=%zu", pitch), extra));
	CU(cudaFree(d2), NULL);
	CU(cudaMemcpy(d, host, sizeof(host), cudaMemcpyHostToDevice), NULL);
	CU(cudaMemcpy(back, d, sizeof(back), cudaMemcpyDeviceToHost),
	   (snprintf(extra, sizeof(extra), "sum=%u", sum(back, sizeof(back))), extra));
	CU(cudaMemcpy(back, host, 16, cudaMemcpyHostToDevice), NULL);
	CU(cudaMemcpyAsync(back, d, 64, cudaMemcpyDefault, NULL), NULL);
	CU(cudaMemcpyPeer(d, 1, d, 1, 64), NULL);
	CU(cudaMemcpyPeer(d, 0, d, 1, 64), NULL);
	CU(cudaMemcpyPeerAsync(d, 1, d, 1, 64, NULL), NULL);
	CU(cudaMemset(d, 0x5a, 128), NULL);
	CU(cudaMemsetAsync(d, 0x5a, 128, NULL), NULL);
	CU(cudaMemset(host, 0, 16), NULL);
	CU(cudaMemcpy(back, d, 256, cudaMemcpyDeviceToHost),
	   (snprintf(extra, sizeof(extra), "sum=%u", sum(back, 256)), extra));
	CU(cudaStreamCreate(&s), ptr_state(s));
	CU(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), ptr_state(s2));
	CU(cudaStreamCreateWithPriority(&s3, cudaStreamNonBlocking, -1), ptr_state(s3));
	CU(cudaStreamDestroy(s), NULL);
	CU(cudaStreamDestroy(s2), NULL);
	CU(cudaStreamDestroy(s3), NULL);
	CU(cudaMemGetInfo(&freeb, &total), (snprintf(extra, sizeof(extra), "total=%zu", total), extra));
	CU(cudaFree(d), NULL);
	CU(cudaFree(d), NULL);
	CU(cudaFree(&bad), NULL);
	CU(cudaGetLastError(), NULL);
	CU(cudaDeviceReset(), NULL);

	probe_nccl(host);
	return 0;
}
