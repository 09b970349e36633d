/* SPDX-License-Identifier: MIT */
/* export_int.h - shared by the exports' files only (export.c, perfetto.c,
 * report_html.c, report_params.c, report_device.c): small helpers. */
#ifndef RT_EXPORT_INT_H
#define RT_EXPORT_INT_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"

bool rt_vw_is_coll(unsigned id);
uint64_t rt_vw_trace_start(const struct rt_vw_trace *t);
/* report_params.c: the placement grid, grouped by module, collapsible */
void rt_vw_report_params(const struct rt_vw_trace *t, FILE *f);
/* report_device.c: collectives on the device and the straggler, for a trace
 * with device records (nothing written for any other) */
void rt_vw_report_device(const struct rt_vw_trace *t, FILE *f);

#endif
