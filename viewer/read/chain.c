/* SPDX-License-Identifier: MIT */
/* chain.c - one stream written as several files (stream-PID-TID, .1, .2...):
 * their order, the files missing from it, and what a writer that accounts
 * for its files promised (metadata env file_records: tracer/store/writer.c):
 * every file whole, begun by rt_stream_file, which counts the records its
 * stream wrote before it. A reader that read fewer (a zero-filled stretch, a
 * lost page or file) or more (zeros read as records) knows records were
 * lost, and says where: lost is told from never written. Traces of writers
 * that promised nothing (no file_records) read as before.
 *
 * Per file opened: a few pread()s of packet headers (the order), no
 * allocation beyond the chain's names. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "encode.h"
#include "reader_int.h"

/* Where a stream file's events begin: its first used packet's time;
 * UINT64_MAX - 1 when its headers are unreadable (read last but one, its
 * damage reported), UINT64_MAX when it holds only unused packets. */
static uint64_t first_real_ts(const char *path)
{
	uint8_t h[RT_PACKET_HEADER_BYTES];
	uint64_t off = 0, key = UINT64_MAX;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (fd < 0)
		return UINT64_MAX - 1;
	while (pread(fd, h, sizeof(h), (off_t)off) == (ssize_t)sizeof(h)) {
		struct rt_fmt_packet p;

		if (!rt_fmt_packet_get(h, &p) || p.packet_bytes < RT_MIN_PACKET_BYTES) {
			key = rt_fmt_packet_magic(h) == 0 ? key : UINT64_MAX - 1;
			break;
		}
		if (p.ts_begin != RT_TS_UNUSED) {
			key = p.ts_begin;
			break;
		}
		off += p.packet_bytes;
	}
	close(fd);
	return key;
}

struct chain_file {
	uint64_t key;
	int index;
};

static int cmp_chain(const void *a, const void *b)
{
	const struct chain_file *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->index - y->index;
}

int rt_vw_stream_base_len(const char *name)
{
	int n = (int)strlen(name), k = n;

	while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9')
		k--;
	return k < n && k > 0 && name[k - 1] == '.' ? k - 1 : n;
}

/* A stream file's number: 0 for stream-P-T, N for stream-P-T.N. */
static unsigned long file_number(const char *name)
{
	int base = rt_vw_stream_base_len(name);

	return name[base] == '.' ? strtoul(name + base + 1, NULL, 10) : 0;
}

/* A file of the chain becomes current: its number (from its name), and
 * no record of it read yet. */
static void begin_file(struct rt_vw_cursor *c)
{
	const char *slash = strrchr(c->path, '/');

	c->file_no = file_number(slash ? slash + 1 : c->path);
	c->file_begun = false;
}

int rt_vw_chain_check(struct rt_vw_cursor *c, const struct rt_vw_event *e, size_t at)
{
	uint64_t file, before, read;
	char what[300];

	if (c->file_begun && e->id != RT_ID_rt_stream_file)
		return 0;
	if (!c->file_begun && e->id != RT_ID_rt_stream_file)
		return rt_vw_cursor_fail(c, at, "a stream file whose first record is not "
					 "rt_stream_file, where its writer begins every file with one "
					 "(records lost)");
	c->file_begun = true;
	file = (uint64_t)rt_vw_fld(e, RT_FN_file);
	before = (uint64_t)rt_vw_fld(e, RT_FN_events);
	read = c->info.events - c->rec_base;
	if (file != c->file_no) {
		snprintf(what, sizeof(what), "rt_stream_file says file .%llu in file .%llu (renamed or "
			 "copied over?)", (unsigned long long)file, (unsigned long long)c->file_no);
		return rt_vw_cursor_fail(c, at, what);
	}
	if (!c->counted)
		return 0;
	if (before == 0) { /* a stream begins here (its thread's id was reused) */
		c->rec_base = c->info.events;
		return 0;
	}
	if (read == before)
		return 0;
	snprintf(what, sizeof(what), "its stream wrote %llu events before this file, %llu were "
		 "read: %s", (unsigned long long)before, (unsigned long long)read,
		 read < before ? "events before it are lost (a zero-filled stretch or a missing file)"
			       : "bytes before it read as events were never written as such");
	return rt_vw_cursor_fail(c, at, what);
}

/* The writer numbers a stream's files 0, 1, 2... and removes none but its
 * newest (prepared ahead, never used): a number missing below the highest
 * is a file lost, with its events. Its name in err, or false. */
static bool missing_file(char *const *names, int n, char *err, size_t errlen)
{
	unsigned long top = 0;
	bool *have;

	for (int i = 0; i < n; i++)
		if (file_number(names[i]) > top)
			top = file_number(names[i]);
	if (top < (unsigned long)n) /* names are distinct: n numbers up to n - 1 */
		return false;
	have = top < 1u << 20 ? calloc(top + 1, sizeof(*have)) : NULL;
	for (int i = 0; have && i < n; i++)
		have[file_number(names[i])] = true;
	for (unsigned long k = 0; have && k < top; k++)
		if (!have[k]) {
			char num[24] = "";

			if (k)
				snprintf(num, sizeof(num), ".%lu", k);
			snprintf(err, errlen, "%.*s%s: missing, while the stream has files up to .%lu: the "
				 "events it held are lost", rt_vw_stream_base_len(names[0]), names[0], num, top);
			free(have);
			return true;
		}
	if (!have)
		snprintf(err, errlen, "%s: file number %lu: far past the %d files of its stream",
			 names[0], top, n);
	free(have);
	return !have;
}

struct rt_vw_cursor *rt_vw_cursor_open_chain(const char *dir, char *const *names, int n,
					     const struct rt_vw_rank_meta *m, char *err, size_t errlen)
{
	bool whole = m && m->file_records, counted = whole && !m->ring_bytes;
	struct chain_file *order = calloc((size_t)n, sizeof(*order));
	struct rt_vw_cursor *c = NULL;
	char path[4400], first_err[512] = "";
	int k = 0;

	if (!order || n < 1) {
		snprintf(err, errlen, "%s: out of memory", dir);
		free(order);
		return NULL;
	}
	if (missing_file(names, n, path, sizeof(path)))
		snprintf(first_err, sizeof(first_err), "%.200s/%.300s", dir, path);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		/* a writer that accounts for its files numbers them in time order
		 * (a flight recorder's reused files go by their first time); a
		 * stream of one file has no order to find (no open and read of
		 * its headers: 16,384 of them at 16,384 ranks) */
		order[i] = (struct chain_file){ counted || n == 1 ? file_number(names[i]) :
						first_real_ts(path), i };
	}
	qsort(order, (size_t)n, sizeof(*order), cmp_chain);
	/* the first file that maps opens the cursor; the rest follow it; a
	 * file that does not is damage, reported at the stream's end */
	for (; k < n && !c; k++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[order[k].index]);
		c = rt_vw_cursor_open(path, err, errlen);
		if (!c && !first_err[0])
			snprintf(first_err, sizeof(first_err), "%s", err);
	}
	if (c) {
		if (first_err[0])
			rt_vw_cursor_say(&c->first_err, "%s", first_err);
		c->whole = whole;
		c->counted = counted;
		begin_file(c);
	}
	if (c && k < n) {
		c->chain = calloc((size_t)(n - k), sizeof(*c->chain));
		for (int i = k; c->chain && i < n; i++) {
			snprintf(path, sizeof(path), "%s/%s", dir, names[order[i].index]);
			c->chain[c->nchain] = strdup(path);
			if (c->chain[c->nchain])
				c->nchain++;
		}
	}
	free(order);
	return c;
}

/* The chain's next file becomes current (false: none left). A file that
 * cannot be mapped is noted like damage and skipped. */
bool rt_vw_chain_next_file(struct rt_vw_cursor *c)
{
	while (c->chain && c->ichain < c->nchain) {
		char err[512];
		const char *path = c->chain[c->ichain++];

		if (c->base && c->size)
			munmap((void *)c->base, c->size);
		c->failed = false;
		if (rt_vw_cursor_map(c, path, err, sizeof(err)) == 0) {
			begin_file(c);
			return true;
		}
		if (!c->first_err)
			rt_vw_cursor_say(&c->first_err, "%s", err);
	}
	return false;
}

