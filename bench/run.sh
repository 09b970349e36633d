#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run.sh - the tracer's benchmarks on the simulated cluster; prints figures.
#   1. added ns per interposed call, the hot path against its floor (two
#      timestamp reads) as a ratio, bytes per event (bench/tracer_overhead.c);
#      the writer's cost fresh and after 2 GiB of trace (bench/writer_drift.c)
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
echo "== the native writer, fresh and after 2 GiB of trace written by the same process"
echo "   (load average now: $(cut -d' ' -f1-3 /proc/loadavg); on a shared machine the traced"
echo "   thread's CPU time is the steadier figure, wall time swings with the load)"
mkdir -p "$T/drift"
RANKTRACE_MAX_SIZE=0 RANKTRACE_DIR="$T/drift" LD_PRELOAD="$B/lib/libranktrace.so" "$B/bin/writer_drift" 200000 2
rm -rf "$T/drift"

echo
echo "== the same with a fault plan loaded that touches none of these calls"
mkdir -p "$T/overhead2"
RANKTRACE_INJECT='cudaStreamDestroy:delay=1ms;some.point:bypass' RANKTRACE_DIR="$T/overhead2" \
  LD_PRELOAD="$B/lib/libranktrace.so" "$B/bin/tracer_overhead" 200000 | sed -n '1,4p;/floor: two/p;/ added/p'

echo
echo "== fsdp_mini step time, 2 ranks (one per core here), 60 steps (median of 9 runs each, interleaved)"
echo "   wall time swings with scheduling (two ranks synchronise on two cores); CPU time per step"
echo "   (rank 0's process, CLOCK_PROCESS_CPUTIME_ID) is what the tracer itself adds to"
args=(--steps 60 --layers 4 --hidden 32 --vocab 64 --seq 16 --batch 8 --time)
pw=(); tw=(); pc=(); tc=()
for i in 1 2 3 4 5 6 7 8 9; do
  l=$("$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" "${args[@]}" 2>&1 | grep ms_per_step)
  pw+=("$(sed -nE 's/.* ms_per_step=([0-9.]+).*/\1/p' <<< "$l")"); pc+=("$(sed -nE 's/.*cpu_ms_per_step=([0-9.]+).*/\1/p' <<< "$l")")
  rm -rf "$T/fsdp"
  l=$("$B/bin/ranktrace" run -o "$T/fsdp" -- "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" "${args[@]}" 2>&1 | grep ms_per_step)
  tw+=("$(sed -nE 's/.* ms_per_step=([0-9.]+).*/\1/p' <<< "$l")"); tc+=("$(sed -nE 's/.*cpu_ms_per_step=([0-9.]+).*/\1/p' <<< "$l")")
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for what in wall cpu; do
  if [ $what = wall ]; then p=$(med "${pw[@]}"); t=$(med "${tw[@]}"); else p=$(med "${pc[@]}"); t=$(med "${tc[@]}"); fi
  awk -v w=$what -v p="$p" -v t="$t" 'BEGIN {printf "%-4s ms/step: untraced %.3f, traced %.3f -> %+.2f%%\n", w, p, t, (t - p) / p * 100}'
done
echo "untraced wall: ${pw[*]}"
echo "traced wall:   ${tw[*]}"
