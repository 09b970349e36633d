/* SPDX-License-Identifier: MIT */
/* detect_device.c - the detectors of where ranks work and where their
 * parameters live: ranks sharing a device of one NCCL host, a rank on a
 * device other than its own, parameter reports pointing into another
 * device's memory, parameters on meta (materialised later, or never); and
 * the faults a plan injected.
 *
 * Detectors of format/findings.def (rt_vw_detect_E), run once after the
 * pass in the table's order (detectors.c). */
#include <string.h>

#include "analyse.h"

void rt_vw_detect_INJECTED_FAULTS(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		struct rt_vw_finding *f;

		if (!r->faults)
			continue;
		f = rt_vw_finding_add(t, k, r->meta.rank);
		rt_vw_fv_int(f, RT_FV_faults, (int64_t)r->faults);
		rt_vw_fv_text(f, RT_FV_first_fault, r->first_fault);
	}
}

/* A finding of kind about each rank whose count (of rank r) is not 0. */
static void per_rank(struct rt_vw_trace *t, enum rt_finding_kind kind,
		     uint64_t (*count)(const struct rt_vw_rank *r))
{
	for (int i = 0; i < t->nranks; i++) {
		uint64_t n = count(&t->ranks[i]);

		if (n)
			rt_vw_fv_int(rt_vw_finding_add(t, kind, t->ranks[i].meta.rank), RT_FV_params,
				     (int64_t)n);
	}
}

static uint64_t misplaced(const struct rt_vw_rank *r)
{
	return r->params_misplaced;
}

void rt_vw_detect_PARAMS_OTHER_DEVICE(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	per_rank(t, k, misplaced);
}

static uint64_t meta_later(const struct rt_vw_rank *r)
{
	return r->params_meta ? 0 : r->params_ever_meta;
}

void rt_vw_detect_PARAMS_META_LATER(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	per_rank(t, k, meta_later);
}

static uint64_t still_meta(const struct rt_vw_rank *r)
{
	return rt_vw_crashed_training(r) ? r->params_meta : 0;
}

void rt_vw_detect_PARAMS_STILL_META(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	per_rank(t, k, still_meta);
}

/* Several ranks on one device of one (NCCL) host: one finding per device,
 * naming its ranks. */
void rt_vw_detect_SHARED_DEVICE(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *a = &t->ranks[i];
		struct rt_vw_finding *f;
		bool first = true;
		int n = 0;

		if (a->init_device < 0 || a->dup_of >= 0)
			continue;
		for (int j = 0; j < t->nranks; j++) {
			const struct rt_vw_rank *b = &t->ranks[j];

			if (b->init_device == a->init_device && b->dup_of < 0 &&
			    !strcmp(rt_vw_nccl_host(a), rt_vw_nccl_host(b))) {
				first = first && j >= i;
				n++;
			}
		}
		if (n <= 1 || !first)
			continue;
		f = rt_vw_finding_add(t, k, -1);
		for (int j = 0; j < t->nranks; j++) {
			const struct rt_vw_rank *b = &t->ranks[j];

			if (b->init_device == a->init_device && b->dup_of < 0 &&
			    !strcmp(rt_vw_nccl_host(a), rt_vw_nccl_host(b)))
				rt_vw_finding_rank(f, b->meta.rank);
		}
		rt_vw_fv_int(f, RT_FV_device, a->init_device);
		rt_vw_fv_text(f, RT_FV_host, rt_vw_nccl_host(a));
		rt_vw_fv_flag(f, RT_FV_init_failed, a->init_ret != 0);
	}
}

/* A rank working on a device other than its own (LOCAL_RANK, else its
 * communicator's). A process that made a ncclCommInitAll communicator
 * drives several devices by design (nccl-tests -g N): it has no one device. */
void rt_vw_detect_OTHER_DEVICE(struct rt_vw_trace *t, enum rt_finding_kind k)
{
	for (int i = 0; i < t->nranks; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		int expect = r->meta.local_rank >= 0 ? r->meta.local_rank : r->comm_device;
		struct rt_vw_finding *f;
		uint64_t others;

		if (expect < 0 || expect >= RT_VW_MAX_DEV || !r->readable || r->dup_of >= 0 ||
		    r->multi_device)
			continue;
		others = r->devices_used & ~(1ull << expect);
		if (!others)
			continue;
		f = rt_vw_finding_add(t, k, r->meta.rank);
		rt_vw_fv_int(f, RT_FV_device, __builtin_ctzll(others));
		rt_vw_fv_int(f, RT_FV_expected_device, expect);
		rt_vw_fv_flag(f, RT_FV_by_local_rank, r->meta.local_rank >= 0);
		rt_vw_fv_flag(f, RT_FV_by_comm, r->meta.local_rank < 0);
	}
}
