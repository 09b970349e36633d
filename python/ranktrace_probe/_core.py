# SPDX-License-Identifier: MIT
"""_core.py - the probe's link to libranktrace.so (ctypes) and its parameter
reports: where each parameter lives, announced per report point.

Everything here is called from the hooks the other modules install; nothing
imports torch until torch is imported by the program. `lib` is None (the probe
inert) until install() found the preloaded library."""
import ctypes
import threading

from ._tables import DEV, DTYPES, PLACE, POINTS  # generated from format/ at build time

FAULT_BYPASS = 1
DEV_CUDA, DEV_CPU, DEV_META = DEV["cuda"], DEV["cpu"], DEV["meta"]
NAME_MAX = 63          # bytes of a name field in a record (format/schema.h RT_SZ_STR - 1)

lib = None
param_every = 100   # RANKTRACE_PARAM_EVERY: root forwards between parameter reports


class _Tls(threading.local):
    root = 0            # FSDP v1 root forwards running on this thread
    in_init = False     # inside the outermost FSDP.__init__
    depth = 0           # top-level module nesting (first-forward report)


tls = _Tls()
_last = {}          # parameter name -> placement signature last reported


def _declare(name, argtypes, restype=None):
    """Declare one C function; False when this library has none (older)."""
    fn = getattr(lib, name, None)
    if fn is None:
        return False
    fn.argtypes, fn.restype = argtypes, restype
    return True


def load_library():
    """The C API from the preloaded libranktrace.so, or None (inert)."""
    global lib
    c = ctypes
    try:
        lib = c.CDLL(None)
        lib.rt_param     # the core API: without it, no library
    except (OSError, AttributeError):
        lib = None
        return None
    i64p = c.POINTER(c.c_int64)
    _declare("rt_param", [c.c_char_p, c.c_int, c.c_int, c.c_int, c.c_uint64, c.c_uint64, c.c_void_p])
    _declare("rt_param_shape", [c.c_char_p, c.c_int, i64p])
    _declare("rt_param_dtensor", [c.c_char_p, c.c_int, i64p, c.POINTER(c.c_int), c.c_int, i64p])
    _declare("rt_fsdp_forward", [c.c_int, c.c_int])
    _declare("rt_marker", [c.c_char_p, c.c_int64])
    _declare("rt_fault_point", [c.c_char_p], c.c_int)
    _declare("rt_unwrapped_call", [c.c_char_p, c.c_char_p, c.c_uint64])
    _declare("rt_exception", [c.c_char_p, c.c_char_p, c.c_char_p])
    _declare("rt_optim_step", [c.c_uint64, c.c_uint64, c.c_uint64, c.c_uint64, c.c_uint64])
    return lib


def has(name):
    return lib is not None and hasattr(lib, name)


def text(s, limit=NAME_MAX):
    """s as a record's string field: UTF-8, at most limit bytes."""
    return s.encode("utf-8", "replace")[:limit]


def marker(name, value):
    if lib is not None:
        lib.rt_marker(text(name), int(value))


def fault_point(name):
    """What the fault plan says at failure point name (0: pass)."""
    return lib.rt_fault_point(name) if lib is not None else 0


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
    """(device type, index, storage bytes, data pointer) of a plain tensor."""
    dev = t.device
    if dev.type == "meta":
        return DEV_META, -1, 0, 0
    try:
        nbytes = t.untyped_storage().nbytes()
    except Exception:
        nbytes = 0
    devtype = DEV_CUDA if dev.type == "cuda" else DEV_CPU
    return devtype, dev.index if dev.index is not None else -1, nbytes, t.data_ptr() if nbytes else 0


_DTensor = False    # torch.distributed.tensor.DTensor once known; None: not available


def _dtensor_class():
    global _DTensor
    if _DTensor is False:
        try:
            from torch.distributed.tensor import DTensor
            _DTensor = DTensor
        except Exception:
            _DTensor = None
    return _DTensor


PLACE_REPLICATE, PLACE_PARTIAL, PLACE_OTHER = PLACE["replicate"], PLACE["partial"], PLACE["other"]
# the failure points the probe asks (format/points.def)
POINT_FSDP_ROOT_FORWARD = POINTS["FSDP_ROOT_FORWARD"]
POINT_PREPARE_MODEL = POINTS["ACCELERATE_PREPARE_MODEL"]


def dtensor_layout(t):
    """(mesh shape, placements, local tensor) of a DTensor, else None.
    A placement is the tensor dimension it shards (Shard(d): d), or
    PLACE_REPLICATE, PLACE_PARTIAL, PLACE_OTHER."""
    cls = _dtensor_class()
    if cls is None or not isinstance(t, cls):
        return None
    places = []
    for p in t.placements:
        if p.is_shard():
            places.append(int(getattr(p, "dim", PLACE_OTHER)))
        elif p.is_replicate():
            places.append(PLACE_REPLICATE)
        elif p.is_partial():
            places.append(PLACE_PARTIAL)
        else:
            places.append(PLACE_OTHER)
    return tuple(t.device_mesh.shape), tuple(places), t._local_tensor


def _ints(values, ctype=ctypes.c_int64):
    return (ctype * max(1, len(values)))(*values)


def describe(t):
    """What a report of tensor t says: its placement (the local shard's, for
    a DTensor), global shape and elements, dtype, and DTensor layout."""
    layout = dtensor_layout(t)
    local = layout[2] if layout is not None else t
    devtype, index, nbytes, ptr = _placement(local)
    lay = (layout[0], layout[1], tuple(layout[2].shape)) if layout is not None else None
    return (devtype, index, nbytes, ptr, tuple(t.shape), lay, _dtype_code(t), t.numel())


def emit(name, d, force=False):
    """Report name as described by d (describe()) unless it did not change."""
    devtype, index, nbytes, ptr, shape, lay, dtype, numel = d
    sig = (devtype, index, nbytes > 0, ptr, shape, lay[:2] if lay is not None else None)
    if not force and _last.get(name) == sig:
        return False
    _last[name] = sig
    cname = text(name)
    # the shape and the layout first: they go with the next rt_param of this name
    if has("rt_param_shape"):
        lib.rt_param_shape(cname, len(shape), _ints(shape))
    if lay is not None and has("rt_param_dtensor"):
        lib.rt_param_dtensor(cname, len(lay[0]), _ints(lay[0]), _ints(lay[1], ctypes.c_int),
                             len(lay[2]), _ints(lay[2]))
    lib.rt_param(cname, devtype, index, dtype, numel, nbytes, ptr)
    return True


def snapshot(module, skip=None):
    """[(name under module, describe())] of module's parameters, for a
    report made later under their final names."""
    return [(name, describe(t)) for name, t in _tensors(module) if skip is None or not skip(t)]


def clean(name):
    return _clean(name)


def report_params(module, force=False, skip=None):
    """Report every parameter whose placement changed (all when force);
    skip(tensor): leave that one out."""
    if lib is None:
        return 0
    n = 0
    for name, t in _tensors(module):
        if skip is not None and skip(t):
            continue
        n += emit(name, describe(t), force)
    return n


# Report points (viewer/model/model.h): announced with rt_marker("rt.params", POINT)
# before the reports they cover.
POINT_WRAP, POINT_FIRST_FORWARD, POINT_ROOT_FORWARD = 1, 2, 3


def report_point(point, module, force=False, skip=None):
    """Announce a report point, then report the parameters of module."""
    if lib is None:
        return 0
    lib.rt_marker(b"rt.params", point)
    return report_params(module, force, skip)
