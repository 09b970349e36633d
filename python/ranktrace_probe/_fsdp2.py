# SPDX-License-Identifier: MIT
"""_fsdp2.py - FSDP2 (fully_shard): parameters as handed to fully_shard,
root forwards, the failure point "fsdp.root_forward" that skips the root's
FSDP2 forward, and the evidence of a sharded module used without its FSDP
forward.

fully_shard works in place: there is no wrapper a trainer could keep, so the
4.53.0 story (the unwrapped module trained) reads, for FSDP2, as the model's
forward run without the root's FSDP2 hooks, as `model.forward(...)` (or a
method FSDP2 was not told about, register_fsdp_forward_method) runs it: the
root's pre-forward (lazy init, which elects the root, and the root's
all-gather) and post-forward never run; the units below keep their own hooks.
That is what the fault does on bypass. What then happens depends on the
layout: parameters the root owns stay sharded DTensors (torch: "mixed
torch.Tensor and DTensor"), and each unit below elects itself root (FSDP2
refuses a grouped unit as root: "requires a single root module").

The root: a unit no other fully_shard module contains (marked as fully_shard
is applied, bottom-up; FSDP2 elects the first to run forward). The evidence,
per (module, caller) as FSDP v1's (rt_unwrapped_call):
  - a unit below a root begins its forward while the root's forward does not
    run (its pre-forward hook, which FSDP2 registers first: patched here),
  - a module whose parameters FSDP2 manages, other than a unit, is called
    while they are its sharded DTensors (a global forward pre-hook, installed
    once fully_shard was used; its common path is a lookup and a state read).
Not counted: calls inside autograd's backward and under FSDP2's own
pre-backward (activation checkpointing)."""
import sys
import weakref

from . import _calls as calls
from . import _core as core

_managed = {}        # id(module) -> _Entry
_hook = None
_FORWARD = _PRE_BACKWARD = None   # torch's TrainingState members
_state_of = None     # torch's _get_module_fsdp_state
_root_forwards = 0
_pending = []        # (weakref to a module given to fully_shard, snapshot() as loaded)


class _Entry:
    __slots__ = ("module", "label", "params", "state", "unit")

    def __init__(self, module):
        self.module = weakref.ref(module)
        self.label = None    # named from its root, when first reported
        self.params = []     # (name on the module, weakref to its FSDPParam)
        self.state = None    # weakref to the FSDPState whose group holds them
        self.unit = False    # a module fully_shard was applied to (FSDP2's hooks are on it)


def _entry(module):
    e = _managed.get(id(module))
    if e is None or e.module() is not module:
        e = _managed[id(module)] = _Entry(module)
    return e


def _watched(m):
    e = _managed.get(id(m))
    return e is not None and e.module() is m


def _top(state):
    """The root above state (the outermost fully_shard state containing
    it), or None when state is one."""
    ref = getattr(state, "_ranktrace_above", None)
    return ref() if ref is not None else None


def _is_root(state):
    return getattr(state, "_ranktrace_above", None) is None


def _note_units(state, modules):
    """After fully_shard(modules): these are units; every unit inside them
    now has them above (bottom-up, so the last to mark is the outermost)."""
    above = weakref.ref(state)
    for m in modules:
        _entry(m).unit = True
        for sub in m.modules():
            s = _state_of(sub) if sub is not m else None
            if s is not None and s is not state:
                s._ranktrace_above = above


def _note_group(group, state):
    """The parameters a group manages, by the modules that hold them."""
    sref = weakref.ref(state) if state is not None else None
    for fp in getattr(group, "fsdp_params", ()):
        info = fp._module_info
        holders = [(info.module, info.param_name)]
        holders += list(zip(getattr(info, "shared_modules", ()), getattr(info, "shared_param_names", ())))
        for m, name in holders:
            e = _entry(m)
            e.params.append((name, weakref.ref(fp)))
            e.state = sref


def _label(module, e, state):
    """module's path from its root ('model.layers.0 (LlamaDecoderLayer)')."""
    if e.label is None:
        top = (_top(state) or state) if state is not None else None
        root = top._modules[0] if top is not None and getattr(top, "_modules", None) else None
        e.label = calls.label("", module)
        for path, m in (root.named_modules() if root is not None else ()):
            if m is module:
                e.label = calls.label(path, m)
                break
    return e.label


def root_module(module):
    """The root module of the sharded model module belongs to, or None: the
    first module called may be inside it when the root's forward was called
    directly (model.forward()), and parameters are named from the root."""
    e = _managed.get(id(module))
    if e is None or e.module() is not module:
        return None
    st = e.state() if e.state is not None else (_state_of(module) if _state_of else None)
    top = (_top(st) or st) if st is not None else None
    return top._modules[0] if top is not None and getattr(top, "_modules", None) else None


def _sharded(module, e):
    """Does module hold one of its sharded parameters now?"""
    for name, ref in e.params:
        fp = ref()
        if fp is None:
            continue
        p = module._parameters.get(name)
        if p is not None and (p is getattr(fp, "sharded_param", None) or
                              p is getattr(fp, "_sharded_post_forward_param", None)):
            return True
    return False


def _sharded_pre(module, args):
    """Every module call once fully_shard was used."""
    e = _managed.get(id(module))
    if e is None or e.unit or not e.params:
        return None
    st = e.state() if e.state is not None else None
    if st is not None and st._training_state is _FORWARD:   # inside its unit's forward
        return None
    if e.module() is not module or calls.in_backward() or not _sharded(module, e):
        return None
    _evidence(module, e, st, sys._getframe(1))
    return None


def _evidence(module, e, state, f):
    """module runs without its FSDP2 forward, called from the first frame
    outside torch above the outermost call of the sharded model."""
    outer = calls.outermost_call(f, _watched)
    calls.report(module, _label(module, e, state),
                 calls.caller_above(outer.f_back if outer is not None else f))


def _outside_root(state, module):
    """A unit below a root begins its forward: is the root's running?"""
    top = _top(state)
    if top is None or top._training_state is _FORWARD or calls.in_backward():
        return
    _evidence(module, _entry(module), state, sys._getframe(2))


def _flush_wrap(state):
    """The parameters as loaded, kept at each fully_shard (applied bottom-up,
    when no name from the model's root is known yet), reported under their
    names from state's root at its first forward."""
    top = _top(state) or state
    root = top._modules[0] if getattr(top, "_modules", None) else None
    if root is None or not _pending or core.lib is None:
        return
    paths = {id(m): path for path, m in root.named_modules()}
    rest, out = [], []
    for ref, snap in _pending:
        m = ref()
        if m is None:
            continue
        if id(m) not in paths:   # another model's: its own root reports it
            rest.append((ref, snap))
            continue
        prefix = paths[id(m)]
        out += [(core.clean(f"{prefix}.{name}" if prefix else name), d) for name, d in snap]
    _pending[:] = rest
    if out:
        core.lib.rt_marker(b"rt.params", core.POINT_WRAP)
        for name, d in out:
            core.emit(name, d, force=True)


def _patch_init(State):
    orig = State.init

    def init(self, modules, *args, **kwargs):
        for m in modules:   # as loaded: what fully_shard has not sharded yet
            try:
                _pending.append((weakref.ref(m), core.snapshot(
                    m, skip=lambda t: core.dtensor_layout(t) is not None)))
            except Exception:   # the probe must never break the program
                pass
        orig(self, modules, *args, **kwargs)
        try:
            _note_units(self, modules)
        except Exception as e:  # the probe must never break the program
            sys.stderr.write(f"ranktrace probe: warning: fully_shard: {e!r}\n")

    State.init = init


def _patch_forward(State, dynamo_disable):
    orig_pre, orig_post, orig_root = State._pre_forward, State._post_forward, State._root_pre_forward

    def _pre_forward(self, module, args, kwargs):
        global _root_forwards
        ts = self._training_state
        if ts is not _PRE_BACKWARD and ts is not _FORWARD:   # the first module of a pass
            if _pending:
                _flush_wrap(self)
            if _is_root(self):
                if _root_forwards == 0 or (core.param_every and _root_forwards % core.param_every == 0):
                    core.report_point(core.POINT_ROOT_FORWARD, module)
                if core.fault_point(core.POINT_FSDP_ROOT_FORWARD) == core.FAULT_BYPASS:
                    self._ranktrace_bypassed = True   # its post-forward is skipped too
                    return args, kwargs
                self._ranktrace_bypassed = False
            elif core.has("rt_unwrapped_call"):
                _outside_root(self, module)
        return orig_pre(self, module, args, kwargs)

    def _post_forward(self, module, input, output):
        if getattr(self, "_ranktrace_bypassed", False):
            self._ranktrace_bypassed = False
            return output
        return orig_post(self, module, input, output)

    def _root_pre_forward(self, module, args, kwargs):
        global _root_forwards
        out = orig_root(self, module, args, kwargs)   # lazy init decides who is root
        if getattr(self, "_is_root", False) and _is_root(self):
            ctx = getattr(self, "_state_ctx", None)
            _root_forwards += 1
            core.lib.rt_fsdp_forward(0, len(ctx.all_states) if ctx is not None else 0)
        return out

    # as torch's own: compiled code never traces into FSDP2's hooks
    State._pre_forward = dynamo_disable(_pre_forward)
    State._post_forward = dynamo_disable(_post_forward)
    State._root_pre_forward = _root_pre_forward


def patch_state(mod):
    """torch.distributed.fsdp._fully_shard._fsdp_state is imported."""
    global _FORWARD, _PRE_BACKWARD, _state_of
    State = getattr(mod, "FSDPState", None)
    if State is None or getattr(State, "_ranktrace_patched", False):
        return
    for name in ("init", "_pre_forward", "_post_forward", "_root_pre_forward"):
        if not hasattr(State, name):   # another FSDP2 than the one this knows
            return
    from torch.distributed.fsdp._fully_shard import _fsdp_common

    _FORWARD = _fsdp_common.TrainingState.FORWARD
    _PRE_BACKWARD = _fsdp_common.TrainingState.PRE_BACKWARD
    _state_of = mod._get_module_fsdp_state
    _patch_init(State)
    _patch_forward(State, getattr(_fsdp_common, "_dynamo_disable", lambda fn: fn))
    State._ranktrace_patched = True


def patch_group(mod):
    """torch.distributed.fsdp._fully_shard._fsdp_param_group is imported:
    each group's parameters, and the watch for their sharded use."""
    Group = getattr(mod, "FSDPParamGroup", None)
    if Group is None or getattr(Group, "_ranktrace_patched", False):
        return
    orig = Group.__init__

    def __init__(self, params, modules, *args, **kwargs):
        global _hook
        orig(self, params, modules, *args, **kwargs)
        try:
            _note_group(self, _state_of(modules[0]) if _state_of is not None else None)
            if _hook is None and core.has("rt_unwrapped_call"):
                torch = sys.modules["torch"]
                calls.setup(torch)
                _hook = torch.nn.modules.module.register_module_forward_pre_hook(_sharded_pre)
        except Exception as e:  # the probe must never break the program
            sys.stderr.write(f"ranktrace probe: warning: fully_shard: {e!r}; no sharded-call evidence\n")

    Group.__init__ = __init__
    Group._ranktrace_patched = True
