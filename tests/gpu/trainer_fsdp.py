# SPDX-License-Identifier: MIT
"""trainer_fsdp.py - a transformers Trainer with FSDP v1 on a tiny Llama built
from a local config (random weights) and a few hundred bytes of local text:
no downloads (HF_HUB_OFFLINE=1). FSDP v1 explicitly (fsdp_config version 1).
Launch with python3 -m torch.distributed.run (or accelerate launch);
tests/gpu/run.sh runs it untraced, traced, with `--inject skip-fsdp-root` and
with expandable segments.

  python3 -m torch.distributed.run --nproc-per-node N trainer_fsdp.py [--steps 20] [--cpu] \\
      [--orig-params]

--orig-params: FSDP use_orig_params=true (transformers' default); without it
false, as in peft's FSDP examples. The skipped root must be named either way.

Prints "ms_per_step=..." (rank 0, steady state) at the end."""
import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach the network

import torch
from transformers import (LlamaConfig, LlamaForCausalLM, Trainer, TrainerCallback,
                          TrainingArguments)

TEXT = ("ranktrace makes the skipped FSDP root forward visible in minutes: every rank "
        "records its CUDA allocations, its device and every NCCL call, and the viewer "
        "tells which rank, which device, which collective went wrong. ") * 8


class Bytes(torch.utils.data.Dataset):
    def __init__(self, seq=64):
        data = torch.tensor(list(TEXT.encode()), dtype=torch.long)
        self.items = [data[i:i + seq] for i in range(0, len(data) - seq, seq // 2)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return {"input_ids": self.items[i], "labels": self.items[i]}


class StepTimer(TrainerCallback):
    def __init__(self):
        self.t = []

    def on_step_end(self, args, state, control, **kw):
        self.t.append(time.perf_counter())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--cpu", action="store_true", help="gloo on CPU (to try the script without GPUs)")
    ap.add_argument("--orig-params", action="store_true", help="use_orig_params=true")
    args = ap.parse_args()
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=128)
    model = LlamaForCausalLM(cfg)
    targs = TrainingArguments(
        output_dir=os.environ.get("TRAINER_OUT", "/tmp/ranktrace-trainer"), max_steps=args.steps,
        per_device_train_batch_size=2, learning_rate=1e-3, logging_steps=5, report_to=[],
        save_strategy="no", fsdp="full_shard auto_wrap", use_cpu=args.cpu,
        # "version": 1 - transformers 5.x picks FSDP2 otherwise, where the 4.53.0
        # failure point (the FSDP v1 root forward) does not exist
        fsdp_config={"version": 1, "transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"],
                     "use_orig_params": args.orig_params},
        ddp_backend="gloo" if args.cpu else None, dataloader_num_workers=0)
    timer = StepTimer()
    trainer = Trainer(model=model, args=targs, train_dataset=Bytes(), callbacks=[timer])
    trainer.train()
    if int(os.environ.get("RANK", "0")) == 0 and len(timer.t) > 5:
        steady = timer.t[len(timer.t) // 4:]
        print(f"ms_per_step={(steady[-1] - steady[0]) * 1000 / (len(steady) - 1):.3f}", flush=True)


if __name__ == "__main__":
    main()
