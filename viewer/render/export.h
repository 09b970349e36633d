/* SPDX-License-Identifier: MIT */
/* export.h - the render room's face: views of a loaded model. Perfetto/Chrome
 * JSON (perfetto.c), the HTML report (report_html.c, report_params.c,
 * report_device.c), view's device section (view_device.c), run's summary
 * (summary.c) and the helpers they share with the CLI (export.c: JSON
 * escaping, bytes and device lists, which calls are collectives, where the
 * trace starts; text and HTML escaping are util/escape.h's). Used by the CLI (through cli/cli.h), bisect's state file and
 * test_escape. */
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

/* s from a trace (a name, a host, a path, a finding) escaped for a terminal
 * (util/escape.h's rt_esc_text: control characters, invalid UTF-8): every text output
 * prints such strings through it. One of 8 static buffers in turn: for the
 * arguments of one printf. Not thread-safe. */
const char *rt_vw_esc(const char *s);
/* "0,1,3" from a mask of devices (bit d: device d), "-" when none. */
void rt_vw_devices_str(uint64_t mask, char *out, size_t n);
/* view's device section (view_device.c): each rank's collectives enqueued,
 * started, completed on the device, and the stragglers, as text (only_rank
 * >= 0: that rank's row) and as view --json's ", \"device\": {...}" member;
 * nothing for a trace without device records. */
void rt_vw_device_text(FILE *f, const struct rt_vw_trace *t, int only_rank);
void rt_vw_device_json(FILE *f, const struct rt_vw_trace *t);
/* `run`'s summary (summary.c): one line per rank (events, devices, end,
 * allocations, peaks); returns the unreadable or damaged ranks. */
int rt_vw_summary_ranks(FILE *f, const struct rt_vw_trace *t);
/* Bytes the one way every output writes them: "512 B", "3.1 KiB", "2.0 GiB". */
void rt_vw_human_bytes(char *out, size_t n, uint64_t b);

#endif
