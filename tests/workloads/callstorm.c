/* SPDX-License-Identifier: MIT */
/* callstorm.c - bin/callstorm: many CUDA calls from many threads, for tests
 * and benchmarks of the tracer.
 *
 * Each thread makes --calls calls (cudaMalloc/cudaFree pairs, or
 * cudaGetDevice with --cheap). After every completed call the thread's
 * counter in --counter FILE (a shared mapping, one uint64 per thread)
 * is incremented, so a test that SIGKILLs the process knows exactly how many
 * calls completed. --fork makes a child process make the same calls after
 * the parent's threads are done (they fail: CUDA cannot be used in a child
 * forked after its parent used it; the child goes on calling, so the calls
 * still count). --sleep-after N pauses (ms) after N calls of
 * thread 0 so a test can kill it mid-run; --crash dies of SIGSEGV at the end.
 * --waves W runs the threads W times over (short-lived threads: --threads
 * 100 --waves 50 --calls 2 is 5000 threads); --exit-in-handler MS calls
 * exit(3) from a SIGALRM handler MS ms in, while the threads still call;
 * --linger-at-exit MS then sleeps MS ms in an atexit handler, the threads
 * still calling (their files go on after the tracer's own exit work). */
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long calls = 1000;
static bool cheap;
static long sleep_after = -1;
static volatile uint64_t *counters;
static uint64_t local_counters[256];
static bool forked; /* this is --fork's child: CUDA's calls fail here */

static void *worker(void *arg)
{
	long t = (long)arg;
	void *p;
	int d;

	cudaSetDevice(0);
	counters[t]++;
	for (long i = 1; i < calls; i++) {
		if (cheap || i % 2 == 0) {
			if (!cheap) {
				cudaFree(p);
			} else {
				cudaGetDevice(&d);
			}
		} else if (cudaMalloc(&p, 256) != cudaSuccess) {
			if (!forked) {
				fprintf(stderr, "callstorm: cudaMalloc failed\n");
				exit(1);
			}
			p = NULL; /* cudaErrorInitializationError, as CUDA's */
		}
		counters[t]++;
		if (t == 0 && i == sleep_after) {
			struct timespec ts = { 30, 0 };

			printf("callstorm: paused after %ld calls\n", i + 1);
			fflush(stdout);
			nanosleep(&ts, NULL);
		}
	}
	if (!cheap && calls % 2 == 0) { /* keep pairs balanced */
		cudaFree(p);
		counters[t]++;
	}
	return NULL;
}

static int run_threads(int nthreads, int base)
{
	pthread_t th[256];

	for (long t = 0; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(t + base)) != 0)
			return 1;
	for (int t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	return 0;
}

static int linger_ms;

static void linger(void)
{
	struct timespec ts = { linger_ms / 1000, (long)(linger_ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void exit_now(int signo)
{
	(void)signo;
	exit(3); /* on purpose: exit() from a signal handler while threads trace */
}

static void arm_exit(int exit_ms)
{
	struct itimerval it = { { 0, 0 }, { exit_ms / 1000, (exit_ms % 1000) * 1000 } };

	if (exit_ms <= 0)
		return;
	if (linger_ms > 0)
		atexit(linger);
	signal(SIGALRM, exit_now);
	setitimer(ITIMER_REAL, &it, NULL);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "calls", required_argument, NULL, 'n' },
		{ "counter", required_argument, NULL, 'c' },
		{ "fork", no_argument, NULL, 'f' },
		{ "cheap", no_argument, NULL, 'g' },
		{ "sleep-after", required_argument, NULL, 's' },
		{ "crash", no_argument, NULL, 'x' },
		{ "waves", required_argument, NULL, 'w' },
		{ "exit-in-handler", required_argument, NULL, 'e' },
		{ "linger-at-exit", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	int nthreads = 1, o, status = 0, waves = 1, exit_ms = 0;
	bool do_fork = false, crash = false;
	const char *counter = NULL;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 't': nthreads = atoi(optarg); break;
		case 'n': calls = atol(optarg); break;
		case 'c': counter = optarg; break;
		case 'f': do_fork = true; break;
		case 'g': cheap = true; break;
		case 's': sleep_after = atol(optarg); break;
		case 'x': crash = true; break;
		case 'w': waves = atoi(optarg); break;
		case 'e': exit_ms = atoi(optarg); break;
		case 'l': linger_ms = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: callstorm [--threads T] [--calls N] [--cheap] [--fork] "
				"[--counter FILE] [--sleep-after N] [--waves W] [--exit-in-handler MS] [--linger-at-exit MS]\n");
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > 128 || calls < 1 || waves < 1)
		return 2;
	counters = local_counters;
	if (counter) {
		int fd = open(counter, O_RDWR | O_CREAT | O_TRUNC, 0600);

		if (fd < 0 || ftruncate(fd, sizeof(local_counters)) != 0)
			return 1;
		counters = mmap(NULL, sizeof(local_counters), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (counters == MAP_FAILED)
			return 1;
	}
	arm_exit(exit_ms);
	for (int w = 0; w < waves; w++)
		if (run_threads(nthreads, 0))
			return 1;
	if (do_fork) {
		pid_t pid = fork();

		if (pid == 0) {
			forked = true;
			_exit(run_threads(1, 128));
		}
		waitpid(pid, &status, 0);
	}
	uint64_t total = 0;

	for (int i = 0; i < 256; i++)
		total += counters[i];
	printf("callstorm: %llu calls completed\n", (unsigned long long)total);
	fflush(stdout);
	if (crash) {
		volatile int *volatile nowhere = NULL;

		*nowhere = 1; /* SIGSEGV on purpose */
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
