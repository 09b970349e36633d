/* SPDX-License-Identifier: MIT */
/* fsdp_boot.c - fsdp_mini's bootstrap: rank 0 serves the ncclUniqueId over
 * TCP (MASTER_ADDR, MASTER_PORT), as torch's TCPStore would. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fsdp_mini.h"

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

void share_unique_id(ncclUniqueId *id)
{
	const char *addr = getenv("MASTER_ADDR") ? getenv("MASTER_ADDR") : "127.0.0.1";
	const char *port = getenv("MASTER_PORT") ? getenv("MASTER_PORT") : "29500";
	int fd;

	if (rank == 0) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)),
					 .sin_addr.s_addr = htonl(INADDR_ANY) };
		int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);

		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, world) != 0) {
			fprintf(stderr, "fsdp_mini: rank 0: cannot listen on port %s: %s\n", port,
				strerror(errno));
			die(1);
		}
		for (int i = 1; i < world; i++) {
			fd = accept(ls, NULL, NULL);
			if (fd < 0 || !full_io(fd, id, sizeof(*id), true)) {
				fprintf(stderr, "fsdp_mini: rank 0: bootstrap failed: %s\n", strerror(errno));
				die(1);
			}
			close(fd);
		}
		close(ls);
		return;
	}
	fd = connect_retry(addr, port, 60);
	if (fd < 0 || !full_io(fd, id, sizeof(*id), false)) {
		fprintf(stderr, "fsdp_mini: rank %d: cannot get the NCCL id from %s:%s\n", rank, addr,
			port);
		die(1);
	}
	close(fd);
}
