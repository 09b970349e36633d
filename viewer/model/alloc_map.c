/* SPDX-License-Identifier: MIT */
/* alloc_map.c - the live allocations of one rank: pointer -> (size, device).
 *
 * Open addressing with linear probing and tombstones; grows (doubles) when
 * a quarter full of live entries, otherwise rehashes in place to drop
 * tombstones. Memory grows with live allocations, not with events; a rank
 * with a few live allocations keeps a table of 128 slots (5 KiB), which
 * stays in cache when the parallel pass switches between ranks.
 *
 * Beside the slots, an index of the live ranges sorted by base (ix), for
 * "which allocation holds this pointer" (copies, parameters): a binary
 * search instead of a scan of every slot. It is kept only while the ranges
 * are disjoint (then at most one holds a pointer) and at most IX_MAX;
 * otherwise a scan answers, with the same rule: of the live allocations
 * holding the pointer, the one with the highest base (the slots' order,
 * which depends on the table's size, decides nothing). Empty or
 * wrapping ranges hold nothing and are not indexed. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_int.h"
#include "rt_util.h"

static size_t hash_ptr(uint64_t p, size_t cap)
{
	return (size_t)((p >> 8) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
}

/* Rehash: double when half full of live entries, else just drop tombstones. */
static bool map_grow(struct rt_vw_alloc_map *m)
{
	/* 16 slots first: sized to what a rank holds (128 were 84 MB at 16,384 ranks) */
	size_t cap = !m->cap ? 16 : (m->live + 1) * 4 > m->cap ? m->cap * 2 : m->cap;
	struct rt_vw_alloc *n = calloc(cap, sizeof(*n));

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

enum { IX_MAX = 8192, IX_REBUILD = 2048 };

/* The first index entry whose base is above p. */
static size_t ix_upper(const struct rt_vw_alloc_map *m, uint64_t p)
{
	size_t a = 0, b = m->nix;

	while (a < b) {
		size_t c = a + (b - a) / 2;

		if (m->ix[c].lo <= p)
			a = c + 1;
		else
			b = c;
	}
	return a;
}

static void ix_off(struct rt_vw_alloc_map *m, int why)
{
	free(m->ix);
	m->ix = NULL;
	m->nix = m->ixcap = 0;
	m->ix_state = why;
}

static void ix_add(struct rt_vw_alloc_map *m, uint64_t lo, uint64_t size)
{
	uint64_t hi = lo + size;
	size_t i;

	if (m->ix_state || hi <= lo)
		return;
	i = ix_upper(m, lo);
	if ((i > 0 && m->ix[i - 1].hi > lo) || (i < m->nix && m->ix[i].lo < hi)) {
		ix_off(m, 2);
		return;
	}
	if (!RT_GROW(m->ix, m->nix, m->ixcap, 64, IX_MAX)) {
		ix_off(m, 1);
		return;
	}
	memmove(&m->ix[i + 1], &m->ix[i], (m->nix - i) * sizeof(*m->ix));
	m->ix[i] = (struct rt_vw_range){ lo, hi };
	m->nix++;
}

static void ix_del(struct rt_vw_alloc_map *m, uint64_t lo)
{
	size_t i = m->ix_state ? 0 : ix_upper(m, lo);

	if (i == 0 || m->ix[i - 1].lo != lo)
		return;
	memmove(&m->ix[i - 1], &m->ix[i], (m->nix - i) * sizeof(*m->ix));
	m->nix--;
}

/* Off for size, back under IX_REBUILD live: built again from the slots. */
static void ix_rebuild(struct rt_vw_alloc_map *m)
{
	m->ix_state = 0;
	for (size_t j = 0; j < m->cap && !m->ix_state; j++)
		if (m->slots[j].used == 1)
			ix_add(m, m->slots[j].ptr, m->slots[j].size);
}

struct rt_vw_alloc *rt_vw_map_holding(struct rt_vw_alloc_map *m, uint64_t p)
{
	size_t i;

	if (m->ix_state) { /* the holder with the highest base, as the index finds */
		struct rt_vw_alloc *best = NULL;

		for (size_t j = 0; j < m->cap; j++)
			if (m->slots[j].used == 1 && p >= m->slots[j].ptr &&
			    p < m->slots[j].ptr + m->slots[j].size && (!best || m->slots[j].ptr > best->ptr))
				best = &m->slots[j];
		return best;
	}
	i = ix_upper(m, p);
	return i > 0 && p < m->ix[i - 1].hi ? rt_vw_map_find(m, m->ix[i - 1].lo) : NULL;
}

struct rt_vw_alloc_map *rt_vw_map_new(void)
{
	size_t n = (sizeof(struct rt_vw_alloc_map) + 63) & ~(size_t)63;
	struct rt_vw_alloc_map *m = aligned_alloc(64, n);

	if (m)
		memset(m, 0, n);
	return m;
}

void rt_vw_map_free(struct rt_vw_alloc_map *m)
{
	free(m->slots);
	free(m->ix);
}

struct rt_vw_alloc *rt_vw_map_put(struct rt_vw_alloc_map *m, uint64_t ptr, uint64_t size, int dev)
{
	size_t j, reuse = SIZE_MAX;

	if ((m->used + 1) * 2 > m->cap && !map_grow(m))
		return NULL;
	for (j = hash_ptr(ptr, m->cap); m->slots[j].used; j = (j + 1) & (m->cap - 1)) {
		if (m->slots[j].used == 1 && m->slots[j].ptr == ptr) {
			ix_del(m, ptr);
			ix_add(m, ptr, size);
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
	ix_add(m, ptr, size);
	m->slots[j] = (struct rt_vw_alloc){ .ptr = ptr, .size = size, .dev = (int8_t)dev, .used = 1 };
	return &m->slots[j];
}

void rt_vw_map_drop(struct rt_vw_alloc_map *m, struct rt_vw_alloc *a, bool ghost)
{
	ix_del(m, a->ptr);
	a->used = ghost ? 3 : 2;
	m->live--;
	if (m->live == 0 && m->ix_state) { /* nothing live: nothing overlaps */
		ix_off(m, 0);
	} else if (m->ix_state == 1 && m->live <= IX_REBUILD) {
		ix_rebuild(m);
	}
}

struct rt_vw_alloc *rt_vw_map_find_ghost(struct rt_vw_alloc_map *m, uint64_t ptr)
{
	if (!m->cap)
		return NULL;
	for (size_t j = hash_ptr(ptr, m->cap); m->slots[j].used; j = (j + 1) & (m->cap - 1))
		if (m->slots[j].used == 3 && m->slots[j].ptr == ptr)
			return &m->slots[j];
	return NULL;
}

struct rt_vw_alloc *rt_vw_map_find(struct rt_vw_alloc_map *m, uint64_t ptr)
{
	if (!m->cap)
		return NULL;
	for (size_t j = hash_ptr(ptr, m->cap); m->slots[j].used; j = (j + 1) & (m->cap - 1))
		if (m->slots[j].used == 1 && m->slots[j].ptr == ptr)
			return &m->slots[j];
	return NULL;
}
