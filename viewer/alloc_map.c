/* SPDX-License-Identifier: MIT */
/* alloc_map.c - the live allocations of one rank: pointer -> (size, device).
 *
 * Open addressing with linear probing and tombstones; grows (doubles) when
 * half full of live entries, otherwise rehashes in place to drop tombstones.
 * Memory grows with live allocations, not with events. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_int.h"

static size_t hash_ptr(uint64_t p, size_t cap)
{
	return (size_t)((p >> 8) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
}

/* Rehash: double when half full of live entries, else just drop tombstones. */
static bool map_grow(struct rt_vw_alloc_map *m)
{
	size_t cap = !m->cap ? 1024 : (m->live + 1) * 4 > m->cap ? m->cap * 2 : m->cap;
	struct alloc *n = calloc(cap, sizeof(*n));

	if (!n)
		return false;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (m->slots[i].used != 1)
			continue;
		for (j = hash_ptr(m->slots[i].ptr, cap); n[j].used; j = (j + 1) & (cap - 1))
			;
		n[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = n;
	m->cap = cap;
	m->used = m->live;
	return true;
}

struct alloc *rt_vw_map_put(struct rt_vw_alloc_map *m, uint64_t ptr, uint64_t size, int dev)
{
	size_t j, reuse = SIZE_MAX;

	if ((m->used + 1) * 2 > m->cap && !map_grow(m))
		return NULL;
	for (j = hash_ptr(ptr, m->cap); m->slots[j].used; j = (j + 1) & (m->cap - 1)) {
		if (m->slots[j].used == 1 && m->slots[j].ptr == ptr) {
			m->slots[j].size = size; /* allocated again without a free we saw */
			m->slots[j].dev = (int8_t)dev;
			return &m->slots[j];
		}
		if (m->slots[j].used == 3 && m->slots[j].ptr == ptr)
			m->slots[j].used = 2; /* a new allocation at a freed base ends its ghost */
		if (m->slots[j].used == 2 && reuse == SIZE_MAX)
			reuse = j;
	}
	if (reuse == SIZE_MAX)
		m->used++;
	else
		j = reuse;
	m->live++;
	m->slots[j] = (struct alloc){ .ptr = ptr, .size = size, .dev = (int8_t)dev, .used = 1 };
	return &m->slots[j];
}

void rt_vw_map_drop(struct rt_vw_alloc_map *m, struct alloc *a, bool ghost)
{
	a->used = ghost ? 3 : 2;
	m->live--;
}

struct alloc *rt_vw_map_find_ghost(struct rt_vw_alloc_map *m, uint64_t ptr)
{
	if (!m->cap)
		return NULL;
	for (size_t j = hash_ptr(ptr, m->cap); m->slots[j].used; j = (j + 1) & (m->cap - 1))
		if (m->slots[j].used == 3 && m->slots[j].ptr == ptr)
			return &m->slots[j];
	return NULL;
}

struct alloc *rt_vw_map_find(struct rt_vw_alloc_map *m, uint64_t ptr)
{
	if (!m->cap)
		return NULL;
	for (size_t j = hash_ptr(ptr, m->cap); m->slots[j].used; j = (j + 1) & (m->cap - 1))
		if (m->slots[j].used == 1 && m->slots[j].ptr == ptr)
			return &m->slots[j];
	return NULL;
}
