/* SPDX-License-Identifier: MIT */
/* diff.h - what differs between two traces, the decisive difference first
 * (diff.c): the probe's counts per rank (FSDP root forwards, ...), where the
 * parameters live and their shapes, then each rank's collectives, allocations
 * and ending. `ranktrace diff` prints it as text or JSON (cli/cmd_diff.c);
 * nothing here prints. */
#ifndef RT_VW_DIFF_H
#define RT_VW_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* Per-rank counts compared first, the most decisive first: X(id, label,
 * field of struct rt_vw_rank). A count the model keeps is one row here; its
 * id is its key in diff --json (docs/json.md). */
#define RT_VW_DIFF_COUNTS(X)                                                   \
	X(fsdp_root_forwards, "FSDP root forwards", fsdp_root_forwards)        \
	X(unwrapped_calls, "unwrapped-module calls", unwrapped_calls)

enum rt_vw_diff_count {
#define RT_VW_DC_ENUM(id, label, field) RT_VW_DC_##id,
	RT_VW_DIFF_COUNTS(RT_VW_DC_ENUM)
#undef RT_VW_DC_ENUM
	RT_VW_DC_COUNT
};
extern const char *const rt_vw_diff_count_ids[RT_VW_DC_COUNT];
extern const char *const rt_vw_diff_count_labels[RT_VW_DC_COUNT];

/* One rank of either trace. */
struct rt_vw_diff_rank {
	int rank;
	const struct rt_vw_rank *a, *b;    /* NULL: not in that trace */
	uint64_t count[RT_VW_DC_COUNT][2]; /* [c][0] in A, [c][1] in B */
	/* collectives: alike from the first for same_calls calls (the
	 * matcher's rule: kind, count, datatype, op, root); then the first
	 * unlike call of each, NULL when that side called nothing more */
	uint32_t same_calls;
	bool calls_differ, init_broadcasts; /* the alike ones are the init broadcasts */
	const struct rt_vw_call_sig *next_a, *next_b;
	char end_a[80], end_b[80];          /* rt_vw_rank_end */
};

/* Parameters that differ the same way: where (or which shape) across the
 * ranks of A and of B, one example and how many. */
struct rt_vw_diff_kind {
	char a[200], b[200];         /* the example's phrases */
	char key_a[200], key_b[200]; /* what the kind's parameters share (shapes: dimensions) */
	const char *example;
	size_t n;
};

/* One parameter that differs: its phrases in A and B. */
struct rt_vw_diff_param {
	const char *name;
	bool placement, shape; /* which of the two differs */
	char place_a[200], place_b[200], shape_a[200], shape_b[200];
};

#define RT_VW_DIFF_KINDS 16

/* Sections in the order they decide; the first that differs is decisive. */
enum rt_vw_diff_section { RT_VW_DS_COUNTS, RT_VW_DS_PLACEMENT = RT_VW_DC_COUNT, RT_VW_DS_SHAPES,
			  RT_VW_DS_COLLECTIVES, RT_VW_DS_ENDS, RT_VW_DS_RANKS, RT_VW_DS_NONE };

struct rt_vw_diff {
	const struct rt_vw_trace *a, *b;
	struct rt_vw_diff_rank *ranks; /* A's ranks in its order, then those only in B */
	int nranks;
	bool count_differs[RT_VW_DC_COUNT];
	/* parameters (latest report): names in A or B, those that differ,
	 * grouped in kinds (the first RT_VW_DIFF_KINDS; the rest counted) */
	size_t nparams;
	struct rt_vw_diff_param *params;
	size_t nparams_differ, placement_differ, shape_differ;
	struct rt_vw_diff_kind place_kinds[RT_VW_DIFF_KINDS], shape_kinds[RT_VW_DIFF_KINDS];
	int nplace_kinds, nshape_kinds;
	size_t place_other, shape_other;
	/* the first section that differs: a count (its index), placement,
	 * shapes, collectives, ends, ranks only in one trace; or none */
	int decisive;
	bool same_verdict;
};

/* Compare a and b (loaded with RT_VW_KEEP_CALLS for the collectives).
 * 0, or -1 out of memory (nothing to free then). */
int rt_vw_diff(const struct rt_vw_trace *a, const struct rt_vw_trace *b, struct rt_vw_diff *out);
void rt_vw_diff_free(struct rt_vw_diff *d);

/* The decisive section's id for JSON: a count's id, "placement", "shapes",
 * "collectives", "ends", "ranks", or NULL when nothing differs. */
const char *rt_vw_diff_section_id(int section);

/* Count c across the ranks of one side (0 A, 1 B) in a phrase: "3 on every
 * rank", "ranks 0-1 3, rank 2 0"; snprintf'd into out. */
void rt_vw_diff_count_phrase(const struct rt_vw_diff *d, int c, int side, char *out, size_t n);

#endif
