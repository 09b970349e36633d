/* SPDX-License-Identifier: MIT */
/* cudart_int.h - private to the simulated CUDA runtime: the device heaps,
 * pools and configuration (cudart.c) shared with the memory calls
 * (cudart_mem.c) and the driver entry points (cudart_entry.c). */
#ifndef SIM_CUDART_INT_H
#define SIM_CUDART_INT_H

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_MAX_DEVICES 64
#define DEVICE_ALIGN 256

#define EXPORT __attribute__((visibility("default")))

/* One live allocation inside a heap, kept in address order. */
struct block {
	uintptr_t addr;
	size_t size;
	struct block *next;
};

/* A device's memory (or the managed range): a lazily reserved address range
 * carved first-fit. */
struct heap {
	char *base;
	size_t cap;
	size_t used;
	struct block *blocks;
	int device;
	bool managed;
};

struct sim_pool {
	int device;
	struct sim_pool *next; /* created pools (cuMemPoolCreate) */
};

enum mem_kind { MEM_UNKNOWN, MEM_HOST, MEM_DEVICE, MEM_MANAGED };

/* cudart.c */
extern pthread_mutex_t lock;
extern size_t device_mem;
extern struct heap heaps[SIM_MAX_DEVICES];
extern struct heap managed_heap;
extern struct block *host_blocks;
extern struct sim_pool pools[SIM_MAX_DEVICES];
extern __thread int current_device;
void config(void);
cudaError_t fail(cudaError_t e);
bool valid_device(int d);
void *heap_alloc(struct heap *h, size_t size);
bool heap_free(struct heap *h, const void *p);
struct block *find_block(struct block *list, uintptr_t p);
struct heap *heap_of(const void *p);
enum mem_kind classify(const void *p, size_t len, int *dev);

#endif
