/* SPDX-License-Identifier: MIT */
/* tracer_overhead.c - bench/tracer_overhead: what libranktrace.so adds per call.
 *
 * Run under the tracer (bench/run.sh does: LD_PRELOAD + RANKTRACE_DIR) on the
 * simulated cluster. In one process it alternates two loops over the same
 * calls: through the real functions (looked up with dlsym, bypassing the
 * wrapper: the baseline) and through the interposed symbols (traced). It
 * prints the median over rounds of the added nanoseconds per call, then the
 * bytes per event of the trace it wrote (read back with the viewer's reader).
 * Ratios within one run: these machines are noisy. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"
#include "reader.h"

#define ROUNDS 9

typedef ncclResult_t (*allreduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
				     ncclComm_t, cudaStream_t);

static void *real_sym(const char *lib, const char *name)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
	void *p = h ? dlsym(h, name) : NULL;

	if (!p) {
		fprintf(stderr, "tracer_overhead: cannot find the real %s in %s\n", name, lib);
		exit(1);
	}
	return p;
}

static double get_device(getdev_fn g, long calls)
{
	double t0 = now_ns();
	int d;

	for (long i = 0; i < calls; i++)
		g(&d);
	return (now_ns() - t0) / (double)calls;
}

static double allreduce(allreduce_fn a, void *buf, ncclComm_t comm, long calls)
{
	double t0 = now_ns();

	for (long i = 0; i < calls; i++)
		a(buf, buf, 16, ncclFloat32, ncclSum, comm, NULL);
	return (now_ns() - t0) / (double)calls;
}

struct sizes {
	unsigned long long bytes, events;
};

static int count_bytes(const struct rt_vw_event *e, void *arg)
{
	struct sizes *s = arg;

	s->events++;
	s->bytes += (e->ts == 0 ? 0 : 0) + RT_COMMON_BYTES + rt_events[e->id].size;
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	malloc_fn real_malloc = (malloc_fn)real_sym("libcudart.so.13", "cudaMalloc");
	free_fn real_free = (free_fn)real_sym("libcudart.so.13", "cudaFree");
	getdev_fn real_getdev = (getdev_fn)real_sym("libcudart.so.13", "cudaGetDevice");
	allreduce_fn real_allreduce = (allreduce_fn)real_sym("libnccl.so.2", "ncclAllReduce");
	double base[3][ROUNDS], traced[3][ROUNDS], added[3][ROUNDS];
	const char *names[3] = { "cudaMalloc+cudaFree (per call)", "cudaGetDevice",
				 "ncclAllReduce 16 floats, 1 rank" };
	ncclUniqueId id;
	ncclComm_t comm;
	void *buf;

	if (real_malloc == cudaMalloc) {
		fprintf(stderr, "tracer_overhead: run me under the tracer (bench/run.sh)\n");
		return 1;
	}
	cudaSetDevice(0);
	ncclGetUniqueId(&id);
	if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess || cudaMalloc(&buf, 64) != cudaSuccess)
		return 1;
	for (int r = 0; r < ROUNDS; r++) {
		base[0][r] = alloc_free(real_malloc, real_free, n);
		traced[0][r] = alloc_free(cudaMalloc, cudaFree, n);
		base[1][r] = get_device(real_getdev, 2 * n);
		traced[1][r] = get_device(cudaGetDevice, 2 * n);
		base[2][r] = allreduce(real_allreduce, buf, comm, n / 20);
		traced[2][r] = allreduce(ncclAllReduce, buf, comm, n / 20);
		for (int k = 0; k < 3; k++)
			added[k][r] = traced[k][r] - base[k][r];
	}
	printf("%-34s %12s %12s %12s\n", "call (median of 9 rounds)", "untraced ns", "traced ns",
	       "added ns");
	for (int k = 0; k < 3; k++)
		printf("%-34s %12.1f %12.1f %12.1f\n", names[k], median(base[k], ROUNDS),
		       median(traced[k], ROUNDS), median(added[k], ROUNDS));
	ncclCommDestroy(comm);
	cudaFree(buf);

	/* bytes per event, from the trace this process wrote: every file of every
	 * stream (a thread's stream spans several files), summed */
	{
		const char *dir = getenv("RANKTRACE_DIR");
		char **ranks, **streams, path[8192], err[512];
		int nr = dir ? rt_vw_list_ranks(dir, &ranks) : 0;
		struct sizes s = { 0, 0 };

		for (int i = 0; i < nr; i++) {
			char rd[4200];
			int ns;

			snprintf(rd, sizeof(rd), "%s/%s", dir, ranks[i]);
			ns = rt_vw_list_streams(rd, &streams);
			for (int k = 0; k < ns; k++) {
				struct rt_vw_stream_info info;

				snprintf(path, sizeof(path), "%s/%s", rd, streams[k]);
				rt_vw_read_stream(path, count_bytes, &s, &info, err, sizeof(err));
			}
			rt_vw_free_names(streams, ns > 0 ? ns : 0);
		}
		rt_vw_free_names(ranks, nr > 0 ? nr : 0);
		/* headers: compact (6 B) except after a long pause (14 B) */
		printf("trace: %llu events, %.1f bytes per event on average "
		       "(payload + 6 B header)\n", s.events,
		       (double)(s.bytes + 6 * s.events) / (double)(s.events ? s.events : 1));
		printf("       cudaMalloc %d B, cudaFree %d B, cudaGetDevice %d B, "
		       "ncclAllReduce %d B per event\n",
		       RT_HEADER_COMPACT_BYTES + RT_COMMON_BYTES + RT_SIZE_cudaMalloc,
		       RT_HEADER_COMPACT_BYTES + RT_COMMON_BYTES + RT_SIZE_cudaFree,
		       RT_HEADER_COMPACT_BYTES + RT_COMMON_BYTES + RT_SIZE_cudaGetDevice,
		       RT_HEADER_COMPACT_BYTES + RT_COMMON_BYTES + RT_SIZE_ncclAllReduce);
	}
	return 0;
}
