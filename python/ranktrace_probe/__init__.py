# SPDX-License-Identifier: MIT
"""ranktrace_probe - the PyTorch probe: names what the C tracer sees.

Loaded in every Python rank by `ranktrace run` (python/site/sitecustomize.py).
It is thin: it reports (parameter placement, FSDP root forwards, markers) and
asks (the failure point "fsdp.root_forward") through libranktrace.so's C API
via ctypes; the C library decides and records. It does nothing until torch is
imported, and nothing at all without the preloaded library.

The call that matters (rt_unwrapped_call): a module an FSDP v1 root wraps, or
one below it, called while no root forward runs on that thread (what
transformers 4.53.0 did), with the first caller frame outside torch. Not
counted: calls inside autograd's backward (activation checkpointing recomputes
inner forwards there) and under summon_full_params (generation does that on
purpose). Each (module, caller) is reported at its 1st, 2nd, 4th, ... call.
The global forward pre-hook that watches for it is installed only once an
FSDP v1 root exists; its common path is two lookups.

Teardown (rt_marker "rt.teardown"): 1 when destroy_process_group is entered
with no exception in flight, 2 at interpreter exit after the main code ended
without an uncaught exception (3 and 0 when one was in flight): a rank that
dies after it, with no training work after it, crashed in teardown.

Where parameters are reported:
  - when a module is handed to FullyShardedDataParallel (before wrapping: on
    meta, cpu or cuda, as loaded),
  - at the first forward of the first top-level module (the module the
    trainer calls: with transformers 4.53.0, the unwrapped one),
  - at each FSDP root forward: the first, then every RANKTRACE_PARAM_EVERY
    root forwards (default 100), and only when a placement changed.
"""
import atexit
import ctypes
import functools
import importlib.abc
import importlib.machinery
import os
import sys
import threading
import weakref

from ._tables import DEV, DTYPES, ENV, ENV_VALID  # generated from format/ at build time

FAULT_BYPASS = 1
DEV_CUDA, DEV_CPU, DEV_META = DEV["cuda"], DEV["cpu"], DEV["meta"]

_lib = None


class _Tls(threading.local):
    root = 0            # FSDP v1 root forwards running on this thread
    in_init = False     # inside the outermost FSDP.__init__
    depth = 0           # top-level module nesting (first-forward report)


_tls = _Tls()
_last = {}          # parameter name -> placement signature last reported
_root_forwards = 0
_every = 100


def _load_library():
    """The C API from the preloaded libranktrace.so, or None (inert)."""
    try:
        lib = ctypes.CDLL(None)
        lib.rt_param.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                 ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p]
        lib.rt_param.restype = None
        shape = getattr(lib, "rt_param_shape", None)   # absent from older libraries
        if shape is not None:
            shape.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int64)]
            shape.restype = None
        lib.rt_fsdp_forward.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.rt_fsdp_forward.restype = None
        lib.rt_marker.argtypes = [ctypes.c_char_p, ctypes.c_int64]
        lib.rt_marker.restype = None
        lib.rt_fault_point.argtypes = [ctypes.c_char_p]
        lib.rt_fault_point.restype = ctypes.c_int
        try:
            lib.rt_unwrapped_call.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64]
            lib.rt_unwrapped_call.restype = None
        except AttributeError:   # an older library: no direct evidence
            pass
        return lib
    except (OSError, AttributeError):
        return None


def _clean(name):
    for junk in ("_fsdp_wrapped_module.", "_checkpoint_wrapped_module.", "_orig_mod.", "module."):
        name = name.replace(junk, "")
    return name


def _tensors(module):
    """(name, tensor) for every parameter of module and its submodules,
    including the views FSDP leaves in place of the original parameters."""
    import torch

    seen = set()
    for mod_name, mod in module.named_modules():
        names = list(mod._parameters.keys())
        for attr in ("weight", "bias"):
            if attr not in names and isinstance(getattr(mod, attr, None), torch.Tensor):
                names.append(attr)
        for attr in names:
            t = mod._parameters.get(attr) if attr in mod._parameters else getattr(mod, attr, None)
            if t is None or "flat_param" in attr:
                continue
            full = _clean(f"{mod_name}.{attr}" if mod_name else attr)
            if full in seen:
                continue
            seen.add(full)
            yield full, t


_DTYPES = {}


def _dtype_code(t):
    if not _DTYPES:
        import torch

        for i, name in enumerate(DTYPES):
            dt = getattr(torch, name, None)
            if dt is not None:
                _DTYPES[dt] = i
    return _DTYPES.get(t.dtype, 255)


def _placement(t):
    dev = t.device
    if dev.type == "meta":
        return DEV_META, -1, 0, 0
    try:
        nbytes = t.untyped_storage().nbytes()
    except Exception:
        nbytes = 0
    devtype = DEV_CUDA if dev.type == "cuda" else DEV_CPU
    return devtype, dev.index if dev.index is not None else -1, nbytes, t.data_ptr() if nbytes else 0


def report_params(module, force=False):
    """Report every parameter whose placement changed (all when force)."""
    if _lib is None:
        return 0
    n = 0
    for name, t in _tensors(module):
        devtype, index, nbytes, ptr = _placement(t)
        shape = tuple(t.shape)
        sig = (devtype, index, nbytes > 0, ptr, shape)
        if not force and _last.get(name) == sig:
            continue
        _last[name] = sig
        cname = name.encode("utf-8", "replace")[:63]
        if hasattr(_lib, "rt_param_shape"):   # the shape first: it goes with the next report
            _lib.rt_param_shape(cname, len(shape), (ctypes.c_int64 * max(1, len(shape)))(*shape))
        _lib.rt_param(cname, devtype, index, _dtype_code(t), t.numel(), nbytes, ptr)
        n += 1
    return n


# Report points (viewer/model/model.h): announced with rt_marker("rt.params", POINT)
# before the reports they cover.
POINT_WRAP, POINT_FIRST_FORWARD, POINT_ROOT_FORWARD = 1, 2, 3


def report_point(point, module, force=False):
    """Announce a report point, then report the parameters of module."""
    if _lib is None:
        return 0
    _lib.rt_marker(b"rt.params", point)
    return report_params(module, force)


def marker(name, value):
    if _lib is not None:
        _lib.rt_marker(name.encode("utf-8", "replace")[:63], int(value))


# ---- the call that matters: a module an FSDP v1 root wraps, called without it ----

_JUNK = {"_fsdp_wrapped_module", "_checkpoint_wrapped_module", "_orig_mod", "module"}
_under = {}          # id(module) -> (weakref to it, its label, weakref to its FSDP v1 root)
_seen = {}           # (label, caller code, line) -> calls so far
_hook = None         # the global forward pre-hook, once an FSDP v1 root exists
_graph_task = None   # torch._C._current_graph_task_id: -1 outside autograd's backward
_summon = None       # TrainingState.SUMMON_FULL_PARAMS
_call_impl = None    # the code of torch.nn.Module._call_impl
_torch_dir = None
_here = os.path.splitext(os.path.abspath(__file__))[0]


def _label(path, mod):
    path = ".".join(p for p in path.split(".") if p and p not in _JUNK)
    cls = type(mod).__name__
    return f"{path} ({cls})" if path else cls


def _where(f):
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


def _mark(root, torch):
    """After the outermost FSDP.__init__: remember every module below root
    (inner units included) and start watching module calls."""
    global _hook, _graph_task, _summon, _call_impl, _torch_dir
    if not hasattr(_lib, "rt_unwrapped_call"):
        return
    rref = weakref.ref(root)
    for path, m in root._fsdp_wrapped_module.named_modules():
        _under[id(m)] = (weakref.ref(m), _label(path, m)[:63], rref)
    if _hook is None:
        from torch.distributed.fsdp._common_utils import TrainingState

        _summon = TrainingState.SUMMON_FULL_PARAMS
        _graph_task = torch._C._current_graph_task_id
        _call_impl = torch.nn.Module._call_impl.__code__
        _torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
        _hook = torch.nn.modules.module.register_module_forward_pre_hook(_unwrapped_pre)


def _unwrapped_pre(module, args):
    """Every module call once an FSDP v1 root exists: the common path (inside
    a root forward, or a module no root wraps) is a TLS read and a lookup."""
    if _tls.root:
        return None
    e = _under.get(id(module))
    if e is not None:
        _unwrapped(module, e)
    return None


def _inside_marked_call(f, module):
    """Is frame f (and up) inside the call of another module a root wraps?
    Then this call is part of an outer one, reported for the outer module."""
    for _ in range(256):
        if f is None:
            return False
        if f.f_code is _call_impl:
            other = f.f_locals.get("self")
            e = _under.get(id(other)) if other is not module else None
            if e is not None and e[0]() is other:
                return True
        f = f.f_back
    return False


def _unwrapped(module, e):
    if e[0]() is not module or _graph_task() != -1:   # recomputed inside backward
        return
    root = e[2]()
    if root is None or getattr(root, "training_state", None) is _summon:
        return
    f = sys._getframe(2)
    if _inside_marked_call(f, module):
        return
    while f is not None and (f.f_code.co_filename.startswith(_torch_dir) or
                             os.path.splitext(f.f_code.co_filename)[0] == _here):
        f = f.f_back
    key = (e[1], f.f_code if f is not None else None, f.f_lineno if f is not None else 0)
    n = _seen.get(key, 0) + 1
    _seen[key] = n
    if n & (n - 1) == 0:   # 1, 2, 4, 8, ...
        caller = _where(f) if f is not None else "?"
        _lib.rt_unwrapped_call(e[1].encode("utf-8", "replace")[:63],
                               caller.encode("utf-8", "replace")[:63], n)


# ---- FSDP v1: the root forward, and the failure point that skips it ----

def _inner_unit(fsdp):
    e = _under.get(id(fsdp))
    return e is not None and e[0]() is fsdp


def _patch_fsdp(mod):
    FSDP = mod.FullyShardedDataParallel
    if getattr(FSDP, "_ranktrace_patched", False):
        return
    orig_forward, orig_init = FSDP.forward, FSDP.__init__

    def __init__(self, module, *args, **kwargs):
        if _tls.in_init:                            # an inner unit of auto-wrapping
            return orig_init(self, module, *args, **kwargs)
        _tls.in_init = True
        try:
            report_point(POINT_WRAP, module, force=True)  # as loaded, before sharding
            orig_init(self, module, *args, **kwargs)
        finally:
            _tls.in_init = False
        try:
            _mark(self, sys.modules["torch"])
        except Exception as e:  # the probe must never break the program
            sys.stderr.write(f"ranktrace probe: warning: {e!r}; no unwrapped-call evidence\n")

    def forward(self, *args, **kwargs):
        global _root_forwards
        if _inner_unit(self):                      # a unit inside a root
            return orig_forward(self, *args, **kwargs)
        if _root_forwards == 0 or (_every and _root_forwards % _every == 0):
            report_point(POINT_ROOT_FORWARD, self)
        if _lib.rt_fault_point(b"fsdp.root_forward") == FAULT_BYPASS:
            # what transformers 4.53.0 did: run the unwrapped module; the root
            # forward never runs (and the watch above sees the call)
            return self._fsdp_wrapped_module(*args, **kwargs)
        units = getattr(self, "_ranktrace_units", None)
        if units is None:
            units = self._ranktrace_units = len(FSDP.fsdp_modules(self))
        _root_forwards += 1
        _lib.rt_fsdp_forward(0, units)
        _tls.root += 1
        try:
            out = orig_forward(self, *args, **kwargs)
        finally:
            _tls.root -= 1
        _lib.rt_fsdp_forward(1, units)
        return out

    FSDP.__init__ = __init__
    FSDP.forward = forward
    FSDP._ranktrace_patched = True


# ---- teardown: after training, the process group goes, the interpreter exits ----

TEARDOWN = b"rt.teardown"


def _patch_c10d(mod):
    orig = mod.destroy_process_group

    @functools.wraps(orig)
    def destroy_process_group(group=None, *args, **kwargs):
        if group is None and _lib is not None:   # the whole job's, not a subgroup
            _lib.rt_marker(TEARDOWN, 3 if sys.exc_info()[0] is not None else 1)
        return orig(group, *args, **kwargs)

    mod.destroy_process_group = destroy_process_group

    def at_exit():
        try:
            if not mod.is_initialized():   # never a rank, or already destroyed
                return
        except Exception:
            return
        failed = getattr(sys, "last_value", None) is not None or \
            getattr(sys, "last_exc", None) is not None
        _lib.rt_marker(TEARDOWN, 0 if failed else 2)

    atexit.register(at_exit)


# ---- FSDP2 (fully_shard): the root's pre-forward, when present ----

def _patch_fsdp2(mod):
    State = getattr(mod, "FSDPState", None)
    if State is None or not hasattr(State, "_root_pre_forward"):
        return
    orig = State._root_pre_forward

    def _root_pre_forward(self, module, args, kwargs):
        out = orig(self, module, args, kwargs)   # lazy init decides who is root
        if getattr(self, "_is_root", False):
            ctx = getattr(self, "_state_ctx", None)
            _lib.rt_fsdp_forward(0, len(ctx.all_states) if ctx is not None else 0)
        return out

    State._root_pre_forward = _root_pre_forward


# ---- the first forward of the first top-level module ----

def _watch_top_level(torch_mod):
    hooks = []

    def pre(module, args):
        depth = _tls.depth
        _tls.depth = depth + 1
        if depth == 0 and not _tls.root:
            report_point(POINT_FIRST_FORWARD, module)

    def post(module, args, out):
        _tls.depth -= 1
        if _tls.depth == 0:               # seen once: stop paying for the hooks
            for h in hooks:
                h.remove()

    m = torch_mod.nn.modules.module
    hooks.append(m.register_module_forward_pre_hook(pre))
    hooks.append(m.register_module_forward_hook(post, always_call=True))


# ---- import hooks: act when torch's modules are loaded ----

_AFTER_IMPORT = {
    "torch": _watch_top_level,
    "torch.distributed.fsdp.fully_sharded_data_parallel": _patch_fsdp,
    "torch.distributed.fsdp._fully_shard._fsdp_state": _patch_fsdp2,
    "torch.distributed.distributed_c10d": _patch_c10d,
}


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        hook = _AFTER_IMPORT.get(name)
        if hook is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        exec_module = spec.loader.exec_module

        def run_then_hook(module):
            exec_module(module)
            try:
                hook(module)
            except Exception as e:  # the probe must never break the program
                sys.stderr.write(f"ranktrace probe: warning: {name}: {e!r}; continuing without it\n")

        spec.loader.exec_module = run_then_hook
        return spec


def _env(short):
    """RANKTRACE_<short> checked against format/env.def (ENV_VALID): a bad
    value is said once, with the fallback used instead (`ranktrace run`
    refuses it before the job starts; this is for the probe loaded by hand)."""
    kind, valid, fallback = ENV_VALID[short]
    value = os.environ.get(ENV[short], "")
    if not value:
        return fallback
    if kind == "WORD" and value in valid.split("|"):
        return value
    if kind == "INT" and value.isascii() and value.isdigit():
        lo, hi = (int(x) for x in valid.split("-"))
        if lo <= int(value) <= hi:
            return value
    sys.stderr.write(f"ranktrace probe: warning: {ENV[short]}={value!a}: expected "
                     f"{' or '.join(valid.split('|')) if kind == 'WORD' else valid.replace('-', ' to ')}"
                     f"; using {fallback}\n")
    return fallback


def install():
    """Called by sitecustomize: inert without the library or with
    RANKTRACE_PROBE=0; never imports torch itself."""
    global _lib, _every
    if _env("PROBE") == "0":
        return False
    _lib = _load_library()
    if _lib is None:
        return False
    _every = int(_env("PARAM_EVERY"))
    sys.meta_path.insert(0, _Finder())
    return True
