# SPDX-License-Identifier: MIT
"""fsdp_cpu.py - real PyTorch FSDP v1 on CPU (gloo), as a transformers Trainer
drives it, for the probe's tests. No downloads: a tiny model built here.

  python fsdp_cpu.py [--trainer-version 4.52.4|4.53.0] [--steps N] [--meta-rank1] [--time]

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
keeps its materialised (uninitialised) values."""
import argparse
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy
from torch.distributed.fsdp.wrap import ModuleWrapPolicy


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.mlp = nn.Linear(d, d)

    def forward(self, x):
        return x + torch.tanh(self.mlp(self.norm(x)))


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trainer-version", default="4.52.4")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--meta-rank1", action="store_true")
    ap.add_argument("--time", action="store_true")
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    if args.meta_rank1 and rank == 1:
        with torch.device("meta"):
            model = TinyLM()
    else:
        model = TinyLM()
    fsdp = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}),
                sharding_strategy=ShardingStrategy.FULL_SHARD, device_id=torch.device("cpu"),
                sync_module_states=args.meta_rank1 and torch.cuda.is_available(),
                param_init_fn=(lambda m: m.to_empty(device=torch.device("cpu"), recurse=False))
                if args.meta_rank1 else None)
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
        if rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    if args.time and rank == 0 and args.steps > 1:
        print(f"ms_per_step={(time.perf_counter() - t0) * 1000 / (args.steps - 1):.3f}", flush=True)
    # Both ranks leave together: without it, gloo's teardown in a rank whose peer has
    # already gone sometimes ends in std::terminate ("terminate called without an active
    # exception", SIGABRT; about 1 run in 10 on this VM, traced or not).
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
