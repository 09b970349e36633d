#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/device.sh - host time a device-side source adds per collective
# (bench/device_cost.c), all in the same run: no tracer, the tracer with no
# device source, the tracer with ranktrace's NCCL profiler plugin, the
# tracer with CUDA events (tracer/device/devevents.c: a start and a completion
# event per collective), and the two events recorded by hand without the
# tracer (the runtime's cudaEventRecord share); then what each source adds
# over the tracer without one, the split of the events' cost, and the
# records the event source dropped. The simulator synchronous (device
# callbacks on the calling thread: an upper bound) and asynchronous.
# Usage: bench/device.sh [BUILD] [N]; each figure is the median of 3 runs.
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
N=${2:-20000}
export LD_LIBRARY_PATH="$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
# one NAME ENV... -- ARGS: ns CPU per call, median of 3; drops summed in $T/NAME.drops
one() {
  local name=$1; shift; local env=(); while [ "$1" != -- ]; do env+=("$1"); shift; done; shift
  local v=() d=0
  for i in 1 2 3; do
    rm -rf "$T/dir"; mkdir -p "$T/dir"
    env "${env[@]}" RANKTRACE_DIR="$T/dir" "$B/bin/device_cost" "$N" 256 "$@" > "$T/out" 2> "$T/err" || true
    v+=("$(sed -n 's/.*: \([0-9]*\) ns CPU.*/\1/p' "$T/out")")
    d=$((d + $(sed -n 's/.*: \([0-9]*\) CUDA event records dropped.*/\1/p' "$T/err" | head -1 | grep . || echo 0)))
  done
  printf '%s\n' "${v[@]}" | sort -n | sed -n 2p > "$T/$name"; echo "$d" > "$T/$name.drops"
}
P="LD_PRELOAD=$B/lib/libranktrace.so"
for mode in sync async; do
  if [ $mode = sync ]; then S=SIMGPU_SYNC=1; else S=SIMGPU_SYNC=0; fi
  echo "== simulator $mode (load average $(cut -d' ' -f1 /proc/loadavg)), $N collectives, ns CPU per call"
  one none "$S" NCCL_PROFILER_PLUGIN=none --
  one byhand "$S" NCCL_PROFILER_PLUGIN=none -- byhand
  one off "$S" NCCL_PROFILER_PLUGIN=none RANKTRACE_DEVICE_SOURCE=off "$P" --
  one plugin "$S" NCCL_PROFILER_PLUGIN="$B/lib/libnccl-profiler-ranktrace.so" "$P" --
  one events "$S" NCCL_PROFILER_PLUGIN=none RANKTRACE_DEVICE_SOURCE=events "$P" --
  r() { cat "$T/$1"; }
  printf '%-44s %6s\n' "no tracer:" "$(r none)" "tracer, no device source:" "$(r off)" \
    "tracer + ranktrace plugin:" "$(r plugin)" "tracer + CUDA events:" "$(r events)" \
    "no tracer, 2 events recorded by hand:" "$(r byhand)"
  printf '%-44s %6s\n' "added by the plugin:" "$(( $(r plugin) - $(r off) ))" \
    "added by CUDA events:" "$(( $(r events) - $(r off) ))" \
    "  of it the runtime's 2 cudaEventRecord:" "$(( $(r byhand) - $(r none) ))" \
    "  of it the tracer's own part:" "$(( $(r events) - $(r off) - $(r byhand) + $(r none) ))"
  echo "CUDA event records dropped: $(cat "$T/events.drops") (3 runs)"
done
