/* SPDX-License-Identifier: MIT */
/* device_int.h - what device/'s files share and nothing outside uses. */
#ifndef RT_TR_DEVICE_INT_H
#define RT_TR_DEVICE_INT_H

#include "core.h"
#include "device.h"

/* device.c: the (comm_id, seq) the collective or point-to-point call being
 * recorded took (a P2P's peer; p2p 1 a Send, 2 a Recv, 0 a collective), and
 * its communicator's device (devevents.c: no second lookup of it) */
int rt_tr_dev_last(uint64_t *comm_id, uint32_t *seq, int *peer, int *p2p);
/* device.c, from each call's after-hook: a plugin record the list could
 * not keep before it was tied to its call, said (rt_dev_drop unbound). */
void rt_tr_dev_unbound_said(void);

/* devevents.c: may the plugin's reports be recorded (not when CUDA events
 * are forced)? The devdelay fault's stream delay moves the start event
 * behind it. */
bool rt_tr_devev_plugin_ok(void);
void rt_tr_devev_delayed(const void *stream);

/* devqueue.c: the last look at exit (registered with core: rt_tr_on_end_drain) */
void rt_tr_devev_drain(void);

#endif
