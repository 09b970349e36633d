#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/stage_bisect.sh SECONDS - optional stage of tests/gpu/run.sh (its
# stage_*.sh hook: RT W PY SHIM NR REHEARSE exported; rows on stdout):
# `ranktrace bisect` over real transformers wheels 4.52.4..4.53.0 (pip
# overlays from a local wheelhouse, no network; 4.53.1, the fix, is healthy
# and not a bad endpoint) with the Trainer script (tests/gpu/trainer_fsdp.py,
# FSDP v1, use_orig_params=true as transformers' default, NR ranks); 4.53.0
# must be named as the first bad, by its skipped-fsdp-root trace. Skipped unless the wheelhouse
# exists: RANKTRACE_WHEELHOUSE, or wheelhouse/ at the top of the tree
# (scripts/gpu-wheelhouse.sh makes it on a machine with PyPI, 36 MB).
set -uo pipefail
LIM=${1:-150}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WH=${RANKTRACE_WHEELHOUSE:-$ROOT/wheelhouse}
NAME="bisect transformers 4.52.4..4.53.0"
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@"; }
if [ ! -d "$WH" ]; then
  row "$NAME" "first bad 4.53.0" "skipped: no wheelhouse" ok "scripts/gpu-wheelhouse.sh makes $WH"
  exit 0
fi
if [ "${NR:-2}" -lt 2 ]; then # one rank: NO_SHARD, 4.53.0 cannot fail
  row "$NAME" "first bad 4.53.0" "skipped: 1 rank" ok "needs 2 ranks"
  exit 0
fi
with=()
while read -r pin; do [ -n "$pin" ] && with+=(--with "$pin"); done < "$WH/pins.txt"
TRAIN=("$PY" "$ROOT/tests/gpu/trainer_fsdp.py" --steps 5 --orig-params)
[ "${REHEARSE:-0}" = 1 ] && TRAIN+=(--cpu)
OUTB="$W/traces/bisect"
rm -rf "$OUTB"
# two runs (the endpoints) and the overlays' installs
per=$(( (LIM - 15) / 2 ))
PIP_NO_INDEX=1 RANKTRACE_CACHE_DIR="$W/bisect-cache" timeout -k 5 $((LIM - 5)) \
  "$RT" bisect -o "$OUTB" --pip transformers --good 4.52.4 --bad 4.53.0 --find-links "$WH" \
  --python "$PY" "${with[@]}" --timeout "$per" --json \
  -- "$PY" -m torch.distributed.run --standalone --nproc-per-node "$NR" --no-python "$SHIM" "${TRAIN[@]}" \
  > "$W/logs/bisect.json" 2> "$W/logs/bisect.log"
rc=$?
line=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
fb = (j["first_bad"] or {}).get("id", "none")
print(fb, j["signature"] or "-", j["runs"], j["rounds"],
      ",".join("%s=%s" % (c["id"], c["verdict"]) for c in j["candidates"]))' "$W/logs/bisect.json" 2> /dev/null)
read -r first sig runs rounds seen <<< "${line:-none - 0 0 -}"
obs="first bad $first ($sig; exit $rc, $runs runs, $rounds rounds)"
if [ "$rc" -eq 0 ] && [ "$first" = 4.53.0 ]; then
  row "$NAME" "first bad 4.53.0" "$obs" ok "$seen"
else
  row "$NAME" "first bad 4.53.0" "$obs" FAIL "$(grep 'ranktrace bisect:' "$W/logs/bisect.log" | tail -1 | cut -c1-160)"
fi
