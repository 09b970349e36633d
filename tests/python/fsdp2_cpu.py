# SPDX-License-Identifier: MIT
"""fsdp2_cpu.py - FSDP2 (fully_shard) on CPU with gloo: each block and the
root sharded; N forward/backward steps. The probe reports one root forward
per step. Launch with rt-launch or torchrun."""
import sys

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

from fsdp_cpu import TinyLM


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    dist.init_process_group("gloo")
    model = TinyLM()
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    for _ in range(steps):
        model(torch.randint(0, 64, (2, 8))).sum().backward()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
