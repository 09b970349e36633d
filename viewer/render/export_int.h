/* SPDX-License-Identifier: MIT */
/* export_int.h - shared by the exports' files only (export.c, perfetto.c,
 * perfetto_findings.c, report_html.c, report_params.c, report_device.c):
 * small helpers. */
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

/* perfetto_findings.c: the Perfetto export's findings as instants on their
 * ranks' tracks. new: NULL out of memory; see: each call the export draws,
 * on track tid (a finding's collective found on its rank); write: the
 * instants, as events of the array w is in. */
struct rt_json;
struct rt_vw_pf_findings;
struct rt_vw_pf_findings *rt_vw_pf_findings_new(const struct rt_vw_trace *t);
void rt_vw_pf_findings_see(struct rt_vw_pf_findings *fs, int ri, const struct rt_vw_event *e,
			   uint64_t tid);
void rt_vw_pf_findings_write(struct rt_vw_pf_findings *fs, struct rt_json *w, uint64_t t0);
void rt_vw_pf_findings_free(struct rt_vw_pf_findings *fs);

#endif
