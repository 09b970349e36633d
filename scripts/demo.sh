#!/usr/bin/env bash
# demo.sh - the story in one run: fsdp_mini on a simulated 4-GPU node, traced,
# as transformers 4.52.4 (healthy) and 4.53.0 (FSDP root forward skipped).
set -uo pipefail
B=$(cd "${1:-build}" && pwd)
export LD_LIBRARY_PATH="$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
OUT=${DEMO_DIR:-$PWD/demo-traces}
rm -rf "$OUT" && mkdir -p "$OUT"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "transformers 4.52.4 (healthy): ranktrace run -- rt-launch -n 4 fsdp_mini"
"$B/bin/ranktrace" run -o "$OUT/good" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --trainer-version 4.52.4 --steps 3
good=$?
say "transformers 4.53.0 (the Trainer runs the unwrapped module)"
"$B/bin/ranktrace" run -o "$OUT/bad" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --trainer-version 4.53.0 --steps 3
bad=$?

say "what the traces show (babeltrace2 reads them as they are)"
for t in good bad; do
  n=$(babeltrace2 "$OUT/$t" 2>/dev/null | grep -c 'ncclAllGather')
  printf '%-5s all-gathers (FSDP unshard) across ranks: %s\n' "$t" "$n"
done
echo "bad: last events of rank 1:"
babeltrace2 "$OUT/bad" 2>/dev/null | grep "pid = $(awk -F' = |;' '/^\tpid = / {print $2}' "$OUT/bad/rank-00001/metadata")," | tail -3 | cut -c1-160
say "summary"
echo "4.52.4: exit status $good (expected 0); 4.53.0: exit status $bad (expected non-zero)"
echo "traces: $OUT/good $OUT/bad   (try: babeltrace2 $OUT/bad | less)"
[ "$good" -eq 0 ] && [ "$bad" -ne 0 ]
