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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "encode.h"
#include "reader_int.h"

#define RT_DROP_BYTES ((size_t)1 << 20)


static char say_oom[] = "(damage found; no memory left to say what)";

void rt_vw_cursor_say(char **slot, const char *fmt, ...)
{
	va_list ap;

	if (!*slot && !(*slot = malloc(RT_VW_SAY_BYTES))) {
		*slot = say_oom;
		return;
	}
	if (*slot == say_oom)
		return;
	va_start(ap, fmt);
	vsnprintf(*slot, RT_VW_SAY_BYTES, fmt, ap);
	va_end(ap);
}

void rt_vw_cursor_unsay(char **slot)
{
	if (*slot != say_oom)
		free(*slot);
	*slot = NULL;
}

struct rt_vw_cursor *rt_vw_cursor_mem(const struct rt_vw_event *ev, size_t n, uint64_t discarded)
{
	struct rt_vw_cursor *c = calloc(1, sizeof(*c));

	if (!c || !(c->path = strdup("(lttng)"))) {
		free(c);
		return NULL;
	}
	c->mem = ev;
	c->mem_n = n;
	c->info.discarded = discarded;
	return c;
}

/* The first packet's header of the stream's first file (the first one
 * mapped), read while the file is open (one pread, no page of the mapping
 * touched): the time its first event should come at and the pace of its
 * records, for a caller that plans before it reads (rt_vw_cursor_peek). A header that does not
 * read as a used packet's is left to the read to report. */
static void peek(struct rt_vw_cursor *c, int fd)
{
	uint8_t hdr[RT_PACKET_HEADER_BYTES];
	struct rt_fmt_packet h;

	if (c->peek_tried)
		return; /* the stream's first file only */
	c->peek_tried = true;
	if (c->size < sizeof(hdr) ||
	    pread(fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) || !rt_fmt_packet_get(hdr, &h))
		return;
	if (h.ts_begin >= RT_TS_UNUSED || h.ts_end >= RT_TS_UNUSED || h.ts_end <= h.ts_begin ||
	    h.content_bytes <= RT_PACKET_HEADER_BYTES || h.content_bytes > h.packet_bytes)
		return;
	c->peek_ts = h.ts_begin;
	c->peek_bytes = h.content_bytes - RT_PACKET_HEADER_BYTES;
	c->peek_ns = h.ts_end - h.ts_begin;
	c->peeked = true;
}

bool rt_vw_cursor_peek(const struct rt_vw_cursor *c, uint64_t *ts, uint64_t *bytes, uint64_t *ns)
{
	if (!c || !c->peeked)
		return false;
	*ts = c->peek_ts;
	*bytes = c->peek_bytes;
	*ns = c->peek_ns;
	return true;
}

/* Map path into c (read-only): 0, or -1 with err set. */
int rt_vw_cursor_map(struct rt_vw_cursor *c, const char *path, char *err, size_t errlen)
{
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
	struct stat st;
	char *own = strdup(path);
	int fd;

	if (!own) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	free(c->path);
	c->path = own;
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
	/* asked while the file is open anyway: a stream file's lock is taken
	 * before it is named and only ever released, so one seen unlocked
	 * stays so (the live state after the pass needs no open of it) */
	c->unlocked = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type == F_UNLCK;
	peek(c, fd);
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
	if (rt_vw_cursor_map(c, path, err, errlen) != 0) {
		rt_vw_cursor_close(c);
		return NULL;
	}
	return c;
}

int rt_vw_cursor_fail(struct rt_vw_cursor *c, size_t at, const char *what)
{
	rt_vw_cursor_say(&c->err, "%s: offset %zu: %s", c->path, at, what);
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

/* Zeros lost from the page cache or a sparse copy come a page at a time,
 * page-aligned; records never make a run of RT_ZERO_RUN zero bytes (a
 * record all zero past its header is RT_EVENT_MAX_BYTES at most, and a
 * header holds its event's id or time). The first page-aligned run of
 * zeros inside the content of the packet at c->pkt, of a full page or to the
 * content's end if at least RT_ZERO_RUN bytes; SIZE_MAX: none. Reads one
 * word per page of ordinary records. */
#define RT_ZERO_PAGE 4096u
#define RT_ZERO_RUN 512u
_Static_assert(RT_ZERO_RUN > 2 * RT_EVENT_MAX_BYTES, "a zero run records can make");
static size_t zero_page(const struct rt_vw_cursor *c)
{
	size_t end = c->pkt + c->content;

	for (size_t at = c->pkt + RT_ZERO_PAGE; at < end; at += RT_ZERO_PAGE) {
		size_t n = end - at < RT_ZERO_PAGE ? end - at : RT_ZERO_PAGE;

		if (n >= RT_ZERO_RUN && rt_fmt_get64(c->base + at) == 0 && all_zero(c->base + at, n))
			return at;
	}
	return SIZE_MAX;
}

/* Load the packet at c->pkt (after the previous one). 0: end of file. */
static int load_packet(struct rt_vw_cursor *c)
{
	const uint8_t *p;
	struct rt_fmt_packet h;
	uint64_t psize, content;
	size_t zeros;

	if (c->pkt >= c->size)
		return 0;
	if (c->size - c->pkt < RT_PACKET_HEADER_BYTES)
		return rt_vw_cursor_fail(c, c->pkt, "truncated packet header");
	p = c->base + c->pkt;
	if (rt_fmt_packet_magic(p) == 0 && !c->whole && c->size - c->pkt <= RT_ZERO_TAIL_MAX &&
	    all_zero(p, c->size - c->pkt))
		return 0; /* a packet never written (writers before the files were
			   * made whole before use left one when killed): the end */
	if (!rt_fmt_packet_get(p, &h)) {
		char what[200];

		if (rt_fmt_packet_magic(p) == 0 && c->whole)
			snprintf(what, sizeof(what), "zeros where a packet should start, and this "
				 "trace's writer leaves none: the records from here to the next packet "
				 "are lost (zero-filled after a crash, a sparse copy?)");
		else if (rt_fmt_packet_magic(p) == 0 && c->size - c->pkt > RT_ZERO_TAIL_MAX)
			snprintf(what, sizeof(what), "zeros where a packet should start, %zu bytes to "
				 "the end: more than a packet never written (a zero-filled or sparse file)",
				 c->size - c->pkt);
		else
			snprintf(what, sizeof(what), "bad packet magic 0x%08x", rt_fmt_packet_magic(p));
		return rt_vw_cursor_fail(c, c->pkt, what);
	}
	psize = h.packet_bytes;
	content = h.content_bytes;
	if (psize < RT_MIN_PACKET_BYTES || content < RT_PACKET_HEADER_BYTES ||
	    content > psize || psize > c->size - c->pkt) {
		char what[160];

		snprintf(what, sizeof(what), "packet sizes out of bounds (packet %llu, content %llu "
			 "bytes, %zu left in the file)", (unsigned long long)psize,
			 (unsigned long long)content, c->size - c->pkt);
		return rt_vw_cursor_fail(c, c->pkt, what);
	}
	/* a used packet's end time: no clock reads 2^62 ns (146 years) or more
	 * (2^64-1 read as a packet open for ever). Begin and end are not
	 * compared: retimed traces keep their order (damage corpus 2). */
	if (h.ts_begin != RT_TS_UNUSED && h.ts_end >= RT_TS_UNUSED) {
		char what[160];

		snprintf(what, sizeof(what), "impossible packet end time %llu ns (a time no clock "
			 "reaches): corrupted", (unsigned long long)h.ts_end);
		return rt_vw_cursor_fail(c, c->pkt, what);
	}
	c->psize = (size_t)psize;
	c->content = (size_t)content;
	c->off = RT_PACKET_HEADER_BYTES;
	c->clock = c->ts_begin = h.ts_begin;
	c->ts_end = h.ts_end;
	c->pid = h.pid;
	c->tid = h.tid;
	c->info.packets++;
	c->info.pid = c->pid;
	c->info.tid = c->tid;
	if (c->whole && (zeros = zero_page(c)) != SIZE_MAX)
		return rt_vw_cursor_fail(c, zeros, "a page of zeros inside a packet's records, and "
					 "this trace's writer writes none: records lost (zero-filled after "
					 "a crash, a sparse copy?)");
	/* a packet prepared ahead and never used holds no events, and its
	 * counter may predate the last real packet's */
	if (h.ts_begin != RT_TS_UNUSED)
		c->info.discarded = h.discarded;
	return 1;
}

/* A read fault maps the page cache's whole folio around it, pages before
 * those already dropped too (up to 2 MiB with large folios; 192-432 KiB
 * measured on this VM's ext4): each drop starts that far back, or those
 * pages stay mapped for good (4,096 paused cursors held 850 MB of them). */
#define RT_REMAP_BACK ((size_t)2 << 20)

/* From where pages may be mapped again though dropped. */
static size_t drop_from(const struct rt_vw_cursor *c)
{
	return c->dropped > RT_REMAP_BACK ? c->dropped - RT_REMAP_BACK : 0;
}

/* Drop from memory the pages of the packets read so far once they are
 * `least` bytes; the current packet's pages stay. Each madvise is a TLB
 * shootdown on the other threads' cores: not one per packet. */
static void drop_upto(struct rt_vw_cursor *c, size_t to)
{
	if (c->base && to > c->dropped) {
		size_t from = drop_from(c);

		madvise((void *)(c->base + from), to - from, MADV_DONTNEED);
		c->dropped = to;
	}
}

static void drop_read(struct rt_vw_cursor *c, size_t least)
{
	size_t to = c->pkt & ~(size_t)4095;

	if (to >= c->dropped + least)
		drop_upto(c, to);
}

/* The next record of the current file (rt_stream_file included). */
static int next_record(struct rt_vw_cursor *c, struct rt_vw_event *e)
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
	/* inside a packet too: a stream's packet may be all of its file
	 * (256 KiB), read a little each round of the pass */
	if (c->drop_every && c->pkt + c->off >= c->dropped + c->drop_every + 4096)
		drop_upto(c, (c->pkt + c->off) & ~(size_t)4095);
	p = c->base + c->pkt;
	left = c->content - c->off;
	if (rt_fmt_event_header_get(p + c->off, left, &eh) != 0)
		return rt_vw_cursor_fail(c, c->pkt + c->off, "event cut short by the end of the packet's content");
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
		return rt_vw_cursor_fail(c, c->pkt + c->off, what);
	}
	if (left < hdr + RT_COMMON_BYTES + rt_events[e->id].size)
		return rt_vw_cursor_fail(c, c->pkt + c->off, "event cut short by the end of the packet's content");
	e->ts = c->clock;
	/* a record is committed with its packet's end time at or after it:
	 * past it, the bytes were not written as records (zeros decode as a
	 * compact header whose time wraps) */
	if (c->whole && e->ts > c->ts_end)
		return rt_vw_cursor_fail(c, c->pkt + c->off, "a record after its packet's end time: "
					 "zeros or other bytes its writer never wrote (records lost)");
	rt_fmt_event_common_get(p + c->off + hdr, &e->dur, &r, &dev);
	/* only a call is written pending; a tracer record reading so is damage */
	e->pending = e->dur == RT_DUR_PENDING && rt_id_is_api(e->id);
	e->ret = r;
	e->dev = dev;
	e->fields = p + c->off + hdr + RT_COMMON_BYTES;
	e->pid = c->pid;
	e->tid = c->tid;
	if (c->whole && rt_vw_chain_check(c, e, c->pkt + c->off) != 0)
		return -1;
	if (rt_vw_dev_check(c, e, c->pkt + c->off) != 0)
		return -1;
	c->off += hdr + RT_COMMON_BYTES + rt_events[e->id].size;
	return 1;
}

/* The next event of the current file: a file's rt_stream_file is the
 * store's bookkeeping (checked above), not an event of the program's. */
static int next_in_file(struct rt_vw_cursor *c, struct rt_vw_event *e)
{
	int rc;

	while ((rc = next_record(c, e)) == 1 && e->id == RT_ID_rt_stream_file)
		;
	if (rc == 1)
		c->info.events++;
	return rc;
}

void rt_vw_cursor_set_drop(struct rt_vw_cursor *c, size_t every)
{
	c->drop_every = every;
}

/* A read fault maps the pages around it (the kernel's fault-around, 64 KiB):
 * thousands of cursors paused between rounds each held that much. Unmap
 * what is mapped past the pages dropped; what is read next faults in again
 * from the page cache. */
bool rt_vw_cursor_pace(const struct rt_vw_cursor *c, uint64_t *bytes, uint64_t *ns)
{
	if (!c || c->mem || !c->content || c->ts_begin >= RT_TS_UNUSED || c->ts_end <= c->ts_begin)
		return false;
	*bytes = c->content - RT_PACKET_HEADER_BYTES;
	*ns = c->ts_end - c->ts_begin;
	return true;
}

bool rt_vw_cursor_release_range(const struct rt_vw_cursor *c, void **addr, size_t *len)
{
	if (!c || !c->base || c->mem || c->size <= c->dropped)
		return false;
	*addr = (void *)(c->base + drop_from(c));
	*len = c->size - drop_from(c);
	return true;
}

void rt_vw_cursor_release(struct rt_vw_cursor *c)
{
	void *addr;
	size_t len;

	if (rt_vw_cursor_release_range(c, &addr, &len))
		madvise(addr, len, MADV_DONTNEED);
}

/* The stream has ended: its last file unmapped (or kept: ended);
 * reading on finds nothing. */
static void unmap(struct rt_vw_cursor *c)
{
	if (c->keep_mapped && c->base && c->size) {
		c->ended = true;
		return;
	}
	if (c->base && c->size)
		munmap((void *)c->base, c->size);
	c->base = NULL;
	c->size = c->pkt = c->content = c->psize = c->off = c->dropped = 0;
}

void rt_vw_cursor_keep_mapped(struct rt_vw_cursor *c)
{
	c->keep_mapped = true;
}

bool rt_vw_cursor_ended_range(struct rt_vw_cursor *c, void **addr, size_t *len)
{
	if (!c->ended || c->ended_given || !rt_vw_cursor_release_range(c, addr, len))
		return false;
	c->ended_given = true;
	return true;
}

const char *rt_vw_cursor_unlocked_file(const struct rt_vw_cursor *c)
{
	const char *slash;

	if (!c || !c->path || !c->unlocked)
		return NULL;
	slash = strrchr(c->path, '/');
	return slash ? slash + 1 : c->path;
}

bool rt_vw_cursor_take_map(struct rt_vw_cursor *c, void **addr, size_t *len)
{
	if (!c || !c->base || !c->size || c->mem)
		return false;
	*addr = (void *)c->base;
	*len = c->size;
	c->base = NULL;
	c->size = c->pkt = c->content = c->psize = c->off = c->dropped = 0;
	c->ended = true;
	return true;
}

int rt_vw_cursor_next(struct rt_vw_cursor *c, struct rt_vw_event *e)
{
	if (c->ended)
		return 0;
	for (;;) {
		int rc = next_in_file(c, e);

		if (rc == 1)
			return 1;
		if (rc < 0 && !c->first_err)
			rt_vw_cursor_say(&c->first_err, "%s", rt_vw_cursor_error(c));
		if (!rt_vw_chain_next_file(c)) {
			unmap(c); /* here, on the reading thread, not all at close */
			if (!c->first_err)
				return rc;
			/* damage anywhere in the stream is reported once all of
			 * it was read: events after it are not lost */
			rt_vw_cursor_say(&c->err, "%s", c->first_err);
			c->failed = true;
			return -1;
		}
	}
}

const char *rt_vw_cursor_error(const struct rt_vw_cursor *c)
{
	return c->err ? c->err : "";
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
	free(c->path);
	rt_vw_cursor_unsay(&c->err);
	rt_vw_cursor_unsay(&c->first_err);
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
		snprintf(err, errlen, "%s", rt_vw_cursor_error(c));
	rt_vw_cursor_close(c);
	return rc < 0 ? -1 : 0;
}
