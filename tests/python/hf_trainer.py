# SPDX-License-Identifier: MIT
"""hf_trainer.py - transformers' own Trainer with FSDP v1 through accelerate,
on CPU (gloo), for the real-trainer tests: a tiny Llama built from a config
(random weights), a few hundred bytes of local text, no downloads
(HF_HUB_OFFLINE=1). Whatever transformers release is first on PYTHONPATH
runs unchanged.

  python -m torch.distributed.run --standalone --nproc-per-node 2 hf_trainer.py \\
      [--orig-params true|false] [--steps N] [--lora] [--grad-ckpt]
  accelerate launch --config_file fsdp.yaml hf_trainer.py [--lora] [--grad-ckpt]

Under torch.distributed.run the FSDP settings come from TrainingArguments
(fsdp=, fsdp_config=); under `accelerate launch` from the config file (its
ACCELERATE_USE_FSDP / FSDP_* environment), so --orig-params is not given there.
--lora: a peft LoRA adapter on q_proj/v_proj, wrapped with peft's
fsdp_auto_wrap_policy as peft's FSDP examples do (the original report's setup).
--grad-ckpt: gradient checkpointing (the Trainer's own, reentrant).

The one test-only patch (CPU only): accelerate (1.8) makes FSDP the
distributed type only for GPU-like types (MULTI_GPU, MULTI_NPU, ...); on CPU it
keeps MULTI_CPU and prepare() would wrap the model in DDP instead. The patch
below re-applies accelerate's own FSDP branch of AcceleratorState.__init__
when it saw MULTI_CPU: distributed_type FSDP and the plugin it was given, and
the device "cpu" (FSDP's compute device on CPU) instead of MULTI_CPU's "cpu:0".
Also for CPU: sync_module_states off (FSDP refuses to broadcast CPU
parameters; on GPU transformers' default, on, is kept).
Nothing in transformers is patched. Accelerator.prepare_model is watched (not
changed): the model it returns must be FullyShardedDataParallel, with the
use_orig_params asked for, or the script exits 3; each rank prints
"hf_trainer: rank R prepared FullyShardedDataParallel use_orig_params=B".
Exit status: 0 trained; 3 not FSDP; anything else is the Trainer's failure."""
import argparse
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach the network
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
import accelerate  # noqa: E402
from accelerate.state import AcceleratorState  # noqa: E402
from accelerate.utils import DistributedType  # noqa: E402
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments  # noqa: E402

TEXT = ("ranktrace makes the skipped FSDP root forward visible in minutes: every rank "
        "records its CUDA allocations, its device and every NCCL call. ") * 4
RANK = int(os.environ.get("RANK", "0"))
prepared = []


def say(msg):
    """One status line on stderr in one write(2): print() writes the text and
    its newline in two calls on Python's unbuffered stderr, and with both ranks
    writing one log a line could come out as "...=truehf_trainer: rank 1
    ...=true" (the tests grep these lines, anchored)."""
    os.write(2, f"hf_trainer: rank {RANK}{msg}\n".encode())


def patch_accelerate_cpu_fsdp():
    """accelerate keeps FSDP for GPU-like types only: on CPU, do what its FSDP
    branch does for them (state.py, AcceleratorState.__init__)."""
    orig = AcceleratorState.__init__

    def init(self, *args, fsdp_plugin=None, **kw):
        orig(self, *args, fsdp_plugin=fsdp_plugin, **kw)
        want = os.environ.get("ACCELERATE_USE_FSDP", "false") == "true" or fsdp_plugin is not None
        if want and fsdp_plugin is not None and self.distributed_type == DistributedType.MULTI_CPU:
            self.distributed_type = DistributedType.FSDP
            self.fsdp_plugin = fsdp_plugin
            self._shared_state["distributed_type"] = DistributedType.FSDP
            # FSDP checks device_id against its compute device, "cpu" on CPU;
            # MULTI_CPU's device is "cpu:0" (accelerate passes it as device_id)
            self.device = torch.device("cpu")
    AcceleratorState.__init__ = init


def watch_prepare_model(want_orig):
    """Check what accelerate's prepare_model returns; nothing changed."""
    orig = accelerate.Accelerator.prepare_model

    def prepare_model(self, model, *args, **kw):
        out = orig(self, model, *args, **kw)
        if not isinstance(out, FSDP):
            say(f": prepared model is {type(out).__name__}, not FullyShardedDataParallel")
            os._exit(3)
        uop = bool(getattr(out, "_use_orig_params", False))
        if want_orig is not None and uop != want_orig:
            say(f": use_orig_params={uop}, asked {want_orig}")
            os._exit(3)
        prepared.append(out)
        say(f" prepared FullyShardedDataParallel use_orig_params={str(uop).lower()}")
        return out
    accelerate.Accelerator.prepare_model = prepare_model


class Bytes(torch.utils.data.Dataset):
    def __init__(self, seq=32):
        data = torch.tensor(list(TEXT.encode()), dtype=torch.long)
        self.items = [data[i:i + seq] for i in range(0, len(data) - seq, seq // 2)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return {"input_ids": self.items[i], "labels": self.items[i]}


def build_model(lora):
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64)
    model = LlamaForCausalLM(cfg)
    if lora:
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0,
                                                 target_modules=["q_proj", "v_proj"],
                                                 task_type="CAUSAL_LM"))
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--orig-params", choices=["true", "false"],
                    help="FSDP use_orig_params (torch.distributed.run; default true, "
                    "transformers' own; accelerate: its config file says)")
    ap.add_argument("--lora", action="store_true")
    ap.add_argument("--grad-ckpt", action="store_true")
    args = ap.parse_args()
    by_accelerate = os.environ.get("ACCELERATE_USE_FSDP") == "true"
    if by_accelerate and args.orig_params is not None:
        ap.error("--orig-params under torch.distributed.run only (accelerate: the config file)")
    want = (args.orig_params or os.environ.get("FSDP_USE_ORIG_PARAMS", "true")) == "true"
    if not torch.cuda.is_available():
        patch_accelerate_cpu_fsdp()
    watch_prepare_model(want)
    fsdp = {}
    if not by_accelerate:
        fsdp = dict(fsdp="full_shard auto_wrap",
                    fsdp_config={"version": 1, "transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"],
                                 "use_orig_params": want,
                                 # FSDP refuses to broadcast CPU parameters (GPU: the default)
                                 "sync_module_states": torch.cuda.is_available()})
    targs = TrainingArguments(
        output_dir=os.environ.get("TRAINER_OUT", "/tmp/ranktrace-hf-trainer"), max_steps=args.steps,
        per_device_train_batch_size=2, learning_rate=1e-3, logging_steps=1, report_to=[],
        save_strategy="no", use_cpu=not torch.cuda.is_available(),
        ddp_backend=None if torch.cuda.is_available() else "gloo", dataloader_num_workers=0,
        gradient_checkpointing=args.grad_ckpt, disable_tqdm=True, **fsdp)
    trainer = Trainer(model=build_model(args.lora), args=targs, train_dataset=Bytes())
    if args.lora:
        from peft.utils.other import fsdp_auto_wrap_policy
        trainer.accelerator.state.fsdp_plugin.auto_wrap_policy = fsdp_auto_wrap_policy(trainer.model)
    trainer.train()
    if not prepared:
        say(": accelerate never prepared the model")
        sys.exit(3)
    say(f" trained {args.steps} steps")


if __name__ == "__main__":
    main()
