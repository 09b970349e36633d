/* SPDX-License-Identifier: MIT */
/* read_bt2.h - LTTng traces (`run --backend lttng`) read with libbabeltrace2
 * into per-rank lists of the same events the native reader gives
 * (read_bt2.c, read_bt2_ranks.c; read_bt2_none.c when built without it).
 * Used by loading (load.c: the ranks) and the sources (merge.c: their
 * events), and by the CLI to recognise an LTTng session's directory
 * (run/outdir.c, viewer/render/summary.c, lttng/session.c). */
#ifndef RT_VW_READ_BT2_H
#define RT_VW_READ_BT2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader.h"

struct rt_vw_bt2_rank {
	char name[64];                /* rank-00003, or rank-pPID */
	struct rt_vw_rank_meta meta;
	struct rt_vw_event *ev;       /* in begin order; fields in the native layout */
	size_t n;
	uint64_t discarded;           /* by the ring buffers this rank wrote into */
};

struct rt_vw_bt2 {
	int nranks;
	struct rt_vw_bt2_rank *ranks;
	uint64_t events, foreign;     /* ranktrace events; others (kernel...) skipped */
	void *priv;
};

/* In an LTTng trace directory written by `ranktrace run --backend lttng`:
 * the run id, so that processes of other runs recorded by the same session
 * (another job of the same user at the same time) are left out. */
#define RT_VW_LTTNG_RUN_FILE "ranktrace-run"

/* Does dir look like an LTTng trace (session output or one CTF trace)? */
bool rt_vw_is_lttng(const char *dir);

/* Read every ranktrace:* event under dir. NULL with err set when it cannot
 * be read (not CTF, damaged, no ranktrace events, built without
 * libbabeltrace2). */
struct rt_vw_bt2 *rt_vw_bt2_load(const char *dir, char *err, size_t errlen);
void rt_vw_bt2_free(struct rt_vw_bt2 *b);

#endif
