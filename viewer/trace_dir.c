/* SPDX-License-Identifier: MIT */
/* trace_dir.c - a trace directory's layout, beside the stream decoder
 * (reader.c): each rank's metadata (the `env` and `clock` blocks of its CTF
 * metadata: who the rank is, its clock's offset and boot), the rank
 * directories and stream files listed in name order, whether a stream is
 * still written (the tracer's open file description lock), and "now" on
 * the trace's clock. Every file is opened as a regular file only: a FIFO,
 * a symlink or a device in a trace is refused, never followed or waited on. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "reader.h"

#define RT_VW_MAX_METADATA (1 << 20) /* ours are a few KiB */

/* fopen(path, "r") for a regular file only: a FIFO (open would block), a
 * symlink (to /dev/zero, or out of the trace) or a device is refused. */
static FILE *open_regular(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	FILE *f;

	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, errno == ELOOP ? "a symbolic link, not a "
			 "regular file: skipped" : strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file: skipped", path);
		close(fd);
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
	}
	return f;
}

int rt_vw_read_metadata(const char *rank_dir, struct rt_vw_rank_meta *m, char *err, size_t errlen)
{
	char path[4200], line[512];
	FILE *f;
	bool in_env = false;
	size_t pos = 0; /* bytes read: ftell would be a syscall a line */

	memset(m, 0, sizeof(*m));
	m->rank = m->local_rank = m->world_size = -1;
	snprintf(path, sizeof(path), "%s/metadata", rank_dir);
	f = open_regular(path, err, errlen);
	if (!f)
		return -1;
	while (pos < RT_VW_MAX_METADATA && fgets(line, sizeof(line), f)) {
		char key[64], val[128];

		pos += strlen(line);
		if (strncmp(line, "env {", 5) == 0 || strncmp(line, "clock {", 7) == 0)
			in_env = true;
		else if (in_env && line[0] == '}')
			in_env = false;
		if (!in_env || sscanf(line, " %63[a-z_] = %127[^;];", key, val) != 2)
			continue;
		if (val[0] == '"') { /* strip quotes */
			size_t n = strlen(val);

			memmove(val, val + 1, n);
			if (n >= 2 && val[n - 2] == '"')
				val[n - 2] = '\0';
		}
		if (!strcmp(key, "rank")) m->rank = atoi(val);
		else if (!strcmp(key, "local_rank")) m->local_rank = atoi(val);
		else if (!strcmp(key, "world_size")) m->world_size = atoi(val);
		else if (!strcmp(key, "pid")) m->pid = atoi(val);
		else if (!strcmp(key, "ranktrace_schema")) m->schema = atoi(val);
		else if (!strcmp(key, "hostname")) snprintf(m->hostname, sizeof(m->hostname), "%s", val);
		else if (!strcmp(key, "nccl_host")) snprintf(m->nccl_host, sizeof(m->nccl_host), "%s", val);
		else if (!strcmp(key, "ring_bytes")) m->ring_bytes = strtoull(val, NULL, 10);
		else if (!strcmp(key, "rank_source")) snprintf(m->rank_source, sizeof(m->rank_source), "%s", val);
		else if (!strcmp(key, "uuid")) snprintf(m->clock_uuid, sizeof(m->clock_uuid), "%s", val);
		else if (!strcmp(key, "offset_s")) m->clock_offset_ns += strtoll(val, NULL, 10) * 1000000000ll;
		else if (!strcmp(key, "offset")) m->clock_offset_ns += strtoll(val, NULL, 10);
	}
	fclose(f);
	if (m->schema != RT_SCHEMA_VERSION) {
		snprintf(err, errlen, "%s: not a ranktrace schema %d trace (found schema %d)", path,
			 RT_SCHEMA_VERSION, m->schema);
		return -1;
	}
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list(const char *dir, const char *prefix, bool want_dirs, char ***out)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	int n = 0, cap = 0;

	*out = NULL;
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char path[4200];
		struct stat st;

		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		/* a stream file of any type is listed: one that is not a regular
		 * file (a directory, FIFO, symlink) is damage its reader reports,
		 * never a file skipped without a word */
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (want_dirs && (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)))
			continue;
		if (n == cap) {
			char **p = realloc(names, sizeof(*names) * (size_t)(cap = cap ? cap * 2 : 16));

			if (!p)
				break;
			names = p;
		}
		names[n] = strdup(de->d_name);
		if (names[n])
			n++;
	}
	closedir(d);
	if (n)
		qsort(names, (size_t)n, sizeof(*names), cmp_names);
	*out = names;
	return n;
}

int rt_vw_list_streams(const char *rank_dir, char ***names)
{
	return list(rank_dir, "stream-", false, names);
}

int rt_vw_list_ranks(const char *dir, char ***names)
{
	return list(dir, "rank-", true, names);
}

void rt_vw_free_names(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int rt_vw_stream_locked(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	int rc;

	if (fd < 0)
		return -errno;
	rc = fcntl(fd, F_OFD_GETLK, &fl) == 0 ? fl.l_type != F_UNLCK : -errno;
	close(fd);
	return rc;
}

uint64_t rt_vw_trace_now(const struct rt_vw_rank_meta *m)
{
	char boot[40] = "";
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	struct timespec ts;

	if (fd >= 0) {
		ssize_t k = read(fd, boot, sizeof(boot) - 1);

		boot[k > 0 ? k : 0] = '\0';
		boot[strcspn(boot, "\n")] = '\0';
		close(fd);
	}
	if (boot[0] && !strcmp(boot, m->clock_uuid)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)((int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec - m->clock_offset_ns);
}
