# SPDX-License-Identifier: MIT
"""ranktrace_probe - the PyTorch probe: names what the C tracer sees.

Loaded in every Python rank by `ranktrace run` (python/site/sitecustomize.py).
It is thin: it reports (parameter placement, FSDP root forwards, markers) and
asks (the failure point "fsdp.root_forward") through libranktrace.so's C API
via ctypes; the C library decides and records. It does nothing until torch is
imported, and nothing at all without the preloaded library.

Where parameters are reported:
  - when a module is handed to FullyShardedDataParallel (before wrapping: on
    meta, cpu or cuda, as loaded),
  - at the first forward of the first top-level module (the module the
    trainer calls: with transformers 4.53.0, the unwrapped one),
  - at each FSDP root forward: the first, then every RANKTRACE_PARAM_EVERY
    root forwards (default 100), and only when a placement changed.
"""
import ctypes
import importlib.abc
import importlib.machinery
import os
import sys
import threading

FAULT_BYPASS = 1
DEV_CUDA, DEV_CPU, DEV_META = 0, 1, 2

_lib = None
_tls = threading.local()
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
        lib.rt_fsdp_forward.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.rt_fsdp_forward.restype = None
        lib.rt_marker.argtypes = [ctypes.c_char_p, ctypes.c_int64]
        lib.rt_marker.restype = None
        lib.rt_fault_point.argtypes = [ctypes.c_char_p]
        lib.rt_fault_point.restype = ctypes.c_int
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

        for i, dt in enumerate((torch.float32, torch.float16, torch.bfloat16, torch.float64,
                                torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool)):
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
        sig = (devtype, index, nbytes > 0, ptr)
        if not force and _last.get(name) == sig:
            continue
        _last[name] = sig
        _lib.rt_param(name.encode("utf-8", "replace")[:63], devtype, index, _dtype_code(t),
                      t.numel(), nbytes, ptr)
        n += 1
    return n


# Report points (viewer/model.h): announced with rt_marker("rt.params", POINT)
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


# ---- FSDP v1: the root forward, and the failure point that skips it ----

def _patch_fsdp(mod):
    FSDP = mod.FullyShardedDataParallel
    if getattr(FSDP, "_ranktrace_patched", False):
        return
    orig_forward, orig_init = FSDP.forward, FSDP.__init__

    def __init__(self, module, *args, **kwargs):
        if getattr(_tls, "in_init", False):         # an inner unit of auto-wrapping
            return orig_init(self, module, *args, **kwargs)
        _tls.in_init = True
        try:
            report_point(POINT_WRAP, module, force=True)  # as loaded, before sharding
            orig_init(self, module, *args, **kwargs)
        finally:
            _tls.in_init = False

    def forward(self, *args, **kwargs):
        global _root_forwards
        if getattr(_tls, "in_fsdp", False):      # an inner FSDP unit
            return orig_forward(self, *args, **kwargs)
        _tls.in_fsdp = True
        try:
            if _root_forwards == 0 or (_every and _root_forwards % _every == 0):
                report_point(POINT_ROOT_FORWARD, self)
            if _lib.rt_fault_point(b"fsdp.root_forward") == FAULT_BYPASS:
                # what transformers 4.53.0 did: run the unwrapped module; the
                # root forward never runs
                return self._fsdp_wrapped_module(*args, **kwargs)
            units = getattr(self, "_ranktrace_units", None)
            if units is None:
                units = self._ranktrace_units = len(FSDP.fsdp_modules(self))
            _root_forwards += 1
            _lib.rt_fsdp_forward(0, units)
            out = orig_forward(self, *args, **kwargs)
            _lib.rt_fsdp_forward(1, units)
            return out
        finally:
            _tls.in_fsdp = False

    FSDP.__init__ = __init__
    FSDP.forward = forward
    FSDP._ranktrace_patched = True


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
        depth = getattr(_tls, "depth", 0)
        _tls.depth = depth + 1
        if depth == 0 and not getattr(_tls, "in_fsdp", False):
            report_point(POINT_FIRST_FORWARD, module)

    def post(module, args, out):
        _tls.depth = getattr(_tls, "depth", 1) - 1
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


def install():
    """Called by sitecustomize: inert without the library or with
    RANKTRACE_PROBE=0; never imports torch itself."""
    global _lib, _every
    if os.environ.get("RANKTRACE_PROBE", "1") == "0":
        return False
    _lib = _load_library()
    if _lib is None:
        return False
    try:
        _every = max(0, int(os.environ.get("RANKTRACE_PARAM_EVERY", "100")))
    except ValueError:
        _every = 100
    sys.meta_path.insert(0, _Finder())
    return True
