# SPDX-License-Identifier: MIT
"""bench/probe_hook.py - the cost of the probe's watch for unwrapped calls (a
global forward pre-hook, installed once an FSDP v1 root exists): FSDP v1 on
CPU, world size 1, forward+backward of TinyLM, CPU time per step with the hook
and without it (5 x 200 steps, medians); then the hook body alone. Run by
bench/probe.sh under the preloaded library (RANKTRACE_DIR, LD_PRELOAD,
PYTHONPATH=BUILD/python)."""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
import ranktrace_probe as p
assert p.install()
import torch, torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import ModuleWrapPolicy
from fsdp_cpu import TinyLM, Block
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29500 + os.getpid() % 1000), RANK="0", WORLD_SIZE="1")
dist.init_process_group("gloo")
model = TinyLM()
fsdp = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}), device_id=torch.device("cpu"), use_orig_params=True)
ids = torch.randint(0, 64, (4, 16))
def steps(n):
    t = time.process_time()
    for _ in range(n):
        fsdp(ids).sum().backward()
    return (time.process_time() - t) / n * 1e6
calls = sum(1 for _ in model.modules())
steps(20)
res = {"hook": [], "nohook": []}
for _ in range(5):
    res["hook"].append(steps(200))
    h = p._hook; h.remove()
    res["nohook"].append(steps(200))
    p._hook = torch.nn.modules.module.register_module_forward_pre_hook(p._unwrapped_pre)
med = {k: sorted(v)[2] for k, v in res.items()}
print(f"modules under the root: {calls}; us/step (cpu time, median of 5x200): with hook {med['hook']:.1f}, without {med['nohook']:.1f}, "
      f"delta {med['hook'] - med['nohook']:+.1f} us = {(med['hook'] - med['nohook']) / calls:+.2f} us per module call")
# the hook alone, called directly: inside a root forward (the common path) and outside (a module no root wraps)
m = torch.nn.Linear(2, 2)
n = 200000
t = time.perf_counter()
p._tls.root = 1
for _ in range(n):
    p._unwrapped_pre(m, ())
a = (time.perf_counter() - t) / n * 1e9
p._tls.root = 0
t = time.perf_counter()
for _ in range(n):
    p._unwrapped_pre(m, ())
b = (time.perf_counter() - t) / n * 1e9
print(f"hook body: {a:.0f} ns inside a root forward, {b:.0f} ns for a module no root wraps")
dist.destroy_process_group()
