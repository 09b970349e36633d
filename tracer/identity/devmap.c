/* SPDX-License-Identifier: MIT */
/* devmap.c - the device of a driver context or memory pool: the small
 * lock-free tables the driver rows' device rules use (format/driver_api.def):
 * context -> device (cuDevicePrimaryCtxRetain) and pool -> device
 * (cuMemPoolCreate), for both recorders (interposition and CUPTI).
 *
 * No allocation, no lock; safe from any thread. */
#include "base.h"
#include "identity.h"

#define RT_DRV_KEYS 64

struct key_dev {
	const void *key;
	int dev;
};

static struct key_dev ctxs[RT_DRV_KEYS], pools[RT_DRV_KEYS];

static void learn(struct key_dev *t, const void *key, int dev)
{
	if (!key || dev < 0)
		return;
	for (int i = 0; i < RT_DRV_KEYS; i++) {
		const void *k = __atomic_load_n(&t[i].key, __ATOMIC_ACQUIRE), *none = NULL;

		if (k == key) {
			__atomic_store_n(&t[i].dev, dev, __ATOMIC_RELAXED);
			return;
		}
		if (!k) {
			__atomic_store_n(&t[i].dev, dev, __ATOMIC_RELAXED);
			if (__atomic_compare_exchange_n(&t[i].key, &none, key, false,
							__ATOMIC_RELEASE, __ATOMIC_RELAXED))
				return;
			if (none == key)
				return;
		}
	}
}

static int lookup(struct key_dev *t, const void *key, int dflt)
{
	for (int i = 0; key && i < RT_DRV_KEYS; i++) {
		const void *k = __atomic_load_n(&t[i].key, __ATOMIC_ACQUIRE);

		if (!k)
			break;
		if (k == key)
			return __atomic_load_n(&t[i].dev, __ATOMIC_RELAXED);
	}
	return dflt;
}

int rt_tr_drv_learn_ctx(const void *ctx, int dev)
{
	learn(ctxs, ctx, dev);
	return 0;
}

int rt_tr_drv_ctx_device(const void *ctx)
{
	return lookup(ctxs, ctx, rt_tr_cur_dev);
}

int rt_tr_drv_learn_pool(const void *pool, int dev)
{
	learn(pools, pool, dev);
	return 0;
}

int rt_tr_drv_pool_device(const void *pool)
{
	return lookup(pools, pool, rt_tr_cur_dev);
}
