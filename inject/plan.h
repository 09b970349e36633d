/* SPDX-License-Identifier: MIT */
/* plan.h - the fault plan: parsed and validated once, then immutable.
 *
 * Grammar (as `strace --inject`, libfiu):
 *   PLAN  := SPEC { ';' SPEC }
 *   SPEC  := PRESET | TARGET ':' ACTION { ':' KEY '=' VALUE }
 *   TARGET: an interposed function (cudaMalloc), a glob (nccl*), the group
 *           @collective, or a failure point: any name with a dot
 *           (fsdp.root_forward)
 *   ACTION: error=CODE | delay=DUR | skip | hang | device=N | corrupt | abort |
 *           kill=SIG | bypass
 *   KEY   : when=N | N+ | N..M | N+STEP ; rank=LIST (0,2-3) ; prob=P ; seed=S ;
 *           comm=SEL, the communicator a call is on, by how it was made:
 *           init | initN | split | splitN | colorC | shrink | 0xID
 *           (N: the rank's N-th init or split call, from 1; C: a split's
 *           color; ID: the communicator's identity as `view` prints it)
 * Used by the CLI (to refuse a bad plan before anything runs) and by
 * libranktrace.so at start-up (RANKTRACE_INJECT). Parsing allocates; the
 * result is read-only afterwards. */
#ifndef RT_INJ_PLAN_H
#define RT_INJ_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "schema.h"

/* format/actions.def */
enum rt_inj_action {
	RT_INJ_NONE,
#define RT_ACTION(E, n, v, calls, points, usage, doc) RT_INJ_##E,
#include "actions.def"
#undef RT_ACTION
	RT_INJ_NACTIONS
};

extern const char *const rt_inj_action_names[RT_INJ_NACTIONS];

#define RT_INJ_MAX_RULES 64
#define RT_INJ_MAX_RANKS 4096

/* comm=: which communicators a rule's calls must be on. */
enum rt_inj_comm_sel {
	RT_INJ_COMM_ANY,   /* no comm=: every call, with or without a communicator */
	RT_INJ_COMM_INIT,  /* made by an init call (arg 0: any, N: the rank's N-th init call) */
	RT_INJ_COMM_SPLIT, /* made by ncclCommSplit (arg 0: any, N: the rank's N-th split call) */
	RT_INJ_COMM_COLOR, /* made by ncclCommSplit with color arg */
	RT_INJ_COMM_SHRINK,/* made by ncclCommShrink */
	RT_INJ_COMM_ID,    /* the communicator whose identity (comm_id) is arg */
};

/* How a communicator was made, as the host (the tracer) knows it. */
enum rt_inj_comm_how { RT_INJ_MADE_UNKNOWN, RT_INJ_MADE_INIT, RT_INJ_MADE_SPLIT,
		       RT_INJ_MADE_SHRINK };
struct rt_inj_comm {
	uint64_t id;
	enum rt_inj_comm_how how;
	int ordinal; /* the rank's N-th init (how INIT) or split (SPLIT) call, from 1 */
	int color;   /* SPLIT */
};

struct rt_inj_rule {
	char spec[64];           /* as written: a preset and its value, or TARGET:ACTION... */
	char target[64];         /* as written: name, glob, @collective or failure point */
	bool point;              /* a failure point (name with a dot) */
	uint8_t apis[(RT_ID_COUNT + 7) / 8]; /* interposed functions it matches */
	enum rt_inj_action action;
	int64_t arg;             /* error code, delay ns, device, signal */
	uint64_t when_from, when_to, when_step; /* call numbers, 1-based; to 0: no end */
	uint8_t *ranks;          /* bitmap of RT_INJ_MAX_RANKS, or NULL: every rank */
	double prob;             /* 1: always */
	uint64_t seed;
	enum rt_inj_comm_sel comm_sel; /* comm=: only calls on such a communicator count */
	int64_t comm_arg;
};

struct rt_inj_plan {
	struct rt_inj_rule rules[RT_INJ_MAX_RULES];
	int nrules;
};

/* Parse text into plan. On error returns -1 and writes into err a message
 * that quotes the plan and points at the mistake with a caret. */
int rt_inj_parse(const char *text, struct rt_inj_plan *plan, char *err, size_t errlen);
void rt_inj_plan_free(struct rt_inj_plan *plan);

/* Does rule r apply to interposed function id? */
static inline bool rt_inj_rule_matches(const struct rt_inj_rule *r, unsigned id)
{
	return id < RT_ID_COUNT && (r->apis[id / 8] >> (id % 8) & 1);
}

/* Does call number n (1-based, counted per rule) fire, before rank and
 * probability? */
bool rt_inj_when(const struct rt_inj_rule *r, uint64_t n);

/* Does a call on communicator c (NULL: the call has none, or it is not
 * known) pass rule r's comm=? Always without comm=. */
bool rt_inj_comm_matches(const struct rt_inj_rule *r, const struct rt_inj_comm *c);

/* Rank filter and seeded probability: the same plan, seed, rank and call
 * number always give the same answer. */
bool rt_inj_applies(const struct rt_inj_rule *r, int rank, uint64_t n, int rule_index);

/* Name of a CUDA or NCCL result code, for messages ("cudaErrorMemoryAllocation"). */
const char *rt_inj_code_name(unsigned api, int64_t code);

#define RT_INJ_MAX_PLAN_FILE (1u << 20)

/* Read a plan file (one SPEC per line, '#' comments) into *plan, the specs
 * joined with ';' (free it). -1 with a message in err for what is not a
 * plan file: a directory, a device, over 1 MiB, a NUL byte, no spec. */
int rt_inj_read_plan_file(const char *path, char **plan, char *err, size_t errlen);

/* Write the help of `ranktrace inject --list`. */
void rt_inj_print_list(void *file);

#endif
