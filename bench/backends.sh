#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/backends.sh - both writers on one workload, in one run:
#   native   ranktrace's own CTF writer        (ranktrace run)
#   lttng    the LTTng-UST backend, ranktrace:* (ranktrace run --backend lttng)
#   anchor   a bare LTTng-UST tracepoint of the same payload after each real
#            call, in the same kind of session (bench/lttng_anchor.c)
# Workload: cudaMalloc(256)/cudaFree pairs on the simulated cluster. Each
# round runs one process per kind, in rotating order; each process alternates
# the untraced calls (the real functions) with the traced ones and reports
# both, so every figure is a difference and a ratio against a baseline taken
# in the same process. Prints medians over the rounds and each kind's events
# discarded (native: size cap; LTTng: the session's ring buffers). Then the
# viewer's reading speed on the last round's traces (the same calls): native
# reader against libbabeltrace2 on the LTTng trace, `ranktrace view --json`.
# Usage: bench/backends.sh [BUILD] [ROUNDS=9] [PAIRS=100000]
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-9}
PAIRS=${3:-100000}
export LD_LIBRARY_PATH="$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-backends.XXXXXX")
trap 'rm -rf "$T"' EXIT
for f in bin/bench_backends bin/lttng_anchor lib/libranktrace-lttng.so; do
  [ -e "$B/$f" ] || { echo "backends.sh: $B/$f missing (LTTng-UST not found at build time?)" >&2; exit 1; }
done

kinds=(native lttng anchor)
run_kind() { # kind round -> "untraced traced discarded" on stdout
  local k=$1 r=$2 out="$T/$1.$2" rt=(timeout -k 5 300 "$B/bin/ranktrace" run -o "$T/trace.$1.$2")
  case $k in
    native) "${rt[@]}" -- "$B/bin/bench_backends" "$PAIRS" > "$out" 2>&1 ;;
    lttng)  "${rt[@]}" --backend lttng -- "$B/bin/bench_backends" "$PAIRS" > "$out" 2>&1 ;;
    anchor) "${rt[@]}" --backend lttng -- "$B/bin/lttng_anchor" "$PAIRS" > "$out" 2>&1 ;;
  esac
  local fig disc
  fig=$(grep -m1 -E '^[0-9.]+ [0-9.]+$' "$out") || { echo "backends.sh: $k round $r failed:" >&2; cat "$out" >&2; exit 1; }
  if [ $k = native ]; then
    disc=$("$B/bin/ranktrace" view --json "$T/trace.$k.$r" | python3 -c \
      'import json,sys; print(sum(r["discarded"] for r in json.load(sys.stdin)["ranks"]))')
  else
    disc=$(sed -nE 's/^lttng session [^:]+: ([0-9]+) events discarded.*/\1/p' "$out")
  fi
  [ "$r" -eq $((ROUNDS - 1)) ] || rm -rf "$T/trace.$k.$r"
  echo "$fig ${disc:-?}"
}

echo "== backends: cudaMalloc+cudaFree, $PAIRS pairs per loop, $ROUNDS rounds, $(nproc) cores, $(uname -r)"
echo "   LTTng-UST $(pkg-config --modversion lttng-ust 2>/dev/null || echo '?'), $(lttng --version | head -1)"
for ((r = 0; r < ROUNDS; r++)); do
  for ((i = 0; i < 3; i++)); do
    k=${kinds[$(( (r + i) % 3 ))]}
    run_kind "$k" "$r" >> "$T/$k.fig"
  done
done
printf '%-8s %12s %12s %10s %8s %12s   %s\n' kind "untraced ns" "traced ns" "added ns" ratio discarded "added ns per round"
for k in "${kinds[@]}"; do
  python3 - "$k" "$T/$k.fig" "$PAIRS" <<'EOF'
import statistics, sys
k, path, pairs = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [l.split() for l in open(path)]
base = [float(r[0]) for r in rows]; tr = [float(r[1]) for r in rows]
added = [t - b for b, t in zip(base, tr)]
disc = [int(r[2]) for r in rows if r[2].isdigit()]
print(f"{k:<8} {statistics.median(base):12.1f} {statistics.median(tr):12.1f} "
      f"{statistics.median(added):10.1f} {statistics.median(t / b for b, t in zip(base, tr)):8.2f} "
      f"{sum(disc):12d}   " + " ".join(f"{a:.0f}" for a in added))
EOF
done
echo "(discarded: summed over the rounds, each traced process writing ~$((10 * PAIRS / 1000))k events; ratio: traced / untraced,"
echo " medians over rounds; the baseline is measured in the same process as the traced loop)"

echo
echo "== reading the last round's traces: ranktrace view --json (model pass included), best of 3"
python3 - "$B/bin/ranktrace" "$T/trace.native.$((ROUNDS - 1))" "$T/trace.lttng.$((ROUNDS - 1))" <<'EOF'
import json, os, subprocess, sys, time
exe, dirs = sys.argv[1], {"native": sys.argv[2], "lttng": sys.argv[3]}
rate = {}
for k, d in dirs.items():
    best, ev = 1e9, 0
    for _ in range(3):
        t0 = time.monotonic()
        out = subprocess.run([exe, "view", "--json", d], capture_output=True, check=True).stdout
        best = min(best, time.monotonic() - t0)
        ev = json.loads(out)["events"]
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)
    rate[k] = ev / best
    print(f"{k:<8} {ev:9d} events {size / 2**20:8.1f} MiB on disk {best:7.3f} s "
          f"{ev / best / 1e6:7.2f} M events/s")
print(f"native reader / libbabeltrace2 reader: {rate['native'] / rate['lttng']:.1f}x faster")
EOF
