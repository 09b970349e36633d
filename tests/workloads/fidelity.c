/* SPDX-License-Identifier: MIT */
/* fidelity.c - bin/fidelity: programs that hold the tracer to "the program's
 * descriptors, limits and signals stay its own" (issue 19).
 *
 * Each mode prints what the program saw and exits 0 when its own files hold
 * what it wrote; tests/integration/test_fidelity.sh runs every mode traced
 * and untraced and compares stdout, exit status and the files byte for byte.
 *
 *   closeall FILE   a few CUDA calls, close every descriptor above 2, open FILE
 *                   (fd 3), keep calling CUDA, write FILE, read it back;
 *                   FIDELITY_PAUSE set: sleep 30 s once FILE is open
 *   dup2 FILE       CUDA calls, dup2 FILE over every number 3..63, more
 *                   calls from a thread that then ends, write through each
 *   nofile FILE     CUDA calls, RLIMIT_NOFILE 16, CUDA calls, open FILE as
 *                   often as the limit allows, print the count, then CUDA
 *                   calls from a new thread and the main one
 *   fsize K FILE    RLIMIT_FSIZE K KiB, CUDA calls from 4 threads, write
 *                   K/2 KiB to FILE, print the size
 *   fsize-late K FILE  the same, the limit set after 100 calls
 *   threads N FILE  N live threads that each make one CUDA call, then open
 *                   FILE and write to it
 *
 * Uses cudaMalloc/cudaFree/cudaGetDevice (sim/ or NVIDIA's libcudart). */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define CALLS 60000 /* enough events to go through several stream files */

static long ncalls; /* CUDA calls made, printed last: a whole trace holds them all */

static void calls(long n)
{
	void *p;
	int d;

	for (long i = 0; i < n; i++) {
		if (i % 3 == 0 && cudaMalloc(&p, 64) == cudaSuccess) {
			cudaFree(p);
			__atomic_add_fetch(&ncalls, 2, __ATOMIC_RELAXED);
		} else {
			cudaGetDevice(&d);
			__atomic_add_fetch(&ncalls, 1, __ATOMIC_RELAXED);
		}
	}
}

static void *calls_thread(void *arg)
{
	calls((long)arg);
	return NULL;
}

static void calls_in_thread(long n)
{
	pthread_t t;

	if (pthread_create(&t, NULL, calls_thread, (void *)n) == 0)
		pthread_join(t, NULL);
}

/* FILE holds exactly `want`: 0, else 1 with a message. */
static int check_file(const char *path, const char *want)
{
	char got[4096] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t k = fd >= 0 ? read(fd, got, sizeof(got) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (k < 0 || (size_t)k != strlen(want) || memcmp(got, want, (size_t)k)) {
		printf("FILE LOST: %zd bytes, wanted %zu\n", k, strlen(want));
		return 1;
	}
	printf("file holds its %zu bytes\n", strlen(want));
	return 0;
}

static int closeall(const char *path)
{
	static const char text[] = "the program's own data\n";
	int fd;

	calls(200); /* the stream's first file still being written */
	for (int i = 3; i < 4096; i++)
		close(i);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	printf("own file on fd %d\n", fd);
	if (getenv("FIDELITY_PAUSE")) { /* a test looks at the live rank's locks */
		fprintf(stderr, "fidelity: paused\n");
		sleep(30);
	}
	calls_in_thread(CALLS); /* its stream ends: files trimmed, closed */
	calls(CALLS);
	if (write(fd, text, sizeof(text) - 1) != (ssize_t)sizeof(text) - 1)
		printf("write: %s\n", strerror(errno));
	calls(CALLS);
	close(fd);
	return check_file(path, text);
}

static pthread_barrier_t dup2_done;

/* calls before and after the program's dup2s, then ends: its stream's
 * files are trimmed and closed after the numbers changed hands */
static void *across_dup2(void *arg)
{
	(void)arg;
	calls(CALLS / 2);
	pthread_barrier_wait(&dup2_done);
	pthread_barrier_wait(&dup2_done);
	calls(100);
	return NULL;
}

static int over_low(const char *path)
{
	char text[64 * 8] = "";
	pthread_t t;
	int fd;

	pthread_barrier_init(&dup2_done, NULL, 2);
	pthread_create(&t, NULL, across_dup2, NULL);
	calls(CALLS);
	pthread_barrier_wait(&dup2_done);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	for (int i = 3; i < 64; i++)
		if (i != fd && dup2(fd, i) != i)
			printf("dup2 %d: %s\n", i, strerror(errno));
	pthread_barrier_wait(&dup2_done);
	pthread_join(t, NULL);
	calls_in_thread(CALLS);
	calls(CALLS);
	for (int i = 3; i < 64; i++) {
		char line[8];

		snprintf(line, sizeof(line), "fd %02d\n", i);
		strcat(text, line);
		if (write(i, line, strlen(line)) != (ssize_t)strlen(line))
			printf("write fd %d: %s\n", i, strerror(errno));
	}
	for (int i = 3; i < 64; i++)
		close(i);
	printf("wrote through fds 3..63\n");
	return check_file(path, text);
}

static int nofile(const char *path)
{
	struct rlimit rl = { 16, 16 };
	int n = 0;

	calls(CALLS / 4);
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		printf("setrlimit: %s\n", strerror(errno));
	calls_in_thread(CALLS / 4);
	calls(CALLS);
	while (open(path, O_RDONLY | O_CREAT, 0644) >= 0)
		n++;
	printf("opened %d files (%s)\n", n, strerror(errno));
	calls_in_thread(CALLS); /* a new thread's first CUDA call, no number left */
	calls(CALLS);
	return 0;
}

static int fsize(long kib, bool late, const char *path)
{
	static char block[64 << 10];
	size_t n = (size_t)kib << 9;
	struct rlimit rl;
	pthread_t t[4];
	int fd;

	if (late)
		calls(100); /* tracing has begun: metadata and first file written */
	getrlimit(RLIMIT_FSIZE, &rl);
	rl.rlim_cur = (rlim_t)kib << 10;
	if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
		printf("setrlimit: %s\n", strerror(errno));
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, calls_thread, (void *)(long)CALLS);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	calls(CALLS);
	memset(block, 'x', sizeof(block));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	/* (at a limit of 0 even an empty write raises SIGXFSZ) */
	printf("wrote %zd bytes\n", n ? write(fd, block, n < sizeof(block) ? n : sizeof(block)) : 0);
	close(fd);
	return 0;
}

static pthread_barrier_t all_called;

static void *one_call(void *arg)
{
	int d;

	(void)arg;
	cudaGetDevice(&d);
	__atomic_add_fetch(&ncalls, 1, __ATOMIC_RELAXED);
	pthread_barrier_wait(&all_called); /* every thread alive at once */
	pthread_barrier_wait(&all_called); /* until main has written its file */
	return NULL;
}

static int threads(int n, const char *path)
{
	static const char text[] = "written while every thread lives\n";
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	pthread_attr_t attr;
	int made = 0, fd;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	pthread_barrier_init(&all_called, NULL, (unsigned)n + 1);
	for (; made < n; made++)
		if (pthread_create(&t[made], &attr, one_call, NULL) != 0)
			break;
	if (made < n) {
		printf("only %d threads\n", made);
		exit(2);
	}
	pthread_barrier_wait(&all_called);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		printf("open with %d threads: %s\n", n, strerror(errno));
	else if (write(fd, text, sizeof(text) - 1) != (ssize_t)sizeof(text) - 1)
		printf("write: %s\n", strerror(errno));
	if (fd >= 0)
		close(fd);
	pthread_barrier_wait(&all_called);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("%d threads made one call each\n", n);
	free(t);
	return fd < 0 ? 1 : check_file(path, text);
}

static int run(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "closeall"))
		return closeall(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "dup2"))
		return over_low(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "nofile"))
		return nofile(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "fsize"))
		return fsize(atol(argv[2]), false, argv[3]);
	if (argc == 4 && !strcmp(argv[1], "fsize-late"))
		return fsize(atol(argv[2]), true, argv[3]);
	if (argc == 4 && !strcmp(argv[1], "threads"))
		return threads(atoi(argv[2]), argv[3]);
	return -1;
}

int main(int argc, char **argv)
{
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = run(argc, argv);
	if (rc >= 0) {
		printf("%ld CUDA calls\n", ncalls);
		return rc;
	}
	fprintf(stderr, "usage: fidelity closeall|dup2|nofile FILE | fsize|fsize-late KIB FILE | "
			"threads N FILE\n");
	return 2;
}
