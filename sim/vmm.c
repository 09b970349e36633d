/* SPDX-License-Identifier: MIT */
/* vmm.c - the simulated devices' virtual memory management (cuMemCreate,
 * cuMemAddressReserve, cuMemMap, cuMemSetAccess, ...), inside
 * sim/libcudart.so.13 so that the runtime and the driver share one view.
 *
 * A reservation is an mmap(PROT_NONE, MAP_NORESERVE) range. A physical
 * allocation is a memfd of its size, charged to its device's memory budget
 * (the same budget cudaMalloc draws from, simgpu_charge) from cuMemCreate
 * until it is released and no longer mapped. cuMemMap maps the memfd into a
 * reservation (MAP_FIXED|MAP_SHARED, so two mappings of one handle see the
 * same bytes) with no access; cuMemSetAccess makes it readable/writable, as
 * on a GPU where touching a mapping before cuMemSetAccess faults. The
 * runtime's copy checks ask simgpu_vmm_lookup() which device backs a range.
 *
 * Thread-safe: one mutex. Called by sim/cuda.c (libcuda.so.1) through the
 * simgpu_vmm_* entry points and by cudart.c's address classification. */
#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "simgpu.h"

#define EXPORT __attribute__((visibility("default")))
#define PHYS_MAGIC 0x50485953u

struct phys {
	unsigned magic;
	int fd;
	int device;
	size_t size;
	int refs;      /* 1 for the handle until released, +1 per mapping */
	struct phys *next;
};

struct mapping {
	uintptr_t addr;
	size_t size;
	struct phys *phys;
	bool access;
	struct mapping *next;
};

struct reservation {
	uintptr_t addr;
	size_t size;
	struct reservation *next;
};

static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct phys *physs;
static struct mapping *maps;
static struct reservation *resvs;

static bool aligned(size_t v)
{
	return v && v % SIMGPU_VMM_GRANULARITY == 0;
}

static struct phys *phys_of(uint64_t handle)
{
	for (struct phys *p = physs; p; p = p->next)
		if ((uint64_t)(uintptr_t)p == handle && p->magic == PHYS_MAGIC)
			return p;
	return NULL;
}

static struct reservation *resv_holding(uintptr_t a, size_t len)
{
	for (struct reservation *r = resvs; r; r = r->next)
		if (a >= r->addr && a + len <= r->addr + r->size && a + len >= a)
			return r;
	return NULL;
}

/* Drop one reference; the last one returns the bytes to the device. */
static void phys_put(struct phys *p)
{
	if (--p->refs > 0)
		return;
	for (struct phys **l = &physs; *l; l = &(*l)->next)
		if (*l == p) {
			*l = p->next;
			break;
		}
	simgpu_charge(p->device, -(long long)p->size);
	close(p->fd);
	p->magic = 0;
	free(p);
}

EXPORT int simgpu_vmm_create(uint64_t *handle, size_t size, int device)
{
	struct phys *p;
	int rc = CUDA_SUCCESS;

	if (!handle || !aligned(size))
		return CUDA_ERROR_INVALID_VALUE;
	if (device < 0 || device >= simgpu_device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	p = calloc(1, sizeof(*p));
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p->fd = memfd_create("simgpu-vmm", MFD_CLOEXEC);
	if (p->fd < 0 || ftruncate(p->fd, (off_t)size) != 0) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free;
	}
	if (!simgpu_charge(device, (long long)size)) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free;
	}
	p->magic = PHYS_MAGIC;
	p->device = device;
	p->size = size;
	p->refs = 1;
	pthread_mutex_lock(&vmm_lock);
	p->next = physs;
	physs = p;
	pthread_mutex_unlock(&vmm_lock);
	*handle = (uint64_t)(uintptr_t)p;
	return CUDA_SUCCESS;
out_free:
	if (p->fd >= 0)
		close(p->fd);
	free(p);
	return rc;
}

EXPORT int simgpu_vmm_release(uint64_t handle)
{
	struct phys *p;

	pthread_mutex_lock(&vmm_lock);
	p = phys_of(handle);
	if (p)
		phys_put(p);
	pthread_mutex_unlock(&vmm_lock);
	return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The device and size behind a handle (cuMemGetAllocationPropertiesFromHandle). */
EXPORT int simgpu_vmm_handle_info(uint64_t handle, int *device, size_t *size)
{
	struct phys *p;

	pthread_mutex_lock(&vmm_lock);
	p = phys_of(handle);
	if (p) {
		*device = p->device;
		*size = p->size;
	}
	pthread_mutex_unlock(&vmm_lock);
	return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT int simgpu_vmm_reserve(uint64_t *ptr, size_t size, size_t align, uint64_t hint)
{
	struct reservation *r;
	size_t over;
	char *base;
	uintptr_t a;

	if (!ptr || !aligned(size) || (align & (align - 1)))
		return CUDA_ERROR_INVALID_VALUE;
	if (align < SIMGPU_VMM_GRANULARITY)
		align = SIMGPU_VMM_GRANULARITY;
	over = size + align;
	base = mmap((void *)(uintptr_t)hint, over, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a = ((uintptr_t)base + align - 1) & ~(uintptr_t)(align - 1);
	if (a > (uintptr_t)base)
		munmap(base, a - (uintptr_t)base);
	if ((uintptr_t)base + over > a + size)
		munmap((void *)(a + size), (uintptr_t)base + over - (a + size));
	r = malloc(sizeof(*r));
	if (!r) {
		munmap((void *)a, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r->addr = a;
	r->size = size;
	pthread_mutex_lock(&vmm_lock);
	r->next = resvs;
	resvs = r;
	pthread_mutex_unlock(&vmm_lock);
	*ptr = a;
	return CUDA_SUCCESS;
}

EXPORT int simgpu_vmm_free(uint64_t ptr, size_t size)
{
	struct reservation *found = NULL;
	int rc = CUDA_ERROR_INVALID_VALUE;

	pthread_mutex_lock(&vmm_lock);
	for (struct reservation **l = &resvs; *l; l = &(*l)->next)
		if ((*l)->addr == ptr && (*l)->size == size) {
			found = *l;
			break;
		}
	for (struct mapping *m = maps; found && m; m = m->next)
		if (m->addr >= found->addr && m->addr < found->addr + found->size)
			found = NULL; /* still mapped: unmap first */
	if (found) {
		for (struct reservation **l = &resvs; *l; l = &(*l)->next)
			if (*l == found) {
				*l = found->next;
				break;
			}
		munmap((void *)found->addr, found->size);
		free(found);
		rc = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&vmm_lock);
	return rc;
}

static bool overlaps_mapping(uintptr_t a, size_t len)
{
	for (struct mapping *m = maps; m; m = m->next)
		if (a < m->addr + m->size && m->addr < a + len)
			return true;
	return false;
}

EXPORT int simgpu_vmm_map(uint64_t ptr, size_t size, size_t offset, uint64_t handle)
{
	struct mapping *m = NULL;
	struct phys *p;
	int rc = CUDA_ERROR_INVALID_VALUE;

	if (!aligned(size) || offset % SIMGPU_VMM_GRANULARITY)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm_lock);
	p = phys_of(handle);
	if (!p)
		goto out;
	if (offset > p->size || size > p->size - offset || !resv_holding(ptr, size) ||
	    overlaps_mapping(ptr, size))
		goto out;
	m = malloc(sizeof(*m));
	if (!m) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	if (mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, p->fd,
		 (off_t)offset) == MAP_FAILED) {
		free(m);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	*m = (struct mapping){ ptr, size, p, false, maps };
	maps = m;
	p->refs++;
	rc = CUDA_SUCCESS;
out:
	pthread_mutex_unlock(&vmm_lock);
	return rc;
}

/* Unmap every mapping inside [ptr, ptr+size); the range must cover whole
 * mappings and at least one. */
EXPORT int simgpu_vmm_unmap(uint64_t ptr, size_t size)
{
	int n = 0, rc = CUDA_SUCCESS;

	pthread_mutex_lock(&vmm_lock);
	for (struct mapping *m = maps; m; m = m->next)
		if (m->addr < ptr + size && ptr < m->addr + m->size &&
		    (m->addr < ptr || m->addr + m->size > ptr + size))
			rc = CUDA_ERROR_INVALID_VALUE; /* splits a mapping */
	for (struct mapping **l = &maps; rc == CUDA_SUCCESS && *l;) {
		struct mapping *m = *l;

		if (m->addr >= ptr && m->addr + m->size <= ptr + size) {
			*l = m->next;
			mmap((void *)m->addr, m->size, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
			phys_put(m->phys);
			free(m);
			n++;
		} else {
			l = &m->next;
		}
	}
	pthread_mutex_unlock(&vmm_lock);
	return rc == CUDA_SUCCESS && n == 0 ? CUDA_ERROR_INVALID_VALUE : rc;
}

/* Grant (prot != 0) or revoke access to every mapping in the range, which
 * must be fully mapped. */
EXPORT int simgpu_vmm_access(uint64_t ptr, size_t size, int prot)
{
	size_t covered = 0;
	int rc = CUDA_ERROR_INVALID_VALUE;

	pthread_mutex_lock(&vmm_lock);
	for (struct mapping *m = maps; m; m = m->next)
		if (m->addr >= ptr && m->addr + m->size <= ptr + size)
			covered += m->size;
	if (covered == size && size) {
		for (struct mapping *m = maps; m; m = m->next)
			if (m->addr >= ptr && m->addr + m->size <= ptr + size) {
				mprotect((void *)m->addr, m->size, prot);
				m->access = prot != PROT_NONE;
			}
		rc = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&vmm_lock);
	return rc;
}

/* Handle of the mapping holding addr, with a new reference (cuMemRetainAllocationHandle). */
EXPORT int simgpu_vmm_retain(uint64_t *handle, uint64_t addr)
{
	int rc = CUDA_ERROR_INVALID_VALUE;

	pthread_mutex_lock(&vmm_lock);
	for (struct mapping *m = maps; m; m = m->next)
		if (addr >= m->addr && addr < m->addr + m->size) {
			m->phys->refs++;
			*handle = (uint64_t)(uintptr_t)m->phys;
			rc = CUDA_SUCCESS;
			break;
		}
	pthread_mutex_unlock(&vmm_lock);
	return rc;
}

static struct mapping *mapping_holding(uintptr_t a)
{
	for (struct mapping *m = maps; m; m = m->next)
		if (a >= m->addr && a < m->addr + m->size)
			return m;
	return NULL;
}

/* 1: [p, p+len) lies in accessible mappings (adjacent ones may be spanned,
 * as PyTorch's expandable segments do), *device = the first one's device;
 * 0: inside a reservation but not (all) mapped or accessible; -1: not VMM. */
int simgpu_vmm_lookup(uintptr_t p, size_t len, int *device)
{
	struct mapping *m;
	uintptr_t cur = p;
	int r;

	pthread_mutex_lock(&vmm_lock);
	m = mapping_holding(p);
	if (!m) {
		r = resv_holding(p, 1) ? 0 : -1;
		goto out;
	}
	*device = m->phys->device;
	r = 1;
	while (m && m->access && m->addr + m->size < p + len) {
		cur = m->addr + m->size;
		m = mapping_holding(cur);
	}
	if (!m || !m->access)
		r = 0;
out:
	pthread_mutex_unlock(&vmm_lock);
	return r;
}
