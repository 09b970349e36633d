/* SPDX-License-Identifier: MIT */
/* chunk.c - a stream's files ("chunks"): their sizes, their creation aside,
 * their format, their publication, the OFD lock, the size cap and the
 * free-space reserve, trimming at thread end, flight-recorder recycling.
 *
 * Crash safety rests on one invariant: a file appears in the rank directory
 * only once it is complete - blocks allocated, every packet header written,
 * every packet marked unused (RT_TS_UNUSED timestamps, no events). The
 * writer then turns packets into real ones with stores into the mapping
 * only. A process killed at any instant therefore leaves valid stream files
 * and nothing else: no zeroed tail, no header written after the size grew.
 * A file is created with O_TMPFILE and linked in (nothing is left behind if
 * the process dies first), or, where O_TMPFILE is missing, as a hidden
 * ".stream-..." file renamed without replacing (readers skip dot files).
 *
 * A file's descriptor is closed once the file is made: mapped packets need
 * none, and a program may close or reuse any number at any time (base/own.c).
 * Each file takes an OFD write lock when it is made. The lock belongs to
 * the open file, which its mappings keep open: a file is locked while it is
 * mapped, and one page of the process's first file stays mapped for the
 * process's life (the live-rank contract: readers call a rank running while
 * one of its files is locked). No descriptor, so nothing the program closes
 * or dup2s can take it; the kernel drops it when the process ends or execs.
 * Files fit RLIMIT_FSIZE (smaller files, then smaller packets; none at all
 * only below one packet), and the calls that size them never raise SIGXFSZ
 * in the program.
 *
 * Called by the helper thread (prep.c) or, when it is behind or absent, by
 * the traced thread in its slow path, and by the fatal-signal path: system
 * calls and stores only - no malloc, no lock. Thread-safe for distinct
 * streams; the counters here are atomics. */
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "store_int.h"

#define KIB ((uint64_t)1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)

static uint64_t bytes_used;  /* this process's chunk bytes, for the cap */
static uint64_t allocations; /* chunk files made, for the test knob */
static int stop_reason, stop_err;
static int made_first;       /* the process's first file is made */
static int no_tmpfile;       /* O_TMPFILE refused here once: hidden files */
static void *life_map;       /* a page of the first file: keeps it (and its lock) open */
#define LIFE_BYTES 4096
/* Descriptors held in the program's table at once (while a file is made or
 * trimmed): thousands of threads starting together never take the
 * program's numbers. 32 where they are lifted to the top of the range
 * (base/own.c), 2 under a soft RLIMIT_NOFILE of 256. Past it, a slot is waited
 * for (rt_tr_fd_slot_wait); a trim is skipped. */
static int fds_out, fds_waiting;

#define SMALLEST_PACKET (8u << 10)

uint64_t rt_tr_bytes_used(void)
{
	return __atomic_load_n(&bytes_used, __ATOMIC_RELAXED);
}

int rt_tr_stopped(void)
{
	return __atomic_load_n(&stop_reason, __ATOMIC_ACQUIRE);
}

/* The -errno tracing stopped with, 0 while it goes on. */
int rt_tr_stop_error(void)
{
	return rt_tr_stopped() ? __atomic_load_n(&stop_err, __ATOMIC_ACQUIRE) : 0;
}

int rt_tr_stop_reason_of(int err)
{
	switch (-err) {
	case EFBIG: return RT_STOP_CAP;
	case RT_TR_E_RESERVE: return RT_STOP_RESERVE;
	case RT_TR_E_FSIZE: return RT_STOP_IO_ERROR; /* "File too large" */
	case ENOSPC: return RT_STOP_DISK_FULL;
	case EDQUOT: return RT_STOP_QUOTA;
	default: return RT_STOP_IO_ERROR;
	}
}

/* The errno a stop reports (its event's `error`, the warning). */
int rt_tr_stop_errno(int err)
{
	return err == -RT_TR_E_FSIZE ? EFBIG : err == -RT_TR_E_FDS ? EMFILE : -err;
}

/* The first stop wins; later chunk requests fail with the same error. */
void rt_tr_stop_process(int err)
{
	int none = 0;

	if (__atomic_compare_exchange_n(&stop_reason, &none, rt_tr_stop_reason_of(err), false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		__atomic_store_n(&stop_err, err, __ATOMIC_RELEASE);
}

static int fd_budget(void)
{
	struct rlimit rl;

	return getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur >= 256 ? 32 : 2;
}

static bool fd_slot_take(void)
{
	if (rt_tr_fds_private)
		return true;
	if (__atomic_add_fetch(&fds_out, 1, __ATOMIC_ACQ_REL) <= fd_budget())
		return true;
	__atomic_sub_fetch(&fds_out, 1, __ATOMIC_RELEASE);
	return false;
}

static void fd_slot_give(void)
{
	if (rt_tr_fds_private)
		return;
	__atomic_sub_fetch(&fds_out, 1, __ATOMIC_RELEASE);
	if (__atomic_load_n(&fds_waiting, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &fds_out, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Sleep until a descriptor slot may be free (ms milliseconds at most). */
void rt_tr_fd_slot_wait(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	int seen = __atomic_load_n(&fds_out, __ATOMIC_ACQUIRE);

	__atomic_add_fetch(&fds_waiting, 1, __ATOMIC_ACQ_REL);
	if (seen >= fd_budget())
		syscall(SYS_futex, &fds_out, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
	__atomic_sub_fetch(&fds_waiting, 1, __ATOMIC_RELEASE);
}

/* Fork child: its own budget, its own lock, not stopped. */
void rt_tr_chunk_forget_process(void)
{
	/* the parent's lock stays: its own mapping holds it */
	if (life_map)
		munmap(life_map, LIFE_BYTES);
	life_map = NULL;
	made_first = fds_out = fds_waiting = 0;
	bytes_used = allocations = 0;
	stop_reason = stop_err = 0;
}

/* Size of chunk number k of a stream and of its packets. Threads start
 * small (most short-lived threads fit one 8 KiB packet, the rest of their
 * first chunk is trimmed at thread end) and grow to one 4 MiB file, then
 * 16 MiB files, of 256 KiB packets; a flight recorder splits its size into
 * RT_TR_RING_CHUNKS. A thread that fills files fast needs its next one made
 * ahead by the helper (prep.c) while it fills the current: naming a file
 * (linkat) waits for the directory's block when the disk is busy (another
 * process writing gigabytes: tens of milliseconds), and a 4 MiB file lasts
 * a hot thread ~8 ms (bench/io_pressure.sh: 2.1x the floor while dd
 * writes, 0.8-1.0x with 16 MiB files). */
static void chunk_plan(uint32_t k, uint64_t *size, uint32_t *pkt)
{
	static const uint32_t sizes[] = { RT_MIN_TRACE_BYTES, 256 << 10, 1 << 20, 4 << 20, 16 << 20 };
	static const uint32_t pkts[] = { 8 << 10, 64 << 10, 256 << 10, 256 << 10, 256 << 10 };
	uint64_t ring = rt_tr_config.ring_bytes;

	if (ring) {
		*size = ring / RT_TR_RING_CHUNKS & ~(uint64_t)4095;
		if (*size < RT_MIN_RING_BYTES / RT_TR_RING_CHUNKS)
			*size = RT_MIN_RING_BYTES / RT_TR_RING_CHUNKS;
		*pkt = (uint32_t)(*size / 2 > 256 * KIB ? 256 * KIB : *size / 2);
		*size -= *size % *pkt;
		return;
	}
	k = k < 4 ? k : 4;
	*size = sizes[k];
	*pkt = pkts[k];
}

/* The plan shrunk to the file size limit: smaller files, then the smallest
 * packets. 0, or -RT_TR_E_FSIZE when not even one packet fits. */
static int fit_file_limit(uint64_t *size, uint32_t *pkt)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur >= *size)
		return 0;
	if (rl.rlim_cur < *pkt)
		*pkt = SMALLEST_PACKET;
	*size = rl.rlim_cur / *pkt * *pkt;
	return *size ? 0 : -RT_TR_E_FSIZE;
}

/* Free space to leave on the trace filesystem: --min-free, or by default
 * max(5 %, min(2 GiB, half the filesystem)). */
static uint64_t reserve_of(const struct statvfs *v)
{
	uint64_t total = (uint64_t)v->f_blocks * v->f_frsize, half = total / 2, r;

	if (rt_tr_config.min_free >= 0)
		return (uint64_t)rt_tr_config.min_free;
	r = 2 * GIB < half ? 2 * GIB : half;
	return total / 20 > r ? total / 20 : r;
}

/* Take `size` bytes from the cap and check the reserve: 0 or -errno. */
static int space_for(int fd, uint64_t size, bool first)
{
	uint64_t used = __atomic_add_fetch(&bytes_used, size, __ATOMIC_RELAXED);
	uint64_t n = __atomic_add_fetch(&allocations, 1, __ATOMIC_RELAXED);
	struct statvfs v;
	int err = 0;

	if (rt_tr_config.max_bytes && used > rt_tr_config.max_bytes && !first)
		err = -EFBIG;
	else if (rt_tr_config.fail_alloc_at && n >= rt_tr_config.fail_alloc_at)
		err = -rt_tr_config.fail_alloc_errno;
	else if (!first && rt_tr_config.min_free != 0 && fstatvfs(fd, &v) == 0 &&
		 (uint64_t)v.f_bavail * v.f_frsize < size + reserve_of(&v))
		err = -RT_TR_E_RESERVE; /* (no reserve: the allocation itself decides) */
	if (err)
		__atomic_sub_fetch(&bytes_used, size, __ATOMIC_RELAXED);
	return err;
}

static void chunk_path(const struct rt_tr_wstream *s, uint32_t seq, bool hidden, char *out,
		       size_t n)
{
	snprintf(out, n, seq ? "%s/%s%s-%d-%d.%u" : "%s/%s%s-%d-%d", rt_tr_rank.dir,
		 hidden ? "." : "", rt_tr_fork_child ? "fork" : "stream", (int)s->h.pid,
		 (int)s->tid, seq);
}

/* Every packet of ch: a valid, empty, unused packet of this stream. */
static void format(const struct rt_tr_wstream *s, struct rt_tr_chunk *ch)
{
	struct rt_fmt_packet h = { .uuid = rt_tr_trace_uuid, .ts_begin = RT_TS_UNUSED,
				   .ts_end = RT_TS_UNUSED, .content_bytes = RT_PACKET_HEADER_BYTES,
				   .packet_bytes = ch->pkt_bytes, .discarded = s->discarded,
				   .pid = (uint32_t)s->h.pid, .tid = (uint32_t)s->tid };

	for (uint64_t off = 0; off < ch->size; off += ch->pkt_bytes)
		rt_fmt_packet_put(ch->base + off, &h);
}

/* Blocks, mapping, pages, packet headers, lock: everything but the name. */
static int fill(const struct rt_tr_wstream *s, struct rt_tr_chunk *ch, int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct rt_tr_quiet q;
	int err = 0;

	/* Blocks first: a store into a sparse shared mapping on a full
	 * filesystem would raise SIGBUS in the traced program, while a failed
	 * allocation here only stops tracing. Past RLIMIT_FSIZE (the limit
	 * lowered since the plan) it fails with EFBIG, SIGXFSZ kept quiet. */
	rt_tr_quiet_begin(&q);
	if (fallocate(fd, 0, 0, (off_t)ch->size) != 0)
		err = errno == EOPNOTSUPP ? posix_fallocate(fd, 0, (off_t)ch->size) : errno;
	rt_tr_quiet_end(&q, err);
	if (err)
		return err == EFBIG ? -RT_TR_E_FSIZE : -err;
	ch->base = mmap(NULL, ch->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ch->base == MAP_FAILED) {
		ch->base = NULL;
		return -errno;
	}
	/* fault every page in writable now, not in the traced thread's stores */
	madvise(ch->base, ch->size, 23 /* MADV_POPULATE_WRITE, Linux 5.14; harmless if unknown */);
	format(s, ch);
	fcntl(fd, F_OFD_SETLK, &fl);
	return 0;
}

/* Give the finished file its name, never replacing one: 0 or -errno. */
static int publish(struct rt_tr_wstream *s, struct rt_tr_chunk *ch, int fd, bool tmpfile)
{
	char path[4300], from[4300];

	for (int tries = 0; tries < 1000; tries++) {
		int rc;

		ch->seq = s->seq_next++;
		chunk_path(s, ch->seq, false, path, sizeof(path));
		if (tmpfile) {
			/* thread-self: the helper's descriptor table is its own */
			snprintf(from, sizeof(from), "/proc/thread-self/fd/%d", fd);
			rc = linkat(AT_FDCWD, from, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
			if (rc != 0 && errno == ENOENT) /* no /proc: needs CAP_DAC_READ_SEARCH */
				rc = linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH);
		} else {
			chunk_path(s, 0, true, from, sizeof(from));
			rc = (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, path,
					  1 /* RENAME_NOREPLACE */);
			if (rc != 0 && (errno == EINVAL || errno == ENOSYS) && link(from, path) == 0)
				rc = unlink(from);
		}
		if (rc == 0)
			return 0;
		if (errno != EEXIST) /* tid reused: the earlier thread's files keep their names */
			return -errno;
	}
	return -EEXIST;
}

static int create(const struct rt_tr_wstream *s, bool *tmpfile)
{
	char path[4300];
	int fd = -1;

	*tmpfile = !__atomic_load_n(&no_tmpfile, __ATOMIC_RELAXED);
	if (*tmpfile) {
		fd = open(rt_tr_rank.dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (fd >= 0)
			return rt_tr_fd_lift(fd);
		if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
			return -errno;
		__atomic_store_n(&no_tmpfile, 1, __ATOMIC_RELAXED);
		*tmpfile = false;
	}
	chunk_path(s, 0, true, path, sizeof(path));
	unlink(path); /* left by a killed process whose pid and tid we have now */
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	return fd >= 0 ? rt_tr_fd_lift(fd) : -errno;
}

/* Keep the process's first file locked while the process runs: one page of
 * it mapped (the OFD lock fill() took belongs to the open file, which the
 * mapping holds open). */
static void life_keep(int fd)
{
	void *none = NULL, *p;

	if (__atomic_load_n(&life_map, __ATOMIC_ACQUIRE))
		return;
	p = mmap(NULL, LIFE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
	if (p != MAP_FAILED && !__atomic_compare_exchange_n(&life_map, &none, p, false,
							    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		munmap(p, LIFE_BYTES);
}

/* Make s's next stream file into *ch, ready to be written with stores
 * only: 0, or -errno (-EFBIG: size cap; -RT_TR_E_RESERVE: free space;
 * -RT_TR_E_FSIZE: RLIMIT_FSIZE; -RT_TR_E_FDS: the descriptor budget is in
 * use, try later). No descriptor stays open. */
int rt_tr_chunk_make(struct rt_tr_wstream *s, struct rt_tr_chunk *ch)
{
	bool tmpfile, first = !__atomic_load_n(&made_first, __ATOMIC_ACQUIRE);
	struct stat st = { 0 };
	int err, fd;

	memset(ch, 0, sizeof(*ch));
	if (rt_tr_stopped())
		return __atomic_load_n(&stop_err, __ATOMIC_ACQUIRE) ?: -EIO;
	chunk_plan(s->nchunks, &ch->size, &ch->pkt_bytes);
	err = fit_file_limit(&ch->size, &ch->pkt_bytes);
	if (err) {
		rt_tr_stop_process(err);
		return err;
	}
	if (!fd_slot_take())
		return -RT_TR_E_FDS;
	fd = create(s, &tmpfile);
	if (fd < 0) {
		fd_slot_give();
		return fd;
	}
	err = fstat(fd, &st) == 0 ? 0 : -errno;
	ch->dev = (uint64_t)st.st_dev;
	ch->ino = (uint64_t)st.st_ino;
	/* the process's first file is made even past the cap or the reserve:
	 * it is small, and it is where the reason tracing stopped is written */
	if (!err)
		err = space_for(fd, ch->size, first);
	if (!err) {
		err = fill(s, ch, fd);
		if (err)
			__atomic_sub_fetch(&bytes_used, ch->size, __ATOMIC_RELAXED);
	}
	if (!err)
		err = publish(s, ch, fd, tmpfile);
	if (!err) {
		life_keep(fd);
		__atomic_store_n(&made_first, 1, __ATOMIC_RELEASE);
		s->nchunks++;
	}
	close(fd);
	fd_slot_give();
	if (err) {
		if (!tmpfile) {
			char path[4300];

			chunk_path(s, 0, true, path, sizeof(path));
			unlink(path);
		}
		rt_tr_stop_process(err);
		rt_tr_chunk_drop(s, ch, false);
	}
	return err;
}

/* Flight recorder: make a used chunk unused again, packet by packet, each
 * step leaving a valid file (emptied first, then moved to the end of time
 * in one store). Stores only. */
void rt_tr_chunk_recycle(struct rt_tr_chunk *ch, uint64_t discarded)
{
	for (uint64_t off = 0; off < ch->size; off += ch->pkt_bytes) {
		uint8_t *p = ch->base + off;

		rt_fmt_packet_set_content(p, RT_PACKET_HEADER_BYTES);
		rt_tr_put_ts_pair(p, RT_TS_UNUSED, RT_TS_UNUSED);
		rt_fmt_packet_set_discarded(p, discarded);
	}
}

/* The thread ended: drop the unused packets after `keep` bytes (a packet
 * boundary, so the file stays valid at every instant). The file is opened
 * again by name and cut only if it is the one made (device and inode);
 * when it cannot be opened (no descriptor left) it keeps its unused
 * packets, still a valid file. */
void rt_tr_chunk_trim(const struct rt_tr_wstream *s, const struct rt_tr_chunk *ch, uint64_t keep)
{
	char path[4300];
	int fd;

	if (!ch->base || keep >= ch->size || !fd_slot_take())
		return;
	chunk_path(s, ch->seq, false, path, sizeof(path));
	fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && rt_tr_fd_is(fd, ch->dev, ch->ino) && ftruncate(fd, (off_t)keep) == 0)
		__atomic_sub_fetch(&bytes_used, ch->size - keep, __ATOMIC_RELAXED);
	if (fd >= 0)
		close(fd);
	fd_slot_give();
}

/* Unmap ch; remove: also unlink its file (an unused one). */
void rt_tr_chunk_drop(const struct rt_tr_wstream *s, struct rt_tr_chunk *ch, bool remove)
{
	if (remove && ch->base) {
		char path[4300];

		chunk_path(s, ch->seq, false, path, sizeof(path));
		if (unlink(path) == 0)
			__atomic_sub_fetch(&bytes_used, ch->size, __ATOMIC_RELAXED);
	}
	if (ch->base)
		munmap(ch->base, ch->size);
	ch->base = NULL;
}
