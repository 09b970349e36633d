#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/viewer.sh - events/s of `ranktrace view` on synthetic traces, beside
# `babeltrace2 DIR > /dev/null` on the same trace (a ratio: same machine, same
# run), and the large case: RANKS x EVENTS summarised, with peak memory.
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
