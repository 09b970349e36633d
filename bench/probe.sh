#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/probe.sh - the PyTorch probe's cost: real FSDP v1 on CPU (2 ranks,
# gloo), steady-state ms per step with the probe (RANKTRACE_PROBE=1) and
# without (=0), both under `ranktrace run`, 7 interleaved runs, medians; the
# probe's own work per root forward; the global forward pre-hook; the
# audit hook that loads the probe (tracer/interpose/pyboot.c) on the events
# a training loop raises most.
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
PY="$B/venv-torch/bin/python"
W="$(cd "$(dirname "$0")/.." && pwd)/tests/python/fsdp_cpu.py"
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-pbench.XXXXXX")
trap 'rm -rf "$T"' EXIT
"$(dirname "$0")/../scripts/setup-torch.sh" "$B" > /dev/null
run() {
  rm -rf "$T/t"
  RANKTRACE_PROBE=$1 "$B/bin/ranktrace" run -o "$T/t" -- "$B/bin/rt-launch" -n 2 "$PY" "$W" --steps 60 --time 2>&1 |
    sed -nE 's/.*ms_per_step=([0-9.]+).*/\1/p'
}
on=(); off=()
for i in 1 2 3 4 5 6 7; do off+=("$(run 0)"); on+=("$(run 1)"); done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
a=$(med "${off[@]}"); b=$(med "${on[@]}")
echo "== PyTorch probe, FSDP v1 on CPU, 2 ranks, 60 steps (median of 7 runs each, interleaved)"
echo "probe off: ${off[*]} ms/step -> median $a"
echo "probe on:  ${on[*]} ms/step -> median $b"
awk -v a="$a" -v b="$b" 'BEGIN {printf "probe overhead per step: %+.2f%%\n", (b - a) / a * 100}'

# The probe's own work per root forward, timed in isolation under the
# preloaded library: the failure point, two root-forward events, the counter.
mkdir -p "$T/micro"
RANKTRACE_DIR="$T/micro" LD_PRELOAD="$B/lib/libranktrace.so" PYTHONPATH="$B/python" "$PY" - "$b" <<'PY'
import sys, time, ranktrace_probe as p
p.install()
lib, n = p._lib, 20000
t0 = time.perf_counter()
for _ in range(n):
    lib.rt_fault_point(b"fsdp.root_forward")
    lib.rt_fsdp_forward(0, 3)
    lib.rt_fsdp_forward(1, 3)
us = (time.perf_counter() - t0) / n * 1e6
step_ms = float(sys.argv[1])
print(f"probe work per root forward: {us:.2f} us = {us / (step_ms * 10):.4f}% of a {step_ms} ms step")
PY

# The watch for unwrapped calls (a global forward pre-hook), with and without it.
RANKTRACE_DIR="$T/hook" LD_PRELOAD="$B/lib/libranktrace.so" PYTHONPATH="$B/python" "$PY" \
  "$(dirname "$0")/probe_hook.py" 2>&1 | grep -v 'Warning\|_init_core_state'

# The audit hook that loads the probe (tracer/interpose/pyboot.c) stays for
# the process's life: every audited event then reaches it (CPython builds
# the event's argument tuple once any hook is there). Its cost on the
# events a training loop raises most: a ctypes call (ctypes.call_function,
# the probe's own calls), open(), exec of compiled code. Hook present
# (RANKTRACE_PROBE_PATH set) against absent, 5 interleaved runs, medians.
cat > "$T/audit.py" <<'PY'
import ctypes, sys, time
getpid, n = ctypes.CDLL(None).getpid, 200000
code = compile("x = 1", "<bench>", "exec")
def per(f):
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t0) / n * 1e9
print(per(getpid), per(lambda: open("/dev/null").close()), per(lambda: exec(code, {})))
PY
audit() {
  if [ "$1" = on ]; then
    RANKTRACE_PROBE_PATH="$B/python" LD_PRELOAD="$B/lib/libranktrace.so" "$PY" "$T/audit.py"
  else
    LD_PRELOAD="$B/lib/libranktrace.so" "$PY" "$T/audit.py"
  fi
}
: > "$T/audit.on"; : > "$T/audit.off"
for i in 1 2 3 4 5; do audit off >> "$T/audit.off"; audit on >> "$T/audit.on"; done
python3 - "$T/audit.off" "$T/audit.on" <<'PY'
import statistics, sys
off, on = ([list(map(float, l.split())) for l in open(f)] for f in sys.argv[1:3])
print("== the probe's audit hook (median of 5 interleaved runs, ns per call)")
for k, what in enumerate(("ctypes call", "open()+close()", "exec(code)")):
    a, b = statistics.median(r[k] for r in off), statistics.median(r[k] for r in on)
    print(f"{what:16s} without the hook {a:8.0f}  with it {b:8.0f}  {b - a:+6.0f} ns")
PY
