/* SPDX-License-Identifier: MIT */
/* own.c - what the tracer holds inside the program's process, and how it
 * stays out of the way of the program's descriptors, limits and signals.
 *
 * Descriptors. The tracer keeps no descriptor beyond the system calls that
 * need one: a stream file's descriptor lives while the file is made
 * (created, sized, mapped, named) and is closed before rt_tr_chunk_make
 * returns, since mapped packets need none (and the mapping holds the file's
 * lock, chunk.c). A descriptor is only ever used or closed by the code that
 * opened it, in the same call; a file opened again by name is used only
 * when fstat proves it is the one made (device and inode). A program that
 * closes every descriptor or dup2s over any number therefore never loses
 * its file to the tracer. The helper thread (prep.c) works in a private descriptor table
 * (unshare(CLONE_FILES)), where nothing the program does reaches it and
 * nothing it opens takes a number, or a slot under RLIMIT_NOFILE, from the
 * program. Elsewhere a descriptor held across slow work is lifted to the top
 * of the program's range (F_DUPFD_CLOEXEC above a floor), and stays where
 * it was opened when the soft limit is too low for that to leave the
 * program's numbers alone.
 *
 * Signals. A write, fallocate or ftruncate past RLIMIT_FSIZE raises SIGXFSZ
 * in the calling thread, and a write to a broken pipe SIGPIPE; by default
 * either kills the program. The tracer's own such calls run between
 * rt_tr_quiet_begin and rt_tr_quiet_end: both signals blocked in the calling
 * thread, and one that the call raised (it failed with EFBIG or EPIPE)
 * consumed with sigtimedwait, but only if it was not pending before.
 *
 * System calls only: no allocation, no lock, async-signal-safe. */
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base.h"

/* room left under the top of the range for descriptors lifted at once */
#define TOP_ROOM 32
/* below this soft RLIMIT_NOFILE, the top of the range is the program's */
#define LIFT_MIN_LIMIT 256
/* the range's top, when the limit is higher: a fd table past it costs the
 * kernel memory and the program nothing */
#define LIFT_MAX_LIMIT 1024

RT_TLS bool rt_tr_fds_private;

void rt_tr_quiet_begin(struct rt_tr_quiet *q)
{
	sigset_t quiet;

	sigemptyset(&quiet);
	sigaddset(&quiet, SIGXFSZ);
	sigaddset(&quiet, SIGPIPE);
	sigemptyset(&q->before);
	q->on = pthread_sigmask(SIG_BLOCK, &quiet, &q->old) == 0;
	if (q->on)
		sigpending(&q->before);
}

static void consume(const struct rt_tr_quiet *q, int signo)
{
	const struct timespec zero = { 0, 0 };
	sigset_t now, one;

	if (sigpending(&now) != 0 || !sigismember(&now, signo) || sigismember(&q->before, signo))
		return;
	sigemptyset(&one);
	sigaddset(&one, signo);
	while (sigtimedwait(&one, NULL, &zero) < 0 && errno == EINTR)
		;
}

void rt_tr_quiet_end(struct rt_tr_quiet *q, int err)
{
	int saved = errno;

	if (!q->on)
		return;
	if (err == EFBIG)
		consume(q, SIGXFSZ);
	if (err == EPIPE)
		consume(q, SIGPIPE);
	pthread_sigmask(SIG_SETMASK, &q->old, NULL);
	q->on = false;
	errno = saved;
}

/* The floor of the top of the range, or -1 when there is no room there. */
static int top_floor(void)
{
	struct rlimit rl;
	rlim_t top;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < LIFT_MIN_LIMIT)
		return -1;
	top = rl.rlim_cur < LIFT_MAX_LIMIT ? rl.rlim_cur : LIFT_MAX_LIMIT;
	return (int)(top - TOP_ROOM);
}

int rt_tr_fd_lift(int fd)
{
	int floor, hi;

	if (fd < 0 || rt_tr_fds_private)
		return fd;
	floor = top_floor();
	if (floor < 0 || fd >= floor)
		return fd;
	hi = fcntl(fd, F_DUPFD_CLOEXEC, floor);
	if (hi < 0)
		return fd;
	close(fd);
	return hi;
}

bool rt_tr_fd_is(int fd, uint64_t dev, uint64_t ino)
{
	struct stat st;

	return fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_dev == dev &&
	       (uint64_t)st.st_ino == ino;
}
