/* SPDX-License-Identifier: MIT */
/* test_sim_nccl.c - the simulated NCCL moves real data between rank
 * processes: numerics of every collective for 2, 3, 4 and 8 ranks across
 * dtypes and reductions, NCCL's duplicate-device rule, bounded waits for a
 * missing or dead rank, grouped calls, InitAll and Split.
 *
 * Each test forks one process per rank; a rank reports failure through its
 * exit status (messages on stderr), and the test asserts every rank's. */
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef int (*rank_fn)(int rank, int n, ncclComm_t comm, void *arg);

#define CHECK(cond, ...)                                                                \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "rank check failed at %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                                   \
			fprintf(stderr, "\n");                                          \
			return 1;                                                       \
		}                                                                       \
	} while (0)

/* Fork n ranks on devices dev(r) = r (or all on device 0 when same_device);
 * each inits a communicator and runs fn. Exit statuses land in status[]. */
static void run_ranks_ex(int n, rank_fn fn, void *arg, bool same_device, int status[])
{
	ncclUniqueId id;
	pid_t pids[16];

	cr_assert_eq(ncclGetUniqueId(&id), ncclSuccess);
	for (int r = 0; r < n; r++) {
		pids[r] = fork();
		cr_assert_geq(pids[r], 0);
		if (pids[r] == 0) {
			ncclComm_t comm;
			ncclResult_t res;

			cudaSetDevice(same_device ? 0 : r);
			res = ncclCommInitRank(&comm, n, id, r);
			if (res != ncclSuccess) {
				fprintf(stderr, "rank %d init: %s | %s\n", r, ncclGetErrorString(res),
					ncclGetLastError(NULL));
				_exit(100 + (int)res);
			}
			int rc = fn(r, n, comm, arg);

			ncclCommDestroy(comm);
			_exit(rc);
		}
	}
	for (int r = 0; r < n; r++) {
		int st;

		waitpid(pids[r], &st, 0);
		status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
}

static void run_ranks(int n, rank_fn fn, void *arg)
{
	int status[16];

	run_ranks_ex(n, fn, arg, false, status);
	for (int r = 0; r < n; r++)
		cr_assert_eq(status[r], 0, "rank %d of %d exited %d", r, n, status[r]);
}

/* ---- numerics ---- */

static const ncclDataType_t dtypes[] = { ncclInt8, ncclUint8, ncclInt32, ncclUint32,
					 ncclInt64, ncclUint64, ncclFloat16, ncclBfloat16,
					 ncclFloat32, ncclFloat64 };
static const ncclRedOp_t redops[] = { ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg };

static size_t esize(ncclDataType_t t)
{
	switch (t) {
	case ncclInt8: case ncclUint8: return 1;
	case ncclFloat16: case ncclBfloat16: return 2;
	case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
	default: return 8;
	}
}

static bool is_float(ncclDataType_t t)
{
	return t == ncclFloat16 || t == ncclBfloat16 || t == ncclFloat32 || t == ncclFloat64;
}

/* Small integers: exact in every type, and products of up to 8 of them fit
 * fp16's exact range. */
static int value(int rank, size_t i, ncclRedOp_t op)
{
	return op == ncclProd ? 1 + (int)((rank + i) % 2) : 1 + (int)((rank * 7 + i) % 3);
}

static double half_bits_to_double(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);

	return (h & 0x8000) ? -v : v;
}

static void store(void *buf, size_t i, ncclDataType_t t, double v)
{
	switch (t) {
	case ncclInt8: ((int8_t *)buf)[i] = (int8_t)(int64_t)v; break;
	case ncclUint8: ((uint8_t *)buf)[i] = (uint8_t)(int64_t)v; break;
	case ncclInt32: ((int32_t *)buf)[i] = (int32_t)v; break;
	case ncclUint32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
	case ncclInt64: ((int64_t *)buf)[i] = (int64_t)v; break;
	case ncclUint64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
	case ncclFloat16: { /* small integers only: exact */
		int iv = (int)v, e = 0;
		uint16_t h = 0;

		if (iv) {
			while ((iv >> e) > 1)
				e++;
			h = (uint16_t)(((e + 15) << 10) | ((iv << (10 - e)) & 0x3ff));
		}
		((uint16_t *)buf)[i] = h;
		break;
	}
	case ncclBfloat16: {
		float f = (float)v;
		uint32_t x;

		memcpy(&x, &f, 4);
		((uint16_t *)buf)[i] = (uint16_t)(x >> 16);
		break;
	}
	case ncclFloat32: ((float *)buf)[i] = (float)v; break;
	default: ((double *)buf)[i] = v; break;
	}
}

static double load(const void *buf, size_t i, ncclDataType_t t)
{
	switch (t) {
	case ncclInt8: return ((const int8_t *)buf)[i];
	case ncclUint8: return ((const uint8_t *)buf)[i];
	case ncclInt32: return ((const int32_t *)buf)[i];
	case ncclUint32: return ((const uint32_t *)buf)[i];
	case ncclInt64: return (double)((const int64_t *)buf)[i];
	case ncclUint64: return (double)((const uint64_t *)buf)[i];
	case ncclFloat16: return half_bits_to_double(((const uint16_t *)buf)[i]);
	case ncclBfloat16: {
		uint32_t x = (uint32_t)((const uint16_t *)buf)[i] << 16;
		float f;

		memcpy(&f, &x, 4);
		return f;
	}
	case ncclFloat32: return ((const float *)buf)[i];
	default: return ((const double *)buf)[i];
	}
}

/* What reducing element i over n ranks must give (before type rounding). */
static double expected(int n, size_t i, ncclDataType_t t, ncclRedOp_t op)
{
	double acc = value(0, i, op);

	for (int r = 1; r < n; r++) {
		double v = value(r, i, op);

		switch (op) {
		case ncclProd: acc *= v; break;
		case ncclMax: acc = v > acc ? v : acc; break;
		case ncclMin: acc = v < acc ? v : acc; break;
		default: acc += v; break;
		}
	}
	if (op == ncclAvg)
		acc = is_float(t) ? acc / n : (double)((int64_t)acc / n);
	return acc;
}

static bool close_enough(double got, double want, ncclDataType_t t)
{
	double tol = t == ncclFloat16 || t == ncclBfloat16 ? 1e-2 : t == ncclFloat32 ? 1e-6 : 0;

	return fabs(got - want) <= tol * fabs(want) + (is_float(t) ? 1e-12 : 0);
}

struct coll_arg {
	size_t count;
};

static void *dev_buffer(size_t bytes)
{
	void *p = NULL;

	return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
}

/* All-reduce and reduce-scatter over every dtype x op; all-gather, broadcast,
 * reduce over every dtype. */
static int all_collectives(int rank, int n, ncclComm_t comm, void *argp)
{
	size_t count = ((struct coll_arg *)argp)->count;

	for (size_t ti = 0; ti < sizeof(dtypes) / sizeof(dtypes[0]); ti++) {
		ncclDataType_t t = dtypes[ti];
		size_t es = esize(t), total = count * (size_t)n;
		char *h = malloc(total * es), *o = malloc(total * es);
		void *in = dev_buffer(total * es), *out = dev_buffer(total * es);

		CHECK(h && o && in && out, "allocation");
		for (size_t oi = 0; oi < sizeof(redops) / sizeof(redops[0]); oi++) {
			ncclRedOp_t op = redops[oi];

			for (size_t i = 0; i < total; i++)
				store(h, i, t, value(rank, i, op));
			cudaMemcpy(in, h, total * es, cudaMemcpyHostToDevice);
			CHECK(ncclAllReduce(in, out, count, t, op, comm, NULL) == ncclSuccess,
			      "allreduce t=%d op=%d", t, op);
			cudaMemcpy(o, out, count * es, cudaMemcpyDeviceToHost);
			for (size_t i = 0; i < count; i++)
				CHECK(close_enough(load(o, i, t), expected(n, i, t, op), t),
				      "allreduce n=%d t=%d op=%d i=%zu got %g want %g", n, t, op, i,
				      load(o, i, t), expected(n, i, t, op));
			CHECK(ncclReduceScatter(in, out, count, t, op, comm, NULL) == ncclSuccess,
			      "reducescatter");
			cudaMemcpy(o, out, count * es, cudaMemcpyDeviceToHost);
			for (size_t i = 0; i < count; i++) {
				size_t gi = (size_t)rank * count + i;

				CHECK(close_enough(load(o, i, t), expected(n, gi, t, op), t),
				      "reducescatter n=%d t=%d op=%d i=%zu got %g want %g", n, t, op,
				      i, load(o, i, t), expected(n, gi, t, op));
			}
		}
		/* all-gather: rank r contributes value(r, i) */
		for (size_t i = 0; i < count; i++)
			store(h, i, t, value(rank, i, ncclSum));
		cudaMemcpy(in, h, count * es, cudaMemcpyHostToDevice);
		CHECK(ncclAllGather(in, out, count, t, comm, NULL) == ncclSuccess, "allgather");
		cudaMemcpy(o, out, total * es, cudaMemcpyDeviceToHost);
		for (int r = 0; r < n; r++)
			for (size_t i = 0; i < count; i++)
				CHECK(load(o, (size_t)r * count + i, t) == value(r, i, ncclSum),
				      "allgather n=%d t=%d r=%d i=%zu", n, t, r, i);
		/* broadcast from the last rank, in place (ncclBcast) */
		CHECK(ncclBcast(in, count, t, n - 1, comm, NULL) == ncclSuccess, "bcast");
		cudaMemcpy(o, in, count * es, cudaMemcpyDeviceToHost);
		for (size_t i = 0; i < count; i++)
			CHECK(load(o, i, t) == value(n - 1, i, ncclSum), "bcast n=%d t=%d", n, t);
		/* reduce (max) to rank 1 */
		for (size_t i = 0; i < count; i++)
			store(h, i, t, value(rank, i, ncclMax));
		cudaMemcpy(in, h, count * es, cudaMemcpyHostToDevice);
		CHECK(ncclReduce(in, out, count, t, ncclMax, 1, comm, NULL) == ncclSuccess, "reduce");
		if (rank == 1) {
			cudaMemcpy(o, out, count * es, cudaMemcpyDeviceToHost);
			for (size_t i = 0; i < count; i++)
				CHECK(load(o, i, t) == expected(n, i, t, ncclMax), "reduce n=%d t=%d", n, t);
		}
		cudaFree(in);
		cudaFree(out);
		free(h);
		free(o);
	}
	return 0;
}

Test(sim_nccl, collectives_are_exact_for_2_ranks) { run_ranks(2, all_collectives, &(struct coll_arg){ 257 }); }
Test(sim_nccl, collectives_are_exact_for_3_ranks) { run_ranks(3, all_collectives, &(struct coll_arg){ 100 }); }
Test(sim_nccl, collectives_are_exact_for_4_ranks) { run_ranks(4, all_collectives, &(struct coll_arg){ 64 }); }
Test(sim_nccl, collectives_are_exact_for_8_ranks) { run_ranks(8, all_collectives, &(struct coll_arg){ 33 }); }

/* Larger than one staging round (4 MiB per rank): chunking must be exact. */
static int big_allreduce(int rank, int n, ncclComm_t comm, void *arg)
{
	size_t count = (5u << 20) / 4 + 3; /* 5 MiB of fp32, not a round number */
	float *h = malloc(count * 4);
	void *d = dev_buffer(count * 4), *g = dev_buffer(count * 4 * (size_t)n);

	CHECK(h && d && g, "allocation");
	for (size_t i = 0; i < count; i++)
		h[i] = (float)((i + (size_t)rank) % 1000);
	cudaMemcpy(d, h, count * 4, cudaMemcpyHostToDevice);
	CHECK(ncclAllGather(d, g, count, ncclFloat32, comm, NULL) == ncclSuccess, "allgather");
	CHECK(ncclAllReduce(d, d, count, ncclFloat32, ncclSum, comm, NULL) == ncclSuccess, "in place");
	cudaMemcpy(h, d, count * 4, cudaMemcpyDeviceToHost);
	for (size_t i = 0; i < count; i += 997) {
		float want = 0;

		for (int r = 0; r < n; r++)
			want += (float)((i + (size_t)r) % 1000);
		CHECK(h[i] == want, "i=%zu got %f want %f", i, h[i], want);
	}
	cudaMemcpy(h, (char *)g + (size_t)(n - 1) * count * 4 + 4 * (count - 1), 4,
		   cudaMemcpyDeviceToHost);
	CHECK(h[0] == (float)((count - 1 + (size_t)n - 1) % 1000), "allgather tail");
	return 0;
}

Test(sim_nccl, large_collectives_span_several_rounds) { run_ranks(3, big_allreduce, NULL); }

/* Send/recv ring inside a group, more than one mailbox round. */
static int ring(int rank, int n, ncclComm_t comm, void *arg)
{
	size_t count = 100000; /* 800 kB of int64: several 256 kB rounds */
	int64_t *h = malloc(count * 8);
	void *s = dev_buffer(count * 8), *r = dev_buffer(count * 8);

	for (size_t i = 0; i < count; i++)
		h[i] = (int64_t)i * 31 + rank;
	cudaMemcpy(s, h, count * 8, cudaMemcpyHostToDevice);
	CHECK(ncclGroupStart() == ncclSuccess, "group start");
	ncclSend(s, count, ncclInt64, (rank + 1) % n, comm, NULL);
	ncclRecv(r, count, ncclInt64, (rank + n - 1) % n, comm, NULL);
	CHECK(ncclGroupEnd() == ncclSuccess, "group end: %s", ncclGetLastError(comm));
	cudaMemcpy(h, r, count * 8, cudaMemcpyDeviceToHost);
	for (size_t i = 0; i < count; i++)
		CHECK(h[i] == (int64_t)i * 31 + (rank + n - 1) % n, "ring i=%zu", i);
	return 0;
}

Test(sim_nccl, send_recv_ring_in_a_group) { run_ranks(4, ring, NULL); }

/* ---- NCCL's rules and failure modes ---- */

static int nothing(int rank, int n, ncclComm_t comm, void *arg) { return 0; }

Test(sim_nccl, duplicate_device_is_invalid_usage)
{
	int status[2];

	run_ranks_ex(2, nothing, NULL, true, status);
	for (int r = 0; r < 2; r++)
		cr_assert_eq(status[r], 100 + ncclInvalidUsage, "rank %d exit %d", r, status[r]);
}

Test(sim_nccl, duplicate_device_message_names_both_ranks)
{
	ncclUniqueId id;
	int fds[2];
	pid_t pid;
	char buf[4096] = "";
	ncclComm_t c;

	cr_assert_eq(ncclGetUniqueId(&id), ncclSuccess);
	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	if (pid == 0) {
		cudaSetDevice(3);
		_exit(ncclCommInitRank(&c, 2, id, 1));
	}
	cudaSetDevice(3);
	cr_assert_eq(ncclCommInitRank(&c, 2, id, 0), ncclInvalidUsage);
	snprintf(buf, sizeof(buf), "%s", ncclGetLastError(NULL));
	cr_assert(strstr(buf, "Duplicate GPU detected : rank 0 and rank 1 both on CUDA device") != NULL,
		  "message: %s", buf);
	waitpid(pid, NULL, 0);
	close(fds[0]);
	close(fds[1]);
}

Test(sim_nccl, missing_rank_times_out_with_system_error)
{
	ncclUniqueId id;
	ncclComm_t c;
	time_t t0 = time(NULL);

	setenv("SIMGPU_TIMEOUT", "2", 1);
	cr_assert_eq(ncclGetUniqueId(&id), ncclSuccess);
	cr_assert_eq(ncclCommInitRank(&c, 2, id, 0), ncclSystemError);
	cr_assert(strstr(ncclGetLastError(NULL), "rank(s) 1 never joined") != NULL, "%s",
		  ncclGetLastError(NULL));
	cr_assert_leq(time(NULL) - t0, 10);
}

static int rank1_skips_allreduce(int rank, int n, ncclComm_t comm, void *arg)
{
	void *d = dev_buffer(64);
	ncclResult_t r;

	if (rank == 1) {
		sleep(4); /* alive, but never calls the collective */
		return 0;
	}
	/* asynchronous, as NCCL: the call enqueues; the device times out */
	r = ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, comm, NULL);
	CHECK(r == ncclSuccess, "got %d", r);
	CHECK(cudaStreamQuery(NULL) == cudaErrorNotReady, "stream idle before the timeout");
	CHECK(cudaStreamSynchronize(NULL) == cudaSuccess, "sync");
	CHECK(strstr(ncclGetLastError(comm), "timeout") != NULL, "%s", ncclGetLastError(comm));
	ncclResult_t async;

	ncclCommGetAsyncError(comm, &async);
	CHECK(async == ncclSystemError, "async error %d", async);
	r = ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, comm, NULL);
	CHECK(r == ncclSystemError, "a failed communicator refuses new work: got %d", r);
	return 0;
}

Test(sim_nccl, collective_waits_are_bounded)
{
	setenv("SIMGPU_TIMEOUT", "2", 1);
	run_ranks(2, rank1_skips_allreduce, NULL);
}

static int rank1_dies(int rank, int n, ncclComm_t comm, void *arg)
{
	void *d = dev_buffer(64);
	ncclResult_t r;

	if (rank == 1)
		_exit(0);
	r = ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, comm, NULL);
	CHECK(r == ncclSuccess, "enqueued: got %d", r);
	CHECK(cudaStreamSynchronize(NULL) == cudaSuccess, "sync");
	ncclCommGetAsyncError(comm, &r);
	CHECK(r == ncclRemoteError, "async error %d", r);
	return 0;
}

Test(sim_nccl, dead_peer_gives_remote_error)
{
	setenv("SIMGPU_TIMEOUT", "30", 1);
	run_ranks(2, rank1_dies, NULL);
}

static int mismatched(int rank, int n, ncclComm_t comm, void *arg)
{
	void *d = dev_buffer(4096);
	ncclResult_t r = rank == 0 ? ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, comm, NULL)
				   : ncclBroadcast(d, d, 16, ncclFloat32, 0, comm, NULL);

	CHECK(r == ncclSuccess, "enqueued: got %d", r);
	CHECK(cudaStreamSynchronize(NULL) == cudaSuccess, "sync");
	ncclCommGetAsyncError(comm, &r);
	CHECK(r == ncclInvalidUsage, "async error %d", r);
	CHECK(strstr(ncclGetLastError(comm), "mismatch at sequence 1") != NULL, "%s",
	      ncclGetLastError(comm));
	return 0;
}

Test(sim_nccl, mismatched_collectives_are_reported) { run_ranks(2, mismatched, NULL); }

static int host_buffer(int rank, int n, ncclComm_t comm, void *arg)
{
	float h[4] = { 0 };

	CHECK(ncclAllReduce(h, h, 4, ncclFloat32, ncclSum, comm, NULL) == ncclInvalidArgument,
	      "host buffer accepted");
	return 0;
}

Test(sim_nccl, host_buffers_are_invalid_arguments) { run_ranks(2, host_buffer, NULL); }

Test(sim_nccl, init_all_and_grouped_collectives_from_one_thread)
{
	ncclComm_t comms[4];
	void *buf[4];
	float h[8];

	cr_assert_eq(ncclCommInitAll(comms, 4, NULL), ncclSuccess);
	for (int i = 0; i < 4; i++) {
		int dev, rank, count;

		cr_assert_eq(ncclCommCuDevice(comms[i], &dev), ncclSuccess);
		cr_assert_eq(ncclCommUserRank(comms[i], &rank), ncclSuccess);
		cr_assert_eq(ncclCommCount(comms[i], &count), ncclSuccess);
		cr_assert(dev == i && rank == i && count == 4);
		cudaSetDevice(i);
		cudaMalloc(&buf[i], sizeof(h));
		for (int k = 0; k < 8; k++)
			h[k] = (float)(i + k);
		cudaMemcpy(buf[i], h, sizeof(h), cudaMemcpyHostToDevice);
	}
	ncclGroupStart();
	for (int i = 0; i < 4; i++)
		cr_assert_eq(ncclAllReduce(buf[i], buf[i], 8, ncclFloat32, ncclSum, comms[i], NULL),
			     ncclSuccess);
	cr_assert_eq(ncclGroupEnd(), ncclSuccess);
	for (int i = 0; i < 4; i++) {
		cudaMemcpy(h, buf[i], sizeof(h), cudaMemcpyDeviceToHost);
		for (int k = 0; k < 8; k++)
			cr_assert_eq(h[k], (float)(6 + 4 * k));
		ncclCommDestroy(comms[i]);
	}
}

static int split_even_odd(int rank, int n, ncclComm_t comm, void *arg)
{
	ncclComm_t sub;
	int sub_rank, sub_n;
	int32_t v = rank, *d = dev_buffer(4);

	CHECK(ncclCommSplit(comm, rank % 2, rank, &sub, NULL) == ncclSuccess, "split");
	ncclCommUserRank(sub, &sub_rank);
	ncclCommCount(sub, &sub_n);
	CHECK(sub_rank == rank / 2 && sub_n == n / 2, "sub rank %d of %d", sub_rank, sub_n);
	cudaMemcpy(d, &v, 4, cudaMemcpyHostToDevice);
	CHECK(ncclAllReduce(d, d, 1, ncclInt32, ncclSum, sub, NULL) == ncclSuccess, "allreduce");
	cudaMemcpy(&v, d, 4, cudaMemcpyDeviceToHost);
	CHECK(v == (rank % 2 ? 1 + 3 : 0 + 2), "sum %d", v);
	ncclCommDestroy(sub);
	return 0;
}

Test(sim_nccl, split_by_color_makes_independent_communicators) { run_ranks(4, split_even_odd, NULL); }

Test(sim_nccl, unimplemented_entry_point_fails_loudly)
{
	ncclComm_t comm = NULL;
	void *handle;

	cr_assert_eq(ncclCommRegister(comm, NULL, 0, &handle), ncclInvalidUsage);
}

Test(sim_nccl, error_strings_are_nvidias)
{
	int v;

	cr_assert_str_eq(ncclGetErrorString(ncclSystemError),
			 "unhandled system error (run with NCCL_DEBUG=INFO for details)");
	cr_assert_eq(ncclGetVersion(&v), ncclSuccess);
	cr_assert_eq(v, NCCL_VERSION_CODE);
}
