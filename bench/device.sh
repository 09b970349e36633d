#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/device.sh - host time a device-side source adds per collective
# (bench/device_cost.c): no tracer, the tracer with no device source, the
# tracer with ranktrace's NCCL profiler plugin, the tracer with CUDA events
# (the fallback, tracer/devevents.c); the simulator synchronous (device
# callbacks on the calling thread: an upper bound) and asynchronous.
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
N=${2:-20000}
export LD_LIBRARY_PATH="$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
for mode in sync async; do
  if [ $mode = sync ]; then export SIMGPU_SYNC=1; else unset SIMGPU_SYNC; fi
  echo "== simulator $mode (load average $(cut -d' ' -f1 /proc/loadavg))"
  printf '%-28s' "no tracer:"; NCCL_PROFILER_PLUGIN=none "$B/bin/device_cost" "$N"
  rm -rf "$T"/*; mkdir -p "$T/a"
  printf '%-28s' "tracer, no device source:"; NCCL_PROFILER_PLUGIN=none RANKTRACE_DIR="$T/a" RANKTRACE_DEVICE_SOURCE=off \
    LD_PRELOAD="$B/lib/libranktrace.so" "$B/bin/device_cost" "$N"
  rm -rf "$T"/*; mkdir -p "$T/b"
  printf '%-28s' "tracer + ranktrace plugin:"; NCCL_PROFILER_PLUGIN="$B/lib/libnccl-profiler-ranktrace.so" \
    RANKTRACE_DIR="$T/b" LD_PRELOAD="$B/lib/libranktrace.so" "$B/bin/device_cost" "$N"
  rm -rf "$T"/*; mkdir -p "$T/c"
  printf '%-28s' "tracer + CUDA events:"; NCCL_PROFILER_PLUGIN=none RANKTRACE_DEVICE_SOURCE=events \
    RANKTRACE_DIR="$T/c" LD_PRELOAD="$B/lib/libranktrace.so" "$B/bin/device_cost" "$N"
done
