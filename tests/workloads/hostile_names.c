/* SPDX-License-Identifier: MIT */
/* hostile_names.c - bin/hostile_names FILE [--crash]: every line of FILE
 * (any bytes but NUL and newline: escape sequences, C1 controls, bidi
 * overrides, invalid UTF-8, HTML) reported to the tracer through the probe
 * API as a parameter name (with a shape, on the device memory it points
 * at, on the device of LOCAL_RANK), a marker, an unwrapped module and its caller, and a failure point:
 * the names a trace carries into every output (test_hostile.sh). With
 * --crash the process then aborts, as a rank whose unwrapped call crashed,
 * so findings quote the names too. Untraced it does the same and prints the
 * line count. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ranktrace.h"

int main(int argc, char **argv)
{
	char line[4096];
	int n = 0;
	FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
	const char *local = getenv("LOCAL_RANK");
	int dev = local ? atoi(local) : 0;
	void *p = NULL;

	if (!f) {
		fprintf(stderr, "usage: hostile_names FILE [--crash]\n");
		return 2;
	}
	if (cudaSetDevice(dev) != cudaSuccess || cudaMalloc(&p, 4096) != cudaSuccess) {
		fprintf(stderr, "hostile_names: no device\n");
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		int64_t dims[2] = { 4, 4 };

		line[strcspn(line, "\n")] = '\0';
		rt_param_shape_if_traced(line, 2, dims);
		rt_param_if_traced(line, RT_DEV_CUDA, dev, 0, 16, 64, p);
		rt_marker_if_traced(line, n);
		rt_unwrapped_call_if_traced(line, line, (uint64_t)n + 1);
		(void)rt_fault_point_or_pass(line);
		n++;
	}
	fclose(f);
	printf("hostile_names: %d names\n", n);
	fflush(stdout);
	if (argc > 2 && !strcmp(argv[2], "--crash"))
		abort();
	cudaFree(p);
	return 0;
}
