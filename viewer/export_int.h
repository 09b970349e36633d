/* SPDX-License-Identifier: MIT */
/* export_int.h - shared by the exports' files only (export.c, perfetto.c,
 * report_html.c): the memory accounting they replay and small helpers. */
#ifndef RT_EXPORT_INT_H
#define RT_EXPORT_INT_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"

#define MEM_BUCKETS 4096

struct mem_entry;

/* Per-rank memory accounting, as in the model: ptr -> (size, device). */
struct mem {
	struct mem_entry *b[MEM_BUCKETS];
	uint64_t bytes[RT_VW_MAX_DEV];
};

bool rt_vw_is_coll(unsigned id);
int rt_vw_mem_update(struct mem *m, const struct rt_vw_event *e);
void rt_vw_mem_free(struct mem *m);
uint64_t rt_vw_trace_start(const struct rt_vw_trace *t);

#endif
