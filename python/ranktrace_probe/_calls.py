# SPDX-License-Identifier: MIT
"""_calls.py - the direct evidence of the bug class, shared by FSDP v1 and
FSDP2: a module FSDP shards called without FSDP's forward, reported per
(module, caller) at its 1st, 2nd, 4th, ... call (rt_unwrapped_call), and the
exception that left such a call (rt_exception), whatever the program then
does with it (an HPO loop that catches the failed trial and goes on).

Only the bug path comes here: the healthy path never walks a frame."""
import os
import sys
import weakref

from . import _core as core

_JUNK = {"_fsdp_wrapped_module", "_checkpoint_wrapped_module", "_orig_mod", "module"}
_seen = {}           # (label, caller code, line) -> calls so far
_watched = weakref.WeakKeyDictionary()   # module -> its label, once it has an exception hook
_raised = set()      # (label, exception type) already recorded
_call_impl = None    # the code of torch.nn.Module._call_impl
_torch_dir = None
_graph_task = None   # torch._C._current_graph_task_id: -1 outside autograd's backward
_here = os.path.dirname(os.path.abspath(__file__)) + os.sep
MESSAGE_MAX = 126    # bytes of an exception's message the trace keeps (2 name fields)


def setup(torch):
    """Once torch is there: what the walks below compare against."""
    global _call_impl, _torch_dir, _graph_task
    if _call_impl is None:
        _call_impl = torch.nn.Module._call_impl.__code__
        _torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
        _graph_task = torch._C._current_graph_task_id


def in_backward():
    """Inside autograd's backward (activation checkpointing recomputes
    forwards there)."""
    return _graph_task is not None and _graph_task() != -1


def label(path, mod):
    """'model.layers.0 (LlamaDecoderLayer)', or the class alone at the top."""
    path = ".".join(p for p in path.split(".") if p and p not in _JUNK)
    cls = class_name(mod)
    return f"{path} ({cls})"[:core.NAME_MAX] if path else cls[:core.NAME_MAX]


def class_name(mod):
    """The module's class as the program wrote it: fully_shard swaps in a
    subclass FSDP<Class> (bases FSDPModule, Class)."""
    cls = type(mod)
    bases = cls.__bases__
    if cls.__name__.startswith("FSDP") and len(bases) == 2 and \
            cls.__name__ == "FSDP" + bases[1].__name__:
        return bases[1].__name__
    return cls.__name__


def where(f):
    """'transformers/trainer.py:3791 compute_loss' for a frame: the file as
    imported (relative to the longest sys.path entry holding it), else its name."""
    fn = os.path.abspath(f.f_code.co_filename)
    best = ""
    for p in sys.path:
        p = os.path.join(os.path.abspath(p or "."), "")
        if fn.startswith(p) and len(p) > len(best) and os.sep in fn[len(p):]:
            best = p
    fn = fn[len(best):] if best else os.path.basename(fn)
    return f"{fn}:{f.f_lineno} {f.f_code.co_name}"


def _ours_or_torch(f):
    fn = f.f_code.co_filename
    return fn.startswith(_torch_dir) or os.path.abspath(fn).startswith(_here)


def caller_above(f):
    """The first frame from f up that is neither torch's nor the probe's."""
    while f is not None and _ours_or_torch(f):
        f = f.f_back
    return f


def outermost_call(f, is_watched):
    """From frame f up: the frame of the outermost module call (its
    _call_impl, or a forward called directly) whose module is_watched(m)
    says belongs to the sharded model; None when there is none."""
    found = None
    for _ in range(256):
        if f is None:
            break
        code = f.f_code
        if code is _call_impl or code.co_name == "forward":
            m = f.f_locals.get("self")
            if m is not None and is_watched(m):
                found = f
        f = f.f_back
    return found


def report(module, name, caller):
    """One call of module (named name) without FSDP's forward, from frame
    caller (None: unknown): counted per (name, caller), recorded at the 1st,
    2nd, 4th, ... such call; the exception leaving it is watched."""
    key = (name, caller.f_code if caller is not None else None,
           caller.f_lineno if caller is not None else 0)
    n = _seen.get(key, 0) + 1
    _seen[key] = n
    if n & (n - 1) == 0:   # 1, 2, 4, 8, ...
        where_ = where(caller) if caller is not None else "?"
        core.lib.rt_unwrapped_call(core.text(name), core.text(where_), n)
    watch_exception(module, name)


def watch_exception(module, name):
    """Record the exception that leaves a call of module (an always-called
    forward hook, added once per module on the bug path only)."""
    if not core.has("rt_exception"):
        return
    try:
        if module in _watched:
            return
        _watched[module] = name
        module.register_forward_hook(_left_with_exception, always_call=True)
    except TypeError:   # a module that takes no weak reference: no hook
        pass


def _left_with_exception(module, args, output):
    # torch runs always-called hooks from its except clause with no output
    # when the forward raised
    if output is not None:
        return None
    exc = sys.exc_info()[1]
    if exc is None:
        return None
    name = _watched.get(module, type(module).__name__)
    kind = type(exc).__name__
    if (name, kind) in _raised:
        return None
    _raised.add((name, kind))
    msg = str(exc).strip().splitlines()
    core.lib.rt_exception(core.text(name), core.text(kind),
                          core.text(msg[0] if msg else "", MESSAGE_MAX))
    return None
