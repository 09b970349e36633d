/* SPDX-License-Identifier: MIT */
/* cudart_entry.c - simulated CUDA runtime driver entry points
 * (cudaGetDriverEntryPoint*), served by the simulated libcuda.so.1.
 * Split out of cudart.c. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "queue.h"
#include "simgpu.h"
#include "cudart_int.h"

typedef int (*gpa_fn)(const char *, void **, int, unsigned long long, int *);
static gpa_fn driver_gpa_fn;

/* libcuda's cuGetProcAddress_v2, loaded at first use (as NVIDIA's runtime
 * loads libcuda.so.1); NULL without a driver. */
static gpa_fn driver_gpa(void)
{
	gpa_fn gpa = __atomic_load_n(&driver_gpa_fn, __ATOMIC_ACQUIRE);
	void *h;

	if (gpa)
		return gpa;
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (h) {
		int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");

		gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
		if (init) /* the runtime initialises the driver before using it */
			init(0);
	}
	__atomic_store_n(&driver_gpa_fn, gpa, __ATOMIC_RELEASE);
	return gpa;
}

static cudaError_t entry_point(const char *symbol, void **funcPtr, unsigned int version,
			       unsigned long long flags, enum cudaDriverEntryPointQueryResult *st)
{
	gpa_fn gpa = driver_gpa();
	int status = 0, rc;

	if (!symbol || !funcPtr)
		return fail(cudaErrorInvalidValue);
	if (!gpa)
		return fail(cudaErrorInsufficientDriver);
	rc = gpa(symbol, funcPtr, (int)version, flags, &status);
	if (st) /* CUdriverProcAddressQueryResult and cudaDriverEntryPointQueryResult agree */
		*st = (enum cudaDriverEntryPointQueryResult)status;
	if (rc == 0)
		return cudaSuccess;
	*funcPtr = NULL;
	/* NVIDIA's runtime: a missing symbol is cudaSuccess with the status set */
	return rc == 500 /* CUDA_ERROR_NOT_FOUND */ && st ? cudaSuccess : fail(cudaErrorSymbolNotFound);
}

EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
					   unsigned long long flags,
					   enum cudaDriverEntryPointQueryResult *driverStatus)
{
	SQ_FORK_CHECK();
	return entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus);
}

EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
						    unsigned int cudaVersion,
						    unsigned long long flags,
						    enum cudaDriverEntryPointQueryResult *driverStatus)
{
	SQ_FORK_CHECK();
	return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus);
}

EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
						unsigned long long flags,
						enum cudaDriverEntryPointQueryResult *driverStatus)
{
	SQ_FORK_CHECK();
	return entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus);
}

EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
							 unsigned int cudaVersion,
							 unsigned long long flags,
							 enum cudaDriverEntryPointQueryResult *st)
{
	SQ_FORK_CHECK();
	return entry_point(symbol, funcPtr, cudaVersion, flags, st);
}
