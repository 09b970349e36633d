/* SPDX-License-Identifier: MIT */
/* test_writer.c - the tracer's native writer (tracer/store/writer.c, chunk.c,
 * prep.c): every event written is read back, in order; a stream's files
 * grow 32 KiB, 256 KiB, 1 MiB, 4 MiB, then 16 MiB; each thread has its own stream;
 * the size cap stops tracing and says why; the flight recorder keeps the
 * last events; without the helper thread the same events are written.
 *
 * Each test (a process of its own under Criterion) sets the tracer's
 * environment, dlopens the built libranktrace.so (its constructor reads the
 * environment then), records probe markers through its exported
 * rt_marker(), and reads the rank directory back with the viewer's reader.
 * The trace lives in a directory under $TMPDIR, removed when each test's
 * process ends. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader.h"

#ifndef RT_TRACER_LIB
#error "RT_TRACER_LIB: the path of the built libranktrace.so (tests/CMakeLists.txt)"
#endif

static char dir[PATH_MAX];
static char rankdir[PATH_MAX + 16];
static void (*marker)(const char *, int64_t);

static void make_dir(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/rt-writer-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	cr_assert(mkdtemp(dir), "mkdtemp %s", dir);
	snprintf(rankdir, sizeof(rankdir), "%s/rank-00000", dir);
}

/* At exit, after the tracer's own end (registered before dlopen, so it runs
 * after the library's destructor, which records the process's end). */
static void remove_tree(void)
{
	char cmd[PATH_MAX + 32];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "test_writer: could not remove %s\n", dir);
}

TestSuite(writer, .init = make_dir, .timeout = 60);

/* Load the tracer with `extra` set in its environment ("NAME=VALUE ..."). */
static void start_tracer(const char *extra)
{
	char env[256], *save = NULL;
	void *h;

	cr_assert_eq(atexit(remove_tree), 0);
	setenv("RANKTRACE_DIR", dir, 1);
	setenv("RANK", "0", 1);
	setenv("LOCAL_RANK", "0", 1);
	setenv("WORLD_SIZE", "1", 1);
	snprintf(env, sizeof(env), "%s", extra);
	for (char *kv = strtok_r(env, " ", &save); kv; kv = strtok_r(NULL, " ", &save))
		cr_assert_eq(putenv(strdup(kv)), 0);
	h = dlopen(RT_TRACER_LIB, RTLD_NOW | RTLD_LOCAL);
	cr_assert(h, "%s", dlerror());
	marker = (void (*)(const char *, int64_t))dlsym(h, "rt_marker");
	cr_assert(marker, "rt_marker not exported");
}

struct stream {
	char base[128];
	char *names[64];
	int nfiles;
};

struct readback {
	int64_t values[200000];
	int nmarkers, nstops, other;
	int stop_reason;
	uint64_t stop_events;
	uint64_t discarded;
};

static struct readback rb;

/* The rank's streams: files grouped by their name without ".N". */
static int list_streams(struct stream *s, int max)
{
	DIR *d = opendir(rankdir);
	struct dirent *e;
	int n = 0;

	cr_assert(d, "no rank directory %s", rankdir);
	while ((e = readdir(d))) {
		int len, k;

		if (strncmp(e->d_name, "stream-", 7) != 0)
			continue;
		len = rt_vw_stream_base_len(e->d_name);
		for (k = 0; k < n && (strlen(s[k].base) != (size_t)len ||
				      strncmp(s[k].base, e->d_name, (size_t)len)); k++)
			;
		if (k == n) {
			cr_assert_lt(n, max);
			snprintf(s[n].base, sizeof(s[n].base), "%.*s", len, e->d_name);
			s[n++].nfiles = 0;
		}
		cr_assert_lt(s[k].nfiles, 64);
		s[k].names[s[k].nfiles++] = strdup(e->d_name);
	}
	closedir(d);
	return n;
}

/* Read stream s back into rb: marker values in order, stop records. */
static void read_stream(const struct stream *s)
{
	char err[512] = "";
	struct rt_vw_rank_meta m;
	struct rt_vw_cursor *c;
	struct rt_vw_event e;
	int r;

	/* with the writer's promises (whole files, each begun by a count of the
	 * records before it): the read below also checks that they hold */
	cr_assert_eq(rt_vw_read_metadata(rankdir, &m, err, sizeof(err)), 0, "%s", err);
	cr_assert(m.file_records, "the writer promises whole, counted files (metadata env)");
	c = rt_vw_cursor_open_chain(rankdir, (char *const *)s->names, s->nfiles, &m, err, sizeof(err));
	cr_assert(c, "%s", err);
	memset(&rb, 0, sizeof(rb));
	while ((r = rt_vw_cursor_next(c, &e)) == 1) {
		if (e.id == RT_ID_rt_marker && rb.nmarkers < 200000) {
			rb.values[rb.nmarkers++] = rt_vw_fld(&e, RT_FN_value);
		} else if (e.id == RT_ID_rt_trace_stop) {
			rb.nstops++;
			rb.stop_reason = (int)rt_vw_fld(&e, RT_FN_reason);
			rb.stop_events = (uint64_t)rt_vw_fld(&e, RT_FN_events);
		} else {
			rb.other++;
		}
	}
	cr_assert_eq(r, 0, "stream %s damaged: %s", s->base, rt_vw_cursor_error(c));
	rb.discarded = rt_vw_cursor_info(c)->discarded;
	rt_vw_cursor_close(c);
}

static off_t file_size(const char *name)
{
	char p[PATH_MAX + 300];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", rankdir, name);
	cr_assert_eq(stat(p, &st), 0, "%s", p);
	return st.st_size;
}

/* n markers 0..n-1 on this thread, then the one stream read back. */
static void write_and_read(int n, struct stream *s)
{
	for (int i = 0; i < n; i++)
		marker("step", i);
	cr_assert_eq(list_streams(s, 1), 1, "one thread, one stream");
	read_stream(s);
}

static void assert_all_in_order(int n)
{
	cr_assert_eq(rb.nmarkers, n, "%d of %d markers read back", rb.nmarkers, n);
	for (int i = 0; i < n; i++)
		cr_assert_eq(rb.values[i], i, "marker %d reads %lld", i, (long long)rb.values[i]);
	cr_assert_eq(rb.nstops, 0);
	cr_assert_eq(rb.discarded, 0);
}

Test(writer, every_event_is_read_back_in_order_across_files)
{
	static struct stream s;

	start_tracer("");
	write_and_read(3000, &s);
	assert_all_in_order(3000);
	cr_assert_geq(s.nfiles, 2, "3000 markers outgrow the first 32 KiB file");
}

Test(writer, without_the_helper_the_traced_thread_makes_its_files)
{
	static struct stream s;

	start_tracer("RANKTRACE_HELPER=0");
	write_and_read(3000, &s);
	assert_all_in_order(3000);
	cr_assert_geq(s.nfiles, 2);
}

Test(writer, files_grow_32k_256k_1m_4m_then_16m)
{
	static struct stream s;
	char name[160];

	start_tracer("");
	write_and_read(150000, &s);
	assert_all_in_order(150000);
	cr_assert_geq(s.nfiles, 5, "150000 markers reach the fifth file");
	cr_assert_eq(file_size(s.base), 32 << 10);
	snprintf(name, sizeof(name), "%s.1", s.base);
	cr_assert_eq(file_size(name), 256 << 10);
	snprintf(name, sizeof(name), "%s.2", s.base);
	cr_assert_eq(file_size(name), 1 << 20);
	snprintf(name, sizeof(name), "%s.3", s.base);
	cr_assert_eq(file_size(name), 4 << 20);
	snprintf(name, sizeof(name), "%s.4", s.base);
	cr_assert_eq(file_size(name), 16 << 20, "a thread that fills files fast gets 16 MiB ones");
}

Test(writer, the_size_cap_stops_tracing_and_says_why)
{
	static struct stream s;
	off_t bytes = 0;

	start_tracer("RANKTRACE_MAX_SIZE=64K");
	write_and_read(20000, &s);
	cr_assert_gt(rb.nmarkers, 100, "events before the cap are kept");
	cr_assert_lt(rb.nmarkers, 20000, "the cap stopped tracing");
	for (int i = 0; i < rb.nmarkers; i++)
		cr_assert_eq(rb.values[i], i, "the kept events are the first ones");
	cr_assert_eq(rb.nstops, 1, "one record says why");
	cr_assert_eq(rb.stop_reason, RT_STOP_CAP);
	cr_assert_eq(rb.stop_events, (uint64_t)rb.nmarkers + (uint64_t)rb.other);
	cr_assert_eq(rb.discarded, 20000 - (uint64_t)rb.nmarkers, "the rest counted as discarded");
	for (int i = 0; i < s.nfiles; i++)
		bytes += file_size(s.names[i]);
	cr_assert_leq(bytes, 64 << 10, "%lld bytes of trace under a 64K cap", (long long)bytes);
}

Test(writer, the_flight_recorder_keeps_the_last_events)
{
	static struct stream s;
	int n = 40000;

	start_tracer("RANKTRACE_RING=256K");
	write_and_read(n, &s);
	cr_assert_gt(rb.nmarkers, 500);
	cr_assert_lt(rb.nmarkers, n, "the ring dropped the oldest");
	cr_assert_eq(rb.values[rb.nmarkers - 1], n - 1, "the last event is kept");
	for (int i = 1; i < rb.nmarkers; i++)
		cr_assert_eq(rb.values[i], rb.values[i - 1] + 1, "a gap at %d", i);
	cr_assert_leq(s.nfiles, 8, "its files are reused in turn");
}

static void *thread_markers(void *arg)
{
	int base = (int)(intptr_t)arg;

	for (int i = 0; i < 500; i++)
		marker("thread", base + i);
	return NULL;
}

Test(writer, each_thread_writes_its_own_stream)
{
	static struct stream s[8];
	pthread_t th[4];
	int n, seen = 0;

	start_tracer("");
	for (int t = 0; t < 4; t++)
		cr_assert_eq(pthread_create(&th[t], NULL, thread_markers, (void *)(intptr_t)(t * 1000)), 0);
	for (int t = 0; t < 4; t++)
		pthread_join(th[t], NULL);
	n = list_streams(s, 8);
	cr_assert_eq(n, 4, "one stream per thread");
	for (int k = 0; k < n; k++) {
		read_stream(&s[k]);
		cr_assert_eq(rb.nmarkers, 500, "%s: %d markers", s[k].base, rb.nmarkers);
		for (int i = 1; i < 500; i++)
			cr_assert_eq(rb.values[i], rb.values[0] + i);
		cr_assert_eq(rb.values[0] % 1000, 0);
		seen |= 1 << (rb.values[0] / 1000);
	}
	cr_assert_eq(seen, 0xf, "every thread's markers, none mixed");
}
