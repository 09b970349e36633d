/* SPDX-License-Identifier: MIT */
/* test_plan_prepare.c - two findings on events built in memory: a fault
 * plan's rule that fired on no rank (injection-never-fired: never reached,
 * or reached and its when=/rank=/prob= never held; a warning beside any
 * verdict), and a model nobody prepared (unprepared-model: every rank ran
 * optimizer steps over parameters neither sharded nor synchronised, nothing
 * reduced), with the cases where each must NOT fire. One ctest entry per row. */
#include "model_rig.h"

#define U(x) ((uint64_t)(x))

static void end(int ri, int status)
{
	OK(ri, rt_exit, -1, RT_FN_status, U(status));
}

static void rule(int ri, int idx, const char *spec, uint64_t seen, uint64_t fired)
{
	OK(ri, rt_inj_rule, -1, RT_FN_rule, U(idx), RT_FN_spec, spec, RT_FN_seen, seen, RT_FN_fired, fired);
}

/* the optimizer's step: params updated, sharded and synchronised among them,
 * reductions asked of torch.distributed so far */
static void step(int ri, uint64_t n, uint64_t params, uint64_t sharded, uint64_t synced, uint64_t red)
{
	OK(ri, rt_optim_step, -1, RT_FN_step, n, RT_FN_params, params, RT_FN_sharded, sharded,
	   RT_FN_synced, synced, RT_FN_reductions, red);
}

static void allreduce(int ri, uint64_t seq)
{
	OK(ri, ncclAllReduce, ri, RT_FN_comm_id, U(COMM), RT_FN_seq, seq, RT_FN_count, U(1024),
	   RT_FN_datatype, U(7), RT_FN_op, U(0));
}

/* ---- a rule that never fired ---- */

/* skip-fsdp-root on a DDP job: no root forward, the point never reached */
static void s_fsdp_preset_on_ddp(void)
{
	for (int i = 0; i < t->nranks; i++) {
		allreduce(i, 1);
		rule(i, 0, "skip-fsdp-root", 0, 0);
		end(i, 0);
	}
}

/* reached 3 times a rank, but rank=5 names no rank of a 4-rank job */
static void s_rank_never_held(void)
{
	for (int i = 0; i < t->nranks; i++) {
		allreduce(i, 1);
		rule(i, 0, "ncclAllReduce:error=ncclSystemError:rank=5", 3, 0);
		end(i, 0);
	}
}

/* it fired on rank 2 only (rank=2): fired, nothing said */
static void s_fired_on_one_rank(void)
{
	for (int i = 0; i < t->nranks; i++) {
		allreduce(i, 1);
		if (i == 2)
			OK(i, rt_fault, -1, RT_FN_target, "ncclAllReduce", RT_FN_action, U(0), RT_FN_arg,
			   U(0), RT_FN_call, U(1), RT_FN_rule, U(0));
		rule(i, 0, "ncclAllReduce:delay=1ms:rank=2", 1, i == 2);
		end(i, 0);
	}
}

/* two rules, the second never fired: said of the second only */
static void s_second_rule(void)
{
	for (int i = 0; i < t->nranks; i++) {
		allreduce(i, 1);
		rule(i, 0, "ncclAllReduce:delay=1ms", 1, 1);
		rule(i, 1, "cudaMalloc:error=cudaErrorMemoryAllocation:when=3", 0, 0);
		end(i, 0);
	}
}

/* a rank's rule records from two processes (a launcher and its worker)
 * summed: the worker's pass counts */
static void s_child_process_fired(void)
{
	for (int i = 0; i < t->nranks; i++) {
		rule(i, 0, "skip-prepare-model", 0, 0);
		next_pid = 900 + (uint32_t)i;
		rule(i, 0, "skip-prepare-model", 1, 1);
		end(i, 0);
	}
}

/* ---- the model nobody prepared ---- */

/* skip-prepare-model on a DDP job: each rank steps its own copy, exit 0 */
static void s_unprepared(void)
{
	for (int i = 0; i < t->nranks; i++) {
		step(i, 1, 21, 0, 0, 0);
		step(i, 2, 21, 0, 0, 0);
		step(i, i == 3 ? 2 : 4, 21, 0, 0, 0);
		end(i, 0);
	}
}

/* DDP: the parameters are synchronised and NCCL reduced the gradients */
static void s_ddp(void)
{
	for (int i = 0; i < t->nranks; i++) {
		allreduce(i, 1);
		step(i, 1, 21, 0, 21, 0);
		end(i, 0);
	}
}

/* a program that averages its gradients by hand (dist.all_reduce): reductions */
static void s_manual_allreduce(void)
{
	for (int i = 0; i < t->nranks; i++) {
		step(i, 1, 21, 0, 0, 21);
		end(i, 0);
	}
}

/* FSDP2: the parameters the optimizer steps are sharded */
static void s_fsdp2(void)
{
	for (int i = 0; i < t->nranks; i++) {
		step(i, 1, 21, 21, 0, 0);
		end(i, 0);
	}
}

/* one rank prepared (synchronised), the others not: not every rank alone */
static void s_some_ranks(void)
{
	for (int i = 0; i < t->nranks; i++) {
		step(i, 1, 21, 0, i == 0 ? 21 : 0, 0);
		end(i, 0);
	}
}

/* only rank 0 steps an optimizer (the others evaluate, say): not every
 * rank trained alone */
static void s_one_rank_steps(void)
{
	for (int i = 0; i < t->nranks; i++) {
		if (i == 0)
			step(i, 1, 21, 0, 0, 0);
		end(i, 0);
	}
}

RIG_CASE(plan, fsdp_preset_on_ddp, s_fsdp_preset_on_ddp, RT_V_HEALTHY,
	 "skip-fsdp-root never fired: this job ran no FSDP root forward (FSDP v1 or fully_shard): "
	 "fsdp.root_forward was never reached (ranks 0,1,2,3)", NULL)
RIG_CASE(plan, rank_never_held, s_rank_never_held, RT_V_HEALTHY,
	 "ncclAllReduce:error=ncclSystemError:rank=5 never fired: ncclAllReduce was reached 12 times "
	 "and the rule's when=, rank= or prob= never held", "never reached")
RIG_CASE(plan, fired_on_one_rank, s_fired_on_one_rank, RT_V_HEALTHY, "1 injected fault fired",
	 "never fired")
RIG_CASE(plan, second_rule, s_second_rule, RT_V_HEALTHY,
	 "cudaMalloc:error=cudaErrorMemoryAllocation:when=3 never fired: cudaMalloc was never reached",
	 "ncclAllReduce:delay=1ms never fired")
RIG_CASE(plan, child_process_fired, s_child_process_fired, RT_V_HEALTHY, NULL, NULL)
RIG_CASE(prepare, unprepared, s_unprepared, RT_V_UNPREPARED_MODEL,
	 "ranks 0,1,2,3 each trained their own copy of the model: at least 2 optimizer steps a rank over "
	 "21 parameters neither sharded nor synchronised", NULL)
RIG_CASE(prepare, ddp, s_ddp, RT_V_HEALTHY, NULL, NULL)
RIG_CASE(prepare, manual_allreduce, s_manual_allreduce, RT_V_HEALTHY, NULL, NULL)
RIG_CASE(prepare, fsdp2, s_fsdp2, RT_V_HEALTHY, NULL, NULL)
RIG_CASE(prepare, some_ranks, s_some_ranks, RT_V_HEALTHY, NULL, NULL)
RIG_CASE(prepare, one_rank_steps, s_one_rank_steps, RT_V_HEALTHY, NULL, NULL)
