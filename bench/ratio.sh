#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/ratio.sh - issue 30's ratio: `ranktrace verdict` of the same 32.8 M
# events as 16,384 ranks x 2,000 and as 8 ranks x 4,096,000 (bench's
# gen_trace), under `ulimit -n 1024`, in pairs: each round runs every
# build's 16,384-rank verdict, then its 8-rank one, so the two halves of a
# ratio share the machine's pace of the moment (on a shared VM one build's
# 16,384-rank verdict moved between 1.7 and 2.6 s in an hour). Prints, per
# build, the medians of each shape, of the per-round ratios, and (with two
# builds) of the per-round 16,384-rank times against the first build's.
#   bench/ratio.sh BUILD [OTHER_BUILD...]      ROUNDS (default 11) rounds
# The traces (4.4 GB and 1.2 GB) go under $TMPDIR and are removed at the
# end; it refuses to start without 12 GB free there.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bench/ratio.sh BUILD [OTHER_BUILD...]" >&2; exit 2; }
BUILDS=()
for b in "$@"; do
  [ -x "$b/bin/ranktrace" ] || { echo "bench/ratio.sh: $b/bin/ranktrace: not built" >&2; exit 2; }
  BUILDS+=("$(cd "$b" && pwd)")
done
R=${ROUNDS:-11}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-ratio.XXXXXX")
trap 'rm -rf "$T"' EXIT
free_kb=$(df -Pk "$T" | awk 'NR == 2 {print $4}')
[ "$free_kb" -ge $((12 << 20)) ] || { echo "bench/ratio.sh: under 12 GB free in $T" >&2; exit 1; }
ulimit -n 1024
echo "generating 16,384 x 2,000 and 8 x 4,096,000 in $T ..." >&2
"${BUILDS[0]}/bin/gen_trace" --ranks 16384 --events 2000 --out "$T/wide" > /dev/null
"${BUILDS[0]}/bin/gen_trace" --ranks 8 --events 4096000 --out "$T/deep" > /dev/null
find "$T" -type f -exec cat {} + > /dev/null # the page cache warm, as for every run after
secs() { /usr/bin/time -f '%e' "$@" 2>&1 > /dev/null | tail -1; }
for ((i = 1; i <= R; i++)); do
  for k in "${!BUILDS[@]}"; do
    printf '%d %d %s %s\n' "$i" "$k" "$(secs "${BUILDS[$k]}/bin/ranktrace" verdict "$T/wide")" \
      "$(secs "${BUILDS[$k]}/bin/ranktrace" verdict "$T/deep")"
  done
  echo "round $i of $R" >&2
done > "$T/times"
python3 - "$T/times" "${BUILDS[@]}" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
builds = sys.argv[2:]
t = {}
for i, k, w, d in rows:
    t.setdefault(int(k), []).append((float(w), float(d)))
for k, b in enumerate(builds):
    w = [x for x, _ in t[k]]; d = [y for _, y in t[k]]
    line = (f"{b}: 16,384 x 2,000 median {st.median(w):.2f} s (best {min(w):.2f}), "
            f"8 x 4,096,000 median {st.median(d):.2f} s (best {min(d):.2f}); "
            f"ratio: median of rounds {st.median([x / y for x, y in t[k]]):.2f}x, "
            f"of medians {st.median(w) / st.median(d):.2f}x")
    if k:
        rel = [x / y[0] for (x, _), y in zip(t[k], t[0])]
        line += f"; 16,384 ranks against the first build: {st.median(rel):.3f}x"
    print(line)
PY
