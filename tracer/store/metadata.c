/* SPDX-License-Identifier: MIT */
/* metadata.c - a rank directory's CTF metadata: the schema (format/schema.c)
 * with the rank's identity, host, clock offset and limits in its env block.
 *
 * Written once per process at its first event (core/life.c), and again when
 * the rank is learned from NCCL (interpose/hooks.c): whole or not at all,
 * never over another process's. Not on the hot path; allocates. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h"

uint8_t rt_tr_trace_uuid[16];

static int write_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t k = write(fd, buf, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
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

/* DIR/metadata from buf, whole or not at all: written aside, then linked in
 * (never over the one another process of the rank wrote: 0) or, replace,
 * renamed over it. Past RLIMIT_FSIZE (a schema bigger than the limit) it
 * fails with EFBIG and leaves nothing, SIGXFSZ kept quiet (base/own.c). */
static int put_metadata(const char *dir, const char *buf, size_t len, bool replace)
{
	char path[4200], tmp[4200];
	struct rt_tr_quiet q;
	int fd, err;

	snprintf(path, sizeof(path), "%s/metadata", dir);
	snprintf(tmp, sizeof(tmp), "%s/.metadata.%d", dir, (int)getpid());
	unlink(tmp); /* left by a killed process that had our pid */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	rt_tr_quiet_begin(&q);
	err = write_all(fd, buf, len);
	rt_tr_quiet_end(&q, -err);
	close(fd);
	if (!err && replace && rename(tmp, path) != 0)
		err = -errno;
	else if (!err && !replace && link(tmp, path) != 0 && errno != EEXIST)
		err = -errno;
	unlink(tmp);
	return err;
}

/* The probe as recorded: still waiting for Python to start the program is
 * missing if Python already runs (embedded, or started no program), none if
 * it does not (yet). */
static int probe_state(const char **detail)
{
	int (*running)(void);

	*detail = rt_tr_rank.probe_detail;
	if (rt_tr_rank.probe != RT_TR_PROBE_WAITING)
		return rt_tr_rank.probe;
	*(void **)&running = dlsym(RTLD_DEFAULT, "Py_IsInitialized");
	if (!running || !running())
		return RT_PROBE_NONE;
	*detail = "Python ran without starting a program (no cpython.run_* event)";
	return RT_PROBE_MISSING;
}

/* A clock uuid of its own for a test host (RANKTRACE_TEST_HOST): a UUID
 * (CTF readers insist) made from the host's name, the same on its ranks. */
static void host_uuid(const char *host, char *out, size_t n)
{
	uint64_t a = 0xcbf29ce484222325ull, b;

	for (const char *c = host; *c; c++)
		a = (a ^ (unsigned char)*c) * 0x100000001b3ull;
	b = a * 0x9E3779B97F4A7C15ull;
	snprintf(out, n, "%08x-%04x-4%03x-8%03x-%012llx", (unsigned)(a >> 32), (unsigned)(a >> 16) & 0xffff,
		 (unsigned)a & 0xfff, (unsigned)(b >> 52), (unsigned long long)(b & 0xffffffffffffull));
}

/* Write DIR/metadata for the current rank identity. replace: atomically
 * replace an existing one (rank learned later, the probe settled). */
int rt_tr_write_metadata(const char *dir, bool replace)
{
	struct rt_trace_env env = { 0 };
	struct timespec rt, mono;
	long len;
	char *buf;
	int err;

	gethostname(env.hostname, sizeof(env.hostname) - 1);
	if (getenv("NCCL_HOSTID")) /* NCCL keys "one rank per GPU" on this, not the hostname */
		snprintf(env.nccl_host, sizeof(env.nccl_host), "%s", getenv("NCCL_HOSTID"));
	if (rt_tr_test_host[0]) { /* RANKTRACE_TEST_HOST: another host, for tests */
		snprintf(env.hostname, sizeof(env.hostname), "%s", rt_tr_test_host);
		snprintf(env.nccl_host, sizeof(env.nccl_host), "%s", rt_tr_test_host);
	}
	env.pid = (int)getpid();
	env.rank = rt_tr_rank.rank;
	env.local_rank = rt_tr_rank.local_rank;
	env.world_size = rt_tr_rank.world_size;
	env.attempt = rt_tr_rank.attempt;
	env.probe = probe_state(&env.probe_detail);
	env.rank_source = rt_tr_rank.source;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	{
		int64_t off = ((int64_t)rt.tv_sec - (int64_t)mono.tv_sec) * 1000000000ll +
			      ((int64_t)rt.tv_nsec - (int64_t)mono.tv_nsec);

		env.clock_offset_s = off / 1000000000ll;
		env.clock_offset_ns = off % 1000000000ll;
	}
	memcpy(env.uuid, rt_tr_trace_uuid, 16);
	read_boot_id(env.clock_uuid, sizeof(env.clock_uuid));
	/* RANKTRACE_TEST_HOST: another host's clock, not this boot's; its shift
	 * is in the real time the offset gives too, as an NTP error would be */
	if (rt_tr_test_host[0])
		host_uuid(rt_tr_test_host, env.clock_uuid, sizeof(env.clock_uuid));
	env.packet_bytes = 256 << 10;
	env.ring_bytes = rt_tr_config.ring_bytes;
	env.max_bytes = rt_tr_config.max_bytes;
	env.min_free = rt_tr_config.min_free;
	env.file_records = 1; /* writer.c: whole files, each begun by rt_stream_file */
	buf = malloc(1 << 16);
	if (!buf)
		return -ENOMEM;
	len = rt_schema_tsdl(buf, 1 << 16, &env);
	if (len < 0) {
		free(buf);
		return -ENOSPC;
	}
	err = put_metadata(dir, buf, (size_t)len, replace);
	free(buf);
	return err;
}
