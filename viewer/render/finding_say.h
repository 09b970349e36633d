/* SPDX-License-Identifier: MIT */
/* finding_say.h - what the sentence makers of the render room share
 * (finding_text.c: templates; finding_say.c: the kinds with renderers of
 * their own): a bounded string builder and the pieces every sentence says
 * the same way (a call, a list of ranks, a signal). */
#ifndef RT_VW_FINDING_SAY_H
#define RT_VW_FINDING_SAY_H

#include <stdbool.h>
#include <stddef.h>

#include "model.h"

/* Text appended into out[n]: once a piece does not fit, it is cut there
 * and nothing more is appended (snprintf's cut, for a whole sentence). */
struct rt_vw_sb {
	char *p;
	size_t n, len;
	bool full;
};
struct rt_vw_sb rt_vw_sb_init(char *out, size_t n);
void rt_vw_sb_printf(struct rt_vw_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "cudaMalloc", "ncclAllReduce #58" (a collective: its sequence number). */
void rt_vw_say_call(struct rt_vw_sb *b, struct rt_vw_callref c);
/* "0,1,3": the first n of v (at most RT_VW_FINDING_RANKS), while the list
 * is shorter than cap - 12 bytes. */
void rt_vw_say_ranks(struct rt_vw_sb *b, const int *v, int n, size_t cap);
/* lead, then "{1,3}, split from the world with color 1": communicator id's
 * members (global ranks) and how it was made, from its rt_comm records;
 * nothing at all for one that holds every rank and was made by an init
 * (the world), or where no record names it (traces before 91ea30f). */
void rt_vw_say_comm(struct rt_vw_sb *b, const struct rt_vw_trace *t, uint64_t id, const char *lead);
/* A split's or shrink's parent id: "the world", or "communicator 5caf" (a
 * split of a split; the last 4 hex digits of its id). */
void rt_vw_say_parent(struct rt_vw_sb *b, const struct rt_vw_trace *t, uint64_t id);
/* Value v as its type prints ("ncclAllGather #5", "SIGTERM", "8"). */
void rt_vw_say_value(struct rt_vw_sb *b, const struct rt_vw_fval *v);
/* "SIGTERM", or NULL for a signal without a name here. */
const char *rt_vw_signal_name(int signo);
/* Where a rank of a hang is (evidence e): "its host thread has been
 * inside cudaMalloc for 31 s", "no call open, idle for 12 s", or how it
 * ended. */
void rt_vw_say_where(struct rt_vw_sb *b, const struct rt_vw_evidence *e);
/* Point to point (finding_p2p.c): a Send and its Recv that differ, a call
 * without its counterpart; a hang's who waits on whom, false (nothing
 * said) when f holds no point-to-point evidence. */
void rt_vw_say_p2p_mismatch(struct rt_vw_sb *b, const struct rt_vw_trace *t,
			    const struct rt_vw_finding *f);
void rt_vw_say_p2p_unmatched(struct rt_vw_sb *b, const struct rt_vw_trace *t,
			     const struct rt_vw_finding *f);
bool rt_vw_say_p2p_hang(struct rt_vw_sb *b, const struct rt_vw_trace *t, const struct rt_vw_finding *f);
/* The sentence of a kind without a template (finding_say.c). */
void rt_vw_say_kind(struct rt_vw_sb *b, const struct rt_vw_trace *t, const struct rt_vw_finding *f);

#endif
