# SPDX-License-Identifier: MIT
"""_fsdp1.py - FSDP v1 (FullyShardedDataParallel): parameters as handed to
FSDP, root forwards, the failure point "fsdp.root_forward" that skips one
(bypass: the unwrapped module runs, as transformers 4.53.0 did), and the
watch for a module the root wraps called while no root forward runs.

The watch: a global forward pre-hook, installed once an FSDP v1 root
exists; its common path (inside a root forward, or a module no root wraps)
is a TLS read and a lookup. Not counted: calls inside autograd's backward
(activation checkpointing recomputes inner forwards there) and under
summon_full_params (generation does that on purpose)."""
import sys
import weakref

from . import _calls as calls
from . import _core as core

_under = {}          # id(module) -> (weakref to it, its label, weakref to its FSDP v1 root)
_hook = None         # the global forward pre-hook, once an FSDP v1 root exists
_summon = None       # TrainingState.SUMMON_FULL_PARAMS
_root_forwards = 0


def _mark(root, torch):
    """After the outermost FSDP.__init__: remember every module below root
    (inner units included) and start watching module calls."""
    global _hook, _summon
    if not core.has("rt_unwrapped_call"):
        return
    rref = weakref.ref(root)
    for path, m in root._fsdp_wrapped_module.named_modules():
        _under[id(m)] = (weakref.ref(m), calls.label(path, m), rref)
    if _hook is None:
        from torch.distributed.fsdp._common_utils import TrainingState

        _summon = TrainingState.SUMMON_FULL_PARAMS
        calls.setup(torch)
        _hook = torch.nn.modules.module.register_module_forward_pre_hook(_unwrapped_pre)


def _unwrapped_pre(module, args):
    """Every module call once an FSDP v1 root exists."""
    if core.tls.root:
        return None
    e = _under.get(id(module))
    if e is not None:
        _unwrapped(module, e)
    return None


def _watched(m):
    e = _under.get(id(m))
    return e is not None and e[0]() is m


def _unwrapped(module, e):
    if e[0]() is not module or calls.in_backward():   # recomputed inside backward
        return
    root = e[2]()
    if root is None or getattr(root, "training_state", None) is _summon:
        return
    f = sys._getframe(2)
    # inside the call of another module the root wraps: part of that call,
    # reported for the outer module
    outer = calls.outermost_call(f, _watched)
    if outer is not None and outer.f_locals.get("self") is not module:
        return
    calls.report(module, e[1], calls.caller_above(f))


def _inner_unit(fsdp):
    e = _under.get(id(fsdp))
    return e is not None and e[0]() is fsdp


def patch(mod):
    """torch.distributed.fsdp.fully_sharded_data_parallel is imported."""
    FSDP = mod.FullyShardedDataParallel
    if getattr(FSDP, "_ranktrace_patched", False):
        return
    orig_forward, orig_init = FSDP.forward, FSDP.__init__

    def __init__(self, module, *args, **kwargs):
        if core.tls.in_init:                        # an inner unit of auto-wrapping
            return orig_init(self, module, *args, **kwargs)
        core.tls.in_init = True
        try:
            core.report_point(core.POINT_WRAP, module, force=True)  # as loaded, before sharding
            orig_init(self, module, *args, **kwargs)
        finally:
            core.tls.in_init = False
        try:
            _mark(self, sys.modules["torch"])
        except Exception as e:  # the probe must never break the program
            sys.stderr.write(f"ranktrace probe: warning: {e!r}; no unwrapped-call evidence\n")

    def forward(self, *args, **kwargs):
        global _root_forwards
        if _inner_unit(self):                      # a unit inside a root
            return orig_forward(self, *args, **kwargs)
        if _root_forwards == 0 or (core.param_every and _root_forwards % core.param_every == 0):
            core.report_point(core.POINT_ROOT_FORWARD, self)
        if core.fault_point(core.POINT_FSDP_ROOT_FORWARD) == core.FAULT_BYPASS:
            # what transformers 4.53.0 did: run the unwrapped module; the root
            # forward never runs (and the watch above sees the call)
            return self._fsdp_wrapped_module(*args, **kwargs)
        units = getattr(self, "_ranktrace_units", None)
        if units is None:
            units = self._ranktrace_units = len(FSDP.fsdp_modules(self))
        _root_forwards += 1
        core.lib.rt_fsdp_forward(0, units)
        core.tls.root += 1
        try:
            out = orig_forward(self, *args, **kwargs)
        finally:
            core.tls.root -= 1
        core.lib.rt_fsdp_forward(1, units)
        return out

    FSDP.__init__ = __init__
    FSDP.forward = forward
    FSDP._ranktrace_patched = True
