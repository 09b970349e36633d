# SPDX-License-Identifier: MIT
"""ranktrace_probe - the PyTorch probe: names what the C tracer sees.

Loaded in every Python process of a `ranktrace run` by the tracer itself, once
Python starts the program (tracer/interpose/pyboot.c: an audit hook imports it
from RANKTRACE_PROBE_PATH; sys.path and PYTHONPATH stay the program's).
It is thin: it reports (parameter placement, FSDP root forwards, markers,
optimizer steps) and asks (the failure points "fsdp.root_forward" and
"accelerate.prepare_model") through libranktrace.so's C API via ctypes; the C
library decides and records. It does nothing until torch is imported, and
nothing at all without the preloaded library.

  _core.py   the library, parameter reports (DTensor layouts included)
  _calls.py  the evidence of the bug class: a module FSDP shards called
             without FSDP's forward (rt_unwrapped_call) and the exception
             that left such a call (rt_exception), caught or not
  _fsdp1.py  FSDP v1: wrap, root forwards, the skipped root, the watch
  _fsdp2.py  FSDP2 (fully_shard): the same, for a module sharded in place
  _steps.py  optimizer steps and what they update, DDP, torch.distributed's
             reductions, accelerate's preparation of a model

Teardown (rt_marker "rt.teardown"): 1 when destroy_process_group is entered
with no exception in flight, 2 at interpreter exit after the main code ended
without an uncaught exception (3 and 0 when one was in flight): a rank that
dies after it, with no training work after it, crashed in teardown.

Where parameters are reported:
  - when a module is handed to FullyShardedDataParallel or fully_shard
    (before sharding: on meta, cpu or cuda, as loaded),
  - at the first forward of the first top-level module (the module the
    trainer calls: with transformers 4.53.0, the unwrapped one),
  - at each FSDP root forward: the first, then every RANKTRACE_PARAM_EVERY
    root forwards (default 100), and only when a placement changed.
A DTensor (FSDP2's sharded parameters) is reported as its local shard (its
device, storage and pointer), its global shape and elements, and its layout
(rt_param_dtensor: mesh shape, placement per mesh dimension, local shape).
"""
import atexit
import functools
import importlib.abc
import importlib.machinery
import os
import sys

from . import _core as core
from . import _fsdp1, _fsdp2, _steps
from ._tables import ENV, ENV_VALID  # generated from format/ at build time

# the names the probe had before it was split into modules
report_params, report_point, marker = core.report_params, core.report_point, core.marker
POINT_WRAP, POINT_FIRST_FORWARD, POINT_ROOT_FORWARD = (core.POINT_WRAP, core.POINT_FIRST_FORWARD,
                                                       core.POINT_ROOT_FORWARD)

# ---- teardown: after training, the process group goes, the interpreter exits ----

TEARDOWN = b"rt.teardown"


def _patch_c10d(mod):
    orig = mod.destroy_process_group

    @functools.wraps(orig)
    def destroy_process_group(group=None, *args, **kwargs):
        if group is None and core.lib is not None:   # the whole job's, not a subgroup
            core.lib.rt_marker(TEARDOWN, 3 if sys.exc_info()[0] is not None else 1)
        return orig(group, *args, **kwargs)

    mod.destroy_process_group = destroy_process_group
    _steps.patch_c10d_reductions(mod)

    def at_exit():
        try:
            if not mod.is_initialized():   # never a rank, or already destroyed
                return
        except Exception:
            return
        failed = getattr(sys, "last_value", None) is not None or \
            getattr(sys, "last_exc", None) is not None
        core.lib.rt_marker(TEARDOWN, 0 if failed else 2)

    atexit.register(at_exit)


# ---- the first forward of the first top-level module ----

def _watch_top_level(torch_mod):
    hooks = []

    def pre(module, args):
        depth = core.tls.depth
        core.tls.depth = depth + 1
        if depth == 0 and not core.tls.root:
            core.report_point(core.POINT_FIRST_FORWARD, _fsdp2.root_module(module) or module)

    def post(module, args, out):
        core.tls.depth -= 1
        if core.tls.depth == 0:           # seen once: stop paying for the hooks
            for h in hooks:
                h.remove()

    m = torch_mod.nn.modules.module
    hooks.append(m.register_module_forward_pre_hook(pre))
    hooks.append(m.register_module_forward_hook(post, always_call=True))


# ---- import hooks: act when torch's modules are loaded ----

_AFTER_IMPORT = {
    "torch": _watch_top_level,
    "torch.optim.optimizer": _steps.watch_optimizers,
    "torch.distributed.fsdp.fully_sharded_data_parallel": _fsdp1.patch,
    "torch.distributed.fsdp._fully_shard._fsdp_param_group": _fsdp2.patch_group,
    "torch.distributed.fsdp._fully_shard._fsdp_state": _fsdp2.patch_state,
    "torch.distributed.distributed_c10d": _patch_c10d,
    "torch.nn.parallel.distributed": _steps.patch_ddp,
    "accelerate.accelerator": _steps.patch_accelerate,
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
    """Called by the tracer once Python starts the program
    (tracer/interpose/pyboot.c): inert without the library or with
    RANKTRACE_PROBE=0; never imports torch itself; once only."""
    if _env("PROBE") == "0":
        return False
    if core.lib is not None:
        return True
    if core.load_library() is None:
        return False
    core.param_every = int(_env("PARAM_EVERY"))
    sys.meta_path.insert(0, _Finder())
    return True
