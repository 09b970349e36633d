/* SPDX-License-Identifier: MIT */
/* live.h - what the system says now of the processes that wrote a trace
 * (live.c): gathered once per rank by the pipeline (load/load.c) before the
 * analyses, which read it as an input and never ask the system themselves. */
#ifndef RT_VW_LIVE_H
#define RT_VW_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "reader.h"

/* One rank's processes as the pipeline found them: its stream files
 * (streams; -1 unreadable, 0 none or not a native trace) and how many of
 * them its metadata's process wrote (own), whether that process still holds
 * the lock of one (locked: it is alive), its state on this host when alive
 * ('R', 'S', 'T': stopped...; 0 when not known: another host, gone, another
 * pid namespace's), and the trace's clock when it was asked (alive ranks,
 * else 0). */
struct rt_vw_live {
	int streams, own;
	bool locked;
	char proc_state;
	uint64_t now;
};

/* Asks the system about the rank whose directory is trace_dir/rank_name and
 * whose metadata is meta, into *out. native: a native trace (stream files
 * and their locks to look at); an LTTng trace has none, so its ranks are
 * never alive. seen: the directory's listing made before (NULL: none),
 * taken when it still holds (rt_vw_listing_holds), else listed again. */
void rt_vw_live_ask(const char *trace_dir, const char *rank_name,
		    const struct rt_vw_rank_meta *meta, bool native,
		    const struct rt_vw_listing *seen, struct rt_vw_live *out);

#endif
