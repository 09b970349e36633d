/* SPDX-License-Identifier: MIT */
/* live.c - what the system says now of the processes that wrote a trace:
 * which stream files of a rank directory its metadata's process wrote and
 * whether it still holds their lock (a live writer), its state on this host
 * (/proc), the trace's clock now. The pipeline (load/load.c) asks once per
 * rank, after the pass and before the analyses: they read these as inputs
 * (struct rt_vw_rank's sys) and never the system themselves.
 *
 * Reads the directory, the locks, /proc and the clocks; allocates only
 * while listing. Thread-safe. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "live.h"

void rt_vw_listing_unlocked(struct rt_vw_listing *l, const char *name)
{
	for (int k = 0; name && k < l->n; k++)
		if (!strcmp(l->names[k], name) && (l->unlocked || (l->unlocked = calloc((size_t)l->n, 1)))) {
			l->unlocked[k] = true;
			return;
		}
}

/* The stream files of rank_dir (seen's, when it holds): how many
 * (returned; -1 when unreadable), how many are process pid's (*own),
 * whether pid holds the lock of one of them (*locked: it is alive). */
static int live_streams(const char *rank_dir, const struct rt_vw_listing *seen, int pid, int *own,
			bool *locked)
{
	char **streams = NULL, prefix[32];
	bool kept = rt_vw_listing_holds(rank_dir, seen);
	int ns = kept ? seen->n : rt_vw_list_streams(rank_dir, &streams);

	if (kept)
		streams = seen->names;
	*own = 0;
	*locked = false;
	snprintf(prefix, sizeof(prefix), "stream-%d-", pid);
	for (int k = 0; k < ns && !*locked; k++) {
		char sp[4700];

		if (strncmp(streams[k], prefix, strlen(prefix)))
			continue;
		(*own)++;
		if (kept && seen->unlocked && seen->unlocked[k])
			continue; /* seen unlocked as it was read: a lock is never taken again */
		snprintf(sp, sizeof(sp), "%s/%s", rank_dir, streams[k]);
		*locked = rt_vw_stream_locked(sp) == 1;
	}
	if (ns > 0 && !kept)
		rt_vw_free_names(streams, ns);
	return ns;
}

/* Has process pid mapped a file under dir (its rank directory's stream
 * files)? Proves the pid is the rank's, not another process's in another
 * pid namespace. */
static bool maps_file_in(int pid, const char *dir)
{
	char path[64], line[PATH_MAX + 128], *p;
	size_t n = strlen(dir);
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	while (f && !found && fgets(line, sizeof(line), f)) {
		p = strchr(line, '/');
		found = p && !strncmp(p, dir, n) && p[n] == '/';
	}
	if (f)
		fclose(f);
	return found;
}

/* The state of process pid on this host ('R', 'S', 'T'...), when it is the
 * one that wrote rank_name's streams under trace_dir; 0 when not (another
 * host, gone, another pid namespace's). */
static char proc_state(const char *trace_dir, const char *rank_name, const char *hostname, int pid)
{
	char host[256] = "", abs[PATH_MAX], dir[PATH_MAX + 80], buf[512], *p;
	FILE *f;
	size_t k;

	if (gethostname(host, sizeof(host) - 1) != 0 || strcmp(host, hostname) || pid <= 0 ||
	    !realpath(trace_dir, abs))
		return 0;
	snprintf(dir, sizeof(dir), "%s/%s", abs, rank_name);
	if (!maps_file_in(pid, dir))
		return 0;
	snprintf(buf, sizeof(buf), "/proc/%d/stat", pid);
	f = fopen(buf, "re");
	k = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[k] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

void rt_vw_live_ask(const char *trace_dir, const char *rank_name,
		    const struct rt_vw_rank_meta *meta, bool native,
		    const struct rt_vw_listing *seen, struct rt_vw_live *out)
{
	char rd[4400];

	*out = (struct rt_vw_live){ 0 };
	if (!native)
		return;
	snprintf(rd, sizeof(rd), "%s/%s", trace_dir, rank_name);
	out->streams = live_streams(rd, seen, meta->pid, &out->own, &out->locked);
	if (!out->locked)
		return;
	out->proc_state = proc_state(trace_dir, rank_name, meta->hostname, meta->pid);
	out->now = rt_vw_trace_now(meta);
}
