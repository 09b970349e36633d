/* SPDX-License-Identifier: MIT */
/* backends_common.h - what bench/backends.c and bench/lttng_anchor.c share
 * beyond bench_common.h (clocks, median, the cudaMalloc(256)/cudaFree pair
 * loop): the number of alternations, the real functions looked up past any
 * interposer. Header-only, bench use only. */
#ifndef RT_BENCH_BACKENDS_COMMON_H
#define RT_BENCH_BACKENDS_COMMON_H

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_common.h"

#define INNER 5 /* alternations of untraced and traced loops in one process */

/* The real function in libcudart, not the one LD_PRELOAD put first. */
static inline void *real_sym(const char *name)
{
	void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
	void *p;

	if (!h)
		h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
	p = h ? dlsym(h, name) : NULL;

	if (!p) {
		fprintf(stderr, "bench: cannot find the real %s in libcudart.so.13\n", name);
		exit(1);
	}
	return p;
}

#endif
