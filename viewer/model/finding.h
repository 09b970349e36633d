/* SPDX-License-Identifier: MIT */
/* finding.h - a finding as data: its kind (format/findings.def: id,
 * verdict, severity, level, advice), the ranks it is about and names, the
 * collective it concerns, its named values and, for findings about several
 * ranks, what each of them shows (evidence). Nothing in it is a sentence:
 * the render room makes those (render/finding_text.c, one renderer per kind
 * or the kind's template), for view, the report, the diagnosis and verdict.
 *
 * The analyses (viewer/analyse/) make findings through analyse/findings.c;
 * strings a finding points at (TEXT values) belong to the model and live as
 * long as the trace. */
#ifndef RT_VW_FINDING_H
#define RT_VW_FINDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "findings.h"

struct rt_vw_rank;

/* An interposed call as a finding names it: its event id (RT_ID_COUNT:
 * none) and, for a collective on a communicator, its sequence number. */
struct rt_vw_callref {
	uint16_t id;
	bool coll;    /* seq is its sequence number (printed "#seq") */
	uint32_t seq;
};

/* A collective a finding is about: its communicator and sequence number,
 * and when sig is set what was called (kind, count, datatype, op, root;
 * bytes: count x the datatype's size, 0 when not known). */
struct rt_vw_fcall {
	uint64_t comm; /* 0: about no one collective */
	uint32_t seq;
	bool sig;
	uint8_t kind, dtype, op; /* enum rt_coll_kind, ncclDataType_t, ncclRedOp_t */
	int32_t root;
	uint64_t count, bytes;
};

/* One named value (format/findings.def's RT_FVALUE rows); its type is the
 * name's. */
struct rt_vw_fval {
	uint8_t name; /* enum rt_fvalue */
	union {
		int64_t i;                     /* INT, SIGNAL, FLAG */
		double d;                      /* REAL0, REAL1, REAL3 */
		const char *s;                 /* TEXT: the model's string */
		struct rt_vw_callref call;     /* CALL */
		const struct rt_vw_rank *rank; /* END: how this rank ended */
	} v;
};

/* What one rank shows in a finding about several (its role, RT_EV_*: a
 * hang's waiting ranks and the rank that never entered; the ranks that
 * enqueued a collective no device completed, that started it, that never
 * enqueued it, whose device record of it was dropped; a point-to-point
 * hang's ranks waiting in a Send or Recv (op, with peer) whose counterpart
 * the peer never made, or made and its device never completed, and the
 * rank that never made op with peer), and where it was then: its state
 * (enum rt_vw_state), the call it is inside (call.id RT_ID_COUNT: none)
 * and for how long or how long it has been idle (secs), its signal, the
 * last sequence number it entered on the collective's communicator (never
 * made: the last of op's kind it made with peer). */
enum rt_vw_ev_role { RT_EV_STOPPED, RT_EV_WAITS, RT_EV_NEVER_ENTERED, RT_EV_ENQUEUED,
		     RT_EV_ABORTED, RT_EV_STARTED, RT_EV_NOT_STARTED, RT_EV_NEVER_ENQUEUED,
		     RT_EV_DROPPED, RT_EV_WAITS_P2P, RT_EV_WAITS_P2P_DEVICE, RT_EV_NEVER_MADE,
		     RT_EV_COUNT };
extern const char *const rt_vw_ev_role_names[RT_EV_COUNT];
struct rt_vw_evidence {
	int rank;
	uint8_t role;  /* enum rt_vw_ev_role */
	uint8_t state; /* enum rt_vw_state */
	bool frozen;   /* alive, or stopped with the whole job: secs is its call's age or idle time */
	int signo;
	struct rt_vw_callref call;
	uint32_t last_seq;
	double secs;
	struct rt_vw_callref op; /* point to point: the Send or Recv (#: its number with peer) */
	int peer;                /* its peer (global rank); -1: none */
	uint64_t comm;           /* point to point: op's communicator */
};

#define RT_VW_FINDING_RANKS 64
#define RT_VW_FINDING_VALUES 12
struct rt_vw_finding {
	enum rt_finding_kind kind;
	int rank;          /* the rank it is about (global), or -1: several, or the trace */
	/* the ranks it names, global (the one it is about; a mismatch's odd
	 * ones out, the ranks that never called, the ranks sharing a device,
	 * the missing ranks): nranks of them, the first RT_VW_FINDING_RANKS kept */
	int nranks, ranks[RT_VW_FINDING_RANKS];
	struct rt_vw_fcall coll;  /* the collective it is about */
	struct rt_vw_fcall other; /* a mismatch: what the odd ranks called (coll: the others) */
	int nvals;
	struct rt_vw_fval vals[RT_VW_FINDING_VALUES];
	int nev;
	struct rt_vw_evidence *ev; /* malloc'd; rt_vw_free frees it */
};

/* f's value name, or NULL when f does not carry it. */
const struct rt_vw_fval *rt_vw_fv(const struct rt_vw_finding *f, enum rt_fvalue name);

/* How long a finding's sentence may be in every output (the diagnosis,
 * view --json's "text", verdict's stderr): one byte less than this. */
#define RT_VW_FINDING_TEXT 640 /* the skipped root with its exception: ~450 */

#endif
