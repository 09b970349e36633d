#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/viewer.sh - events/s of `ranktrace view` on synthetic traces, beside
# `babeltrace2 DIR > /dev/null` on the same trace (a ratio: same machine, same
# run), and the large case: RANKS x EVENTS summarised, with peak memory.
# Then the parallel pass on that trace: --jobs 1 against --jobs $(nproc).
#   bench/viewer.sh BUILD [RANKS EVENTS]   (default 1024 x 100000)
set -euo pipefail
B=$(cd "${1:-build}" && pwd); RANKS=${2:-1024}; EVENTS=${3:-100000}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-vbench.XXXXXX")
trap 'rm -rf "$T"' EXIT
secs() { /usr/bin/time -f '%e %M' "$@" 2>&1 >/dev/null | tail -1; }

"$B/bin/gen_trace" --ranks 8 --events 250000 --out "$T/small" > /dev/null
n=$((8 * 250000))
read -r tv mv < <(secs "$B/bin/ranktrace" view "$T/small")
read -r tb mb < <(secs babeltrace2 "$T/small")
awk -v n=$n -v a="$tv" -v b="$tb" -v ma="$mv" 'BEGIN {
  printf "8 ranks x 250000 events (%d):\n", n
  printf "  ranktrace view   %6.2f s  %6.1f M events/s  (peak RSS %d MiB)\n", a, n / a / 1e6, ma / 1024
  printf "  babeltrace2      %6.2f s  %6.1f M events/s\n", b, n / b / 1e6
  printf "  ratio            %6.1fx faster\n", b / a }'

"$B/bin/gen_trace" --ranks "$RANKS" --events "$EVENTS" --out "$T/big" > /dev/null
n=$((RANKS * EVENTS))
read -r tv mv < <(secs "$B/bin/ranktrace" view "$T/big")
awk -v n=$n -v a="$tv" -v ma="$mv" -v r="$RANKS" -v e="$EVENTS" 'BEGIN {
  printf "%d ranks x %d events (%d): ranktrace view %.2f s, %.1f M events/s, peak RSS %d MiB\n",
         r, e, n, a, n / a / 1e6, ma / 1024 }'
du -sh "$T/big" | awk '{print "  (trace size " $1 ")"}'

# The parallel pass: the same RANKS x EVENTS trace read on one thread and on
# every core (--jobs), alternately, ROUNDS times each (default 7): medians
# and the best of each, since one run on a shared machine is noise (other
# work only ever slows a run down: the best is the closest to the cost of
# the work itself); the outputs must be identical. CPU seconds too (user +
# system).
# The machine's own ceiling, measured beside them: J independent --jobs 1
# processes at once (J times the work): on a VM whose cores slow down when
# all are busy (turbo, a shared host) no parallel pass can beat it.
J=$(nproc); R=${ROUNDS:-7}
: > "$T/times"
copies() { for k in $(seq "$J"); do "$B/bin/ranktrace" view "$T/big" --jobs 1 --json > /dev/null & done; wait; }
for i in $(seq "$R"); do
  for j in 1 "$J"; do
    { TIMEFORMAT="$j %3R %3U %3S"; time "$B/bin/ranktrace" view "$T/big" --jobs "$j" --json >"$T/j$j"; } 2>>"$T/times"
  done
  { TIMEFORMAT="copies %3R 0 0"; time copies; } 2>>"$T/times"
done
same=$(cmp -s "$T/j1" "$T/j$J" && echo identical || echo DIFFERENT)
awk -v n=$n -v J="$J" -v R="$R" -v s="$same" '
  function med(a, k,   i, j, t) { for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t } return a[int((k + 1) / 2)] }
  $1 == 1 { w1[++a] = $2; c1[a] = $3 + $4 } $1 == J && J != 1 { wj[++b] = $2; cj[b] = $3 + $4 }
  $1 == "copies" { wc[++c] = $2 }
  END {
    m1 = med(w1, a); mc1 = med(c1, a); mj = (b ? med(wj, b) : m1); mcj = (b ? med(cj, b) : mc1)
    b1 = w1[1]; bj = (b ? wj[1] : b1) # sorted by med()
    printf "parallel pass, %d events, medians of %d runs: --jobs 1 %.3f s, --jobs %d %.3f s: %.2fx (output %s)\n", n, R, m1, J, mj, m1 / mj, s
    printf "  best runs: --jobs 1 %.3f s, --jobs %d %.3f s: %.2fx\n", b1, J, bj, b1 / bj
    printf "  CPU (medians): --jobs 1 %.2f s, --jobs %d %.2f s\n", mc1, J, mcj
    mc = med(wc, c)
    printf "  the machine: %d copies of --jobs 1 at once take %.3f s (median) for %d x the work: a ceiling of %.2fx\n", J, mc, J, J * m1 / mc
    printf "  one thread: %.1f M events/s per core of CPU time\n", n / (mc1 > 0 ? mc1 : 1e-9) / 1e6 }' "$T/times"
