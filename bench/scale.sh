#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/scale.sh - the viewer's cost at scale: `ranktrace verdict` time and
# peak RSS over trace shapes (bench's gen_trace), under `ulimit -n 1024`, and
# the curve drawn as an SVG (bench/scale_svg.py).
#   bench/scale.sh BUILD OUT_DIR [SHAPE...]     SHAPE: RANKSxEVENTS (per rank)
# Default shapes: ranks 1k/4k/16k x 2,000 events, 1k/4k x 20,000, 8 x 0.25-4.1 M.
# One shape on disk at a time (16,384 x 2,000 is 4.4 GB; 16,384 x 20,000
# would be 44 GB and is not in the default list), generated under
# $TMPDIR, read once to warm the page cache, then timed ROUNDS times
# (default 3: the median); removed before the next. Refuses to start a
# shape without twice its size free. Writes OUT_DIR/scale.tsv and
# OUT_DIR/scale.svg. From 1,024 ranks on, each shape's floor too: the system
# calls its ranks' files cost alone (bench/rank_floor.c).
set -euo pipefail
B=$(cd "${1:?usage: bench/scale.sh BUILD OUT_DIR [RANKSxEVENTS...]}" && pwd)
OUT=${2:?usage: bench/scale.sh BUILD OUT_DIR [RANKSxEVENTS...]}
shift 2
SHAPES=("$@")
[ ${#SHAPES[@]} -gt 0 ] || SHAPES=(1024x2000 4096x2000 16384x2000 1024x20000 4096x20000
                                   8x256000 8x1024000 8x4096000)
R=${ROUNDS:-3}
mkdir -p "$OUT"
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-scale.XXXXXX")
trap 'rm -rf "$T"' EXIT
TSV="$OUT/scale.tsv"
printf 'ranks\tevents_per_rank\tevents\tbytes\tseconds\tpeak_rss_kib\tcpu_seconds\n' > "$TSV"

for s in "${SHAPES[@]}"; do
  ranks=${s%x*}; ev=${s#*x}
  need=$((ranks * (ev * 36 / 262144 + 1) * 256 * 2))  # KiB: 256 KiB packets of ~36 B events, twice
  free=$(df -Pk "$T" | awk 'NR == 2 { print $4 }')
  if [ "$free" -lt "$need" ]; then
    echo "scale: $s needs $((need / 1048576)) GiB free under $T, $((free / 1048576)) GiB there: skipped" >&2
    continue
  fi
  "$B/bin/gen_trace" --ranks "$ranks" --events "$ev" --out "$T/t" > /dev/null
  bytes=$(du -sb "$T/t" | cut -f1)
  (ulimit -n 1024; "$B/bin/ranktrace" verdict "$T/t" > /dev/null 2>&1) || true  # the page cache
  : > "$T/runs"
  for i in $(seq "$R"); do
    (ulimit -n 1024; /usr/bin/time -f '%e %M %U %S' -o "$T/one" "$B/bin/ranktrace" verdict "$T/t" \
       > /dev/null 2>&1) || true
    tail -1 "$T/one" >> "$T/runs"
  done
  # the median run by wall time; its RSS; the peak RSS is the largest of all
  read -r secs rss cpu < <(sort -n "$T/runs" | awk -v r="$R" '{ w[NR] = $1; c[NR] = $3 + $4; if ($2 > m) m = $2 }
    END { k = int((NR + 1) / 2); print w[k], m, c[k] }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$ranks" "$ev" "$((ranks * ev))" "$bytes" "$secs" "$rss" "$cpu" >> "$TSV"
  printf 'scale: %6d ranks x %8d events: verdict %6.2f s (median of %d; CPU %.2f s), peak RSS %4d MiB, %s on disk\n' \
    "$ranks" "$ev" "$secs" "$R" "$cpu" "$((rss / 1024))" "$(du -sh "$T/t" | cut -f1)"
  # what those ranks' files cost before any event is read (the kernel's part of
  # the load: list, metadata, open and map each stream), alone, same trace
  if [ "$ranks" -ge 1024 ] && [ -x "$B/bin/rank_floor" ]; then
    th=$(nproc); [ "$th" -le 64 ] || th=64
    (ulimit -n 1024; "$B/bin/rank_floor" "$T/t" "$ranks" "$th") | sed 's/^/scale:   /' || true
  fi
  rm -rf "$T/t"
done
python3 "$(dirname "$0")/scale_svg.py" "$TSV" "$OUT/scale.svg"
echo "scale: $TSV, $OUT/scale.svg"
