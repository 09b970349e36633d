#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run.sh - the tracer's benchmarks on the simulated cluster; prints figures.
#   1. added ns per interposed call, bytes per event (bench/tracer_overhead.c)
#   2. fsdp_mini step time with and without the tracer (median of 5 runs each,
#      interleaved), 2 ranks
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
export LD_LIBRARY_PATH="$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT

echo "== interposed call overhead (simulated cluster, $(nproc) cores)"
mkdir -p "$T/overhead"
RANKTRACE_DIR="$T/overhead" LD_PRELOAD="$B/lib/libranktrace.so" "$B/bin/tracer_overhead" 200000

echo
echo "== the same with a fault plan loaded that touches none of these calls"
mkdir -p "$T/overhead2"
RANKTRACE_INJECT='cudaStreamDestroy:delay=1ms;some.point:bypass' RANKTRACE_DIR="$T/overhead2" \
  LD_PRELOAD="$B/lib/libranktrace.so" "$B/bin/tracer_overhead" 200000 | sed -n 1,4p

echo
echo "== fsdp_mini step time, 2 ranks (one per core here), 60 steps (median of 9 runs each, interleaved)"
args=(--steps 60 --layers 4 --hidden 32 --vocab 64 --seq 16 --batch 8 --time)
plain=(); traced=()
for i in 1 2 3 4 5 6 7 8 9; do
  plain+=("$("$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" "${args[@]}" 2>&1 | sed -nE 's/.*ms_per_step=([0-9.]+).*/\1/p')")
  rm -rf "$T/fsdp"
  traced+=("$("$B/bin/ranktrace" run -o "$T/fsdp" -- "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" "${args[@]}" 2>&1 | sed -nE 's/.*ms_per_step=([0-9.]+).*/\1/p')")
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
p=$(med "${plain[@]}"); t=$(med "${traced[@]}")
echo "untraced: ${plain[*]} ms/step -> median $p"
echo "traced:   ${traced[*]} ms/step -> median $t"
awk -v p="$p" -v t="$t" 'BEGIN {printf "step-time overhead: %+.2f%%\n", (t - p) / p * 100}'
