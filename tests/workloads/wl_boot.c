/* SPDX-License-Identifier: MIT */
/* wl_boot.c - the test workloads' bootstrap: rank 0 serves the NCCL unique
 * ids it made over TCP (MASTER_ADDR, MASTER_PORT), as torch's
 * TCPStore would; the others connect (retrying, 60 s at most) and read. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wl_boot.h"

int wl_env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : dflt;
}

static bool full_io(int fd, void *buf, size_t n, bool writing)
{
	char *p = buf;

	while (n) {
		ssize_t k = writing ? write(fd, p, n) : read(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		p += k;
		n -= (size_t)k;
	}
	return true;
}

static int connect_retry(const char *host, const char *port, double timeout_s)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	struct timespec pause = { 0, 20 * 1000 * 1000 };

	for (double waited = 0; waited < timeout_s; waited += 0.02) {
		int fd;

		if (getaddrinfo(host, port, &hints, &ai) != 0)
			return -1;
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			freeaddrinfo(ai);
			return fd;
		}
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		nanosleep(&pause, NULL);
	}
	return -1;
}

static int serve(ncclUniqueId *ids, int n, int world, const char *port, const char *who)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)),
				 .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);

	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, world) != 0) {
		fprintf(stderr, "%s: rank 0: cannot listen on port %s: %s\n", who, port, strerror(errno));
		return -1;
	}
	for (int i = 1; i < world; i++) {
		int fd = accept(ls, NULL, NULL);

		if (fd < 0 || !full_io(fd, ids, sizeof(*ids) * (size_t)n, true)) {
			fprintf(stderr, "%s: rank 0: bootstrap failed: %s\n", who, strerror(errno));
			close(ls);
			return -1;
		}
		close(fd);
	}
	close(ls);
	return 0;
}

int wl_share_ids(ncclUniqueId *ids, int n, int rank, int world, const char *who)
{
	const char *addr = getenv("MASTER_ADDR") ? getenv("MASTER_ADDR") : "127.0.0.1";
	const char *port = getenv("MASTER_PORT") ? getenv("MASTER_PORT") : "29500";
	int fd;

	if (rank == 0)
		return world > 1 ? serve(ids, n, world, port, who) : 0;
	fd = connect_retry(addr, port, 60);
	if (fd < 0 || !full_io(fd, ids, sizeof(*ids) * (size_t)n, false)) {
		fprintf(stderr, "%s: rank %d: cannot get the NCCL ids from %s:%s\n", who, rank, addr,
			port);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}
