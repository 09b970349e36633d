/* SPDX-License-Identifier: MIT */
/* queue_int.h - what the simulated devices' engine (queue.c) shares with
 * the host's waits on it (queue_wait.c): the one lock and condition
 * variable, the streams, the marks' references. Not for other files. */
#ifndef SIM_QUEUE_INT_H
#define SIM_QUEUE_INT_H

#include <pthread.h>

#include "queue.h"

#define SQ_MAX_DEV 64

extern pthread_mutex_t sq_lock; /* guards every queue and mark */
extern pthread_cond_t sq_cv;    /* broadcast on every change */
extern struct sim_stream sq_legacy[SQ_MAX_DEV];
extern struct sim_stream *sq_streams; /* created streams, all devices */

/* A reference to m (NULL: none), under sq_lock. */
struct mark *sq_mark_get(struct mark *m);
/* Drop a reference, under sq_lock: the last frees m. */
void sq_mark_put_locked(struct mark *m);

#endif
