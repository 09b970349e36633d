#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/device.sh - host time a device-side source adds per collective
# (bench/device_cost.c), all in the same run: no tracer, the tracer with no
# device source, the tracer with ranktrace's NCCL profiler plugin, the
# tracer with CUDA events (tracer/device/devevents.c: a start and a completion
# event per collective), and the two events recorded by hand without the
# tracer (the runtime's cudaEventRecord share, not with the stream held);
# then what each source adds over the tracer without one, the split of the
# events' cost, and the device records each source dropped (counted in the
# trace by `ranktrace view`: rt_dev_drop). The simulator synchronous (device
# callbacks on the calling thread: an upper bound) and asynchronous, calls
# in batches of 256 with the stream drained between them; then asynchronous
# with the stream held while all N are enqueued (N collectives in flight at
# once), for each INFLIGHT count.
# Usage: bench/device.sh [BUILD] [N] [INFLIGHT...] (default: 20000 20000
# 65536); each figure is the median of 3 runs, drops summed over the 3.
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
N=${2:-20000}
shift $(($# > 2 ? 2 : $#))
INFLIGHT=("${@:-20000}")
[ $# -gt 0 ] || INFLIGHT=(20000 65536)
export LD_LIBRARY_PATH="$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
# one NAME ENV... -- ARGS: ns CPU per call, median of 3; drops summed in $T/NAME.drops
one() {
  local name=$1; shift; local env=(); while [ "$1" != -- ]; do env+=("$1"); shift; done; shift
  local v=() d=0
  for i in 1 2 3; do
    rm -rf "$T/dir"; mkdir -p "$T/dir"
    env "${env[@]}" RANKTRACE_DIR="$T/dir" timeout -k 5 600 "$B/bin/device_cost" "$N" "$BATCH" "$@" \
      > "$T/out" 2> "$T/err" || true
    v+=("$(sed -n 's/.*: \([0-9]*\) ns CPU.*/\1/p' "$T/out")")
    if [ -n "$(ls "$T/dir")" ]; then # the device records the trace says were dropped
      d=$((d + $(timeout -k 5 120 "$B/bin/ranktrace" view "$T/dir" 2>&1 |
        sed -n 's/^ *dropped \([0-9]*\) device records.*/\1/p' | awk '{s += $1} END {print s + 0}')))
    fi
  done
  printf '%s\n' "${v[@]}" | sort -n | sed -n 2p > "$T/$name"; echo "$d" > "$T/$name.drops"
}
P="LD_PRELOAD=$B/lib/libranktrace.so"
# section TITLE ENV [ARG]: the five runs and what each source adds
section() {
  local S=$2 A=${3:-}
  echo "== $1 (load average $(cut -d' ' -f1 /proc/loadavg)), $N collectives, ns CPU per call"
  one none "$S" NCCL_PROFILER_PLUGIN=none -- $A
  [ -n "$A" ] || one byhand "$S" NCCL_PROFILER_PLUGIN=none -- byhand
  one off "$S" NCCL_PROFILER_PLUGIN=none RANKTRACE_DEVICE_SOURCE=off "$P" -- $A
  one plugin "$S" NCCL_PROFILER_PLUGIN="$B/lib/libnccl-profiler-ranktrace.so" "$P" -- $A
  one events "$S" NCCL_PROFILER_PLUGIN=none RANKTRACE_DEVICE_SOURCE=events "$P" -- $A
  r() { cat "$T/$1"; }
  printf '%-44s %6s\n' "no tracer:" "$(r none)" "tracer, no device source:" "$(r off)" \
    "tracer + ranktrace plugin:" "$(r plugin)" "tracer + CUDA events:" "$(r events)"
  [ -n "$A" ] || printf '%-44s %6s\n' "no tracer, 2 events recorded by hand:" "$(r byhand)"
  printf '%-44s %6s\n' "added by the plugin:" "$(( $(r plugin) - $(r off) ))" \
    "added by CUDA events:" "$(( $(r events) - $(r off) ))"
  # the split: not with the stream held (the simulator's cudaEventRecord
  # then costs with the events pending on the stream: no like for like)
  [ -n "$A" ] || printf '%-44s %6s\n' "  of it the runtime's 2 cudaEventRecord:" "$(( $(r byhand) - $(r none) ))" \
    "  of it the tracer's own part:" "$(( $(r events) - $(r off) - $(r byhand) + $(r none) ))"
  echo "device records dropped (3 runs): plugin $(cat "$T/plugin.drops"), CUDA events $(cat "$T/events.drops")"
}
BATCH=256
section "simulator sync" SIMGPU_SYNC=1
section "simulator async" SIMGPU_SYNC=0
for BATCH in "${INFLIGHT[@]}"; do
  N=$BATCH section "simulator async, $BATCH collectives in flight (stream held)" SIMGPU_SYNC=0 hold
done
