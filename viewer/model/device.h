/* SPDX-License-Identifier: MIT */
/* device.h - collectives on the device (device.c) and stragglers
 * (straggler.c): what the model keeps per rank, and what the analysis
 * finds across ranks. */
#ifndef RT_VW_DEVICE_H
#define RT_VW_DEVICE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

#include "model.h"
#include "schema.h"

/* One collective of one rank: times on the rank's clock, 0 when not seen. */
struct rt_vw_devcoll {
	uint64_t comm_id;
	uint32_t seq;
	uint8_t kind; /* enum rt_coll_kind */
	uint8_t dropped; /* enum rt_drop_reason: its device record was not kept (0: kept) */
	uint32_t group; /* this rank's group (rt_group) it was launched in, from 1; 0: none */
	uint64_t bytes; /* the call's count x its datatype's size */
	uint64_t enq_ts, start_ts, done_ts;
};

/* Enqueues a rank keeps before its first device record (device.c). */
#define RT_VW_DEV_WINDOW 64u

struct rt_vw_devlog {
	struct rt_vw_devcoll *v; /* in the order first seen */
	uint32_t *ix;            /* open addressing over v, 2 x cap slots */
	uint32_t n, cap;
	uint64_t enqueued, started, completed, unbound;
	uint8_t source;          /* RT_DEV_SRC_*: where device times come from */
	int version;             /* the plugin's API version */
	bool source_seen;
	bool records;            /* a device record (rt_dev_coll or rt_dev_source) seen */
	uint64_t dropped;        /* enqueues dropped before the first device record */
	/* device records the tracer could not keep (rt_dev_drop): how many,
	 * by reason (enum rt_drop_reason), the lowest and highest seq said */
	uint64_t ndrops, drop_by[RT_DROP_COUNT_];
	uint32_t drop_lo, drop_hi;
	/* the communicators this rank aborted (ncclCommAbort entered at ts):
	 * a completion after it is the abort's (the stream moved on), not the
	 * collective's (CUDA events cannot tell them apart) */
	struct { uint64_t comm_id, ts; } aborted[4];
	uint8_t naborted;
};

/* The model's pass: true when e was a device record (consumed); collective
 * calls are noted (enqueued) and false returned. */
bool rt_vw_dev_event(struct rt_vw_rank *r, const struct rt_vw_event *e);
void rt_vw_dev_free(struct rt_vw_rank *r);
/* The record of (comm, seq) in d, or NULL. */
const struct rt_vw_devcoll *rt_vw_dev_find(const struct rt_vw_devlog *d, uint64_t comm, uint32_t seq);
/* Was (comm, seq)'s device record dropped on some readable rank? Its start
 * and completion on the device are then not known: no finding rests on
 * them. */
bool rt_vw_dev_dropped(const struct rt_vw_trace *t, uint64_t comm, uint32_t seq);
/* Device records dropped across t's readable ranks (0: none). */
uint64_t rt_vw_dev_drops(const struct rt_vw_trace *t);
/* Did c complete on d's device? Not when its communicator was aborted on
 * this rank before the completion was seen. */
bool rt_vw_dev_done(const struct rt_vw_devlog *d, const struct rt_vw_devcoll *c);
/* Perfetto (render/perfetto.c): the tid of each rank's track of device-side slices. */
#define RT_VW_DEV_TRACK 0x20000000ull

/* Stragglers (straggler.c): per rank, of the collectives every rank of the
 * communicator started on the device, how often it was the last to start
 * and its lateness then (its start minus the mean of the others'), mean and
 * median. */
struct rt_vw_straggle_rank {
	int rank;
	uint64_t last;      /* collectives it was last into */
	double late_ns;     /* mean lateness over those */
	double median_ns;   /* their median: what one late poll or a
			     * host stall in one collective leaves alone */
};
struct rt_vw_straggle {
	uint64_t colls;         /* collectives started on the device by every rank */
	double wait_ns;         /* mean over them: last start minus first start */
	double spread_ns;       /* mean over them: the starts but the last, last minus first */
	double noise_ns;        /* lateness without a straggler (straggler.c: medians) */
	int nranks;
	struct rt_vw_straggle_rank *r; /* by rank index (t->ranks) */
	int straggler;          /* rank index named the straggler, or -1 */
};
/* Computed once per trace (t->straggle), NULL when no collective has device
 * times on two ranks or out of memory. */
const struct rt_vw_straggle *rt_vw_stragglers(struct rt_vw_trace *t);
/* Rank index ri's lateness in each collective analysed that it started, in
 * the order it started them: *n of them, malloc'd; NULL (*n 0) when none or
 * out of memory. */
struct rt_vw_late {
	uint64_t ts;     /* its device start */
	double late_ns;  /* minus the mean of the others' starts */
	uint32_t seq;
	uint8_t kind;    /* enum rt_coll_kind */
};
struct rt_vw_late *rt_vw_straggle_series(const struct rt_vw_trace *t, int ri, size_t *n);
/* The finding (id "straggler", a warning) when a straggler is named. */
void rt_vw_straggler_detect(struct rt_vw_trace *t);
void rt_vw_straggle_free(struct rt_vw_trace *t);

/* Hosts and their clocks (hosts.c): each clock domain (a boot: clock_uuid,
 * else the hostname) is a host; h[0], the first rank's, is the reference.
 * Another host's offset (its clock minus the reference's) is estimated
 * from the collectives both completed on the device: per collective, the
 * earliest completion each host saw; the median of their differences, and
 * half their interquartile range as its uncertainty. */
struct rt_vw_host {
	char name[64];      /* its hostname */
	int first, nranks;  /* its first rank index, how many ranks */
	bool estimated;     /* offset known (the reference: 0) */
	double offset_ns;   /* its clock minus the reference's */
	double err_ns;      /* the estimate's uncertainty */
	uint64_t shared;    /* collectives completed on it and the reference */
};
struct rt_vw_clock_diff {
	int host;
	double ns;
};
struct rt_vw_hosts {
	int n;
	struct rt_vw_host *h;
	int *of;            /* by rank index: its host */
};
/* Computed once per trace (t->hosts); NULL when out of memory. */
const struct rt_vw_hosts *rt_vw_hosts(struct rt_vw_trace *t);
/* What to subtract from rank index ri's times to read them on the
 * reference host's clock (0: its host is the reference or not estimated). */
int64_t rt_vw_host_shift(const struct rt_vw_trace *t, int ri);
/* Do rank indexes a and b's aligned times compare? One host, or both hosts'
 * offsets known (true before rt_vw_hosts ran). */
bool rt_vw_hosts_compare(const struct rt_vw_trace *t, int a, int b);
void rt_vw_hosts_free(struct rt_vw_hosts *h);

/* A rank with device records (the plugin's or CUDA events'): the trace has
 * a device section in view and the report. */
bool rt_vw_dev_any(const struct rt_vw_trace *t);


#endif
