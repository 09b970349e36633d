/* SPDX-License-Identifier: MIT */
/* cuda_int.h - private to the simulated CUDA driver: the initialization
 * check (cuda.c) shared with the virtual memory calls (cuda_vmm.c). */
#ifndef SIM_CUDA_INT_H
#define SIM_CUDA_INT_H

#include <cuda.h>
#include <stdbool.h>

#define EXPORT __attribute__((visibility("default")))

/* cuda.c */
extern int initialized;
bool valid_dev(CUdevice d);

#define CHECK_INIT()                                                                   \
	do {                                                                           \
		if (!__atomic_load_n(&initialized, __ATOMIC_ACQUIRE))                  \
			return CUDA_ERROR_NOT_INITIALIZED;                             \
	} while (0)

#endif
