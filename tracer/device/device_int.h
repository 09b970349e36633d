/* SPDX-License-Identifier: MIT */
/* device_int.h - what device/'s files share and nothing outside uses. */
#ifndef RT_TR_DEVICE_INT_H
#define RT_TR_DEVICE_INT_H

#include "core.h"
#include "device.h"

/* device.c: the (comm_id, seq) the collective being recorded took, and its
 * communicator's device (devevents.c: no second lookup of the communicator) */
int rt_tr_dev_last(uint64_t *comm_id, uint32_t *seq);
/* device.c, from each collective's after-hook: a plugin record the bind
 * ring lost before it was tied to its call, said (rt_dev_drop unbound). */
void rt_tr_dev_unbound_said(void);

/* devevents.c: may the plugin's reports be recorded (not when CUDA events
 * are forced)? The devdelay fault's stream delay moves the start event
 * behind it. */
bool rt_tr_devev_plugin_ok(void);
void rt_tr_devev_delayed(const void *stream);

/* devqueue.c: the last look at exit (registered with core: rt_tr_on_end_drain) */
void rt_tr_devev_drain(void);

#endif
