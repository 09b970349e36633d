/* SPDX-License-Identifier: MIT */
/* dir_rig.h - for unit tests that write trace directories in $TMPDIR and
 * read them back as `ranktrace` does (test_load.c, test_load_views.c).
 *
 * Each rank directory holds the CTF metadata the tracer writes
 * (rt_schema_tsdl) and one stream file of one packet per thread, encoded
 * with the format's encoder; a live rank is one whose stream file is locked
 * (an open file description's lock, as the tracer holds it). Events are on
 * this boot's monotonic clock, ten seconds back. tw_teardown removes it all. */
#ifndef RT_TEST_DIR_RIG_H
#define RT_TEST_DIR_RIG_H
#include <fcntl.h>
#include <ftw.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "encode_args.h"
#include "export.h"
#include "model.h"

#define MAXR 4
#define BUF (1 << 16)

struct tw {
	char dir[256];
	int nranks;
	uint8_t *buf[MAXR];
	size_t off[MAXR];
	uint64_t first[MAXR], last[MAXR];
	uint64_t now;
	int lock_fd;
	int world; /* the metadata's world size, 0: the number of ranks */
};

static struct tw w;

static inline void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	cr_assert_not_null(f, "%s", path);
	cr_assert_eq(fwrite(p, 1, n, f), n);
	fclose(f);
}

/* n ranks, each with its metadata and an empty stream. */
static inline void tw_init(int n)
{
	const char *tmp = getenv("TMPDIR");

	struct timespec ts;
	char boot[40] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	if (f) {
		if (!fgets(boot, sizeof(boot), f))
			boot[0] = '\0';
		boot[strcspn(boot, "\n")] = '\0';
		fclose(f);
	}
	int world = w.world;

	memset(&w, 0, sizeof(w));
	w.world = world;
	w.lock_fd = -1;
	w.nranks = n;
	/* on this boot's monotonic clock, 10 s ago: a live rank's ages are real */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	w.now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec - 10000000000ull;
	snprintf(w.dir, sizeof(w.dir), "%s/rt-load-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	cr_assert_not_null(mkdtemp(w.dir));
	for (int i = 0; i < n; i++) {
		static char meta[1 << 17];
		struct rt_trace_env env = { .hostname = "node", .pid = 100 + i, .rank = i, .local_rank = i,
					    .world_size = w.world ? w.world : n, .rank_source = "env:RANK",
					    .packet_bytes = BUF };

		snprintf(env.clock_uuid, sizeof(env.clock_uuid), "%s", boot);
		char path[400];
		long len = rt_schema_tsdl(meta, sizeof(meta), &env);

		cr_assert_gt(len, 0);
		snprintf(path, sizeof(path), "%s/rank-%05d", w.dir, i);
		cr_assert_eq(mkdir(path, 0700), 0);
		snprintf(path, sizeof(path), "%s/rank-%05d/metadata", w.dir, i);
		write_file(path, meta, (size_t)len);
		w.buf[i] = calloc(1, BUF);
		w.off[i] = RT_PACKET_HEADER_BYTES;
	}
}

/* An event of rank ri: id, device, result (pending: never returned), then
 * (enum rt_fname, value) pairs ending with -1. 1 us after the last one. */
static inline void tw_ev(int ri, unsigned id, int dev, int ret, bool pending, ...)
{
	uint8_t *p = w.buf[ri] + w.off[ri], *fields;
	va_list ap;

	w.now += 1000;
	cr_assert_lt(w.off[ri] + 600, (size_t)BUF);
	fields = rt_fmt_event_common(rt_fmt_event_header(p, id, w.now, w.last[ri] ? w.last[ri] : w.now),
				     pending ? RT_DUR_PENDING : 100, (int16_t)ret, dev);
	va_start(ap, pending);
	encode_args(fields, id, ap);
	va_end(ap);
	w.off[ri] += (size_t)(fields - p) + rt_events[id].size;
	if (!w.first[ri])
		w.first[ri] = w.now;
	w.last[ri] = w.now;
}

#define OK(ri, id, dev, ...) tw_ev(ri, RT_ID_##id, dev, 0, false, __VA_ARGS__, -1)
#define U(x) ((uint64_t)(x))

/* Each rank's stream file: stream-PID-TID, one packet. */
static inline void tw_write(void)
{
	for (int i = 0; i < w.nranks; i++) {
		struct rt_fmt_packet h = { NULL, w.first[i], w.last[i], w.off[i], BUF, 0,
					   (uint32_t)(100 + i), (uint32_t)(100 + i) };
		char path[400];

		rt_fmt_packet_put(w.buf[i], &h);
		snprintf(path, sizeof(path), "%s/rank-%05d/stream-%d-%d", w.dir, i, 100 + i, 100 + i);
		write_file(path, w.buf[i], BUF);
	}
}

static inline int rm_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st, (void)type, (void)f;
	return remove(path);
}

static inline void tw_teardown(void)
{
	if (w.lock_fd >= 0)
		close(w.lock_fd);
	if (w.dir[0])
		nftw(w.dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	for (int i = 0; i < MAXR; i++)
		free(w.buf[i]);
	memset(&w, 0, sizeof(w));
}


static inline struct rt_vw_trace *load(unsigned flags)
{
	char err[600] = "";
	struct rt_vw_trace *t = rt_vw_load(w.dir, flags, err, sizeof(err));

	cr_assert_not_null(t, "%s", err);
	return t;
}

/* Everything the output f wrote into a string (freed by the caller). */
static inline char *output(int (*f)(const struct rt_vw_trace *, FILE *), const struct rt_vw_trace *t)
{
	char *s = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&s, &n);

	cr_assert_not_null(m);
	cr_assert_eq(f(t, m), 0);
	fclose(m);
	return s;
}

/* A rank's ordinary life: device, memory, a communicator, an all-reduce of
 * count elements, a parameter, its exit. */
static inline void rank_life(int ri, uint64_t count, int status)
{
	OK(ri, cudaSetDevice, ri, RT_FN_device, U(ri));
	OK(ri, cudaMalloc, ri, RT_FN_ptr, U(0x7f0000000000) + U(ri) * 0x100000, RT_FN_size, U(1 << 20));
	OK(ri, ncclCommInitRank, ri, RT_FN_comm_id, U(0xc0), RT_FN_nranks, U(w.nranks), RT_FN_rank, U(ri));
	OK(ri, rt_param_shape, -1, RT_FN_name, "embed.weight", RT_FN_ndim, U(2), RT_FN_dim0, U(64),
	   RT_FN_dim1, U(32));
	OK(ri, rt_param, -1, RT_FN_name, "embed.weight", RT_FN_devtype, U(0), RT_FN_device, U(ri),
	   RT_FN_dtype, U(0), RT_FN_numel, U(2048), RT_FN_bytes, U(8192),
	   RT_FN_ptr, U(0x7f0000000000) + U(ri) * 0x100000);
	OK(ri, rt_fsdp_forward, -1, RT_FN_phase, U(0), RT_FN_units, U(3));
	OK(ri, ncclAllReduce, ri, RT_FN_comm_id, U(0xc0), RT_FN_seq, U(1), RT_FN_count, count,
	   RT_FN_datatype, U(7), RT_FN_op, U(0));
	OK(ri, cudaMemcpy, ri, RT_FN_dst, U(0x7f0000000000) + U(ri) * 0x100000, RT_FN_src, U(0x1000),
	   RT_FN_count, U(4096), RT_FN_kind, U(1));
	OK(ri, cudaFree, ri, RT_FN_ptr, U(0x7f0000000000) + U(ri) * 0x100000);
	OK(ri, rt_exit, -1, RT_FN_status, U(status));
}
#endif
