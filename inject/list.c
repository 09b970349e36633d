/* SPDX-License-Identifier: MIT */
/* list.c - the fault plan language's tables and `ranktrace inject --list`.
 *
 * The actions come from format/actions.def, the targets, collective group
 * and error codes from the call tables (rt_events), the presets from
 * format/presets.def (plan text the parser expands), the failure points
 * from format/points.def. */
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "plan_int.h"

const struct rt_inj_action_info rt_inj_actions[RT_INJ_NACTIONS] = {
	{ 0 },
#define RT_ACTION(E, n, v, calls, points, usage, doc) { v, calls, points, usage, doc },
#include "actions.def"
#undef RT_ACTION
};

/* format/presets.def: a preset's parameters (params: "N", "R@SEQ") fill its
 * expansion's %s in order. */
const struct rt_inj_preset rt_inj_presets[] = {
#define RT_PRESET(name, params, expansion, doc) { name, params, expansion, doc },
#include "presets.def"
#undef RT_PRESET
};

const size_t rt_inj_npresets = sizeof(rt_inj_presets) / sizeof(rt_inj_presets[0]);

/* "  oom-at=N   doc\n  = cudaMalloc:...:when=N": the expansion with its
 * parameters' names in place of the values. */
static void print_preset(FILE *f, size_t i)
{
	char head[64], p1[32] = "", p2[32] = "", exp[256];
	const char *params = rt_inj_presets[i].params, *at = params ? strchr(params, '@') : NULL;

	if (params) {
		snprintf(head, sizeof(head), "%s=%s", rt_inj_presets[i].name, params);
		snprintf(p1, sizeof(p1), "%.*s", at ? (int)(at - params) : (int)strlen(params), params);
		snprintf(p2, sizeof(p2), "%s", at ? at + 1 : "");
	} else {
		snprintf(head, sizeof(head), "%s", rt_inj_presets[i].name);
	}
	snprintf(exp, sizeof(exp), rt_inj_presets[i].expansion, p1, p2);
	fprintf(f, "  %-18s %s\n  %-18s = %s\n", head, rt_inj_presets[i].doc, "", exp);
}

/* error= codes: each library's common ones, then each function's own. */
static void print_errors(FILE *f)
{
	static const char *const libs[] = { [RT_LIB_CUDA] = "CUDA", [RT_LIB_NCCL] = "NCCL",
					     [RT_LIB_DRIVER] = "CUDA driver" };

	fprintf(f, "\nerror= codes (NVIDIA's names), any function of its library:\n");
	for (int l = 0; l <= RT_LIB_DRIVER; l++) {
		if (l == RT_LIB_TRACER)
			continue;
		fprintf(f, "  %s:", libs[l]);
		for (int i = 0; rt_errors_common[l][i]; i++)
			fprintf(f, "%s%s", i % 3 ? ", " : "\n    ", rt_errors_common[l][i]);
		fprintf(f, "\n");
	}
	fprintf(f, "and, per function:\n");
	for (unsigned id = 0; id < RT_ID_COUNT; id++) {
		if (!rt_events[id].errors || !rt_events[id].errors[0])
			continue;
		fprintf(f, "  %-33s", rt_events[id].name);
		for (int i = 0; rt_events[id].errors[i]; i++)
			fprintf(f, "%s%s", i ? ", " : " ", rt_events[id].errors[i]);
		fprintf(f, "\n");
	}
}

void rt_inj_print_list(void *file)
{
	FILE *f = file;

	fprintf(f, "Fault plans: --inject 'SPEC[;SPEC...]' or --inject-file PLAN (one SPEC per line)\n\n"
		   "SPEC := PRESET | TARGET:ACTION[:when=EXPR][:rank=LIST][:prob=P][:seed=S][:comm=SEL]\n\n"
		   "targets (interposed functions; globs such as 'nccl*' and 'cudaMalloc*' work too):\n");
	for (unsigned id = 0, n = 0; id < RT_ID_COUNT; id++)
		if (rt_id_is_api(id))
			fprintf(f, "%s%s", n++ % 4 ? ", " : "\n  ", rt_events[id].name);
	fprintf(f, "\n  @collective (");
	for (unsigned id = 0, n = 0; id < RT_ID_COUNT; id++)
		if (rt_events[id].role == RT_R_COLL)
			fprintf(f, "%s%s", n++ ? ", " : "", rt_events[id].name + 4 /* "nccl" */);
	fprintf(f, ")\n"
		   "  NAME.WITH.DOT: a failure point a program declares with rt_fault_point(); ranktrace's:\n");
	for (unsigned i = 0; i < RT_POINT_COUNT; i++)
		fprintf(f, "    %-24s %s, asked by %s\n", rt_points[i].name, rt_points[i].reached,
			rt_points[i].declared_by);
	fprintf(f, "\nactions:\n");
	for (int i = 1; i < RT_INJ_NACTIONS; i++)
		fprintf(f, "  %-12s %s\n", rt_inj_actions[i].usage, rt_inj_actions[i].doc);
	print_errors(f);
	fprintf(f, "\nwhen=N | N+ | N..M | N+STEP   which calls, counted per rule and rank, from 1\n"
		   "rank=0,2-3                    which ranks (default: all)\n"
		   "prob=P:seed=S                 fire with probability P, the same calls for the same seed\n"
		   "comm=SEL                      only calls on a communicator made so (when= counts them alone):\n"
		   "                              init, initN (the rank's N-th init call), split, splitN\n"
		   "                              (its N-th ncclCommSplit), colorC (a split's color C),\n"
		   "                              shrink, or 0xID (the comm_id `ranktrace view` prints)\n\n"
		   "presets:\n");
	for (size_t i = 0; i < rt_inj_npresets; i++)
		print_preset(f, i);
	fprintf(f, "\nexamples:\n"
		   "  ranktrace run --inject skip-fsdp-root -- torchrun --nproc-per-node 8 train.py\n"
		   "  ranktrace run --inject 'ncclAllReduce:error=ncclSystemError:when=5:rank=2' -- ...\n"
		   "  ranktrace run --inject 'cudaMalloc:error=cudaErrorMemoryAllocation:when=3' -- ...\n"
		   "  ranktrace run --inject 'ncclAllGather:delay=50ms:when=2+:prob=0.1:seed=7' -- ...\n"
		   "  ranktrace run --inject 'ncclAllReduce:skip:rank=1:when=2:comm=split2' -- ...\n"
		   "      (HSDP: rank 1 skips its 2nd all-reduce on the group of its 2nd split)\n");
}
