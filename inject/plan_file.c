/* SPDX-License-Identifier: MIT */
/* plan_file.c - read a fault plan file (`ranktrace run --inject-file F`).
 *
 * Called by the CLI only, before anything runs; allocates the joined plan.
 * A plan file is text: one SPEC per line, '#' starts a comment, blank lines
 * are skipped; lines of any length are kept whole. What is not a plan file
 * gets one clear error and never a hang or a huge allocation: a directory or
 * a device (/dev/zero, /dev/urandom) is refused without reading it, a file
 * over RT_INJ_MAX_PLAN_FILE bytes (a pipe included) is refused, and so is a
 * NUL byte (the plan after it would be silently dropped). A pipe is read as
 * `cat` would, with a bound: a named pipe whose writer opens it later is
 * waited for (Linux reports a FIFO's hang-up only once a writer has come
 * and gone), the whole plan must have come within
 * rt_inj_plan_pipe_wait_ms. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "escape.h"
#include "plan.h"
#include "plan_int.h"

int rt_inj_plan_pipe_wait_ms = 30000;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A non-blocking pipe: wait until it can be read (data, or the writer
 * gone) or the deadline passed: 0, or -ETIMEDOUT. */
static int wait_pipe(int fd, long long deadline)
{
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		long long left = deadline - now_ms();
		int k = left > 0 ? poll(&p, 1, (int)left) : 0;

		if (k > 0)
			return 0;
		if (k == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* Up to max bytes of fd into *buf; -errno, or -EFBIG when there is more.
 * pipe: fd is a non-blocking pipe, read until its writer closes it, by
 * the deadline (-ETIMEDOUT after). */
static ssize_t slurp(int fd, size_t max, char **buf, bool pipe)
{
	long long deadline = now_ms() + rt_inj_plan_pipe_wait_ms;
	size_t len = 0, cap = 4096;
	char *b = malloc(cap + 1);

	if (!b)
		return -ENOMEM;
	for (;;) {
		ssize_t k;

		if (len == cap) {
			char *q = cap > max ? NULL : realloc(b, (cap *= 2) + 1);

			if (!q) {
				free(b);
				return cap > max ? -EFBIG : -ENOMEM;
			}
			b = q;
		}
		k = pipe ? wait_pipe(fd, deadline) : 0;
		if (k < 0) {
			free(b);
			return k;
		}
		k = read(fd, b + len, cap - len);
		if (k < 0 && (errno == EINTR || (pipe && errno == EAGAIN)))
			continue;
		if (k < 0) {
			int e = errno;

			free(b);
			return -e;
		}
		if (k == 0)
			break;
		len += (size_t)k;
		if (len > max) {
			free(b);
			return -EFBIG;
		}
	}
	b[len] = '\0';
	*buf = b;
	return (ssize_t)len;
}

/* Join the specs of text (len bytes, no NUL inside) with ';' into out. */
static size_t join_specs(const char *text, size_t len, char *out)
{
	size_t n = 0;

	for (const char *line = text; line < text + len;) {
		const char *nl = memchr(line, '\n', (size_t)(text + len - line));
		const char *end = nl ? nl : text + len, *hash = memchr(line, '#', (size_t)(end - line));
		const char *a = line, *z = hash ? hash : end;

		while (a < z && (*a == ' ' || *a == '\t'))
			a++;
		while (z > a && (z[-1] == ' ' || z[-1] == '\t' || z[-1] == '\r'))
			z--;
		if (z > a) {
			if (n)
				out[n++] = ';';
			memmove(out + n, a, (size_t)(z - a));
			n += (size_t)(z - a);
		}
		line = end + 1;
	}
	out[n] = '\0';
	return n;
}

int rt_inj_read_plan_file(const char *path, char **plan, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), rc = -1;
	struct stat st;
	char *text = NULL, *nul, name[1100];
	ssize_t len;

	*plan = NULL;
	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "%s: %s", rt_esc_text(name, sizeof(name), path), strerror(e));
		return -1;
	}
	rt_esc_text(name, sizeof(name), path); /* the errors quote it: untrusted text */
	if (fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) {
		snprintf(err, errlen, "%s: not a plan file (%s)", name,
			 S_ISDIR(st.st_mode) ? "a directory" : "a device or socket: a plan is a text file");
		goto out;
	}
	/* a pipe (`--inject-file <(...)`, a named pipe) is read as it comes */
	len = slurp(fd, RT_INJ_MAX_PLAN_FILE, &text, S_ISFIFO(st.st_mode));
	if (len == -ETIMEDOUT) {
		snprintf(err, errlen, "%s: a pipe that no writer wrote and closed within %d s (no "
			 "writer?)", name, (rt_inj_plan_pipe_wait_ms + 999) / 1000);
		goto out;
	}
	if (len < 0) {
		snprintf(err, errlen, "%s: %s", name, len == -EFBIG ? "over 1 MiB: not a plan file"
								 : strerror((int)-len));
		goto out;
	}
	nul = memchr(text, '\0', (size_t)len);
	if (nul) {
		int line = 1;

		for (const char *p = text; p < nul; p++)
			line += *p == '\n';
		snprintf(err, errlen, "%s: line %d: a NUL byte (at byte %zu): not a text file", name,
			 line, (size_t)(nul - text));
		goto out;
	}
	if (join_specs(text, (size_t)len, text) == 0) {
		snprintf(err, errlen, "%s holds no spec", name);
		goto out;
	}
	*plan = text;
	text = NULL;
	rc = 0;
out:
	free(text);
	close(fd);
	return rc;
}
