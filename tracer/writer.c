/* SPDX-License-Identifier: MIT */
/* writer.c - the slow paths of trace writing: rank directory, metadata,
 * stream files, packet switches, the size cap, clock calibration.
 *
 * Called from tracer.h's inline hot path only when a thread has no stream
 * yet, when a packet is full, or when the clock is not the TSC. May
 * allocate and take the process lock. Never fails outward: any error turns
 * tracing off (rt_tr_off) with one warning, and the calling thread gets a
 * scratch stream so the call in progress completes untouched.
 *
 * Crash safety: packets are MAP_SHARED mappings of the stream file and the
 * packet context's content_size is updated after every event, so whatever
 * a killed process completed is in the page cache and readable. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rank.h"
#include "tracer.h"

#define PACKET_BYTES ((uint64_t)256 << 10)

static pthread_mutex_t process_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t ready_pid;          /* process whose rank directory is set up */
static uint8_t trace_uuid[16];
static uint64_t bytes_used;      /* this process's packets, for the cap */
static pthread_key_t stream_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int warned_io, warned_cap;
/* One stream allocated ahead, for a thread that first needs one inside a
 * fatal-signal handler (where malloc is not allowed). */
static struct rt_tr_stream *spare;


bool rt_tr_process_traced(void)
{
	return __atomic_load_n(&ready_pid, __ATOMIC_ACQUIRE) == rt_tr_pid;
}

uint64_t rt_tr_clock_slow(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void stream_release(void *p)
{
	struct rt_tr_stream *s = p;

	if (!s)
		return;
	if (rt_tr_stream_tls == s)
		rt_tr_stream_tls = NULL;
	if (s->last_real_pkt)
		munmap(s->last_real_pkt, PACKET_BYTES);
	if (s->prev_pkt)
		munmap(s->prev_pkt, PACKET_BYTES);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}

static void make_key(void)
{
	pthread_key_create(&stream_key, stream_release);
}

/* Forget (in a forked child) the stream inherited from the parent's thread. */
void rt_tr_stream_forget_inherited(void)
{
	struct rt_tr_stream *s = rt_tr_stream_tls;

	rt_tr_stream_tls = NULL;
	bytes_used = 0;
	if (spare)
		memset(spare, 0, sizeof(*spare));
	if (s) {
		pthread_setspecific(stream_key, NULL);
		stream_release(s);
	}
}

static void enter_scratch(struct rt_tr_stream *s)
{
	s->scratch = true;
	s->pkt = s->buf;
	s->pos = s->buf + RT_PACKET_HEADER_BYTES;
	s->end = s->buf + sizeof(s->buf);
}

static void put64(uint8_t *p, unsigned off, uint64_t v)
{
	memcpy(p + off, &v, 8);
}

/* Map packet s->pkt_index and write its header and context. */
static int map_packet(struct rt_tr_stream *s, uint64_t ts)
{
	uint64_t off = s->pkt_index * PACKET_BYTES;
	uint32_t magic = RT_CTF_MAGIC, zero = 0, pid = (uint32_t)s->pid, tid = (uint32_t)s->tid;
	uint8_t *p;

	/* Allocate the blocks now: a store into a sparse shared mapping on a
	 * full filesystem would raise SIGBUS in the traced program, while a
	 * failed allocation here only stops tracing. */
	if (fallocate(s->fd, 0, (off_t)off, (off_t)PACKET_BYTES) != 0) {
		int err = errno == EOPNOTSUPP ? posix_fallocate(s->fd, (off_t)off, (off_t)PACKET_BYTES)
					      : errno;
		if (err)
			return -err;
	}
	p = mmap(NULL, PACKET_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, (off_t)off);
	if (p == MAP_FAILED)
		return -errno;
	/* fault the packet in writable at once, not page by page in the hot path */
	madvise(p, PACKET_BYTES, 23 /* MADV_POPULATE_WRITE, Linux 5.14; harmless if unknown */);
	memcpy(p, &magic, 4);
	memcpy(p + 4, trace_uuid, 16);
	memcpy(p + 20, &zero, 4);
	put64(p, 24, ((uint64_t)(uint32_t)s->pid << 32) | (uint32_t)s->tid);
	put64(p, RT_PKT_OFF_TS_BEGIN, ts);
	put64(p, RT_PKT_OFF_TS_END, ts);
	put64(p, RT_PKT_OFF_CONTENT, RT_PACKET_HEADER_BYTES * 8);
	put64(p, RT_PKT_OFF_SIZE, PACKET_BYTES * 8);
	put64(p, RT_PKT_OFF_DISCARDED, s->discarded);
	memcpy(p + RT_PKT_OFF_PID, &pid, 4);
	memcpy(p + RT_PKT_OFF_TID, &tid, 4);
	s->pkt = s->last_real_pkt = p;
	s->pos = p + RT_PACKET_HEADER_BYTES;
	s->end = p + PACKET_BYTES;
	s->last_ts = ts;
	return 0;
}

/* Reserve one more packet's worth of the per-rank cap. */
static bool cap_allows(void)
{
	uint64_t used = __atomic_add_fetch(&bytes_used, PACKET_BYTES, __ATOMIC_RELAXED);

	if (rt_tr_config.max_bytes == 0 || used <= rt_tr_config.max_bytes)
		return true;
	__atomic_sub_fetch(&bytes_used, PACKET_BYTES, __ATOMIC_RELAXED);
	return false;
}

static void count_discarded(struct rt_tr_stream *s)
{
	s->discarded++;
	if (s->last_real_pkt)
		put64(s->last_real_pkt, RT_PKT_OFF_DISCARDED, s->discarded);
}

void rt_tr_stream_next(struct rt_tr_stream *s, uint64_t now, unsigned need)
{
	int err;

	if (s->scratch) {
		/* room for exactly this event, so the next one comes here too */
		if (s->last_real_pkt)
			count_discarded(s);
		s->pos = s->buf + RT_PACKET_HEADER_BYTES;
		s->end = s->pos + need;
		return;
	}
	if (!cap_allows()) {
		rt_tr_warn_once(&warned_cap, "trace size cap (%llu bytes per rank) reached: "
				"further events are counted as discarded",
				(unsigned long long)rt_tr_config.max_bytes);
		/* the full packet stays mapped: discarded events are counted in it */
		enter_scratch(s);
		s->end = s->pos + need;
		count_discarded(s);
		return;
	}
	/* The previous packet may still hold a record in flight (a tracer event
	 * emitted during a call): unmap it one switch late. */
	if (s->prev_pkt)
		munmap(s->prev_pkt, PACKET_BYTES);
	s->prev_pkt = s->last_real_pkt;
	s->last_real_pkt = NULL;
	s->pkt_index++;
	err = map_packet(s, now);
	if (err) {
		rt_tr_warn_once(&warned_io, "cannot extend a trace file (%s): tracing stops, "
				"the program continues untouched", strerror(-err));
		rt_tr_off = 1;
		enter_scratch(s);
	}
}

/* ---- clock ---- */

static bool tsc_usable(void)
{
#if defined(__x86_64__)
	char line[4096];
	bool constant = false, nonstop = false;
	const char *force = getenv("RANKTRACE_CLOCK");
	FILE *f;

	if (force && strcmp(force, "monotonic") == 0)
		return false;
	f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return constant && nonstop;
#else
	return false;
#endif
}

#if defined(__x86_64__)
static uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* A (tsc, monotonic ns) pair read as close together as we can. */
static void clock_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t a = rdtsc(), m = rt_tr_clock_slow(), b = rdtsc();

		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = m;
		}
	}
}
#endif

/* Once per process (under process_lock): TSC-to-ns over a 5 ms window. */
static void calibrate_clock(void)
{
#if defined(__x86_64__)
	uint64_t t1, n1, t2, n2;

	if (rt_tr_clock_tsc || !tsc_usable())
		return;
	clock_pair(&t1, &n1);
	do
		clock_pair(&t2, &n2);
	while (n2 - n1 < 5000000);
	rt_tr_tsc_mult = (uint64_t)((((unsigned __int128)(n2 - n1)) << 32) / (t2 - t1));
	rt_tr_tsc0 = t1;
	rt_tr_mono0 = n1;
	__atomic_store_n(&rt_tr_clock_tsc, 1, __ATOMIC_RELEASE);
#endif
}

/* ---- process set-up: rank directory and metadata ---- */

static int write_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t k = write(fd, buf, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -EIO;
		buf += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The kernel's boot id: traces of one host share one monotonic clock. */
static void read_boot_id(char *out, size_t n)
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t k = fd >= 0 ? read(fd, out, n - 1) : -1;

	if (fd >= 0)
		close(fd);
	out[k == 36 || k == 37 ? 36 : 0] = '\0';
}

/* Write DIR/metadata for the current rank identity. replace: atomically
 * replace an existing one (rank learned later). */
int rt_tr_write_metadata(const char *dir, bool replace)
{
	struct rt_trace_env env = { 0 };
	struct timespec rt, mono;
	char path[4200], tmp[4200];
	long len;
	char *buf;
	int fd, err;

	gethostname(env.hostname, sizeof(env.hostname) - 1);
	if (getenv("NCCL_HOSTID")) /* NCCL keys "one rank per GPU" on this, not the hostname */
		snprintf(env.nccl_host, sizeof(env.nccl_host), "%s", getenv("NCCL_HOSTID"));
	env.pid = (int)getpid();
	env.rank = rt_tr_rank.rank;
	env.local_rank = rt_tr_rank.local_rank;
	env.world_size = rt_tr_rank.world_size;
	env.rank_source = rt_tr_rank.source;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	{
		int64_t off = ((int64_t)rt.tv_sec - (int64_t)mono.tv_sec) * 1000000000ll +
			      ((int64_t)rt.tv_nsec - (int64_t)mono.tv_nsec);

		env.clock_offset_s = off / 1000000000ll;
		env.clock_offset_ns = off % 1000000000ll;
	}
	memcpy(env.uuid, trace_uuid, 16);
	read_boot_id(env.clock_uuid, sizeof(env.clock_uuid));
	env.packet_bytes = PACKET_BYTES;
	buf = malloc(1 << 16);
	if (!buf)
		return -ENOMEM;
	len = rt_schema_tsdl(buf, 1 << 16, &env);
	if (len < 0) {
		free(buf);
		return -ENOSPC;
	}
	snprintf(path, sizeof(path), "%s/metadata", dir);
	snprintf(tmp, sizeof(tmp), "%s/.metadata.%d", dir, (int)getpid());
	fd = open(replace ? tmp : path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = errno == EEXIST && !replace ? 0 : -errno; /* another process of this rank wrote it */
		free(buf);
		return err;
	}
	err = write_all(fd, buf, (size_t)len);
	close(fd);
	free(buf);
	if (!err && replace && rename(tmp, path) != 0)
		err = -errno;
	return err;
}

/* Once per process: rank identity, DIR/rank-NNNNN, metadata, clock. */
static int process_setup(void)
{
	int err;

	if (ready_pid == rt_tr_pid)
		return 0;
	if (!rt_tr_rank.dir[0]) /* a forked child keeps its parent's identity */
		rt_tr_rank_init();
	/* All processes of one rank share its trace, so the uuid is derived from
	 * the run and the rank, not drawn at random. */
	if (rt_tr_lttng_wanted) { /* identity as an event, no files (lttng_backend.c) */
		err = rt_tr_lttng_setup();
	} else {
		err = rt_tr_rank_dir_create(trace_uuid);
		if (!err)
			err = rt_tr_write_metadata(rt_tr_rank.dir, false);
	}
	if (err)
		return err;
	calibrate_clock();
	rt_tr_install_signal_handlers();
	__atomic_store_n(&ready_pid, rt_tr_pid, __ATOMIC_RELEASE);
	return 0;
}

static int open_stream_file(struct rt_tr_stream *s)
{
	char path[4300];

	for (int n = 0; n < 1000; n++) {
		if (n == 0)
			snprintf(path, sizeof(path), "%s/stream-%d-%d", rt_tr_rank.dir, (int)s->pid,
				 (int)s->tid);
		else
			snprintf(path, sizeof(path), "%s/stream-%d-%d.%d", rt_tr_rank.dir,
				 (int)s->pid, (int)s->tid, n);
		s->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (s->fd >= 0)
			return 0;
		if (errno != EEXIST) /* tid reused, or a stream reopened at thread exit */
			return -errno;
	}
	return -EEXIST;
}


/* File and first packet for s (process already set up). */
static int stream_start(struct rt_tr_stream *s)
{
	int err;

	s->fd = -1;
	s->pid = rt_tr_pid;
	s->tid = (pid_t)syscall(SYS_gettid);
	if (rt_tr_lttng_wanted) {
		rt_tr_lttng_stream_init(s);
		return 0;
	}
	err = open_stream_file(s);
	if (!err && !cap_allows())
		err = -EFBIG;
	if (!err)
		err = map_packet(s, rt_tr_now());
	if (err && s->fd >= 0) {
		close(s->fd);
		s->fd = -1;
	}
	return err;
}

/* For the signal handler: the spare stream, opened with syscalls only; NULL
 * when there is none (already used, or the process never traced). */
struct rt_tr_stream *rt_tr_stream_for_signal(void)
{
	struct rt_tr_stream *s = __atomic_exchange_n(&spare, NULL, __ATOMIC_ACQ_REL);

	if (!s || !rt_tr_process_traced())
		return NULL;
	if (stream_start(s) != 0)
		return NULL;
	rt_tr_stream_tls = s;
	return s;
}

struct rt_tr_stream *rt_tr_stream_open(void)
{
	static struct rt_tr_stream dead; /* when even malloc fails */
	struct rt_tr_stream *s;
	int err;

	pthread_once(&key_once, make_key);
	s = calloc(1, sizeof(*s));
	if (!s) {
		rt_tr_off = 1;
		enter_scratch(&dead);
		return &dead;
	}
	s->fd = -1;
	pthread_mutex_lock(&process_lock);
	err = process_setup();
	if (!err && !__atomic_load_n(&spare, __ATOMIC_ACQUIRE))
		__atomic_store_n(&spare, calloc(1, sizeof(*spare)), __ATOMIC_RELEASE);
	pthread_mutex_unlock(&process_lock);
	if (!err)
		err = stream_start(s);
	if (err) {
		if (err == -EFBIG)
			rt_tr_warn_once(&warned_cap, "trace size cap reached: no more streams");
		else
			rt_tr_warn_once(&warned_io, "cannot write the trace in %s (%s): the program "
					"continues untraced", rt_tr_config.dir, strerror(-err));
		if (err != -EFBIG)
			rt_tr_off = 1;
		enter_scratch(s);
	}
	rt_tr_stream_tls = s;
	pthread_setspecific(stream_key, s);
	return s;
}
