/* SPDX-License-Identifier: MIT */
/* queue_wait.c - the host's waits on the simulated devices (part of
 * libcudart): an item's mark and its references, a stream's and a device's
 * synchronisation (cudaStreamSynchronize, cudaDeviceSynchronize and the
 * legacy stream's implicit waits), whether a stream is idle. The engine
 * that completes the marks is queue.c. */
#include <stdlib.h>

#include "queue_int.h"

/* ---- marks (under sq_lock) ---- */

struct mark *sq_mark_get(struct mark *m)
{
	if (m)
		m->refs++;
	return m;
}

void sq_mark_put_locked(struct mark *m)
{
	if (m && --m->refs == 0)
		free(m);
}

void sq_mark_put(struct mark *m)
{
	pthread_mutex_lock(&sq_lock);
	sq_mark_put_locked(m);
	pthread_mutex_unlock(&sq_lock);
}

bool sq_mark_done(struct mark *m)
{
	bool d;

	pthread_mutex_lock(&sq_lock);
	d = !m || m->done;
	pthread_mutex_unlock(&sq_lock);
	return d;
}

void sq_wait(struct mark *m)
{
	pthread_mutex_lock(&sq_lock);
	while (m && !m->done)
		pthread_cond_wait(&sq_cv, &sq_lock);
	sq_mark_put_locked(m);
	pthread_mutex_unlock(&sq_lock);
}

/* References to the last marks st's synchronisation waits for: st's own, and
 * for the legacy stream the device's blocking sq_streams' too (or every stream
 * of the device when all). */
static int collect_locked(struct sim_stream *st, int d, bool all, struct mark **out, int cap)
{
	int n = 0;
	struct sim_stream *leg = &sq_legacy[d];

	if ((all || st == leg) && leg->last && !leg->last->done && n < cap)
		out[n++] = sq_mark_get(leg->last);
	if (st && st != leg && st->last && !st->last->done && n < cap)
		out[n++] = sq_mark_get(st->last);
	if (!all && st != leg)
		return n;
	for (struct sim_stream *s = sq_streams; s && n < cap; s = s->next)
		if (s->device == d && s->last && !s->last->done &&
		    (all || !(s->flags & cudaStreamNonBlocking)))
			out[n++] = sq_mark_get(s->last);
	return n;
}

static void wait_marks(struct sim_stream *st, int d, bool all)
{
	struct mark *ms[256];
	int n;

	do { /* more than 256 busy sq_streams: wait again for the rest */
		pthread_mutex_lock(&sq_lock);
		n = collect_locked(st, d, all, ms, 256);
		pthread_mutex_unlock(&sq_lock);
		for (int i = 0; i < n; i++)
			sq_wait(ms[i]);
	} while (n == 256);
}

void sq_stream_sync(struct sim_stream *st)
{
	if (sq_async())
		wait_marks(st, st->device, false);
}

void sq_device_sync(int device)
{
	if (sq_async() && device >= 0 && device < SQ_MAX_DEV)
		wait_marks(NULL, device, true);
}

__attribute__((visibility("default"))) void simgpu_device_sync(int device)
{
	sq_device_sync(device);
}

bool sq_stream_idle(struct sim_stream *st)
{
	struct mark *ms[256];
	bool idle;
	int n;

	pthread_mutex_lock(&sq_lock);
	n = collect_locked(st, st->device, false, ms, 256);
	idle = n == 0;
	for (int i = 0; i < n; i++)
		sq_mark_put_locked(ms[i]);
	pthread_mutex_unlock(&sq_lock);
	return idle;
}
