/* SPDX-License-Identifier: MIT */
/* test_model.c - the model, the matcher, every detector and every verdict,
 * on events built in memory with the format's encoder (format/encode.h): no
 * process, no file.
 *
 * A scenario is a function that feeds events to a fresh model of N ranks
 * (each rank i: LOCAL_RANK i, device i, communicator 0xC0 of N ranks, by
 * default) and one row of `cases`: the verdict expected, the detector whose
 * finding must appear (its text, a substring) and the one that must not.
 * Each row is its own ctest entry (model.<name>), so a failure names the
 * check that broke. */
#include "model_rig.h"

/* ---- building blocks ---- */

static void init_all(void)
{
	for (int i = 0; i < t->nranks; i++) {
		OK(i, cudaSetDevice, i, RT_FN_device, U(i));
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, U(t->nranks), RT_FN_rank, U(i));
	}
}

static void coll_all(unsigned id, uint32_t seq, uint64_t count)
{
	for (int i = 0; i < t->nranks; i++)
		ev(i, id, i, 0, false, RT_FN_comm_id, COMM, RT_FN_seq, U(seq), RT_FN_count, count, -1);
}

static void alloc(int ri, int dev, uint64_t ptr, uint64_t size)
{
	OK(ri, cudaMalloc, dev, RT_FN_ptr, ptr, RT_FN_size, size);
}

static void exit_all(int status)
{
	for (int i = 0; i < t->nranks; i++)
		OK(i, rt_exit, i, RT_FN_status, U(status));
}

static void param(int ri, const char *name, int devtype, int dev, uint64_t bytes, uint64_t ptr)
{
	OK(ri, rt_param, dev, RT_FN_name, name, RT_FN_devtype, U(devtype), RT_FN_device, U(dev),
	   RT_FN_numel, U(64), RT_FN_bytes, bytes, RT_FN_ptr, ptr);
}

/* ---- scenarios ---- */

static void s_healthy(void)
{
	init_all();
	for (int i = 0; i < t->nranks; i++)
		alloc(i, i, 0x1000 + U(i) * 0x100000, 4096);
	coll_all(RT_ID_ncclBroadcast, 1, 16);
	coll_all(RT_ID_ncclAllGather, 2, 128);
	coll_all(RT_ID_ncclAllReduce, 3, 128);
	exit_all(0);
}

/* transformers 4.53.0: init broadcasts, no all-gather, every rank fails */
static void s_root_nccl(void)
{
	init_all();
	coll_all(RT_ID_ncclBroadcast, 1, 16);
	coll_all(RT_ID_ncclBroadcast, 2, 16);
	exit_all(1);
}

/* the same, with the probe: no root forward, parameters at freed storage */
static void s_root_probe(void)
{
	init_all();
	coll_all(RT_ID_ncclBroadcast, 1, 16);
	for (int i = 0; i < t->nranks; i++)
		param(i, "embed.weight", 0, i, 0, 0);
	exit_all(1);
}

static void s_faults(void)
{
	init_all();
	for (int i = 0; i < t->nranks; i++)
		OK(i, rt_fault, i, RT_FN_target, "cudaMalloc", RT_FN_action, U(1) /* error: the first of format/actions.def */,
		   RT_FN_arg, U(2), RT_FN_call, U(3), RT_FN_rule, U(0));
	exit_all(0);
}

static void s_params_other_device(void)
{
	init_all();
	alloc(0, 1, 0x5000000, 1 << 20); /* rank 0 allocates on device 1 ... */
	param(0, "w", 0, 0, 4096, 0x5000100); /* ... and says the tensor is on cuda:0 */
	exit_all(0);
}

static void s_params_meta_later(void)
{
	init_all();
	for (int i = 0; i < t->nranks; i++) {
		param(i, "w", 2, i, 0, 0);
		alloc(i, i, 0x7000000 + U(i) * 0x100000, 4096);
		param(i, "w", 0, i, 4096, 0x7000000 + U(i) * 0x100000);
	}
	exit_all(0);
}

static void s_params_still_meta(void)
{
	init_all();
	param(1, "w", 2, 1, 0, 0);
	exit_all(1);
}

/* every rank binds device 0: NCCL refuses the duplicates */
static void s_shared_device(void)
{
	for (int i = 0; i < t->nranks; i++) {
		OK(i, cudaSetDevice, 0, RT_FN_device, U(0));
		ev(i, RT_ID_ncclCommInitRank, 0, 5, false, RT_FN_comm_id, COMM, RT_FN_nranks,
		   U(t->nranks), RT_FN_rank, U(i), -1);
	}
	exit_all(1);
}

/* rank 1 allocates on device 0, then copies into it from its own device */
static void s_other_device(void)
{
	init_all();
	alloc(1, 0, 0x9000000, 8192);
	OK(1, cudaMemcpy, 1, RT_FN_dst, U(0x9000000), RT_FN_src, U(0x100), RT_FN_count, U(64));
	exit_all(0);
}

static void s_killed(void)
{
	init_all();
	ev(1, RT_ID_cudaMalloc, 1, 0, true, RT_FN_size, U(64), -1);
	OK(1, rt_signal, 1, RT_FN_signo, U(9));
	OK(0, rt_exit, 0, RT_FN_status, U(0));
}

static void s_died_inside(void)
{
	init_all();
	ev(1, RT_ID_cudaMalloc, 1, 0, true, RT_FN_size, U(64), -1);
	OK(0, rt_exit, 0, RT_FN_status, U(0));
}

static void s_exit_status(void)
{
	init_all();
	ev(1, RT_ID_cudaMalloc, 1, 2, false, RT_FN_size, U(1ull << 40), -1);
	OK(0, rt_exit, 0, RT_FN_status, U(0));
	OK(1, rt_exit, 1, RT_FN_status, U(3));
}

static void s_no_end(void)
{
	init_all();
	OK(0, rt_exit, 0, RT_FN_status, U(0));
}

static void s_unknown_frees(void)
{
	init_all();
	OK(0, cudaFree, 0, RT_FN_ptr, U(0xdead000));
	exit_all(0);
}

/* Thread B's cudaMalloc returns the address thread A frees, on clocks a few
 * ns apart: the model may see B's allocation before A's free. Each free
 * still finds its allocation. */
static void s_address_reused_across_threads(void)
{
	init_all();
	OK(0, cudaMalloc, 0, RT_FN_ptr, U(0xbeef000), RT_FN_size, U(256));
	OK(0, cudaMalloc, 0, RT_FN_ptr, U(0xbeef000), RT_FN_size, U(256));
	OK(0, cudaFree, 0, RT_FN_ptr, U(0xbeef000));
	OK(0, cudaFree, 0, RT_FN_ptr, U(0xbeef000));
	exit_all(0);
}

static void s_discarded(void)
{
	init_all();
	t->ranks[1].discarded = 12;
	exit_all(0);
}

/* rank 1 calls a different collective at sequence 2 */
static void s_mismatch(void)
{
	init_all();
	coll_all(RT_ID_ncclAllReduce, 1, 128);
	for (int i = 0; i < t->nranks; i++)
		ev(i, i == 1 ? RT_ID_ncclBroadcast : RT_ID_ncclAllGather, i, 0, false, RT_FN_comm_id,
		   COMM, RT_FN_seq, U(2), RT_FN_count, U(128), -1);
	exit_all(0);
}

/* rank 1 calls AllReduce #1 with another datatype: the text names both */
static void s_mismatch_dtype(void)
{
	init_all();
	for (int i = 0; i < t->nranks; i++)
		ev(i, RT_ID_ncclAllReduce, i, 0, false, RT_FN_comm_id, COMM, RT_FN_seq, U(1),
		   RT_FN_count, U(128), RT_FN_datatype, U(i == 1 ? 6 : 7), -1);
	exit_all(0);
}

/* rank 1 never reaches sequence 2 */
static void s_never_reached(void)
{
	init_all();
	coll_all(RT_ID_ncclAllReduce, 1, 128);
	for (int i = 0; i < t->nranks; i++)
		if (i != 1)
			ev(i, RT_ID_ncclAllReduce, i, 0, false, RT_FN_comm_id, COMM, RT_FN_seq, U(2),
			   RT_FN_count, U(128), -1);
	exit_all(0);
}

/* rank 1 is killed inside AllReduce #2: NCCL returned at once to the others,
 * which enqueued #3 before they learnt it (ncclRemoteError, exit 1); #3 is
 * missing from rank 1 because it died, not a mismatch */
static void s_killed_in_collective(void)
{
	init_all();
	coll_all(RT_ID_ncclAllReduce, 1, 128);
	for (int i = 0; i < t->nranks; i++) {
		for (uint64_t seq = 2; i != 1 && seq <= 3; seq++)
			ev(i, RT_ID_ncclAllReduce, i, 0, false, RT_FN_comm_id, COMM, RT_FN_seq, U(seq),
			   RT_FN_count, U(128), -1);
		if (i != 1)
			OK(i, rt_exit, i, RT_FN_status, U(1));
	}
	ev(1, RT_ID_ncclAllReduce, 1, 0, true, RT_FN_comm_id, COMM, RT_FN_seq, U(2), RT_FN_count,
	   U(128), -1);
	OK(1, rt_signal, 1, RT_FN_signo, U(9));
}

/* a split into two communicators of 2: their collectives match at size 2 */
static void s_split(void)
{
	init_all();
	for (int i = 0; i < t->nranks; i++)
		OK(i, ncclCommSplit, i, RT_FN_parent_id, COMM, RT_FN_color, U(i % 2), RT_FN_key, U(i),
		   RT_FN_comm_id, U(0x5100 + i % 2));
	for (int i = 0; i < t->nranks; i++)
		ev(i, RT_ID_ncclAllReduce, i, 0, false, RT_FN_comm_id, U(0x5100 + i % 2), RT_FN_seq, U(1),
		   RT_FN_count, U(64), -1);
	exit_all(0);
}

/* the same as the windowed merge may deliver it, rank by rank: each split
 * records its size, so rank 0's all-reduce opens an entry of 2 */
static void s_split_rank_major(void)
{
	init_all();
	for (int i = 0; i < t->nranks; i++) {
		OK(i, ncclCommSplit, i, RT_FN_parent_id, COMM, RT_FN_color, U(i % 2), RT_FN_key, U(i),
		   RT_FN_comm_id, U(0x5100 + i % 2), RT_FN_nranks, U(2));
		ev(i, RT_ID_ncclAllReduce, i, 0, false, RT_FN_comm_id, U(0x5100 + i % 2), RT_FN_seq, U(1),
		   RT_FN_count, U(64), -1);
	}
	exit_all(0);
}

/* the metadata says 6 ranks, 4 have a trace */
static void s_missing(void)
{
	for (int i = 0; i < t->nranks; i++)
		t->ranks[i].meta.world_size = 6;
	s_healthy();
}

/* no world size in the metadata; the communicator says 6 ranks */
static void s_missing_by_comm(void)
{
	for (int i = 0; i < t->nranks; i++) {
		t->ranks[i].meta.world_size = -1;
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, U(6), RT_FN_rank, U(i));
	}
	exit_all(0);
}

/* a damaged metadata's world size (a fuzzer's): read as 100000 ranks at
 * most, all but these 4 missing, listed in one array (a realloc per missing
 * rank grew the heap by 2 GB under ASan) */
static void s_missing_huge_world(void)
{
	for (int i = 0; i < t->nranks; i++)
		t->ranks[i].meta.world_size = 202855711;
	s_healthy();
}


/* rank 0 also drives 6 devices through one ncclCommInitAll communicator
 * (nccl-tests -g 6): its 6 ranks are all rank 0's, none is missing */
static void s_init_all(void)
{
	init_all();
	OK(0, ncclCommInitAll, 0, RT_FN_comm_id, U(0x1A), RT_FN_nranks, U(6));
	for (int d = 0; d < 6; d++)
		ev(0, RT_ID_ncclAllReduce, d, 0, false, RT_FN_comm_id, U(0x1A), RT_FN_seq, U(1),
		   RT_FN_count, U(64), -1);
	coll_all(RT_ID_ncclAllReduce, 1, 128);
	exit_all(0);
}

/* rank 0's two devices of one ncclCommInitAll communicator disagree */
static void s_init_all_mismatch(void)
{
	init_all();
	OK(0, ncclCommInitAll, 0, RT_FN_comm_id, U(0x1A), RT_FN_nranks, U(2));
	for (int d = 0; d < 2; d++)
		ev(0, d ? RT_ID_ncclAllGather : RT_ID_ncclAllReduce, d, 0, false, RT_FN_comm_id, U(0x1A),
		   RT_FN_seq, U(1), RT_FN_count, U(64), -1);
	exit_all(0);
}

/* rank 3's directory says it is rank 1 */
static void s_duplicate(void)
{
	t->ranks[3].meta.rank = 1;
	s_healthy();
}

/* rank 1's tracing stopped (disk full) before sequence 2: that it "never
 * called" it is not evidence */
static void s_capped_never_reached(void)
{
	s_never_reached();
	t->ranks[1].stopped = true;
	t->ranks[1].stop_reason = 2;
	t->ranks[1].stop_events = 3;
}

/* rank 2 damaged, rank 1 on another device: the misplacement is shown by
 * events present and still decides */
static void s_damaged_elsewhere(void)
{
	s_other_device();
	snprintf(t->ranks[2].damaged, sizeof(t->ranks[2].damaged), "stream-1-1: offset 96: bad packet magic");
	t->damaged = 1;
}

/* SIGTERM to every rank a collective apart (Ctrl-C to `run`, through the
 * launcher): ranks 0, 2, 3 inside all-reduce #2, rank 1 not there yet */
static void s_interrupted(void)
{
	init_all();
	coll_all(RT_ID_ncclAllReduce, 1, 128);
	for (int i = 0; i < t->nranks; i++)
		if (i != 1)
			ev(i, RT_ID_ncclAllReduce, i, 0, true, RT_FN_comm_id, COMM, RT_FN_seq, U(2),
			   RT_FN_count, U(128), -1);
	for (int i = 0; i < t->nranks; i++)
		OK(i, rt_signal, i, RT_FN_signo, U(15));
}

/* SIGINT (a terminal's Ctrl-C passed on by the launcher): the same */
static void s_interrupted_int(void)
{
	init_all();
	coll_all(RT_ID_ncclAllReduce, 1, 128);
	ev(0, RT_ID_ncclAllReduce, 0, 0, true, RT_FN_comm_id, COMM, RT_FN_seq, U(2), RT_FN_count,
	   U(128), -1);
	for (int i = 0; i < t->nranks; i++)
		OK(i, rt_signal, i, RT_FN_signo, U(2));
}

/* one rank SIGTERMed, the others failed on their own: no interruption */
static void s_one_terminated(void)
{
	init_all();
	OK(1, rt_signal, 1, RT_FN_signo, U(15));
	for (int i = 0; i < t->nranks; i++)
		if (i != 1)
			OK(i, rt_exit, i, RT_FN_status, U(1));
}

/* every traced rank SIGTERMed, but rank 4 of 5 left no trace: it may be
 * the one that died and the launcher stopped the rest (torchrun, rt-launch) */
static void s_terminated_after_a_missing_rank(void)
{
	s_interrupted();
	for (int i = 0; i < t->nranks; i++)
		t->ranks[i].meta.world_size = t->nranks + 1;
}

/* interrupted after a real divergence: rank 1 called an all-gather where
 * the others called all-reduce #2; that evidence still decides */
static void s_interrupted_after_mismatch(void)
{
	init_all();
	coll_all(RT_ID_ncclAllReduce, 1, 128);
	for (int i = 0; i < t->nranks; i++)
		ev(i, i == 1 ? RT_ID_ncclAllGather : RT_ID_ncclAllReduce, i, 0, true, RT_FN_comm_id, COMM,
		   RT_FN_seq, U(2), RT_FN_count, U(128), -1);
	for (int i = 0; i < t->nranks; i++)
		OK(i, rt_signal, i, RT_FN_signo, U(15));
}

/* one ctest entry per row: each RIG_CASE is its own Test() */
RIG_CASE(model, healthy, s_healthy, RT_V_HEALTHY, NULL, NULL)
RIG_CASE(model, root_forward_nccl, s_root_nccl, RT_V_SKIPPED_FSDP_ROOT, "no all-gather followed", "(probe)")
RIG_CASE(model, root_forward_probe, s_root_probe, RT_V_SKIPPED_FSDP_ROOT, "never ran (probe)", "no all-gather")
RIG_CASE(model, injected_faults, s_faults, RT_V_HEALTHY, "1 injected fault fired (first: cudaMalloc:error=cudaErrorMemoryAllocation at call 3)", NULL)
/* rank 1 failed, then the launcher SIGTERMed rank 0 (torchrun's stop of the
 * survivors): a consequence, said as one, not a crash of rank 0's own */
static void s_survivor_terminated(void)
{
	init_all();
	OK(1, rt_exit, 1, RT_FN_status, U(1));
	for (int i = 2; i < t->nranks; i++)
		OK(i, rt_exit, i, RT_FN_status, U(0));
	OK(0, rt_signal, 0, RT_FN_signo, U(15));
}

RIG_CASE(model, a_launchers_sigterm_after_a_failure_is_its_consequence, s_survivor_terminated,
	 RT_V_CRASHED, "rank 0 was stopped by SIGTERM after rank 1 failed", "killed by signal 15")
RIG_CASE(model, params_other_device, s_params_other_device, RT_V_DEVICE_MISPLACEMENT,
	 "point into memory of another device", NULL)
RIG_CASE(model, params_meta_later, s_params_meta_later, RT_V_HEALTHY, "materialised later", "still on meta")
RIG_CASE(model, params_still_meta, s_params_still_meta, RT_V_CRASHED, "still on meta when it ended", NULL)
RIG_CASE(model, shared_device, s_shared_device, RT_V_DEVICE_MISPLACEMENT, "all use device 0 on host node", NULL)
RIG_CASE(model, other_device, s_other_device, RT_V_DEVICE_MISPLACEMENT, "rank 1 used device 0, expected device 1", NULL)
RIG_CASE(model, killed, s_killed, RT_V_CRASHED, "rank 1 was killed by signal 9 inside cudaMalloc", NULL)
RIG_CASE(model, died_inside, s_died_inside, RT_V_CRASHED, "rank 1 died inside cudaMalloc", NULL)
RIG_CASE(model, exit_status, s_exit_status, RT_V_CRASHED, "rank 1 exited with status 3; first error: cudaMalloc returned cudaErrorMemoryAllocation", NULL)
RIG_CASE(model, no_end, s_no_end, RT_V_CRASHED, "has no recorded end", NULL)
RIG_CASE(model, unknown_frees, s_unknown_frees, RT_V_HEALTHY, "freed 1 pointer(s) it never allocated", NULL)
RIG_CASE(model, address_reused_across_threads, s_address_reused_across_threads, RT_V_HEALTHY, NULL,
	 "never allocated")
RIG_CASE(model, discarded, s_discarded, RT_V_INCONCLUSIVE, "rank 1: 12 events discarded", NULL)
RIG_CASE(model, collective_mismatch, s_mismatch, RT_V_COLLECTIVE_MISMATCH, "Broadcast", NULL)
RIG_CASE(model, mismatch_names_the_datatype, s_mismatch_dtype, RT_V_COLLECTIVE_MISMATCH,
	 "rank 1 called AllReduce(count 128, ncclFloat16) where 3 ranks called AllReduce(count 128, ncclFloat32)",
	 NULL)
RIG_CASE(model, never_reached, s_never_reached, RT_V_COLLECTIVE_MISMATCH, "1", NULL)
RIG_CASE(model, killed_in_collective_is_no_mismatch, s_killed_in_collective, RT_V_CRASHED,
	 "rank 1 was killed by signal 9 inside ncclAllReduce", "never called")
RIG_CASE(model, split_communicators_close, s_split, RT_V_HEALTHY, NULL, NULL)
RIG_CASE(model, split_sized_rank_by_rank, s_split_rank_major, RT_V_HEALTHY, NULL, NULL)
RIG_CASE(model, missing_ranks, s_missing, RT_V_INCONCLUSIVE, "missing", NULL)
RIG_CASE(model, missing_by_communicator, s_missing_by_comm, RT_V_INCONCLUSIVE, "ranks 4,5 missing", NULL)
RIG_CASE(model, missing_huge_world, s_missing_huge_world, RT_V_INCONCLUSIVE,
	 "ranks 4,5,6,7,8,9,10,11,12,13,14,15,16", NULL)
RIG_CASE(model, init_all_is_one_process, s_init_all, RT_V_HEALTHY, NULL, NULL)
RIG_CASE(model, init_all_devices_disagree, s_init_all_mismatch, RT_V_COLLECTIVE_MISMATCH,
	 "the devices of rank 0 (ncclCommInitAll) called AllReduce(count 64) and AllGather(count 64)", NULL)
RIG_CASE(model, duplicate_rank, s_duplicate, RT_V_INCONCLUSIVE, "rank-00001 and rank-00003 both claim rank 1", NULL)
RIG_CASE(model, capped_is_not_never_called, s_capped_never_reached, RT_V_INCONCLUSIVE, "rank 1 trace incomplete", "never called")
RIG_CASE(model, damaged_elsewhere_still_classifies, s_damaged_elsewhere, RT_V_DEVICE_MISPLACEMENT, "rank 1 used device 0", NULL)
RIG_CASE(model, interrupted_is_not_never_called, s_interrupted, RT_V_INCONCLUSIVE,
	 "job interrupted: every rank was stopped by signal 15 (SIGTERM)", "never called")
RIG_CASE(model, interrupted_is_not_crashed, s_interrupted_int, RT_V_INCONCLUSIVE,
	 "job interrupted: every rank was stopped by signal 2 (SIGINT)", "killed by signal")
RIG_CASE(model, one_rank_terminated_is_no_interruption, s_one_terminated, RT_V_CRASHED,
	 "rank 1 was killed by signal 15", "interrupted")
RIG_CASE(model, a_missing_rank_is_no_interruption, s_terminated_after_a_missing_rank, RT_V_CRASHED,
	 "killed by signal 15", "interrupted")
RIG_CASE(model, interrupted_after_mismatch_keeps_it, s_interrupted_after_mismatch, RT_V_COLLECTIVE_MISMATCH,
	 "collective mismatch at sequence 2", NULL)


Test(model, missing_huge_world_list)
{
	rig(4);
	s_missing_huge_world();
	rt_vw_model_finish(m);
	cr_assert_eq(t->world_size, 100000);
	cr_assert_eq(t->nmissing, 100000 - 4);
	cr_assert_eq(t->missing[0], 4);
	cr_assert_eq(t->missing[t->nmissing - 1], 99999);
	rt_vw_free(t);
	free(m);
}

/* ---- the model's numbers, beside the findings ---- */

Test(model, memory_devices_and_pitch_allocations)
{
	rig(2);
	t->flags = RT_VW_KEEP_MEMORY;
	init_all();
	alloc(0, 0, 0x1000, 1000);
	OK(0, cudaMallocPitch, 0, RT_FN_ptr, U(0x9000), RT_FN_pitch, U(512), RT_FN_width, U(100),
	   RT_FN_height, U(10));
	OK(0, cudaFree, 0, RT_FN_ptr, U(0x1000));
	OK(0, cudaMallocHost, 0, RT_FN_ptr, U(0x20000), RT_FN_size, U(777));
	ev(0, RT_ID_cudaMalloc, 0, 2, false, RT_FN_size, U(1ull << 40), -1);
	exit_all(0);
	rt_vw_model_finish(m);
	cr_expect_eq(t->ranks[0].dev_peak[0], 1000 + 5120, "the pitched allocation is pitch * height");
	cr_expect_eq(t->ranks[0].dev_bytes[0], 5120);
	cr_expect_eq(t->ranks[0].allocs, 3);
	cr_expect_eq(t->ranks[0].failed_allocs, 1);
	cr_expect_eq(t->ranks[0].host_peak, 777);
	cr_expect_eq(t->ranks[0].devices_used, 1);
	cr_expect_eq(t->ranks[0].nmem, 3, "three device memory changes (host ones are not)");
	cr_expect_eq(t->ranks[0].mem[1].bytes, 6120);
	cr_expect_eq(t->ranks[0].mem[2].bytes, 5120);
	rt_vw_free(t);
	free(m);
}

Test(model, communicator_sizes_init_and_split)
{
	rig(4);
	s_split();
	rt_vw_model_finish(m);
	cr_expect_eq(rt_vw_comm_size(t, COMM), 4);
	cr_expect_eq(rt_vw_comm_size(t, 0x5100), 2, "a split's size is the ranks that joined it");
	cr_expect_eq(rt_vw_comm_size(t, 0x5101), 2);
	cr_expect_eq(rt_vw_comm_size(t, 0x999), 4, "unknown: the trace's rank count");
	cr_expect_eq(t->ranks[3].colls[RT_CK_AllReduce], 1);
	rt_vw_free(t);
	free(m);
}

Test(model, endings_are_worded_once)
{
	static const struct {
		void (*build)(void);
		int rank;
		const char *end;
	} ends[] = {
		{ s_healthy, 0, "exit 0" },
		{ s_killed, 1, "signal 9 in cudaMalloc" },
		{ s_died_inside, 1, "died in cudaMalloc" },
		{ s_no_end, 1, "vanished (no end)" },
	};
	char out[96];

	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		rig(4);
		ends[i].build();
		rt_vw_model_finish(m);
		rt_vw_rank_end(&t->ranks[ends[i].rank], out, sizeof(out));
		cr_expect_str_eq(out, ends[i].end);
		rt_vw_free(t);
		free(m);
	}
}

/* Rank 1's Python ran without the PyTorch probe (its metadata says so): a
 * crash can no longer be told from the 4.53.0 bug, so the verdict is
 * inconclusive, naming the probe; a mismatch the host trace shows still
 * decides; the probe turned off on purpose (RANKTRACE_PROBE=0) is no reason. */
static void probe_state(int st)
{
	t->ranks[1].meta.python_probe = st;
	snprintf(t->ranks[1].meta.python_probe_detail, sizeof(t->ranks[1].meta.python_probe_detail),
		 "ModuleNotFoundError: No module named '_ctypes'");
}

static void s_crash_no_probe(void)
{
	s_exit_status();
	probe_state(RT_PROBE_FAILED);
}

static void s_mismatch_no_probe(void)
{
	s_mismatch();
	probe_state(RT_PROBE_MISSING);
}

static void s_crash_probe_off(void)
{
	s_exit_status();
	probe_state(RT_PROBE_OFF);
}

RIG_CASE(model, a_crash_without_the_probe_is_inconclusive, s_crash_no_probe, RT_V_INCONCLUSIVE,
	 "rank 1 exited with status 3", NULL)
RIG_CASE(model, a_mismatch_without_the_probe_still_decides, s_mismatch_no_probe,
	 RT_V_COLLECTIVE_MISMATCH, "Broadcast", NULL)
RIG_CASE(model, the_probe_turned_off_is_no_reason, s_crash_probe_off, RT_V_CRASHED,
	 "rank 1 exited with status 3", NULL)

Test(model, the_inconclusive_reason_names_the_rank_and_the_probe)
{
	char why[600];

	rig(4);
	s_crash_no_probe();
	rt_vw_model_finish(m);
	cr_assert_eq(t->verdict, RT_V_INCONCLUSIVE);
	rt_vw_inconclusive_text(t, why, sizeof(why));
	cr_assert(strstr(why, "rank 1 ran Python without the ranktrace probe (ModuleNotFoundError: "
			      "No module named '_ctypes')"), "%s", why);
	rt_vw_free(t);
	free(m);
}
