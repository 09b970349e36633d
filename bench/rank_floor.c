/* SPDX-License-Identifier: MIT */
/* rank_floor.c - bench/rank_floor: the floor of opening a trace's ranks, the
 * system calls every rank costs the viewer before it models an event, with
 * nothing of the viewer around them. For ranks rank-00000 .. RANKS-1 of DIR
 * (bench's gen_trace names; DIR itself is not listed, as the viewer lists
 * it once): the rank directory opened (fstat), its metadata read whole
 * (openat, fstat, read, close), the directory listed (getdents64 to its
 * end) and each stream-* file in it opened as the reader opens a stream's
 * first file (openat, fstat, the lock asked, its first packet header read,
 * mmap, close; unmapped untouched; every file of a chain, where the viewer
 * opens a chain's later files only as it reads them), the directory closed;
 * on THREADS threads taking ranks in turn, twice: the second is timed (the
 * page cache and the dentries warm, as the viewer's timed runs find them).
 * scale.sh prints it beside the viewer's load of the same trace: what the
 * load costs beyond the kernel's floor.
 *   rank_floor DIR RANKS [THREADS]   (default 2 threads) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "schema.h"

struct floor {
	const char *dir;
	int ranks, threads;
	unsigned long streams, failed;
};

struct worker {
	struct floor *f;
	int id;
	unsigned long streams, failed;
	volatile unsigned long sink; /* the bytes read, kept: the reads are not optimised away */
};

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Stream `name` of the rank directory open at dfd: opened, asked, mapped. */
static int one_stream(int dfd, const char *name)
{
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
	unsigned char hdr[RT_PACKET_HEADER_BYTES];
	struct stat st;
	void *b;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || st.st_size <= 0 || fcntl(fd, F_OFD_GETLK, &fl) != 0 ||
	    pread(fd, hdr, sizeof(hdr), 0) < 0) {
		close(fd);
		return -1;
	}
	b = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (b == MAP_FAILED)
		return -1;
	munmap(b, (size_t)st.st_size);
	return 0;
}

static void one_rank(struct floor *f, struct worker *w, int r)
{
	static __thread char meta[1 << 20];
	_Alignas(8) char buf[16384];
	char path[4200];
	struct stat st;
	ssize_t got;
	int dfd, mfd;

	snprintf(path, sizeof(path), "%s/rank-%05d", f->dir, r);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &st) != 0) {
		w->failed++;
		if (dfd >= 0)
			close(dfd);
		return;
	}
	mfd = openat(dfd, "metadata", O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (mfd >= 0 && fstat(mfd, &st) == 0 && (got = read(mfd, meta, sizeof(meta))) >= 0)
		w->sink += (unsigned long)got;
	else
		w->failed++;
	if (mfd >= 0)
		close(mfd);
	for (;;) {
		long k = syscall(SYS_getdents64, dfd, buf, sizeof(buf));

		if (k <= 0)
			break;
		for (long at = 0; at < k;) {
			struct dirent64 *de = (struct dirent64 *)(buf + at);

			at += de->d_reclen;
			if (strncmp(de->d_name, "stream-", 7) != 0)
				continue;
			if (one_stream(dfd, de->d_name) == 0)
				w->streams++;
			else
				w->failed++;
		}
	}
	close(dfd);
}

static void *run(void *arg)
{
	struct worker *w = arg;

	for (int r = w->id; r < w->f->ranks; r += w->f->threads)
		one_rank(w->f, w, r);
	return NULL;
}

static double pass(struct floor *f)
{
	struct worker w[64];
	pthread_t th[64];
	double t0 = now();

	f->streams = f->failed = 0;
	for (int i = 0; i < f->threads; i++) {
		w[i] = (struct worker){ .f = f, .id = i };
		if (i && pthread_create(&th[i], NULL, run, &w[i]) != 0) {
			fprintf(stderr, "rank_floor: cannot start a thread\n");
			exit(1);
		}
	}
	run(&w[0]);
	for (int i = 1; i < f->threads; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < f->threads; i++) {
		f->streams += w[i].streams;
		f->failed += w[i].failed;
	}
	return now() - t0;
}

int main(int argc, char **argv)
{
	struct floor f = { 0 };
	double secs;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: rank_floor DIR RANKS [THREADS]\n"
			"  the system calls ranks rank-00000 ... of DIR cost the viewer's load before\n"
			"  an event is read (list, metadata, open and map each stream), alone, on\n"
			"  THREADS threads (default 2)\n");
		return 2;
	}
	f.dir = argv[1];
	f.ranks = atoi(argv[2]);
	f.threads = argc > 3 ? atoi(argv[3]) : 2;
	if (f.ranks < 1 || f.threads < 1 || f.threads > 64) {
		fprintf(stderr, "rank_floor: RANKS >= 1, THREADS 1-64\n");
		return 2;
	}
	pass(&f); /* the page cache and the dentries warm */
	secs = pass(&f);
	printf("rank_floor: %d ranks, %lu streams, %d threads: list, metadata, open and map %.3f s%s\n",
	       f.ranks, f.streams, f.threads, secs, f.failed ? " (some files could not be read)" : "");
	return f.failed ? 1 : 0;
}
