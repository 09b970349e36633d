/* SPDX-License-Identifier: MIT */
/* reader.c - decode ranktrace's CTF stream files without libbabeltrace2.
 *
 * Knows the layout from tracer/schema.h (the same table the writer used) and
 * checks every length against the file: a truncated or corrupted file ends
 * the read with a message naming the file and byte offset, never a crash.
 * Memory: the file is mapped read-only; nothing grows with its size. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader.h"

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Decode the events of one packet [p, p+content). */
static int read_packet(const char *path, const uint8_t *base, size_t poff, size_t content,
		       rt_vw_event_fn fn, void *arg, struct rt_vw_stream_info *info, char *err,
		       size_t errlen)
{
	const uint8_t *p = base + poff;
	size_t off = RT_PACKET_HEADER_BYTES;
	uint64_t clock = get64(p + RT_PKT_OFF_TS_BEGIN);
	struct rt_vw_event e = { .pid = get32(p + RT_PKT_OFF_PID), .tid = get32(p + RT_PKT_OFF_TID) };

	while (off < content) {
		unsigned hdr;
		uint16_t id16;

		if (content - off < 2)
			goto truncated;
		memcpy(&id16, p + off, 2);
		if (id16 == RT_EXTENDED_ID) {
			if (content - off < RT_HEADER_EXTENDED_BYTES)
				goto truncated;
			e.id = get32(p + off + 2);
			clock = get64(p + off + 6);
			hdr = RT_HEADER_EXTENDED_BYTES;
		} else {
			uint32_t low;

			if (content - off < RT_HEADER_COMPACT_BYTES)
				goto truncated;
			e.id = id16;
			low = get32(p + off + 2);
			/* CTF: a narrower clock field updates the low bits, wrapping once */
			if (low < (uint32_t)clock)
				clock += 1ull << 32;
			clock = (clock & ~0xffffffffull) | low;
			hdr = RT_HEADER_COMPACT_BYTES;
		}
		if (e.id >= RT_ID_COUNT) {
			snprintf(err, errlen, "%s: offset %zu: unknown event id %u (corrupted, or "
				 "written by another schema)", path, poff + off, e.id);
			return -1;
		}
		if (content - off < hdr + RT_COMMON_BYTES + rt_events[e.id].size)
			goto truncated;
		e.ts = clock;
		e.dur = 0;
		memcpy(&e.dur, p + off + hdr, 5);
		e.pending = e.dur == RT_DUR_PENDING;
		{
			int16_t r;

			memcpy(&r, p + off + hdr + 5, 2);
			e.ret = r;
		}
		e.dev = (int8_t)p[off + hdr + 7];
		e.fields = p + off + hdr + RT_COMMON_BYTES;
		off += hdr + RT_COMMON_BYTES + rt_events[e.id].size;
		info->events++;
		if (fn && fn(&e, arg))
			return 1;
	}
	return 0;
truncated:
	snprintf(err, errlen, "%s: offset %zu: event cut short by the end of the packet's content",
		 path, poff + off);
	return -1;
}

int rt_vw_read_stream(const char *path, rt_vw_event_fn fn, void *arg,
		      struct rt_vw_stream_info *info, char *err, size_t errlen)
{
	struct rt_vw_stream_info dummy;
	struct stat st;
	const uint8_t *base = NULL;
	size_t size, off = 0;
	int fd, rc = 0;

	if (!info)
		info = &dummy;
	memset(info, 0, sizeof(*info));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	size = (size_t)st.st_size;
	if (size > 0) {
		base = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (base == MAP_FAILED) {
			snprintf(err, errlen, "%s: cannot map: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
	}
	close(fd);
	while (off < size) {
		const uint8_t *p = base + off;
		uint64_t psize, content;

		if (size - off < RT_PACKET_HEADER_BYTES) {
			snprintf(err, errlen, "%s: offset %zu: truncated packet header", path, off);
			rc = -1;
			break;
		}
		if (get32(p) != RT_CTF_MAGIC) {
			snprintf(err, errlen, "%s: offset %zu: bad packet magic 0x%08x", path, off,
				 get32(p));
			rc = -1;
			break;
		}
		psize = get64(p + RT_PKT_OFF_SIZE) / 8;
		content = get64(p + RT_PKT_OFF_CONTENT) / 8;
		if (psize < RT_PACKET_HEADER_BYTES || content < RT_PACKET_HEADER_BYTES ||
		    content > psize || psize > size - off) {
			snprintf(err, errlen, "%s: offset %zu: packet sizes out of bounds (packet %llu, "
				 "content %llu bytes, %zu left in the file)", path, off,
				 (unsigned long long)psize, (unsigned long long)content, size - off);
			rc = -1;
			break;
		}
		info->packets++;
		info->pid = get32(p + RT_PKT_OFF_PID);
		info->tid = get32(p + RT_PKT_OFF_TID);
		info->discarded = get64(p + RT_PKT_OFF_DISCARDED);
		rc = read_packet(path, base, off, (size_t)content, fn, arg, info, err, errlen);
		if (rc)
			break;
		off += (size_t)psize;
	}
	if (base)
		munmap((void *)base, size);
	return rc < 0 ? -1 : 0;
}

int rt_vw_read_metadata(const char *rank_dir, struct rt_vw_rank_meta *m, char *err, size_t errlen)
{
	char path[4200], line[512];
	FILE *f;
	bool in_env = false;

	memset(m, 0, sizeof(*m));
	m->rank = m->local_rank = m->world_size = -1;
	snprintf(path, sizeof(path), "%s/metadata", rank_dir);
	f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char key[64], val[128];

		if (strncmp(line, "env {", 5) == 0)
			in_env = true;
		else if (in_env && line[0] == '}')
			break;
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
		else if (!strcmp(key, "rank_source")) snprintf(m->rank_source, sizeof(m->rank_source), "%s", val);
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
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) != 0 || (want_dirs ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)))
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
