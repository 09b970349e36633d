/* SPDX-License-Identifier: MIT */
/* comms.h - what a rank's trace says of its communicators and point-to-point
 * calls (comms.c): the model's record of rt_comm, ncclSend/ncclRecv with
 * their device times (rt_dev_p2p), and the groups launched (rt_group), for
 * the analyses per communicator. Decoding only: nothing here judges. */
#ifndef RT_VW_COMMS_H
#define RT_VW_COMMS_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"

/* A communicator this rank holds, as its last rt_comm record says. */
struct rt_vw_rank_comm {
	uint64_t id, parent;     /* comm_id; a split's or shrink's parent (0: none) */
	int nranks, rank;        /* its size, this rank's place in it (-1: not known) */
	int global_rank;         /* the rank in the job, as the record says */
	int how;                 /* enum rt_comm_how (format/schema.h) */
	int color, key, ordinal; /* a split's color and key; the rank's N-th call of that kind */
	int device, state;       /* state: 0 being made, 1 made, 2 failed */
	char excluded[64];       /* a shrink's excluded parent ranks ("1,3") */
	uint64_t made_ts;        /* the first record's time */
	uint64_t end_ts;         /* destroyed, aborted or revoked at (0: not) */
	int end_role;            /* RT_R_COMM_END or RT_R_COMM_REVOKE */
	uint64_t colls;          /* collectives this rank called on it (numbered: not skipped) */
	uint64_t sends, recvs;   /* its ncclSend and ncclRecv calls on it */
};

/* One ncclSend (send) or ncclRecv of this rank: seq is its number on its
 * communicator for that peer and direction; device times from rt_dev_p2p
 * (0: not seen). */
struct rt_vw_p2p {
	uint64_t comm_id, ts, dur, dev_start, dev_done;
	uint64_t count;          /* elements, as the call passed them */
	uint32_t seq;
	int peer, ret;
	uint8_t dtype;           /* ncclDataType_t */
	bool send, pending;
};

struct rt_vw_rank_comms {
	struct rt_vw_rank_comm *v;
	int n, cap;
	struct rt_vw_p2p *p;
	uint32_t np, pcap;
	uint32_t groups;         /* rt_group records: groups launched */
	uint64_t group_calls;    /* the calls they held */
	uint64_t unbound_p2p;    /* rt_dev_p2p of no call of this rank */
	int last;                /* the communicator found last (v's index): calls come in runs */
};

/* A member of a communicator across the job: its place (rank in it), its
 * split key, the global rank, the trace rank index holding it. */
struct rt_vw_comm_member {
	int place, key, global, ri;
};

/* A communicator across the job (comm_index.c): what its members' rt_comm
 * records say together. k is the record of its lowest place (how it was
 * made, its recorded size nranks, parent, color, excluded ranks). */
struct rt_vw_comm_entry {
	uint64_t id;
	const struct rt_vw_rank_comm *k;
	struct rt_vw_comm_member *members; /* in the order of their places */
	int nmembers;                      /* ranks whose records name it */
	uint64_t made_ts;                  /* the first record of any member */
	uint64_t colls_most, colls_fewest; /* collectives a member called on it */
	uint64_t sends, recvs;             /* its members' ncclSend, ncclRecv calls */
	int being_made, failed;            /* members whose last record says so */
	int ended, revoked;                /* members that destroyed or aborted it; revoked it */
};

/* The communicator index, from every rank's records (after the pass):
 * 0, or -ENOMEM (then none: every lookup says no communicator). */
int rt_vw_comm_index(struct rt_vw_trace *t);
void rt_vw_comm_index_free(struct rt_vw_trace *t);
/* Communicators in the index; the i-th (inits, then splits and shrinks, by
 * the members' N-th such call, color, when made); communicator id (NULL:
 * no rank recorded it, or no index). */
int rt_vw_comm_count(const struct rt_vw_trace *t);
const struct rt_vw_comm_entry *rt_vw_comm_at(const struct rt_vw_trace *t, int i);
const struct rt_vw_comm_entry *rt_vw_comm_entry(const struct rt_vw_trace *t, uint64_t id);

/* The model's pass: true when e was one of this file's records (consumed);
 * collectives, ncclSend/ncclRecv and a communicator's end are noted (counted
 * on the communicator) and false returned. */
bool rt_vw_comms_event(struct rt_vw_rank *r, const struct rt_vw_event *e);
void rt_vw_comms_free(struct rt_vw_rank *r);
/* The members of communicator id as the ranks' rt_comm records say: their
 * global ranks in the order of their places in it, at most cap (and 64);
 * the count, 0 when no rank recorded it (a trace without such records). */
int rt_vw_comm_members(const struct rt_vw_trace *t, uint64_t id, int *out, int cap);
/* Communicator id as rank r holds it, or NULL. */
const struct rt_vw_rank_comm *rt_vw_rank_comm_of(const struct rt_vw_rank *r, uint64_t id);
/* Is rank r known to be outside communicator id? Its trace records its
 * communicators (rt_comm) and none of them is id. NCCL makes a communicator
 * only with all its members (init and split are collective: no member's
 * collective on it can run before every member made it, and a non-blocking
 * one is recorded while being made), so its members' records are there
 * whenever a collective on it is. A trace without rt_comm records (before
 * 91ea30f) tells nothing: false. The analyses blame only members. */
bool rt_vw_comm_outside(const struct rt_vw_rank *r, uint64_t id);
/* Communicator id as any rank holds it (the first), or NULL: how it was
 * made, its size, its parent. */
const struct rt_vw_rank_comm *rt_vw_comm_any(const struct rt_vw_trace *t, uint64_t id);

#endif
