# SPDX-License-Identifier: MIT
"""fsdp2_cpu.py - FSDP2 (fully_shard) on CPU with gloo, as torchtitan lays it
out: each block a unit, then the root (which owns the embedding and the
head); N steps of forward, backward and an optimizer step. The probe reports
one root forward per step. Launch with rt-launch or torchrun.

  python fsdp2_cpu.py [STEPS] [--checkpointing] [--eval] [--direct-forward]
                      [--catch] [--no-optim]

--checkpointing: each block's forward recomputed in backward
(torch.utils.checkpoint, non-reentrant; FSDP2 unshards for it in its
pre-backward). --eval: a forward under no_grad after each step, through the
model. --direct-forward: the training loop calls model.forward(ids), not
model(ids): FSDP2's root hooks never run (FSDP2's own form of the skipped
root; torch then fails at the first parameter the root owns, the embedding,
"got mixed torch.Tensor and DTensor"). --catch: each step in try/except, as a
trial runner does: a failed step is printed and the loop goes on (exit 0).
--no-optim: forward and backward only (the first tests of this script)."""
import argparse

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

from fsdp_cpu import Block, TinyLM


def options():
    ap = argparse.ArgumentParser()
    ap.add_argument("steps", type=int, nargs="?", default=2)
    ap.add_argument("--checkpointing", action="store_true")
    ap.add_argument("--eval", action="store_true")
    ap.add_argument("--direct-forward", action="store_true")
    ap.add_argument("--catch", action="store_true")
    ap.add_argument("--no-optim", action="store_true")
    return ap.parse_args()


def step(model, opt, args, ids):
    logits = model.forward(ids) if args.direct_forward else model(ids)
    logits.sum().backward()
    if opt is not None:
        opt.step()
        opt.zero_grad()
    if args.eval:
        with torch.no_grad():
            model(ids)


def main():
    args = options()
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    if args.checkpointing:
        Block.checkpointing = "non-reentrant"
    model = TinyLM()
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    opt = None if args.no_optim else torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(args.steps):
        ids = torch.randint(0, 64, (2, 8))
        if not args.catch:
            step(model, opt, args, ids)
            continue
        try:
            step(model, opt, args, ids)
        except Exception as e:  # what a trial runner does with a failed trial
            print(f"fsdp2_cpu: rank {dist.get_rank()} step {i} failed: {type(e).__name__}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
