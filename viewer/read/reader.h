/* SPDX-License-Identifier: MIT */
/* reader.h - native reader of ranktrace's own CTF traces: stream cursors and
 * metadata (reader.c), rank and stream directories, locks (trace_dir.c).
 * Used by the model's sources (merge.c, load.c through model.h), the CLI's
 * summaries, the fuzzers, test_reader/test_writer and the overhead bench. */
#ifndef RT_VW_READER_H
#define RT_VW_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "schema.h"

struct rt_vw_event {
	unsigned id;
	uint64_t ts;          /* begin, ns on the trace's monotonic clock */
	uint64_t dur;         /* ns; meaningless when pending */
	bool pending;         /* the call never returned (the process died in it) */
	int ret;
	int dev;
	const uint8_t *fields;
	uint32_t pid, tid;
};

struct rt_vw_stream_info {
	uint64_t events, discarded, packets;
	uint32_t pid, tid;
};

/* Field f (enum rt_fname, format/fields.def) of e as an integer, 0 when e
 * has no such field. */
static inline int64_t rt_vw_fld(const struct rt_vw_event *e, enum rt_fname f)
{
	return rt_field_value(e->id, e->fields, f);
}

/* Exit codes of readers and the CLI for unreadable input. */
#define RT_VW_ERR_CORRUPT 3

/* Called for each event in file order; non-zero stops the read. */
typedef int (*rt_vw_event_fn)(const struct rt_vw_event *e, void *arg);

/* Read one stream file. Returns 0, or -1 with a message naming the file and
 * byte offset in err (events before the damage have been delivered). */
int rt_vw_read_stream(const char *path, rt_vw_event_fn fn, void *arg,
		      struct rt_vw_stream_info *info, char *err, size_t errlen);

/* Pull-based reading of one stream file: what merges use. */
struct rt_vw_cursor;

/* NULL with err set when the file cannot be opened or mapped. */
struct rt_vw_cursor *rt_vw_cursor_open(const char *path, char *err, size_t errlen);
/* 1: *e holds the next event (valid until the next call); 0: end of file;
 * -1: damaged file, message in rt_vw_cursor_error(). */
int rt_vw_cursor_next(struct rt_vw_cursor *c, struct rt_vw_event *e);
/* One stream written as several files (stream-PID-TID, .1, .2... in any
 * order): read as one, in time order (files sorted by their first used
 * packet; a flight recorder reuses its files in turn). Damage in one file
 * is reported after the rest has been read. NULL when none can be opened. */
struct rt_vw_rank_meta;
/* m: the rank's metadata, for what its writer promised (file_records: no
 * packet left zero, every file begun by a count of the records before it;
 * chain.c), or NULL: nothing promised (old traces' rules). */
struct rt_vw_cursor *rt_vw_cursor_open_chain(const char *dir, char *const *names, int n,
					     const struct rt_vw_rank_meta *m, char *err,
					     size_t errlen);
/* Length of a stream file name without its ".N" file number: the files of
 * one stream share it. */
int rt_vw_stream_base_len(const char *name);
const char *rt_vw_cursor_error(const struct rt_vw_cursor *c);
/* The file the cursor reads now ("(lttng)" for events in memory). */
const char *rt_vw_cursor_path(const struct rt_vw_cursor *c);
const struct rt_vw_stream_info *rt_vw_cursor_info(const struct rt_vw_cursor *c);
void rt_vw_cursor_close(struct rt_vw_cursor *c);
/* Drop the pages read every `every` bytes (0: 1 MiB): the parallel pass
 * shares a budget among its cursors (with a thousand ranks, pages kept per
 * cursor add up). */
void rt_vw_cursor_set_drop(struct rt_vw_cursor *c, size_t every);
/* Unmap c's pages not yet read (they fault in again when read): a cursor
 * paused holds no memory. */
void rt_vw_cursor_release(struct rt_vw_cursor *c);
/* What rt_vw_cursor_release would drop (MADV_DONTNEED), for a caller that
 * drops many cursors' pages at once; false: nothing. The range is c's
 * mapping only until c reads on or closes. */
bool rt_vw_cursor_release_range(const struct rt_vw_cursor *c, void **addr, size_t *len);
/* From now on c's stream, when it ends, leaves its last file mapped for
 * rt_vw_cursor_close to unmap, and its pages for the caller to drop
 * (rt_vw_cursor_ended_range): an munmap on a process's thread while others
 * run is a TLB shootdown each, 16,384 of them at 16,384 ranks. */
void rt_vw_cursor_keep_mapped(struct rt_vw_cursor *c);
/* c's stream ended with its file kept mapped: the pages to drop, once
 * (true); false before the end, without a mapping, or when given before. */
bool rt_vw_cursor_ended_range(struct rt_vw_cursor *c, void **addr, size_t *len);
/* The name (the part after the last '/') of the file c maps when no writer
 * held its lock as c mapped it; NULL otherwise (held, not asked, none). */
const char *rt_vw_cursor_unlocked_file(const struct rt_vw_cursor *c);
/* c's file mapping handed to the caller to unmap (c forgets it: reading on
 * finds nothing, and rt_vw_cursor_close unmaps nothing); false: none.
 * *len is the file's size: the mapping ends at the page after it. */
bool rt_vw_cursor_take_map(struct rt_vw_cursor *c, void **addr, size_t *len);
/* The pace of c's current packet: its records' bytes and the time they
 * span (its begin to end time). false: no packet read yet, or none to go
 * by (an LTTng trace's cursor, a packet of one instant). */
bool rt_vw_cursor_pace(const struct rt_vw_cursor *c, uint64_t *bytes, uint64_t *ns);
/* The first packet of c's stream (of the first of its files mapped) as it
 * was when mapped, read without touching the mapping: the time it begins
 * (where its first event should be: for plans, never for results), its
 * records' bytes and the time they span. false: none (not a used packet's
 * header, a damaged one, an LTTng trace's cursor): reading tells. */
bool rt_vw_cursor_peek(const struct rt_vw_cursor *c, uint64_t *ts, uint64_t *bytes, uint64_t *ns);
/* A cursor over events already decoded (an LTTng trace, read_bt2.c); ev
 * must outlive it. discarded is reported by rt_vw_cursor_info(). */
struct rt_vw_cursor *rt_vw_cursor_mem(const struct rt_vw_event *ev, size_t n, uint64_t discarded);

/* Facts from a rank directory's metadata env block. */
struct rt_vw_rank_meta {
	int rank, local_rank, world_size, pid;
	int attempt;         /* the launcher's restart count (0: the first, or not recorded) */
	int python_probe;    /* enum rt_probe_state: the PyTorch probe in this rank's Python */
	char python_probe_detail[128]; /* why it is off, failed or missing */
	char hostname[64];
	char nccl_host[64];  /* NCCL's host identity (NCCL_HOSTID or the hostname) */
	char rank_source[32];
	int schema;
	/* the trace clock: uuid = the writer's boot id (same uuid, same
	 * CLOCK_MONOTONIC); offset = CLOCK_REALTIME - CLOCK_MONOTONIC there */
	char clock_uuid[40];
	int64_t clock_offset_ns;
	uint64_t ring_bytes; /* flight recorder: each thread kept its last ring_bytes, 0: off */
	bool file_records;   /* the writer promised whole files begun by rt_stream_file */
};

int rt_vw_read_metadata(const char *rank_dir, struct rt_vw_rank_meta *m, char *err, size_t errlen);
/* One line of an env or clock block, `key = value;`, as
 * sscanf(line, " %63[a-z_] = %127[^;\n];", key, val) reads it (in the C
 * locale) and returns: 2 key and value, 1 a key alone, 0 none, -1 an empty
 * line; without sscanf's cost (a FILE set up per call: 27 lines a rank,
 * 16,384 ranks). */
int rt_vw_env_line(const char *line, char key[64], char val[128]);
/* What is the same in every rank's metadata, read once: the part from the
 * stream block on (the event declarations) of the last metadata read whole,
 * its scan's result, and a buffer for the next file. Zero it before the
 * first use; rt_vw_meta_cache_free after the last. */
#define RT_VW_META_TAIL "stream {"
struct rt_vw_meta_cache {
	char *buf;          /* RT_VW_MAX_METADATA + 1 bytes, reused */
	char *tail;         /* from "\nstream {" to the end */
	size_t tail_n, tail_last;
	int tail_events, tail_depth;
	bool tail_env;      /* it holds an env, clock or trace block: never skipped */
};
/* rt_vw_read_metadata with c (NULL: none): the same result, the same
 * errors, with the part every rank shares compared, not parsed again. */
int rt_vw_read_metadata_cached(const char *rank_dir, struct rt_vw_rank_meta *m,
			       struct rt_vw_meta_cache *c, char *err, size_t errlen);
void rt_vw_meta_cache_free(struct rt_vw_meta_cache *c);

/* Is the process that writes the stream file at path alive? A live writer
 * holds an OFD write lock on it (released by the kernel when it exits or is
 * killed; testable from another node of a shared filesystem, no signal
 * sent). 1 locked, 0 not, -errno when it cannot be tested. */
int rt_vw_stream_locked(const char *path);

/* Now on the clock of a trace whose metadata is m (ns): this host's
 * CLOCK_MONOTONIC when the trace was written on this boot, else derived
 * from CLOCK_REALTIME and the trace's clock offset. */
uint64_t rt_vw_trace_now(const struct rt_vw_rank_meta *m);

/* Stream files (sorted) of a rank directory: *names is malloc'd, free with
 * rt_vw_free_names. Returns the count, or -1. */
int rt_vw_list_streams(const char *rank_dir, char ***names);
/* A rank directory's stream files as a listing found them (names, n as
 * rt_vw_list_streams; n -1: none), with the directory's modification and
 * change times then, and when that was (CLOCK_REALTIME, their clock). */
struct rt_vw_listing {
	char **names;
	int n;
	struct timespec mtime, ctime, at;
	bool *unlocked;  /* per name, NULL for none: seen unlocked (rt_vw_listing_unlocked) */
};
/* l's name `name` was seen unlocked (no writer's lock): a lock is only ever
 * released, so the live state needs not ask it again while l holds. */
void rt_vw_listing_unlocked(struct rt_vw_listing *l, const char *name);
/* rt_vw_list_streams into *l (its old names freed); its count. */
int rt_vw_list_streams_seen(const char *rank_dir, struct rt_vw_listing *l);
/* Does l still list rank_dir? When the directory's times are those l saw
 * and were already 3 s old then: any entry made, removed or renamed since
 * would have moved them past it (a file system's clock steps coarsely: a
 * jiffy on ext4, 2 s on FAT). One stat instead of a listing (16,384 ranks
 * listed again after the pass: 4 system calls each). */
bool rt_vw_listing_holds(const char *rank_dir, const struct rt_vw_listing *l);
void rt_vw_listing_free(struct rt_vw_listing *l);
/* Rank directories (rank-*) of a trace directory, sorted. */
int rt_vw_list_ranks(const char *dir, char ***names);
void rt_vw_free_names(char **names, int n);
/* The last attempt of an elastic job DIR holds (its DIR/attempt-N/
 * directories, as the tracer writes attempt N > 0 of TORCHELASTIC_RESTART_COUNT),
 * 0 when it holds none. */
int rt_vw_last_attempt(const char *dir);

#endif
