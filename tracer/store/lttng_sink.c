/* SPDX-License-Identifier: MIT */
/* lttng_sink.c - the LTTng-UST sink inside libranktrace.so: loads the
 * `ranktrace:*` provider (libranktrace-lttng.so) and gives each thread a
 * stream that hands every finished record to it instead of a file.
 *
 * Chosen by RANKTRACE_BACKEND=lttng (set by `ranktrace run --backend lttng`,
 * which also creates the LTTng session). libranktrace.so itself never links
 * liblttng-ust: the provider is dlopened at a process's first event, from
 * the directory libranktrace.so was loaded from (or RANKTRACE_LTTNG_PROVIDER),
 * so a machine without LTTng-UST loads and traces natively as before. If the
 * provider cannot be loaded, one warning and tracing stops (fail-open).
 *
 * The sink is chosen once, at start-up: under it every interposed call
 * takes the wrappers' general path (interpose/init.c's rt_tr_route), so the
 * native fast path has no branch for LTTng. The records are built as the
 * native writer builds them, in the thread's stream buffer (never mapped to
 * a file here); rt_tr_end() (core/core.h) hands each to rt_lttng_emit() and
 * frees its room (rt_tr_unwrite: records nest LIFO, a tracer event inside a
 * call). LTTng cannot
 * complete a record in place as the native writer does, so a call that may
 * never return (NCCL's, by default; RANKTRACE_LTTNG_ENTRY=all|nccl|none) is
 * also emitted when it starts, with dur_ns = RT_DUR_PENDING: a rank that
 * dies inside it still shows the call (the viewer pairs the two). Rank identity,
 * which the native writer puts in the CTF metadata, is the event
 * ranktrace:rt_identity, emitted once per process (and per forked child).
 *
 * Called under the store's process lock (set-up, core/life.c) or by the owning thread
 * (stream init); rt_tr_lttng_emit is written once, before any record uses
 * it, and read on the hot path. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "lttng_layout.h"
#include "store_int.h"
#include "env.h"

bool rt_tr_lttng_wanted;
uint8_t rt_tr_lttng_entry[RT_ID_COUNT];
void (*rt_tr_lttng_emit)(unsigned id, const uint8_t *fields, uint64_t dur, int ret, int dev);

static rt_lttng_identity_fn identity_fn;
static int rank_pid; /* the first traced process of this rank; inherited by fork */
static void *provider;
static int warned;

/* RANKTRACE_BACKEND: "lttng", or "ctf"/unset for the native writer. */
void rt_tr_lttng_configure(void)
{
	struct rt_env_val backend, entry; /* ctf|lttng, nccl|all|none: a bad one said */
	bool all, none;

	rt_tr_env(RT_ENV_BACKEND, &backend);
	rt_tr_lttng_wanted = rt_env_is(&backend, "lttng");
	if (!rt_tr_lttng_wanted)
		return;
	rt_tr_env(RT_ENV_LTTNG_ENTRY, &entry);
	all = rt_env_is(&entry, "all");
	none = rt_env_is(&entry, "none");
	for (unsigned id = 0; id < RT_ID_COUNT && !none; id++)
		rt_tr_lttng_entry[id] = rt_id_is_api(id) && (all || rt_events[id].lib == RT_LIB_NCCL);
}

static void *open_provider(char *why, size_t n)
{
	const char *env = getenv(RT_ENV_NAME(LTTNG_PROVIDER));
	char path[4200];
	Dl_info info;
	void *h;

	if (env && *env) {
		snprintf(path, sizeof(path), "%s", env);
	} else if (dladdr((void *)rt_tr_lttng_configure, &info) && info.dli_fname &&
		   strrchr(info.dli_fname, '/')) {
		int dirlen = (int)(strrchr(info.dli_fname, '/') - info.dli_fname);

		snprintf(path, sizeof(path), "%.*s/%s", dirlen, info.dli_fname,
			 RT_LTTNG_PROVIDER_SONAME);
	} else {
		snprintf(path, sizeof(path), "%s", RT_LTTNG_PROVIDER_SONAME);
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		snprintf(why, n, "%s", dlerror());
	return h;
}

static int load_provider(void)
{
	const unsigned *count;
	void *emit;
	char why[512] = "";

	if (provider)
		return 0;
	provider = open_provider(why, sizeof(why));
	if (!provider)
		goto out_fail;
	count = dlsym(provider, "rt_lttng_schema_events");
	emit = dlsym(provider, "rt_lttng_emit");
	identity_fn = (rt_lttng_identity_fn)dlsym(provider, "rt_lttng_identity");
	if (!count || !emit || !identity_fn || *count != RT_ID_COUNT) {
		snprintf(why, sizeof(why), "it was built from another call table");
		goto out_fail;
	}
	__atomic_store_n(&rt_tr_lttng_emit, (rt_lttng_emit_fn)emit, __ATOMIC_RELEASE);
	return 0;

out_fail:
	rt_tr_warn_once(&warned, "cannot load the LTTng provider %s (%s): the program "
			"continues untraced", RT_LTTNG_PROVIDER_SONAME, why);
	return -ENOENT;
}

/* Once per process (core/life.c, the rank identity known). */
int rt_tr_lttng_setup(void)
{
	char host[64] = "";
	int err = load_provider();

	if (err)
		return err;
	gethostname(host, sizeof(host) - 1);
	if (rt_tr_test_host[0]) /* RANKTRACE_TEST_HOST (its clock: LTTng's, not shifted) */
		snprintf(host, sizeof(host), "%s", rt_tr_test_host);
	if (!rank_pid)
		rank_pid = (int)getpid();
	identity_fn(rt_tr_rank.rank, rt_tr_rank.local_rank, rt_tr_rank.world_size, (int)getpid(),
		    rank_pid, rt_tr_rank.source ? rt_tr_rank.source : "unknown", host, rt_tr_config.run_id);
	return 0;
}

/* A thread's stream: its buffer only holds the records in progress. */
void rt_tr_lttng_stream_init(struct rt_tr_wstream *s)
{
	s->scratch = true;
	s->h.pkt = s->buf;
	s->h.pos = s->buf + RT_PACKET_HEADER_BYTES;
	s->h.end = s->buf + sizeof(s->buf);
}
