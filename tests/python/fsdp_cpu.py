# SPDX-License-Identifier: MIT
"""fsdp_cpu.py - real PyTorch FSDP v1 on CPU (gloo), as a transformers Trainer
drives it, for the probe's tests. No downloads: a tiny model built here.

  python fsdp_cpu.py [--trainer-version 4.52.4|4.53.0] [--steps N] [--meta-rank1] [--time]
                     [--orig-params] [--no-auto-wrap] [--manual-wrap] [--cpu-offload]
                     [--mixed-precision] [--checkpointing reentrant|non-reentrant|wrapper]
                     [--eval] [--generate] [--ddp] [--teardown-abort] [--fail-attempts N]

Launch with rt-launch or torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
4.53.0 trains the unwrapped module after wrapping, as transformers 4.53.0 did:
the embedding's weight is then a view onto storage FSDP resized to 0 bytes. On
GPU that gave "The tensor has a non-zero number of elements, but its data is not
allocated yet."; on CPU (torch 2.7 and 2.15 alike) autograd's check of views
whose base changed fires first at the same call ("Output 0 of ViewBackward0 is
a view and its base ... has been modified inplace").
--meta-rank1: rank 1 builds the model on meta (cpu_ram_efficient_loading);
FSDP materialises it (param_init_fn). On GPU, sync_module_states would then
broadcast rank 0's weights; FSDP refuses it for CPU parameters, so here rank 1
keeps its materialised (uninitialised) values.
The configurations the probe's evidence must hold across (test_probe.sh runs
them): --orig-params (use_orig_params=True, transformers' default: then 4.53.0
dies with "'weight' must be 2-D"), --no-auto-wrap (one FSDP unit),
--manual-wrap (each block wrapped by hand, then the root), --cpu-offload (needs
CUDA: FSDP pins the offloaded parameters),
--mixed-precision (bf16 params), --checkpointing (each block's forward
recomputed in backward: torch.utils.checkpoint reentrant or not, or FSDP's
checkpoint_wrapper), --eval (an evaluation forward under no_grad after each
step, through the model the trainer trains), --generate (after training, a
greedy decode of the unwrapped module under summon_full_params, as
Seq2SeqTrainer does), --ddp (DistributedDataParallel instead of FSDP),
--teardown-abort (rank 1 aborts after destroy_process_group, as gloo's
teardown sometimes does: "crashed in teardown, after training finished"),
--fail-attempts N (under torchrun --max-restarts: rank 1 raises after its first
step in each of the first N attempts, TORCHELASTIC_RESTART_COUNT < N, so the
agent stops rank 0 with SIGTERM and starts both again; the next attempt trains)."""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import CPUOffload, MixedPrecision, ShardingStrategy
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import ModuleWrapPolicy


class Block(nn.Module):
    checkpointing = None   # "reentrant", "non-reentrant" (torch.utils.checkpoint) or None

    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.mlp = nn.Linear(d, d)

    def inner(self, x):
        return x + torch.tanh(self.mlp(self.norm(x)))

    def forward(self, x):
        if self.checkpointing and torch.is_grad_enabled():
            return torch.utils.checkpoint.checkpoint(
                self.inner, x, use_reentrant=self.checkpointing == "reentrant")
        return self.inner(x)


class TinyLM(nn.Module):
    def __init__(self, vocab=64, d=32, layers=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(Block(d) for _ in range(layers))
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        h = self.embed_tokens(ids)
        for layer in self.layers:
            h = layer(h)
        return self.lm_head(h)


def options():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trainer-version", default="4.52.4")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--meta-rank1", action="store_true")
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--orig-params", action="store_true")
    ap.add_argument("--no-auto-wrap", action="store_true")
    ap.add_argument("--manual-wrap", action="store_true")
    ap.add_argument("--cpu-offload", action="store_true")
    ap.add_argument("--mixed-precision", action="store_true")
    ap.add_argument("--checkpointing", choices=("reentrant", "non-reentrant", "wrapper"))
    ap.add_argument("--eval", action="store_true")
    ap.add_argument("--generate", action="store_true")
    ap.add_argument("--ddp", action="store_true")
    ap.add_argument("--teardown-abort", action="store_true")
    ap.add_argument("--fail-attempts", type=int, default=0)
    return ap.parse_args()


def wrap(model, args):
    """The model as FSDP v1 (or DDP) wraps it for these options."""
    if args.ddp:
        return nn.parallel.DistributedDataParallel(model)
    if args.checkpointing == "wrapper":
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
            apply_activation_checkpointing)

        apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, Block))
    elif args.checkpointing:
        Block.checkpointing = args.checkpointing
    kw = dict(sharding_strategy=ShardingStrategy.FULL_SHARD, device_id=torch.device("cpu"),
              use_orig_params=args.orig_params,
              cpu_offload=CPUOffload(offload_params=True) if args.cpu_offload else None,
              mixed_precision=MixedPrecision(param_dtype=torch.bfloat16,
                                             reduce_dtype=torch.float32)
              if args.mixed_precision else None)
    if args.manual_wrap:
        for i, layer in enumerate(model.layers):
            model.layers[i] = FSDP(layer, **kw)
    policy = None if args.no_auto_wrap or args.manual_wrap else ModuleWrapPolicy({Block})
    return FSDP(model, auto_wrap_policy=policy,
                sync_module_states=args.meta_rank1 and torch.cuda.is_available(),
                param_init_fn=(lambda m: m.to_empty(device=torch.device("cpu"), recurse=False))
                if args.meta_rank1 else None, **kw)


def generate(model, fsdp, args):
    """Greedy decoding of the unwrapped module, its parameters gathered with
    summon_full_params (Seq2SeqTrainer.prediction_step)."""
    ctx = FSDP.summon_full_params(fsdp, writeback=False) if not args.ddp else \
        torch.no_grad()
    ids = torch.zeros(1, 1, dtype=torch.long)
    with ctx, torch.no_grad():
        for _ in range(3):
            ids = torch.cat([ids, model(ids)[:, -1:].argmax(-1)], dim=1)
    return ids


def main():
    args = options()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    if args.meta_rank1 and rank == 1:
        with torch.device("meta"):
            model = TinyLM()
    else:
        model = TinyLM()
    fsdp = wrap(model, args)
    # transformers.Trainer._inner_training_loop: 4.53.0 kept the unwrapped module
    train_model = model if args.trainer_version == "4.53.0" else fsdp
    opt = torch.optim.SGD(fsdp.parameters(), lr=0.5)
    g = torch.Generator().manual_seed(1234 + rank)
    t0 = None
    for step in range(1, args.steps + 1):
        if step == 2:
            t0 = time.perf_counter()
        ids = torch.randint(0, 64, (4, 16), generator=g)
        logits = train_model(ids[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 64), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        if args.eval:
            with torch.no_grad():
                train_model(ids[:, :-1])
        if rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
        if rank == 1 and attempt < args.fail_attempts:
            raise RuntimeError(f"rank 1 fails in attempt {attempt} (--fail-attempts)")
    if args.generate:
        out = generate(model, fsdp, args)
        if rank == 0:
            print(f"generated {out.tolist()}", flush=True)
    if args.time and rank == 0 and args.steps > 1:
        print(f"ms_per_step={(time.perf_counter() - t0) * 1000 / (args.steps - 1):.3f}", flush=True)
    # Both ranks leave together: without it, gloo's teardown in a rank whose peer has
    # already gone sometimes ends in std::terminate ("terminate called without an active
    # exception", SIGABRT; about 1 run in 10 on this VM, traced or not).
    dist.barrier()
    dist.destroy_process_group()
    if args.teardown_abort and rank == 1:
        os.abort()


if __name__ == "__main__":
    main()
