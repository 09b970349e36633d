# SPDX-License-Identifier: MIT
"""hf_trainer.py - transformers' own Trainer (or TRL's SFTTrainer) through
accelerate, on CPU (gloo), for the real-trainer tests: a tiny Llama built from
a config (random weights), a few hundred bytes of local text, no downloads
(HF_HUB_OFFLINE=1). Whatever transformers release is first on PYTHONPATH runs
unchanged.

  python -m torch.distributed.run --standalone --nproc-per-node 2 hf_trainer.py \\
      [--wrap fsdp|ddp] [--fsdp-version 1|2] [--orig-params true|false] [--steps N]
      [--lora] [--grad-ckpt] [--sft] [--trials N] [--expect KIND]
  accelerate launch --config_file fsdp.yaml hf_trainer.py [--lora] [--grad-ckpt]

--wrap fsdp (default): FSDP through accelerate. Under torch.distributed.run the
settings come from TrainingArguments (fsdp=, fsdp_config=: FSDP v1, or
--fsdp-version 2; with --fsdp-version 0 the release's own default, FSDP2 in
transformers 5.x); under `accelerate launch` from the config file (its
ACCELERATE_USE_FSDP / FSDP_* environment), so --orig-params is not given there.
--wrap ddp: no FSDP settings; with 2 ranks the Trainer prepares
DistributedDataParallel (accelerate's MULTI_CPU).
--lora: a peft LoRA adapter on q_proj/v_proj, wrapped with peft's
fsdp_auto_wrap_policy as peft's FSDP examples do (the original report's setup).
--grad-ckpt: gradient checkpointing (the Trainer's own, reentrant).
--sft: TRL's SFTTrainer (SFTConfig, a pre-tokenised datasets.Dataset, a byte
tokenizer built locally) instead of Trainer.
--trials N: an HPO-style loop (as Optuna's or Ray Tune's trial runners do): N
trials, each a new model and Trainer; a trial that raises is reported
("trial K failed: TYPE: message") and the loop goes on; exit 0 at the end.

The one test-only patch (CPU only): accelerate makes FSDP the distributed type
only for GPU-like types (MULTI_GPU, MULTI_NPU, ...; 1.8 and 1.16 alike); on CPU
it keeps MULTI_CPU and prepare() would wrap the model in DDP instead. The patch
below re-applies accelerate's own FSDP branch of AcceleratorState.__init__ when
it saw MULTI_CPU: distributed_type FSDP and the plugin it was given, and the
device "cpu" (FSDP's compute device on CPU) instead of MULTI_CPU's "cpu:0".
Also for CPU: sync_module_states off (FSDP v1 refuses to broadcast CPU
parameters; on GPU transformers' default, on, is kept).
Nothing in transformers is patched. Accelerator.prepare_model is watched (not
changed): what it returns must be what --expect names (default: what --wrap
asks for; "none": the model as given, for a run whose preparation a fault plan
skips), or the script exits 3; each rank prints "hf_trainer: rank R prepared
KIND", KIND one of "FullyShardedDataParallel use_orig_params=B", "fully_shard
(FSDP2)", "DistributedDataParallel", "nothing (TYPE as given)".
Exit status: 0 trained (or, with --trials, the loop ended); 3 not the model
expected; anything else is the Trainer's failure."""
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


def prepared_kind(model):
    """What accelerate's prepare_model returned, in the words the tests grep."""
    if isinstance(model, FSDP):
        return f"FullyShardedDataParallel use_orig_params={str(bool(model._use_orig_params)).lower()}"
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:   # a torch without FSDP2
        FSDPModule = ()
    if isinstance(model, FSDPModule):
        return "fully_shard (FSDP2)"
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        return "DistributedDataParallel"
    return f"nothing ({type(model).__name__} as given)"


def watch_prepare_model(expect):
    """Check what accelerate prepares the model into; nothing changed. Its
    FSDP2 path (Accelerator._prepare_fsdp2, accelerate >= 1.6) calls
    fsdp2_prepare_model, not prepare_model: both are watched."""
    import accelerate.accelerator as acc

    def watch(orig):
        def prepare(*args, **kw):
            out = orig(*args, **kw)
            kind = prepared_kind(out)
            if not kind.startswith(expect):
                say(f": prepared {kind}, expected {expect}")
                os._exit(3)
            prepared.append(out)
            say(f" prepared {kind}")
            return out
        return prepare
    accelerate.Accelerator.prepare_model = watch(accelerate.Accelerator.prepare_model)
    if hasattr(acc, "fsdp2_prepare_model"):
        acc.fsdp2_prepare_model = watch(acc.fsdp2_prepare_model)


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


def byte_tokenizer():
    """A tokenizer for SFTTrainer without a download: one token per byte
    value (the model's 256-entry vocabulary), byte 0 as pad and eos."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    vocab = {chr(0x100 + b): b for b in range(256)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=chr(0x100)))
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=chr(0x100), eos_token=chr(0x100))


def make_trainer(args, targs):
    """targs: TrainingArguments' keywords (SFTConfig takes the same)."""
    if not args.sft:
        return Trainer(model=build_model(args.lora), args=TrainingArguments(**targs),
                       train_dataset=Bytes())
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    data = Dataset.from_dict({"input_ids": [item["input_ids"].tolist() for item in Bytes()]})
    # bf16 off: SFTConfig turns it on by default, TrainingArguments does not
    return SFTTrainer(model=build_model(args.lora), args=SFTConfig(bf16=False, **targs),
                      train_dataset=data, processing_class=byte_tokenizer())


def fsdp_arguments(args, by_accelerate, want_orig):
    """TrainingArguments' FSDP settings under torch.distributed.run."""
    if by_accelerate or args.wrap != "fsdp":
        return {}
    config = {"transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"]}
    if args.fsdp_version:
        config["version"] = args.fsdp_version
    if args.fsdp_version == 1:
        config["use_orig_params"] = want_orig
        # FSDP v1 refuses to broadcast CPU parameters (GPU: the default)
        config["sync_module_states"] = torch.cuda.is_available()
    return dict(fsdp="full_shard auto_wrap", fsdp_config=config)


def train(args, targs, trial):
    trainer = make_trainer(args, targs)
    if args.lora and args.wrap == "fsdp" and trainer.accelerator.state.fsdp_plugin is not None:
        from peft.utils.other import fsdp_auto_wrap_policy
        trainer.accelerator.state.fsdp_plugin.auto_wrap_policy = fsdp_auto_wrap_policy(trainer.model)
    if args.trials is None:
        trainer.train()
        return
    try:
        trainer.train()
        say(f" trial {trial} trained")
    except Exception as e:  # what an HPO loop does with a failed trial
        say(f" trial {trial} failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--wrap", choices=["fsdp", "ddp"], default="fsdp")
    ap.add_argument("--fsdp-version", type=int, choices=[0, 1, 2], default=1,
                    help="torch.distributed.run: FSDP v1 (default), 2, or 0 (the release's default)")
    ap.add_argument("--orig-params", choices=["true", "false"],
                    help="FSDP v1 use_orig_params (torch.distributed.run; default true, "
                    "transformers' own; accelerate: its config file says)")
    ap.add_argument("--lora", action="store_true")
    ap.add_argument("--grad-ckpt", action="store_true")
    ap.add_argument("--sft", action="store_true", help="TRL's SFTTrainer")
    ap.add_argument("--trials", type=int, help="an HPO-style loop of N trials that goes on after a failed one")
    ap.add_argument("--expect", help="what prepare_model must return (default: what --wrap asks for; 'none')")
    return ap, ap.parse_args()


def expected_kind(args, by_accelerate, want_orig):
    if args.expect is not None:
        return "nothing" if args.expect == "none" else args.expect
    if args.wrap == "ddp":
        return "DistributedDataParallel"
    version = int(os.environ.get("FSDP_VERSION", "1")) if by_accelerate else args.fsdp_version
    if version == 1:
        return f"FullyShardedDataParallel use_orig_params={str(want_orig).lower()}"
    return "fully_shard (FSDP2)" if version == 2 else ""   # 0: the release's default, either


def main():
    ap, args = parse_args()
    by_accelerate = os.environ.get("ACCELERATE_USE_FSDP") == "true"
    if by_accelerate and args.orig_params is not None:
        ap.error("--orig-params under torch.distributed.run only (accelerate: the config file)")
    want = (args.orig_params or os.environ.get("FSDP_USE_ORIG_PARAMS", "true")) == "true"
    if not torch.cuda.is_available():
        patch_accelerate_cpu_fsdp()
    watch_prepare_model(expected_kind(args, by_accelerate, want))
    targs = dict(
        output_dir=os.environ.get("TRAINER_OUT", "/tmp/ranktrace-hf-trainer"), max_steps=args.steps,
        per_device_train_batch_size=2, learning_rate=1e-3, logging_steps=1, report_to=[],
        save_strategy="no", use_cpu=not torch.cuda.is_available(),
        ddp_backend=None if torch.cuda.is_available() else "gloo", dataloader_num_workers=0,
        gradient_checkpointing=args.grad_ckpt, disable_tqdm=True,
        **fsdp_arguments(args, by_accelerate, want))
    for trial in range(args.trials or 1):
        train(args, targs, trial)
    if not prepared:
        say(": accelerate never prepared the model")
        sys.exit(3)
    say(f" trained {args.steps} steps" if args.trials is None else f" ran {args.trials} trials")


if __name__ == "__main__":
    main()
