/* SPDX-License-Identifier: MIT */
/* trace_dir.c - a trace directory's layout, beside the stream decoder
 * (reader.c): each rank's metadata (the `env` and `clock` blocks of its CTF
 * metadata: who the rank is, its clock's offset and boot), the rank
 * directories and stream files listed in name order, whether a stream is
 * still written (the tracer's open file description lock), and "now" on
 * the trace's clock. Every file is opened as a regular file only: a FIFO,
 * a symlink or a device in a trace is refused, never followed or waited on. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "reader.h"
#include "rt_util.h"

#define RT_VW_MAX_METADATA (1 << 20) /* ours are a few KiB */

/* open(path) for reading a regular file only: a FIFO (open would block), a
 * symlink (to /dev/zero, or out of the trace) or a device is refused. The
 * descriptor and its size then (*size), or -1 with err set. */
static int open_regular(const char *path, size_t *size, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;

	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, errno == ELOOP ? "a symbolic link, not a "
			 "regular file: skipped" : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file: skipped", path);
		close(fd);
		return -1;
	}
	*size = (size_t)st.st_size;
	return fd;
}

/* Up to n bytes of fd into buf (read(2) to its end or n): how many, or -1.
 * Once the size the file had when opened is read (size < n), no read more
 * to see its end (16,384 metadata files: a system call each): what grew
 * since is not there, as if read a moment before. */
static ssize_t read_upto(int fd, char *buf, size_t n, size_t size)
{
	size_t got = 0;

	while (got < n && !(got == size && size > 0 && size < n)) {
		ssize_t k = read(fd, buf + got, n - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (ssize_t)got;
}

/* The whole metadata file at path, NUL-terminated (malloc'd, *n bytes):
 * NULL with err set when it is not a regular file, too large or unreadable.
 * Plain read(2)s, no stdio stream (a descriptor flag read and a buffer
 * allocated per file, 16,384 of them at 16,384 ranks). */
static char *slurp(const char *path, size_t *n, char *reuse, char *err, size_t errlen)
{
	size_t size = 0;
	int fd = open_regular(path, &size, err, errlen);
	char *buf = fd >= 0 ? (reuse ? reuse : malloc(RT_VW_MAX_METADATA + 1)) : NULL;
	ssize_t got = 0;

	if (fd >= 0 && !buf)
		snprintf(err, errlen, "%s: out of memory", path);
	if (buf)
		got = read_upto(fd, buf, RT_VW_MAX_METADATA + 1, size);
	*n = got > 0 ? (size_t)got : 0;
	if (buf && (got < 0 || *n > RT_VW_MAX_METADATA)) {
		snprintf(err, errlen, "%s: %s", path, got < 0 ? "read error" :
			 "over 1 MiB: not a ranktrace metadata (ours are a few KiB)");
		if (buf != reuse)
			free(buf);
		buf = NULL;
	}
	if (buf)
		buf[*n] = '\0';
	if (fd >= 0)
		close(fd);
	return buf;
}

/* Is s (n bytes) a whole CTF metadata of this schema? A cut anywhere leaves
 * a string or a block open, or blocks or events missing; a NUL byte ends
 * the text early: babeltrace2 rejects each, and so does this (why says how). */
/* Where tsdl_whole's scan stands: brace depth, inside a string, events
 * counted, the last byte that is not white space. */
struct tsdl_scan {
	int depth, events;
	bool in_str;
	size_t last, i;
};

/* isspace in the C locale, without a call and a table per byte */
static bool c_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

static void tsdl_scan(const char *s, size_t n, struct tsdl_scan *st)
{
	/* the state in locals: s's bytes may alias *st, so a loop on st's
	 * fields stored and loaded them at every byte */
	struct tsdl_scan v = *st;
	size_t i;

	for (i = v.i; i < n && v.depth >= 0; i++) {
		if (v.in_str) { /* "...\"..." */
			if (s[i] == '\\')
				i++;
			else
				v.in_str = s[i] != '"';
			continue;
		}
		if (s[i] != '"' && s[i] != '{' && s[i] != '}' && s[i] != '\n') {
			/* a run of bytes that move nothing but the last one not
			 * white space (strcspn: s is NUL-terminated; the run is
			 * cut at n): a test a byte was 13 % of reading 16,384
			 * ranks' metadata */
			size_t end = i + strcspn(s + i, "\"{}\n");

			if (end == i) { /* a NUL (the caller refuses them): a byte */
				v.last = i;
				continue;
			}
			end = end < n ? end : n;
			for (size_t b = end; b > i; b--)
				if (!c_space(s[b - 1])) {
					v.last = b - 1;
					break;
				}
			i = end - 1;
			continue;
		}
		v.in_str = s[i] == '"';
		v.depth += (s[i] == '{') - (s[i] == '}');
		/* the byte compared first: a call per byte of a rank's 2 KB
		 * before its stream block was 1 % of a 16k-rank verdict */
		v.events += v.depth == 0 && s[i] == '\n' && !strncmp(s + i, "\nevent {", 8);
		v.last = s[i] == '\n' ? v.last : i;
	}
	v.i = i;
	*st = v;
}

/* Where a metadata's shared part (its first stream block on) begins, and
 * whether it is byte for byte the part the cache holds: found once, asked
 * by the env read and by the scan. */
struct tsdl_tail {
	const char *at;    /* "\nstream {", or NULL */
	size_t n;          /* bytes from there to the end */
	bool same;         /* c holds those bytes */
};

static struct tsdl_tail tail_of(const char *s, size_t n, const struct rt_vw_meta_cache *c)
{
	struct tsdl_tail t = { strstr(s, "\n" RT_VW_META_TAIL), 0, false };

	if (t.at) {
		t.n = n - (size_t)(t.at - s);
		t.same = c && c->tail && c->tail_n == t.n && !memcmp(c->tail, t.at, t.n);
	}
	return t;
}

/* The scan of s to its end, the part from its first stream block on taken
 * from c when it is byte for byte the part c holds (every rank's schema is
 * the same: 19 KB of event declarations per rank, scanned once) and the scan
 * reaches it outside any block or string, as it reached c's. */
static void tsdl_scan_cached(const char *s, size_t n, struct rt_vw_meta_cache *c, const struct tsdl_tail *tl,
			     struct tsdl_scan *st)
{
	const char *tail = tl->at;
	size_t at = tail ? (size_t)(tail - s) : n;

	tsdl_scan(s, at, st);
	if (c && tail && st->i == at && st->depth == 0 && !st->in_str && tl->same) {
		st->events += c->tail_events;
		st->last = at + c->tail_last;
		st->depth = c->tail_depth;
		st->in_str = false;
		st->i = n;
		return;
	}
	if (c && tail && st->i == at && st->depth == 0 && !st->in_str) { /* remember this one */
		struct tsdl_scan t = { 0 };
		char *copy = malloc(n - at + 1);

		tsdl_scan(tail, n - at, &t);
		if (copy && !t.in_str && t.i == n - at && t.last >= 1) {
			free(c->tail);
			c->tail = memcpy(copy, tail, n - at);
			c->tail_n = n - at;
			c->tail_events = t.events;
			c->tail_last = t.last;
			c->tail_depth = t.depth;
			c->tail_env = strstr(tail, "\nenv {") || strstr(tail, "\nclock {") ||
				      strstr(tail, "\ntrace {") || strstr(tail, "\n\tevent_count = ");
		} else {
			free(copy);
		}
	}
	tsdl_scan(s, n, st);
}

static bool tsdl_whole(const char *s, size_t n, struct rt_vw_meta_cache *c, const struct tsdl_tail *tl,
		       char *why, size_t whylen)
{
	static const char *const blocks[] = { "\ntrace {", "\nenv {", "\nclock {", "\nstream {" };
	struct tsdl_scan st = { 0 };
	int depth, events;
	bool in_str;
	size_t last; /* the last byte that is not white space */
	/* none when the tail is the cache's: strstr found it, so no NUL came
	 * before it, and the cache holds none (it is filled past this check) */
	const char *nul = tl->same ? NULL : memchr(s, '\0', n);

	if (nul) {
		snprintf(why, whylen, "a NUL byte at offset %zu", (size_t)(nul - s));
		return false;
	}
	tsdl_scan_cached(s, n, c, tl, &st);
	depth = st.depth;
	events = st.events;
	in_str = st.in_str;
	last = st.last;
	if (depth || in_str || last < 1 || s[last] != ';' || s[last - 1] != '}') {
		snprintf(why, whylen, depth < 0 ? "a block closed that was never opened" :
			 "cut short: it ends inside a %s", in_str ? "string" : "block");
		return false;
	}
	for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++)
		if (!strstr(s, blocks[b])) {
			snprintf(why, whylen, "no \"%s}\" block: cut short", blocks[b] + 1);
			return false;
		}
	/* Events are only ever appended to the schema: an older tracer declared
	 * fewer, and said nothing of how many; ours say (event_count), so a cut
	 * between two event blocks is told from an older trace. */
	const char *count = strstr(s, "\n\tevent_count = ");
	int want = count ? atoi(count + 15) : events;

	if (events != want || events < 1 || events > RT_ID_COUNT) {
		snprintf(why, whylen, "it declares %d events, %s %d: cut short, or another schema",
			 events, count ? "its env block" : "this schema at most",
			 count ? want : RT_ID_COUNT);
		return false;
	}
	return true;
}

/* The clock offset: a damaged metadata's may be anything, and signed
 * overflow is undefined (the fuzzer's UBSan): it wraps, as no real one does. */
static void add_offset(struct rt_vw_rank_meta *m, uint64_t ns)
{
	m->clock_offset_ns = (int64_t)((uint64_t)m->clock_offset_ns + ns);
}

static size_t skip_space(const char *s, size_t i)
{
	while (c_space(s[i]))
		i++;
	return i;
}

int rt_vw_env_line(const char *line, char key[64], char val[128])
{
	size_t i = skip_space(line, 0), k = 0, v = 0;

	while (k < 63 && ((line[i] >= 'a' && line[i] <= 'z') || line[i] == '_'))
		key[k++] = line[i++];
	key[k] = '\0';
	if (!k)
		return line[i] ? 0 : -1; /* sscanf: EOF when the input ends first */
	i = skip_space(line, i);
	if (line[i] != '=')
		return 1;
	i = skip_space(line, i + 1);
	while (v < 127 && line[i] && line[i] != ';' && line[i] != '\n')
		val[v++] = line[i++];
	val[v] = '\0';
	return v ? 2 : 1;
}

/* The env and clock blocks' facts into m, from inside
 * such a block when in_env (s's first len bytes); whether its end is inside one.
 * Each line is scanned (rt_vw_env_line) with its newline made a NUL for
 * the while, then put back. */
static bool parse_env(char *s, size_t len, bool in_env, struct rt_vw_rank_meta *m)
{
	for (char *line = s, *nl; line < s + len && *line; line = nl + (*nl != 0)) {
		char key[64], val[128], was;
		int got;

		nl = strchrnul(line, '\n'); /* its end, found once */
		was = *nl;
		if (strncmp(line, "env {", 5) == 0 || strncmp(line, "clock {", 7) == 0)
			in_env = true;
		else if (in_env && line[0] == '}')
			in_env = false;
		if (!in_env)
			continue;
		*nl = '\0';
		got = rt_vw_env_line(line, key, val);
		*nl = was;
		if (got != 2)
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
		else if (!strcmp(key, "attempt")) m->attempt = atoi(val);
		else if (!strcmp(key, "python_probe")) m->python_probe = atoi(val);
		else if (!strcmp(key, "python_probe_detail"))
			snprintf(m->python_probe_detail, sizeof(m->python_probe_detail), "%s", val);
		else if (!strcmp(key, "pid")) m->pid = atoi(val);
		else if (!strcmp(key, "ranktrace_schema")) m->schema = atoi(val);
		else if (!strcmp(key, "hostname")) snprintf(m->hostname, sizeof(m->hostname), "%s", val);
		else if (!strcmp(key, "nccl_host")) snprintf(m->nccl_host, sizeof(m->nccl_host), "%s", val);
		else if (!strcmp(key, "ring_bytes")) m->ring_bytes = strtoull(val, NULL, 10);
		else if (!strcmp(key, "file_records")) m->file_records = atoi(val) == 1;
		else if (!strcmp(key, "rank_source")) snprintf(m->rank_source, sizeof(m->rank_source), "%s", val);
		else if (!strcmp(key, "uuid")) snprintf(m->clock_uuid, sizeof(m->clock_uuid), "%s", val);
		else if (!strcmp(key, "offset_s")) add_offset(m, (uint64_t)strtoll(val, NULL, 10) * 1000000000ull);
		else if (!strcmp(key, "offset")) add_offset(m, (uint64_t)strtoll(val, NULL, 10));
	}
	return in_env;
}

/* How much of s parse_env reads: up to the stream block when the part from
 * there is c's, holding no env or clock block (the rest of s is where the
 * ranks differ: who they are, their clocks). */
static size_t env_part(const char *s, size_t n, const struct rt_vw_meta_cache *c, const struct tsdl_tail *tl)
{
	if (!c || !c->tail || c->tail_env || !tl->same)
		return n;
	return (size_t)(tl->at - s);
}

int rt_vw_read_metadata_cached(const char *rank_dir, struct rt_vw_rank_meta *m,
			       struct rt_vw_meta_cache *c, char *err, size_t errlen)
{
	char path[4200], why[160];
	struct tsdl_tail tl;
	size_t n, k;
	char *s;
	int rc = -1;

	memset(m, 0, sizeof(*m));
	m->rank = m->local_rank = m->world_size = -1;
	snprintf(path, sizeof(path), "%s/metadata", rank_dir);
	if (c && !c->buf)
		c->buf = malloc(RT_VW_MAX_METADATA + 1);
	s = slurp(path, &n, c ? c->buf : NULL, err, errlen);
	if (!s)
		return -1;
	tl = tail_of(s, n, c);
	k = env_part(s, n, c, &tl);
	if (parse_env(s, k, false, m) && k < n) /* a block open at the tail: read on */
		parse_env(s + k, n - k, true, m);
	if (m->schema != RT_SCHEMA_VERSION)
		snprintf(err, errlen, "%s: not a ranktrace schema %d trace (found schema %d)", path,
			 RT_SCHEMA_VERSION, m->schema);
	else if (!tsdl_whole(s, n, c, &tl, why, sizeof(why)))
		snprintf(err, errlen, "%s: not whole CTF metadata (%s)", path, why);
	else
		rc = 0;
	if (!c || s != c->buf)
		free(s);
	return rc;
}

int rt_vw_read_metadata(const char *rank_dir, struct rt_vw_rank_meta *m, char *err, size_t errlen)
{
	return rt_vw_read_metadata_cached(rank_dir, m, NULL, err, errlen);
}

void rt_vw_meta_cache_free(struct rt_vw_meta_cache *c)
{
	free(c->buf);
	free(c->tail);
	memset(c, 0, sizeof(*c));
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A getdents64 record (linux_dirent64). */
struct dirent64_rec {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* dir's entries named prefix*, sorted (directories only when want_dirs),
 * and dir's status before they were read (st, when not NULL; zero when it
 * could not be had). Read with getdents64 into a buffer of our own: no
 * DIR stream (an fstat and a 32 KiB buffer each, 16,384 rank directories
 * listed twice). */
static int list(const char *dir, const char *prefix, bool want_dirs, char ***out, struct stat *st)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0, cap = 0;
	size_t plen = strlen(prefix);
	_Alignas(8) char buf[16384];
	char **names = NULL;
	bool full = false;

	*out = NULL;
	if (st)
		memset(st, 0, sizeof(*st));
	if (fd < 0)
		return -1;
	if (st && fstat(fd, st) != 0)
		memset(st, 0, sizeof(*st));
	while (!full) {
		long k = syscall(SYS_getdents64, fd, buf, sizeof(buf));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) /* the end, or an error: what was read so far, as readdir */
			break;
		for (long at = 0; at < k && !full;) {
			const struct dirent64_rec *de = (const void *)(buf + at);
			char path[4200];
			struct stat ls;

			at += de->reclen;
			if (strncmp(de->name, prefix, plen) != 0)
				continue;
			/* a stream file of any type is listed: one that is not a regular
			 * file (a directory, FIFO, symlink) is damage its reader reports,
			 * never a file skipped without a word */
			if (want_dirs && de->type != DT_UNKNOWN && de->type != DT_DIR)
				continue;
			/* the entry's type where the file system gives it (16,384 rank
			 * directories: an lstat each was 1 % of a verdict's CPU) */
			snprintf(path, sizeof(path), "%s/%s", dir, de->name);
			if (want_dirs && de->type == DT_UNKNOWN &&
			    (lstat(path, &ls) != 0 || !S_ISDIR(ls.st_mode)))
				continue;
			if (!RT_GROW(names, n, cap, 16, 0)) {
				full = true;
				break;
			}
			names[n] = strdup(de->name);
			if (names[n])
				n++;
		}
	}
	close(fd);
	if (n)
		qsort(names, (size_t)n, sizeof(*names), cmp_names);
	*out = names;
	return n;
}

int rt_vw_list_streams(const char *rank_dir, char ***names)
{
	return list(rank_dir, "stream-", false, names, NULL);
}

int rt_vw_list_streams_seen(const char *rank_dir, struct rt_vw_listing *l)
{
	struct stat st;

	rt_vw_listing_free(l);
	clock_gettime(CLOCK_REALTIME, &l->at);
	l->n = list(rank_dir, "stream-", false, &l->names, &st);
	l->mtime = st.st_mtim;
	l->ctime = st.st_ctim;
	return l->n;
}

static bool ts_eq(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* a is at least RT_LISTING_AGE_S before b: a change since the listing
 * stamps its directory later than that, on a file system whose clock steps
 * by 2 s at most (FAT's; ext4's by a jiffy, NFSv3 servers' by 1 s) */
#define RT_LISTING_AGE_S 3
static bool ts_old_before(struct timespec a, struct timespec b)
{
	return a.tv_sec + RT_LISTING_AGE_S < b.tv_sec ||
	       (a.tv_sec + RT_LISTING_AGE_S == b.tv_sec && a.tv_nsec <= b.tv_nsec);
}

bool rt_vw_listing_holds(const char *rank_dir, const struct rt_vw_listing *l)
{
	struct stat st;

	if (!l || l->n < 0 || !l->ctime.tv_sec || !ts_old_before(l->mtime, l->at) ||
	    !ts_old_before(l->ctime, l->at) || stat(rank_dir, &st) != 0)
		return false;
	return ts_eq(st.st_mtim, l->mtime) && ts_eq(st.st_ctim, l->ctime);
}

void rt_vw_listing_free(struct rt_vw_listing *l)
{
	free(l->unlocked);
	if (l->names)
		rt_vw_free_names(l->names, l->n > 0 ? l->n : 0);
	*l = (struct rt_vw_listing){ .n = -1 };
}

int rt_vw_list_ranks(const char *dir, char ***names)
{
	return list(dir, "rank-", true, names, NULL);
}

int rt_vw_last_attempt(const char *dir)
{
	char **names;
	int n = list(dir, "attempt-", true, &names, NULL), last = 0;

	for (int i = 0; i < n; i++) {
		const char *num = names[i] + 8;
		char *end;
		long a = strtol(num, &end, 10);

		/* attempt-N exactly, as the tracer names it: digits, no sign,
		 * no leading zero, N >= 1 */
		if (isdigit((unsigned char)*num) && *num != '0' && !*end && a <= 1000000 && a > last)
			last = (int)a;
	}
	rt_vw_free_names(names, n > 0 ? n : 0);
	return last;
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
