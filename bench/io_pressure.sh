#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/io_pressure.sh BUILD [RUNS [DD_MB [PAIRS]]] - the traced call at its
# floor while the disk is busy (issue 30): bench/io_pressure (cudaMalloc/
# cudaFree pairs, untraced and traced interleaved, wall clock, against two
# timestamp reads in the same run) in a process started by `ranktrace run`,
# RUNS times quiet, then RUNS times while another process writes DD_MB MiB
# (default 6144) to the trace's filesystem again and again (dd ...
# conv=fdatasync: a checkpoint being saved), each dd bounded by a timeout.
# Prints each run's line and the medians of the runs. Removes its traces and
# dd's file; stops only the dd loop it started. LIBS="A.so B.so" compares
# tracer builds: each run runs each library in turn (RANKTRACE_LIB), so that
# before and after see the same load; default: the build's own. NICE=-20
# (root) runs the measured processes at that niceness, their session's
# autogroup too (restored at the end): on a shared machine whose other users
# keep the cores busy, the measured process then gets a core's wall clock
# as on a quiet one; dd runs in a session of its own, at NICE too. See
# docs/performance.md for what it measured and how to read it.
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
RUNS=${2:-5}; DD_MB=${3:-6144}; PAIRS=${4:-200000}
export LD_LIBRARY_PATH="$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-iop.XXXXXX")
DDLOOP=""; AG_NICE=""
stop_dd() { # the dd loop's process group, dd in fdatasync included, gone
  [ -n "$DDLOOP" ] || return 0
  kill -TERM -- -"$DDLOOP" 2> /dev/null || true
  for _ in $(seq 300); do kill -0 -- -"$DDLOOP" 2> /dev/null || break; sleep 0.2; done
  kill -KILL -- -"$DDLOOP" 2> /dev/null || true
  wait "$DDLOOP" 2> /dev/null || true
  DDLOOP=""
}
cleanup() {
  stop_dd
  if [ -n "$AG_NICE" ]; then echo "$AG_NICE" > /proc/self/autogroup || true; fi
  rm -rf "$T"
}
trap cleanup EXIT

LIBS=${LIBS:-$B/lib/libranktrace.so}
NICE=${NICE:-0}
# IOP_PIN=CPU (default 0 with 2 CPUs or more; -1: none): bench/io_pressure.c's
# traced thread alone on that CPU, the tracer's helper and dd on the others
NCPU=$(nproc)
export IOP_PIN=${IOP_PIN:-$( [ "$NCPU" -ge 2 ] && echo 0 || echo -1)}
DD_CPUS=""
if [ "$IOP_PIN" -ge 0 ]; then DD_CPUS=$(seq 0 $((NCPU - 1)) | grep -vx "$IOP_PIN" | paste -sd,); fi
if [ "$NICE" != 0 ] && [ -w /proc/self/autogroup ]; then
  AG_NICE=$(sed -n 's/.* nice //p' /proc/self/autogroup)
  echo "$NICE" > /proc/self/autogroup || AG_NICE=""
fi
read -r -a LIBA <<< "$LIBS"

run_once() { # one traced process with library $1: its result line
  rm -rf "$T/trace"
  RANKTRACE_LIB=$1 timeout -k 5 600 nice -n "$NICE" "$B/bin/ranktrace" run -o "$T/trace" -- \
    "$B/bin/io_pressure" "$PAIRS" 9 2>&1 | grep '^floor' || true
  rm -rf "$T/trace"
}

# RUNS runs, each library in turn, into $T/$1.N (N: the library's index)
runs() {
  for n in "${!LIBA[@]}"; do : > "$T/$1.$n"; done
  for _ in $(seq "$RUNS"); do
    awk '/^(Dirty|Writeback):/ { printf "%s %d MiB  ", $1, $2 / 1024 } END { print "" }' /proc/meminfo
    for n in "${!LIBA[@]}"; do
      echo "[$n] $(run_once "${LIBA[$n]}" | tee -a "$T/$1.$n")"
    done
  done
}

# medians over the runs' lines of: the wall figures (added ns/call, floor,
# ratio), the thread-CPU ratio, faults and sleeps on the calling thread
summary() {
  awk '{ seen = ""
         for (i = 1; i <= NF; i++) {
           k = $i; v = $(i + 1)
           if ((k == "added" || k == "floor" || k == "ratio") && index(seen, k "|") == 0) { x[k, NR] = v; seen = seen k "|" }
           if (k == "cpu_ratio" || k == "faults" || k == "sleeps") x[k, NR] = v } }
       function med(k, n,   s, i, j, t) { for (i = 1; i <= n; i++) s[i] = x[k, i] + 0
         for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
         return s[int((n + 1) / 2)] }
       END { printf "median of %d runs: added %.2f ns/call, floor %.2f ns, ratio %.2fx (runs:", NR,
               med("added", NR), med("floor", NR), med("ratio", NR)
             for (i = 1; i <= NR; i++) printf " %s", x["ratio", i]
             printf "); thread CPU ratio %.2fx; on the calling thread per run: %d faults, %d sleeps\n",
               med("cpu_ratio", NR), med("faults", NR), med("sleeps", NR) }' "$1"
}

for n in "${!LIBA[@]}"; do echo "[$n] ${LIBA[$n]}"; done
echo "== quiet ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)), $RUNS runs of 9 interleaved rounds of $PAIRS pairs, nice $NICE, IOP_PIN=$IOP_PIN"
runs quiet

echo "== while dd writes ${DD_MB} MiB again and again to $(df --output=source,fstype "$T" | tail -1) (conv=fdatasync)"
AVAIL_MB=$(( $(df --output=avail -k "$T" | tail -1) / 1024 ))
if [ "$AVAIL_MB" -lt $(( 2 * DD_MB + 4096 )) ]; then
  echo "io_pressure.sh: $AVAIL_MB MiB free on the trace's filesystem: too little for dd's $DD_MB MiB" >&2
  exit 1
fi
# timeout --foreground: dd stays in the loop's process group, stopped with
# it; its session's autogroup at NICE too (a writer as eager as the bench)
setsid bash -c "[ '$NICE' = 0 ] || echo '$NICE' > /proc/self/autogroup || true
  while :; do ${DD_CPUS:+taskset -c $DD_CPUS} timeout --foreground -k 5 300 dd if=/dev/zero \
    of='$T/dd.bin' bs=1M count=$DD_MB conv=fdatasync status=none || sleep 1; done" &
DDLOOP=$!
sleep 5 # dd has put gigabytes into the page cache by now, writeback under way
runs busy
stop_dd
rm -f "$T/dd.bin"

echo "== summary (goal: ratio <= 1.5x quiet and while the disk is busy)"
for n in "${!LIBA[@]}"; do
  echo "[$n] quiet: $(summary "$T/quiet.$n")"
  echo "[$n] busy:  $(summary "$T/busy.$n")"
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
