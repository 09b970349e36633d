/* SPDX-License-Identifier: MIT */
/* test_root.c - the probe's evidence in the model, on events built in memory:
 * a module the FSDP root wraps called while no root forward ran (detectors
 * root-forward-unwrapped and unwrapped-call: crashed, or every rank and no
 * root forward ever, crash or not; the exception that left the call), and
 * a rank that ends
 * abnormally in teardown, after training finished (crashed-in-teardown),
 * with the cases where each must NOT fire. One ctest entry per row. */
#include "model_rig.h"

#define U(x) ((uint64_t)(x))
#define OK(ri, id, dev, ...) ev(ri, RT_ID_##id, dev, 0, false, __VA_ARGS__, -1)
#define TRAINER "transformers/trainer.py:3791 compute_loss"

/* rank ri reports parameter name on the cpu: numel elements, bytes of storage */
static void param(int ri, const char *name, uint64_t numel, uint64_t bytes)
{
	OK(ri, rt_param, -1, RT_FN_name, name, RT_FN_devtype, U(1), RT_FN_device, U(-1),
	   RT_FN_numel, numel, RT_FN_bytes, bytes, RT_FN_ptr, bytes ? U(0x7000) : U(0));
}

static void marker(int ri, const char *name, int64_t v)
{
	OK(ri, rt_marker, -1, RT_FN_name, name, RT_FN_value, U(v));
}

static void unwrapped(int ri, const char *module, const char *caller, uint64_t calls)
{
	OK(ri, rt_unwrapped_call, -1, RT_FN_module, module, RT_FN_caller, caller, RT_FN_calls, calls);
}

static void root_forward(int ri)
{
	OK(ri, rt_fsdp_forward, -1, RT_FN_phase, U(0), RT_FN_units, U(3));
	OK(ri, rt_fsdp_forward, -1, RT_FN_phase, U(1), RT_FN_units, U(3));
}

/* wrapped as loaded (64 elements), then the views FSDP leaves: 32-element
 * shard views (use_orig_params=True) or storage freed (False) */
static void wrap(int ri, bool orig_params)
{
	marker(ri, "rt.params", 1);
	param(ri, "embed_tokens.weight", 64, 256);
	marker(ri, "rt.params", 2);
	param(ri, "embed_tokens.weight", orig_params ? 32 : 64, orig_params ? 128 : 0);
}

static void end(int ri, int status)
{
	OK(ri, rt_exit, -1, RT_FN_status, U(status));
}

/* ---- the skipped root ---- */

/* transformers 4.53.0, use_orig_params=True: the Trainer calls the
 * unwrapped module; parameters are 1-D shard views that still hold memory */
static void s_trainer_453_orig_params(void)
{
	for (int i = 0; i < t->nranks; i++) {
		wrap(i, true);
		unwrapped(i, "LlamaForCausalLM", TRAINER, 1);
		end(i, 1);
	}
}

/* the same with use_orig_params=False: views at freed storage */
static void s_trainer_453(void)
{
	for (int i = 0; i < t->nranks; i++) {
		wrap(i, false);
		unwrapped(i, "LlamaForCausalLM", TRAINER, 1);
		end(i, 1);
	}
}

/* training ran through the root; an evaluation between steps called the
 * unwrapped module and died */
static void s_eval_unwrapped(void)
{
	for (int i = 0; i < t->nranks; i++) {
		wrap(i, true);
		root_forward(i);
		root_forward(i);
		unwrapped(i, "LlamaForCausalLM", "transformers/trainer.py:4500 prediction_step", 1);
		end(i, 1);
	}
}

/* only rank 2 skipped the root; every rank died (the others in a collective) */
static void s_one_rank(void)
{
	for (int i = 0; i < t->nranks; i++) {
		wrap(i, true);
		if (i == 2)
			unwrapped(i, "lm_head (Linear)", "train.py:88 main", 1);
		end(i, 1);
	}
}

/* the evidence, but every rank finished and no root forward ever ran
 * (NO_SHARD keeps full views; or a loop caught the exception and went on):
 * skipped, crash or not */
static void s_unwrapped_finished(void)
{
	for (int i = 0; i < t->nranks; i++) {
		wrap(i, true);
		unwrapped(i, "LlamaForCausalLM", TRAINER, 4);
		end(i, 0);
	}
}

/* an HPO loop: each trial's exception (left the unwrapped call) caught,
 * every rank exits 0; the exception is said */
static void s_unwrapped_caught(void)
{
	for (int i = 0; i < t->nranks; i++) {
		wrap(i, true);
		unwrapped(i, "LlamaForCausalLM", TRAINER, 1);
		OK(i, rt_exception, -1, RT_FN_module, "LlamaForCausalLM", RT_FN_exc_type, "RuntimeError");
		OK(i, rt_exception_text, -1, RT_FN_msg0, "'weight' must be 2-D", RT_FN_msg1, "");
		unwrapped(i, "LlamaForCausalLM", TRAINER, 2);
		end(i, 0);
	}
}

/* unwrapped calls in a run whose root forward ran too (an evaluation
 * calling the inner module), every rank finished: a warning */
static void s_unwrapped_after_root_forwards(void)
{
	for (int i = 0; i < t->nranks; i++) {
		wrap(i, true);
		root_forward(i);
		unwrapped(i, "LlamaForCausalLM", "transformers/trainer.py:4500 prediction_step", 1);
		end(i, 0);
	}
}

/* one rank caught it and went on, another ran the root forward: no
 * conclusion from "every rank" (a warning) */
static void s_unwrapped_caught_on_some(void)
{
	for (int i = 0; i < t->nranks; i++) {
		wrap(i, true);
		if (i == 0)
			unwrapped(i, "LlamaForCausalLM", TRAINER, 1);
		else
			root_forward(i);
		end(i, 0);
	}
}

/* healthy FSDP v1 with gradient checkpointing: inner forwards recomputed in
 * backward are not reported (the probe leaves out calls inside autograd's
 * backward); root forwards, parameters resharded after each: healthy */
static void s_checkpointing_healthy(void)
{
	for (int i = 0; i < t->nranks; i++) {
		wrap(i, false);
		for (int k = 0; k < 3; k++)
			root_forward(i);
		marker(i, "rt.teardown", 1);
		end(i, 0);
	}
}

/* FSDP2 (fully_shard): root pre-forwards only, no wrapper, no evidence */
static void s_fsdp2_healthy(void)
{
	for (int i = 0; i < t->nranks; i++) {
		marker(i, "rt.params", 1);
		param(i, "embed_tokens.weight", 32, 128);
		for (int k = 0; k < 3; k++)
			OK(i, rt_fsdp_forward, -1, RT_FN_phase, U(0), RT_FN_units, U(3));
		end(i, 0);
	}
}

/* DDP over NCCL: collectives, no probe evidence */
static void s_ddp_healthy(void)
{
	for (int i = 0; i < t->nranks; i++) {
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, U(t->nranks), RT_FN_rank, U(i));
		for (uint32_t s = 1; s <= 3; s++)
			ev(i, RT_ID_ncclAllReduce, i, 0, false, RT_FN_comm_id, COMM, RT_FN_seq, U(s),
			   RT_FN_count, U(128), -1);
	}
	for (int i = 0; i < t->nranks; i++)
		end(i, 0);
}

/* ---- teardown ---- */

/* training finished on every rank; rank 1 aborts in destroy_process_group
 * (gloo's teardown: SIGABRT) */
static void s_teardown_abort(void)
{
	s_checkpointing_healthy();
	t->ranks[1].exit_seen = false;
	OK(1, rt_signal, -1, RT_FN_signo, U(6));
}

/* the Trainer never destroys the group: rank 3 vanishes (no end record)
 * after the interpreter began exiting cleanly */
static void s_teardown_at_exit(void)
{
	for (int i = 0; i < t->nranks; i++) {
		wrap(i, false);
		root_forward(i);
		marker(i, "rt.teardown", 2);
		if (i != 3)
			end(i, 0);
	}
}

/* NCCL: the collectives done, destroy begun, rank 0 dies inside ncclCommDestroy */
static void s_teardown_in_comm_destroy(void)
{
	s_ddp_healthy();
	marker(0, "rt.teardown", 1);
	ev(0, RT_ID_ncclCommDestroy, 0, 0, true, RT_FN_comm_id, COMM, -1);
}

/* destroy_process_group in a `finally` while an exception propagates */
static void s_teardown_exception_in_flight(void)
{
	for (int i = 0; i < t->nranks; i++) {
		wrap(i, false);
		root_forward(i);
		marker(i, "rt.teardown", 3);
		OK(i, rt_signal, -1, RT_FN_signo, U(6));
	}
}

/* the program chose its exit status after destroying the group */
static void s_teardown_exit_status(void)
{
	for (int i = 0; i < t->nranks; i++) {
		marker(i, "rt.teardown", 1);
		end(i, i == 1 ? 2 : 0);
	}
}

/* training went on after a marker (a later root forward): not teardown */
static void s_teardown_training_followed(void)
{
	for (int i = 0; i < t->nranks; i++) {
		marker(i, "rt.teardown", 1);
		root_forward(i);
		if (i == 1)
			OK(i, rt_signal, -1, RT_FN_signo, U(6));
		else
			end(i, 0);
	}
}

/* the marker came from a child process (a DataLoader worker): not the rank's */
static void s_teardown_child_marker(void)
{
	next_pid = 4242;
	marker(1, "rt.teardown", 2);
	OK(1, rt_signal, -1, RT_FN_signo, U(6));
	for (int i = 0; i < t->nranks; i++)
		if (i != 1)
			end(i, 0);
}

/* rank 0 crashed in teardown, rank 2 crashed in training: crashed */
static void s_teardown_and_real_crash(void)
{
	for (int i = 0; i < t->nranks; i++) {
		if (i != 2)
			marker(i, "rt.teardown", 1);
		if (i == 0)
			OK(i, rt_signal, -1, RT_FN_signo, U(6));
		else
			end(i, i == 2 ? 1 : 0);
	}
}

/* one ctest entry per row: each RIG_CASE is its own Test() */
RIG_CASE(root, trainer_453_orig_params, s_trainer_453_orig_params, RT_V_SKIPPED_FSDP_ROOT,
	 "FSDP root forward skipped (probe): ranks 0-3 called LlamaForCausalLM from " TRAINER
	 " while no FSDP root forward ran (at least 4 calls in all; no root forward ran before; their "
	 "parameters then: 4 shard views", "never ran (probe)")
RIG_CASE(root, trainer_453, s_trainer_453, RT_V_SKIPPED_FSDP_ROOT, "4 at storage FSDP freed",
	 "never ran (probe)")
RIG_CASE(root, eval_unwrapped, s_eval_unwrapped, RT_V_SKIPPED_FSDP_ROOT,
	 "from transformers/trainer.py:4500 prediction_step while no FSDP root forward ran "
	 "(at least 4 calls in all; after 2 root forwards", NULL)
RIG_CASE(root, one_rank, s_one_rank, RT_V_SKIPPED_FSDP_ROOT, "rank 2 called lm_head (Linear) from "
	 "train.py:88 main", NULL)
RIG_CASE(root, unwrapped_finished, s_unwrapped_finished, RT_V_SKIPPED_FSDP_ROOT,
	 "(at least 16 calls in all; no root forward ran before; their parameters then: 4 shard views, "
	 "0 at storage FSDP freed); no rank crashed: the program went on (no root forward ran on any "
	 "rank)", "each of them crashed")
RIG_CASE(root, unwrapped_caught, s_unwrapped_caught, RT_V_SKIPPED_FSDP_ROOT,
	 "no rank crashed: the program went on (no root forward ran on any rank); the exception that "
	 "left it: RuntimeError: 'weight' must be 2-D", NULL)
RIG_CASE(root, unwrapped_after_root_forwards, s_unwrapped_after_root_forwards, RT_V_HEALTHY,
	 "(at least 4 calls in all; after 1 root forward; their parameters then: 4 shard views, 0 at "
	 "storage FSDP freed); the root forward ran at other times and no rank crashed", "skipped")
RIG_CASE(root, unwrapped_caught_on_some, s_unwrapped_caught_on_some, RT_V_HEALTHY,
	 "rank 0 called LlamaForCausalLM", "skipped")
RIG_CASE(root, checkpointing_healthy, s_checkpointing_healthy, RT_V_HEALTHY, NULL, NULL)
RIG_CASE(root, fsdp2_healthy, s_fsdp2_healthy, RT_V_HEALTHY, NULL, NULL)
RIG_CASE(root, ddp_healthy, s_ddp_healthy, RT_V_HEALTHY, NULL, NULL)
RIG_CASE(root, teardown_abort, s_teardown_abort, RT_V_HEALTHY, "rank 1 crashed in teardown, after "
	 "training finished (signal 6 after destroy_process_group began", "killed by signal")
RIG_CASE(root, teardown_at_exit, s_teardown_at_exit, RT_V_HEALTHY, "rank 3 crashed in teardown, after "
	 "training finished (vanished (no end) after the program's main code returned",
	 "no recorded end")
RIG_CASE(root, teardown_in_comm_destroy, s_teardown_in_comm_destroy, RT_V_HEALTHY,
	 "rank 0 crashed in teardown", "died inside")
RIG_CASE(root, teardown_exception_in_flight, s_teardown_exception_in_flight, RT_V_CRASHED,
	 "killed by signal 6", "teardown")
RIG_CASE(root, teardown_exit_status, s_teardown_exit_status, RT_V_CRASHED, "rank 1 exited with status 2",
	 "teardown")
RIG_CASE(root, teardown_training_followed, s_teardown_training_followed, RT_V_CRASHED,
	 "rank 1 was killed by signal 6", "teardown")
RIG_CASE(root, teardown_child_marker, s_teardown_child_marker, RT_V_CRASHED,
	 "rank 1 was killed by signal 6", "teardown")
RIG_CASE(root, teardown_and_real_crash, s_teardown_and_real_crash, RT_V_CRASHED,
	 "rank 2 exited with status 1", "rank 0 was killed")



/* the probe reports a (module, caller) at its 1st, 2nd, 4th call: counted once */
Test(root, counts_replace_not_add)
{
	rig(1);
	unwrapped(0, "M", "a.py:1 f", 1);
	unwrapped(0, "M", "a.py:1 f", 2);
	unwrapped(0, "M", "a.py:1 f", 4);
	unwrapped(0, "M", "b.py:2 g", 1);
	end(0, 1);
	rt_vw_model_finish(m);
	cr_expect_eq(t->ranks[0].unwrapped_calls, 5);
	cr_expect_eq(t->ranks[0].nunwrapped, 2);
	cr_expect_str_eq(t->ranks[0].lists->unwrapped[1].caller, "b.py:2 g");
	cr_expect_eq(t->verdict, RT_V_SKIPPED_FSDP_ROOT);
	rt_vw_free(t);
	free(m);
}
