# SPDX-License-Identifier: MIT
"""_steps.py - the evidence for a model nobody prepared: optimizer steps,
what the parameters they update are (sharded by FSDP, synchronised by DDP,
or each rank's own), and the reductions the program asked torch.distributed
for; and the failure point "accelerate.prepare_model" that skips accelerate's
preparation of a model (bypass: the model comes back as given).

Recorded as rt_optim_step at a process's 1st, 2nd, 4th, ... optimizer step
(any optimizer): the step, the parameters that step updated, how many of
them are sharded (a DTensor: FSDP2 or tensor parallel; FSDP v1's flat
parameters and the parameters it flattened) or synchronised (a module DDP
wraps), and the reductions (all_reduce, reduce, reduce_scatter and their
variants, through torch.distributed's Python API) so far. DDP's own
gradient all-reduce runs in C++ and is not among them: its parameters count
as synchronised instead. On GPU the tracer sees NCCL's reductions as well."""
import functools
import sys
import weakref

from . import _core as core

_steps = 0
_reductions = 0
_failed = False     # a report failed once: said, and no more reports
# id(parameter) -> weakref to it: not a WeakSet, whose lookup compares two
# weakrefs to one tensor with ==, i.e. tensor == tensor ("Boolean value of
# Tensor with more than one value is ambiguous" at the first DDP step)
_ddp_params = {}
REDUCTIONS = ("all_reduce", "all_reduce_coalesced", "reduce", "reduce_scatter",
              "reduce_scatter_tensor", "_reduce_scatter_base")


def _kind(p):
    """0 each rank's own, 1 sharded, 2 synchronised."""
    if core.dtensor_layout(p) is not None or getattr(p, "_fsdp_flattened", False) or \
            type(p).__name__ == "FlatParameter":
        return 1
    ref = _ddp_params.get(id(p))
    return 2 if ref is not None and ref() is p else 0


def _after_step(optimizer, args, kwargs):
    global _steps, _failed
    _steps += 1
    if _steps & (_steps - 1) or _failed:   # 1, 2, 4, 8, ...
        return
    try:
        _report_step(optimizer)
    except Exception as e:  # the probe must never break the program
        _failed = True
        sys.stderr.write(f"ranktrace probe: warning: optimizer step: {e!r}\n")


def _report_step(optimizer):
    n = sharded = synced = 0
    for group in getattr(optimizer, "param_groups", ()):
        for p in group.get("params", ()):
            k = _kind(p)
            n += 1
            sharded += k == 1
            synced += k == 2
    core.lib.rt_optim_step(_steps, n, sharded, synced, _reductions)


def watch_optimizers(mod):
    """torch.optim.optimizer is imported: a global optimizer step post-hook."""
    if core.has("rt_optim_step") and hasattr(mod, "register_optimizer_step_post_hook"):
        mod.register_optimizer_step_post_hook(_after_step)


def patch_c10d_reductions(mod):
    """Count each reduction the program asks torch.distributed for (the
    functions are replaced before torch.distributed's own import of them)."""
    def counted(fn):
        @functools.wraps(fn)
        def reduction(*args, **kwargs):
            global _reductions
            _reductions += 1
            return fn(*args, **kwargs)
        return reduction

    for name in REDUCTIONS:
        fn = getattr(mod, name, None)
        if fn is not None:
            setattr(mod, name, counted(fn))


def patch_ddp(mod):
    """torch.nn.parallel.distributed is imported: remember the parameters
    each DistributedDataParallel synchronises."""
    DDP = mod.DistributedDataParallel
    orig = DDP.__init__

    def __init__(self, module, *args, **kwargs):
        orig(self, module, *args, **kwargs)
        try:
            for p in module.parameters():
                _ddp_params[id(p)] = weakref.ref(p, lambda _, k=id(p): _ddp_params.pop(k, None))
        except Exception as e:  # the probe must never break the program
            sys.stderr.write(f"ranktrace probe: warning: DDP: {e!r}\n")

    DDP.__init__ = __init__


def patch_accelerate(mod):
    """accelerate.accelerator is imported: the failure point at its
    preparation of a model (prepare_model; FSDP2's fsdp2_prepare_model)."""
    Acc = getattr(mod, "Accelerator", None)
    if Acc is not None and hasattr(Acc, "prepare_model"):
        orig = Acc.prepare_model

        @functools.wraps(orig)
        def prepare_model(self, model, *args, **kwargs):
            if core.fault_point(core.POINT_PREPARE_MODEL) == core.FAULT_BYPASS:
                return model   # never prepared: no DDP, no FSDP, as given
            return orig(self, model, *args, **kwargs)
        Acc.prepare_model = prepare_model
    fsdp2 = getattr(mod, "fsdp2_prepare_model", None)
    if fsdp2 is not None:
        @functools.wraps(fsdp2)
        def fsdp2_prepare_model(accelerator, model, *args, **kwargs):
            if core.fault_point(core.POINT_PREPARE_MODEL) == core.FAULT_BYPASS:
                return model
            return fsdp2(accelerator, model, *args, **kwargs)
        mod.fsdp2_prepare_model = fsdp2_prepare_model
