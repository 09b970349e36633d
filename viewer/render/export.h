/* SPDX-License-Identifier: MIT */
/* export.h - the render room's exports and shared helpers: Perfetto/Chrome
 * JSON (perfetto.c), the HTML report (report_html.c, report_params.c,
 * report_device.c), view's device section (view_device.c), run's summary
 * (summary.c) and what they share with the CLI (export.c: terminal
 * escaping into buffers, bytes and device lists, which calls are
 * collectives, where the trace starts; JSON is util/json.h's, text and HTML
 * escaping util/escape.h's). view.h has what view, params and diff print and
 * the report model every output renders from. Used by the CLI (through
 * cli/cli.h) and the unit tests. */
#ifndef RT_VW_EXPORT_H
#define RT_VW_EXPORT_H

#include <stdio.h>

#include "model.h"

struct rt_json;

/* Chrome trace-event JSON: a process per rank, tracks per thread and CUDA
 * stream, device-memory counters, collectives linked across ranks by flows.
 * 0, or -1 on a write error. */
int rt_vw_export_perfetto(const struct rt_vw_trace *t, FILE *f);
/* Its device tracks alone (each rank's collectives from device start to
 * completion), as events of the array w is in; t0: time 0. For tests of a
 * model built in memory, which has no streams to export. */
void rt_vw_perfetto_device(struct rt_json *w, const struct rt_vw_trace *t, uint64_t t0);

/* One self-contained HTML file (no network): findings, ranks, collectives
 * on the device and the straggler (traces with device records), timeline,
 * device memory, parameter placement. 0, or -1. */
int rt_vw_report_html(const struct rt_vw_trace *t, FILE *f);

/* s from a trace (a name, a host, a path, a finding) escaped for a terminal
 * (util/escape.h's rt_esc_text: control characters, invalid UTF-8): every text output
 * prints such strings through it. One of 8 static buffers in turn: for the
 * arguments of one printf. Not thread-safe. */
const char *rt_vw_esc(const char *s);
/* "0,1,3" from a mask of devices (bit d: device d), "-" when none. */
void rt_vw_devices_str(uint64_t mask, char *out, size_t n);
/* view's device section (view_device.c): each rank's collectives enqueued,
 * started, completed on the device, and the stragglers, as text (only_rank
 * >= 0: that rank's row) and as view --json's "device" member (util/json.h's
 * writer, inside the document's object); nothing for a trace without device
 * records. */
void rt_vw_device_text(FILE *f, const struct rt_vw_trace *t, int only_rank);
void rt_vw_device_json(struct rt_json *w, const struct rt_vw_trace *t);
/* view's communicators section (view_comms.c): each communicator the ranks'
 * rt_comm records name, by when made: members (global ranks), how made,
 * state, collectives and Send/Recv on it; only >= 0: those rank only is a
 * member of. As text (the first 16 unless all; nothing for a trace without
 * such records) and as view --json's "communicators" array. */
void rt_vw_comms_text(FILE *f, const struct rt_vw_trace *t, int only, bool all);
void rt_vw_comms_json(struct rt_json *w, const struct rt_vw_trace *t, int only);
/* `run`'s summary (summary.c): one line per rank (events, devices, end,
 * allocations, peaks); returns the unreadable or damaged ranks. */
int rt_vw_summary_ranks(FILE *f, const struct rt_vw_trace *t);
/* The same after a line saying how many rank traces DIR holds: listed
 * (rank directories; 0: none, the command made no CUDA or NCCL call; -1:
 * an LTTng trace, its ranks counted by t), t the trace loaded (NULL: err
 * says why it could not be). Returns the unreadable ranks. */
int rt_vw_summary(FILE *f, const char *dir, int listed, const struct rt_vw_trace *t, const char *err);
/* `run`'s word on the fault plan after the job: each rule that never fired,
 * one "ranktrace run: warning: ..." line (the finding's sentence); how many. */
int rt_vw_summary_never_fired(FILE *f, const struct rt_vw_trace *t);
/* Bytes the one way every output writes them: "512 B", "3.1 KiB", "2.0 GiB". */
void rt_vw_human_bytes(char *out, size_t n, uint64_t b);

#endif
