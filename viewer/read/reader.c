/* SPDX-License-Identifier: MIT */
/* reader.c - decode ranktrace's CTF stream files without libbabeltrace2.
 *
 * Knows the layout from format/schema.h (the same table the writer used) and
 * checks every length against the file: a truncated or corrupted file ends
 * the read with a message naming the file and byte offset, never a crash.
 * Memory: the file is mapped read-only and the pages read are dropped
 * (madvise) every RT_DROP_BYTES (the parallel pass sets it from its
 * budget): a madvise per packet cost more than decoding it, and on several
 * threads each one is a TLB shootdown; nothing grows with the file's size. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "encode.h"
#include "reader.h"

#define RT_DROP_BYTES ((size_t)1 << 20)
/* Zeros where a packet should start are the end of the stream only as a
 * packet never written (an old writer, killed after extending its file by
 * one): one packet, 256 KiB at most (tracer/chunk.c), 1 MiB with room.
 * More is a zero-filled or sparse file: damage, found without reading it. */
#define RT_ZERO_TAIL_MAX ((size_t)1 << 20)
/* The smallest packet: writers make 8 KiB and more (tracer/chunk.c), the
 * tests 4 KiB. Smaller ones are damage, and no scan walks a file a few
 * bytes at a time (8 GiB of 80-byte packets: 100 million reads). */
#define RT_MIN_PACKET_BYTES 4096u

struct rt_vw_cursor {
	char path[4200];
	const uint8_t *base;
	size_t size;
	size_t pkt;      /* offset of the current packet */
	size_t content;  /* its content size in bytes (0: no packet loaded) */
	size_t psize;
	size_t off;      /* offset within the packet */
	size_t dropped;  /* the pages before it are dropped from memory */
	size_t drop_every; /* read bytes dropped at once (0: RT_DROP_BYTES) */
	uint64_t clock;
	uint32_t pid, tid;
	struct rt_vw_stream_info info;
	char err[512];
	bool failed;
	const struct rt_vw_event *mem; /* rt_vw_cursor_mem: events already decoded */
	size_t mem_n, mem_i;
	/* the stream's further files (rt_vw_cursor_open_chain), in time order */
	char **chain;
	int nchain, ichain;
	char first_err[512]; /* a damaged file of the chain: reported at its end */
};

struct rt_vw_cursor *rt_vw_cursor_mem(const struct rt_vw_event *ev, size_t n, uint64_t discarded)
{
	struct rt_vw_cursor *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->mem = ev;
	c->mem_n = n;
	c->info.discarded = discarded;
	snprintf(c->path, sizeof(c->path), "(lttng)");
	return c;
}

/* Map path into c (read-only): 0, or -1 with err set. */
static int map_file(struct rt_vw_cursor *c, const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	snprintf(c->path, sizeof(c->path), "%s", path);
	c->base = NULL;
	c->size = c->pkt = c->content = c->psize = c->off = c->dropped = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: %s", path, fd >= 0 || errno == ELOOP ?
			 "not a regular file: skipped" : strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (st.st_size == 0) { /* files are published whole (tracer/chunk.c) */
		snprintf(err, errlen, "%s: offset 0: empty (0 bytes), yet stream files are published whole: its "
			 "events are lost (a crash or power loss before its blocks were written?)", path);
		close(fd);
		return -1;
	}
	c->size = (size_t)st.st_size;
	if (c->size > 0) {
		c->base = mmap(NULL, c->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (c->base == MAP_FAILED) {
			snprintf(err, errlen, "%s: cannot map: %s", path, strerror(errno));
			c->base = NULL;
			c->size = 0;
			close(fd);
			return -1;
		}
	}
	close(fd);
	return 0;
}

struct rt_vw_cursor *rt_vw_cursor_open(const char *path, char *err, size_t errlen)
{
	struct rt_vw_cursor *c = calloc(1, sizeof(*c));

	if (!c) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	if (map_file(c, path, err, errlen) != 0) {
		free(c);
		return NULL;
	}
	return c;
}

static int fail(struct rt_vw_cursor *c, size_t at, const char *what)
{
	snprintf(c->err, sizeof(c->err), "%s: offset %zu: %s", c->path, at, what);
	c->failed = true;
	return -1;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Load the packet at c->pkt (after the previous one). 0: end of file. */
static int load_packet(struct rt_vw_cursor *c)
{
	const uint8_t *p;
	struct rt_fmt_packet h;
	uint64_t psize, content;

	if (c->pkt >= c->size)
		return 0;
	if (c->size - c->pkt < RT_PACKET_HEADER_BYTES)
		return fail(c, c->pkt, "truncated packet header");
	p = c->base + c->pkt;
	if (rt_fmt_packet_magic(p) == 0 && c->size - c->pkt <= RT_ZERO_TAIL_MAX &&
	    all_zero(p, c->size - c->pkt))
		return 0; /* a packet never written (writers before the files were
			   * made whole before use left one when killed): the end */
	if (!rt_fmt_packet_get(p, &h)) {
		char what[160];

		if (rt_fmt_packet_magic(p) == 0 && c->size - c->pkt > RT_ZERO_TAIL_MAX)
			snprintf(what, sizeof(what), "zeros where a packet should start, %zu bytes to "
				 "the end: more than a packet never written (a zero-filled or sparse file)",
				 c->size - c->pkt);
		else
			snprintf(what, sizeof(what), "bad packet magic 0x%08x", rt_fmt_packet_magic(p));
		return fail(c, c->pkt, what);
	}
	psize = h.packet_bytes;
	content = h.content_bytes;
	if (psize < RT_MIN_PACKET_BYTES || content < RT_PACKET_HEADER_BYTES ||
	    content > psize || psize > c->size - c->pkt) {
		char what[160];

		snprintf(what, sizeof(what), "packet sizes out of bounds (packet %llu, content %llu "
			 "bytes, %zu left in the file)", (unsigned long long)psize,
			 (unsigned long long)content, c->size - c->pkt);
		return fail(c, c->pkt, what);
	}
	c->psize = (size_t)psize;
	c->content = (size_t)content;
	c->off = RT_PACKET_HEADER_BYTES;
	c->clock = h.ts_begin;
	c->pid = h.pid;
	c->tid = h.tid;
	c->info.packets++;
	c->info.pid = c->pid;
	c->info.tid = c->tid;
	/* a packet prepared ahead and never used holds no events, and its
	 * counter may predate the last real packet's */
	if (h.ts_begin != RT_TS_UNUSED)
		c->info.discarded = h.discarded;
	return 1;
}

/* Drop from memory the pages of the packets read so far once they are
 * `least` bytes; the current packet's pages stay. Each madvise is a TLB
 * shootdown on the other threads' cores: not one per packet. */
static void drop_read(struct rt_vw_cursor *c, size_t least)
{
	size_t to = c->pkt & ~(size_t)4095;

	if (c->base && to >= c->dropped + least && to > c->dropped) {
		madvise((void *)(c->base + c->dropped), to - c->dropped, MADV_DONTNEED);
		c->dropped = to;
	}
}

static int next_in_file(struct rt_vw_cursor *c, struct rt_vw_event *e)
{
	const uint8_t *p;
	size_t left;
	struct rt_fmt_header eh;
	unsigned hdr;
	int16_t r;
	int8_t dev;

	if (c->mem) {
		if (c->mem_i >= c->mem_n)
			return 0;
		*e = c->mem[c->mem_i++];
		c->info.events++;
		return 1;
	}

	if (c->failed)
		return -1;
	while (c->content == 0 || c->off >= c->content) {
		int rc;

		if (c->content) { /* next packet; drop the pages read, drop_every at once */
			c->pkt += c->psize;
			drop_read(c, c->drop_every ? c->drop_every : RT_DROP_BYTES);
			c->content = 0;
		}
		rc = load_packet(c);
		if (rc <= 0)
			return rc;
	}
	p = c->base + c->pkt;
	left = c->content - c->off;
	if (rt_fmt_event_header_get(p + c->off, left, &eh) != 0)
		return fail(c, c->pkt + c->off, "event cut short by the end of the packet's content");
	e->id = eh.id;
	hdr = eh.bytes;
	if (eh.extended) {
		c->clock = eh.ts;
	} else {
		uint32_t low = (uint32_t)eh.ts;

		/* CTF: a narrower clock field updates the low bits, wrapping once */
		if (low < (uint32_t)c->clock)
			c->clock += 1ull << 32;
		c->clock = (c->clock & ~0xffffffffull) | low;
	}
	if (e->id >= RT_ID_COUNT) {
		char what[96];

		snprintf(what, sizeof(what), "unknown event id %u (corrupted, or another schema)", e->id);
		return fail(c, c->pkt + c->off, what);
	}
	if (left < hdr + RT_COMMON_BYTES + rt_events[e->id].size)
		return fail(c, c->pkt + c->off, "event cut short by the end of the packet's content");
	e->ts = c->clock;
	rt_fmt_event_common_get(p + c->off + hdr, &e->dur, &r, &dev);
	/* only a call is written pending; a tracer record reading so is damage */
	e->pending = e->dur == RT_DUR_PENDING && e->id < RT_ID_FIRST_TRACER;
	e->ret = r;
	e->dev = dev;
	e->fields = p + c->off + hdr + RT_COMMON_BYTES;
	e->pid = c->pid;
	e->tid = c->tid;
	c->off += hdr + RT_COMMON_BYTES + rt_events[e->id].size;
	c->info.events++;
	return 1;
}

/* The chain's next file becomes current (false: none left). A file that
 * cannot be mapped is noted like damage and skipped. */
static bool next_file(struct rt_vw_cursor *c)
{
	while (c->chain && c->ichain < c->nchain) {
		char err[512];
		const char *path = c->chain[c->ichain++];

		if (c->base && c->size)
			munmap((void *)c->base, c->size);
		c->failed = false;
		if (map_file(c, path, err, sizeof(err)) == 0)
			return true;
		if (!c->first_err[0])
			snprintf(c->first_err, sizeof(c->first_err), "%s", err);
	}
	return false;
}

void rt_vw_cursor_set_drop(struct rt_vw_cursor *c, size_t every)
{
	c->drop_every = every;
}

/* The stream has ended: its last file unmapped; reading on finds nothing. */
static void unmap(struct rt_vw_cursor *c)
{
	if (c->base && c->size)
		munmap((void *)c->base, c->size);
	c->base = NULL;
	c->size = c->pkt = c->content = c->psize = c->off = c->dropped = 0;
}

int rt_vw_cursor_next(struct rt_vw_cursor *c, struct rt_vw_event *e)
{
	for (;;) {
		int rc = next_in_file(c, e);

		if (rc == 1)
			return 1;
		if (rc < 0 && !c->first_err[0])
			snprintf(c->first_err, sizeof(c->first_err), "%s", c->err);
		if (!next_file(c)) {
			unmap(c); /* here, on the reading thread, not all at close */
			if (!c->first_err[0])
				return rc;
			/* damage anywhere in the stream is reported once all of
			 * it was read: events after it are not lost */
			snprintf(c->err, sizeof(c->err), "%s", c->first_err);
			c->failed = true;
			return -1;
		}
	}
}

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
					     char *err, size_t errlen)
{
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
		order[i] = (struct chain_file){ first_real_ts(path), i };
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
	if (c)
		snprintf(c->first_err, sizeof(c->first_err), "%s", first_err);
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

const char *rt_vw_cursor_error(const struct rt_vw_cursor *c)
{
	return c->err;
}

const char *rt_vw_cursor_path(const struct rt_vw_cursor *c)
{
	return c->path;
}

const struct rt_vw_stream_info *rt_vw_cursor_info(const struct rt_vw_cursor *c)
{
	return &c->info;
}

void rt_vw_cursor_close(struct rt_vw_cursor *c)
{
	if (!c)
		return;
	if (c->base && c->size)
		munmap((void *)c->base, c->size);
	for (int i = 0; i < c->nchain; i++)
		free(c->chain[i]);
	free(c->chain);
	free(c);
}

int rt_vw_read_stream(const char *path, rt_vw_event_fn fn, void *arg,
		      struct rt_vw_stream_info *info, char *err, size_t errlen)
{
	struct rt_vw_cursor *c = rt_vw_cursor_open(path, err, errlen);
	struct rt_vw_event e;
	int rc;

	if (info)
		memset(info, 0, sizeof(*info));
	if (!c)
		return -1;
	while ((rc = rt_vw_cursor_next(c, &e)) == 1)
		if (fn && fn(&e, arg))
			break;
	if (info)
		*info = c->info;
	if (rc < 0)
		snprintf(err, errlen, "%s", c->err);
	rt_vw_cursor_close(c);
	return rc < 0 ? -1 : 0;
}
