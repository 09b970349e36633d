/* SPDX-License-Identifier: MIT */
/* driver.c - driver entry points fetched by address still reach the tracer.
 *
 * CUDA 12+ programs (PyTorch's expandable segments, NCCL, Triton) call the
 * driver through pointers from cuGetProcAddress or the runtime's
 * cudaGetDriverEntryPoint*, not through symbols an LD_PRELOAD library can
 * interpose. These four lookups (and their _ptsz/v1 twins) are wrapped here:
 * the real lookup runs, and when it hands out a function declared in
 * format/driver_api.def (for that cudaVersion and stream flavour), its real
 * address is kept in the wrapper's slot and the program receives the
 * wrapper (tracer/wrappers.c, generated from the table like every other
 * call). The lookup's status, result and errno are the real ones; a pointer
 * that is already one of our wrappers is never stored as "real" (no loop).
 * Each lookup is recorded as an rt_drv_entry event. No allocation, no lock;
 * safe from any thread. */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "core.h"
#include "interpose.h"

typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa1_fn)(const char *, void **, int, cuuint64_t);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *symbolStatus);
CUresult rt_tr_gpa_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
	__asm__("cuGetProcAddress");
/* the driver's lookups: resolved by name, or the first pointer handed out */
static gpa2_fn real_gpa2;
static gpa1_fn real_gpa1;

/* The wrapper to hand out for `symbol` at `version`, its real function
 * stored; NULL to hand out fn itself. cuGetProcAddress itself, fetched
 * through the runtime (cuda-python, Triton do), leads to our lookup. */
static void *redirect(const char *symbol, int version, bool ptsz, void *fn)
{
	const struct rt_tr_proc *p = NULL;
	void *wrapper, **slot, *none = NULL;

	if (!symbol || !fn || rt_tr_off)
		return NULL;
	if (!strcmp(symbol, "cuGetProcAddress")) {
		if (fn == (void *)cuGetProcAddress_v2 || fn == (void *)rt_tr_gpa_v1)
			return NULL;
		__atomic_compare_exchange_n(version >= 12000 ? (void **)&real_gpa2 : (void **)&real_gpa1,
					    &none, fn, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
		return version >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)rt_tr_gpa_v1;
	}
	for (unsigned i = 0; i < rt_tr_nprocs && !p; i++)
		if (!strcmp(rt_tr_procs[i].gpa, symbol) && version >= rt_tr_procs[i].since)
			p = &rt_tr_procs[i];
	if (!p)
		return NULL;
	wrapper = ptsz && p->wrapper_ptsz ? p->wrapper_ptsz : p->wrapper;
	slot = ptsz && p->wrapper_ptsz ? p->real_ptsz : p->real;
	if (fn == p->wrapper || fn == p->wrapper_ptsz)
		return NULL; /* already ours (found through our own export) */
	/* keep the first real function seen: both are the driver's, same ABI */
	__atomic_compare_exchange_n(slot, &none, fn, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	return wrapper;
}

/* Run after a successful real lookup: swap *pfn, record the lookup. */
static void after_lookup(const char *symbol, void **pfn, int version, uint64_t flags, bool ptsz,
			 int result)
{
	int e = errno;
	void *w = result == 0 && pfn ? redirect(symbol, version, ptsz, *pfn) : NULL;

	if (w)
		*pfn = w;
	rt_tr_ev_rt_drv_entry(symbol, version, flags, w != NULL, result);
	errno = e;
}

#define RESOLVE(var, name, lib)                                                        \
	do {                                                                           \
		if (rt_unlikely(!var)) {                                               \
			var = (__typeof__(var))rt_tr_resolve(name, lib);               \
			if (!var)                                                      \
				return RT_FAIL;                                        \
		}                                                                      \
	} while (0)

typedef cudaError_t (*ep_fn)(const char *, void **, unsigned long long,
			     enum cudaDriverEntryPointQueryResult *);
typedef cudaError_t (*epv_fn)(const char *, void **, unsigned int, unsigned long long,
			      enum cudaDriverEntryPointQueryResult *);

#define RT_FAIL CUDA_ERROR_NOT_INITIALIZED

RT_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
				       cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
	gpa2_fn real = __atomic_load_n(&real_gpa2, __ATOMIC_ACQUIRE);
	CUresult r;

	RESOLVE(real, "cuGetProcAddress_v2", RT_LIB_DRIVER);
	__atomic_store_n(&real_gpa2, real, __ATOMIC_RELEASE);
	r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
	after_lookup(symbol, pfn, cudaVersion, flags,
		     flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, r);
	return r;
}

/* The CUDA 11.3 ABI, still exported by the driver as "cuGetProcAddress". */
RT_EXPORT CUresult rt_tr_gpa_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	gpa1_fn real = __atomic_load_n(&real_gpa1, __ATOMIC_ACQUIRE);
	CUresult r;

	RESOLVE(real, "cuGetProcAddress", RT_LIB_DRIVER);
	__atomic_store_n(&real_gpa1, real, __ATOMIC_RELEASE);
	r = real(symbol, pfn, cudaVersion, flags);
	after_lookup(symbol, pfn, cudaVersion, flags,
		     flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, r);
	return r;
}

#undef RT_FAIL
#define RT_FAIL cudaErrorInsufficientDriver

/* One body for the runtime's four lookups; resolved by their own names. */
static cudaError_t entry_point(epv_fn *slot, const char *real_name, const char *symbol,
			       void **funcPtr, int version, unsigned long long flags,
			       enum cudaDriverEntryPointQueryResult *st)
{
	cudaError_t r;

	RESOLVE(*slot, real_name, RT_LIB_CUDA);
	r = (*slot)(symbol, funcPtr, (unsigned)version, flags, st);
	after_lookup(symbol, funcPtr, version, flags, flags & cudaEnablePerThreadDefaultStream, r);
	return r;
}

static cudaError_t entry_point_unversioned(ep_fn *slot, const char *real_name, const char *symbol,
					   void **funcPtr, unsigned long long flags,
					   enum cudaDriverEntryPointQueryResult *st)
{
	cudaError_t r;

	RESOLVE(*slot, real_name, RT_LIB_CUDA);
	r = (*slot)(symbol, funcPtr, flags, st);
	/* the runtime answers for its own version */
	after_lookup(symbol, funcPtr, CUDART_VERSION, flags,
		     flags & cudaEnablePerThreadDefaultStream, r);
	return r;
}

RT_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
						       unsigned int cudaVersion,
						       unsigned long long flags,
						       enum cudaDriverEntryPointQueryResult *st)
{
	static epv_fn real;

	return entry_point(&real, "cudaGetDriverEntryPointByVersion", symbol, funcPtr,
			   (int)cudaVersion, flags, st);
}

RT_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
							    unsigned int cudaVersion,
							    unsigned long long flags,
							    enum cudaDriverEntryPointQueryResult *st)
{
	static epv_fn real;

	return entry_point(&real, "cudaGetDriverEntryPointByVersion_ptsz", symbol, funcPtr,
			   (int)cudaVersion, flags, st);
}

RT_EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
					      unsigned long long flags,
					      enum cudaDriverEntryPointQueryResult *st)
{
	static ep_fn real;

	return entry_point_unversioned(&real, "cudaGetDriverEntryPoint", symbol, funcPtr, flags, st);
}

RT_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
						   unsigned long long flags,
						   enum cudaDriverEntryPointQueryResult *st)
{
	static ep_fn real;

	return entry_point_unversioned(&real, "cudaGetDriverEntryPoint_ptsz", symbol, funcPtr,
				       flags, st);
}
