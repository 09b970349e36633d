/* SPDX-License-Identifier: MIT */
/* read_bt2_int.h - shared by read_bt2.c (libbabeltrace2 graph, events) and
 * read_bt2_ranks.c (processes grouped into ranks): what was read, per
 * process, before it becomes the per-rank lists of read_bt2.h. */
#ifndef RT_VW_READ_BT2_INT_H
#define RT_VW_READ_BT2_INT_H

#include <babeltrace2/babeltrace.h>

#include "read_bt2.h"

#define MAX_FIELDS 16
#define MAX_STREAMS 64
#define EC_SLOTS 1024
#define PROVIDER "ranktrace:"

enum { T_UNSIGNED, T_SIGNED, T_STRING, T_OTHER };
enum { ID_IDENTITY = -2, ID_NOT_OURS = -1 };
enum { I_RANK, I_LOCAL, I_WORLD, I_PID, I_RANK_PID, I_SOURCE, I_HOST, I_RUN, I_COUNT };

/* What an event class is to us, decided at its first event. */
struct ec_info {
	const bt_event_class *ec;
	int id;
	int common[3];                     /* dur_ns, ret, cur_dev: payload index or -1 */
	int fld[MAX_FIELDS];               /* schema field i: payload index or -1 */
	uint8_t ftype[MAX_FIELDS];
	int ident[I_COUNT];
	int vpid, vtid;                    /* common context index or -1 */
};

struct rec {
	uint64_t ts, dur;
	uint32_t off, tid;
	uint16_t id;
	int16_t ret;
	int8_t dev;
	uint8_t pending; /* dur_ns = RT_DUR_PENDING: emitted when the call started */
	uint8_t drop;    /* a start whose return was recorded too */
};

struct proc {
	int64_t vpid;
	struct rt_vw_rank_meta meta;
	bool identified;
	int nccl_rank, nccl_world;
	int64_t rank_pid;                  /* whose rank this is (fork: the parent) */
	char run_id[40];                   /* the `ranktrace run` it belongs to */
	uint64_t streams;                  /* bit i: wrote into stream i */
	struct rec *recs;
	size_t n, cap;
	uint8_t *bytes;
	size_t nbytes, bytes_cap;
};

struct reader {
	struct ec_info ecs[EC_SLOTS];
	struct proc *procs;
	int nprocs, procs_cap;
	const bt_stream *streams[MAX_STREAMS];
	uint64_t stream_discarded[MAX_STREAMS];
	int nstreams;
	uint64_t events, foreign;
	bool oom;
};

/* Read every event under dir into r (read_bt2.c). 0, or -1 with err set. */
int rt_vw_bt2_read(struct reader *r, const char *dir, char *err, size_t n);

/* The ranks of what r read (read_bt2_ranks.c): the processes of run `run`
 * only ("": all), grouped, starts paired with returns. Takes r (malloc'd,
 * as its procs' recs and bytes); NULL with err set (dir names the trace). */
struct rt_vw_bt2 *rt_vw_bt2_build(struct reader *r, const char *run, const char *dir, char *err,
				  size_t n);

#endif
