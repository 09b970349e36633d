/* SPDX-License-Identifier: MIT */
/* cuda_vmm.c - simulated CUDA driver virtual memory management
 * (cuMemCreate, cuMemMap, cuMemAddressReserve, ...) over vmm.c in libcudart.
 * Split out of cuda.c. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "simgpu.h"
#include "cuda_int.h"

EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
					      CUmemAllocationGranularity_flags option)
{
	CHECK_INIT();
	if (!granularity || !prop)
		return CUDA_ERROR_INVALID_VALUE;
	*granularity = SIMGPU_VMM_GRANULARITY;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			    const CUmemAllocationProp *prop, unsigned long long flags)
{
	CHECK_INIT();
	if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return (CUresult)simgpu_vmm_create((uint64_t *)handle, size, prop->location.id);
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	CHECK_INIT();
	return (CUresult)simgpu_vmm_release(handle);
}

EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
						       CUmemGenericAllocationHandle handle)
{
	int dev;
	size_t size;
	CUresult rc;

	CHECK_INIT();
	if (!prop)
		return CUDA_ERROR_INVALID_VALUE;
	rc = (CUresult)simgpu_vmm_handle_info(handle, &dev, &size);
	if (rc == CUDA_SUCCESS) {
		memset(prop, 0, sizeof(*prop));
		prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
		prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		prop->location.id = dev;
	}
	return rc;
}

EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
	CHECK_INIT();
	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	return (CUresult)simgpu_vmm_retain((uint64_t *)handle, (uint64_t)(uintptr_t)addr);
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
				    CUdeviceptr addr, unsigned long long flags)
{
	CHECK_INIT();
	return (CUresult)simgpu_vmm_reserve((uint64_t *)ptr, size, alignment, addr);
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	CHECK_INIT();
	return (CUresult)simgpu_vmm_free(ptr, size);
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			 CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	CHECK_INIT();
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return (CUresult)simgpu_vmm_map(ptr, size, offset, handle);
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	CHECK_INIT();
	return (CUresult)simgpu_vmm_unmap(ptr, size);
}

EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
			       size_t count)
{
	int prot = PROT_NONE;

	CHECK_INIT();
	if (!desc || count == 0)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < count; i++) {
		if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		    !valid_dev(desc[i].location.id))
			return CUDA_ERROR_INVALID_DEVICE;
		if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			prot = PROT_READ | PROT_WRITE;
		else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ && prot == PROT_NONE)
			prot = PROT_READ;
	}
	return (CUresult)simgpu_vmm_access(ptr, size, prot);
}
