/* SPDX-License-Identifier: MIT */
/* export.h - trace exports, views of a loaded model: Perfetto/Chrome JSON
 * (perfetto.c), the HTML report (report_html.c, report_params.c,
 * report_device.c) and the helpers they share with the CLI (export.c:
 * JSON escaping, which calls are collectives, where the trace starts;
 * text and HTML escaping are util/escape.h's). Used by cli/cmd_export.c (`export`
 * and `report`, through cli/cli.h), the CLI's JSON escaping, bisect's state
 * file and test_escape. */
#ifndef RT_VW_EXPORT_H
#define RT_VW_EXPORT_H

#include <stdio.h>

#include "model.h"

/* Chrome trace-event JSON: a process per rank, tracks per thread and CUDA
 * stream, device-memory counters, collectives linked across ranks by flows.
 * 0, or -1 on a write error. */
int rt_vw_export_perfetto(const struct rt_vw_trace *t, FILE *f);

/* One self-contained HTML file (no network): findings, ranks, collectives
 * on the device and the straggler (traces with device records), timeline,
 * device memory, parameter placement. 0, or -1. */
int rt_vw_report_html(const struct rt_vw_trace *t, FILE *f);

/* Write s escaped for the inside of a JSON string (no quotes added). */
void rt_vw_json_esc(FILE *f, const char *s);

/* Bytes the one way every output writes them: "512 B", "3.1 KiB", "2.0 GiB". */
void rt_vw_human_bytes(char *out, size_t n, uint64_t b);

#endif
