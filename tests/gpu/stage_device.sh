#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/stage_device.sh SECONDS - optional stage of tests/gpu/run.sh (its
# stage_*.sh hook: RT B W SHIM NR REHEARSE exported; rows on stdout): device-
# side completion through ranktrace's NCCL profiler plugin loaded by NVIDIA's
# NCCL (the simulated one when rehearsing): every collective a rank enqueued
# started and completed on its device; with 2 ranks, the last one delayed on
# the device by 20 ms per collective (devdelay) is named the straggler.
set -uo pipefail
LIM=${1:-150}
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@"; }
MINI=("$B/bin/rt-launch" -n "$NR" "$SHIM" "$B/bin/fsdp_mini" --steps 5)
per=$(( (LIM - 10) / 2 ))
# counts DIR: "enqueued/started/completed source" per rank, ';'-separated
counts() { "$RT" view --json "$1" 2> /dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin).get("device") or {"ranks": []}
print(";".join("%d/%d/%d %s v%d" % (r["enqueued"], r["started"], r["completed"], r["source"],
                                   r["plugin_version"]) for r in d["ranks"]) or "no device records")'; }
timeout -k 5 "$per" "$RT" run -o "$W/traces/d-plain" -- "${MINI[@]}" > "$W/logs/d-plain.log" 2>&1
c=$(counts "$W/traces/d-plain")
ok=$(python3 -c '
import sys; v = [x.split()[0].split("/") for x in sys.argv[1].split(";") if "/" in x]
print("ok" if v and all(a == b == c != "0" for a, b, c in v) else "FAIL")' "$c")
row "device: completion via plugin" "enqueued = started = completed" "$c" "$ok" "NCCL_PROFILER_PLUGIN=ranktrace's"
if [ "$NR" -lt 2 ]; then
  row "device: straggler (devdelay 20 ms)" "rank 1 named" "skipped: 1 rank" ok "needs 2 ranks"
  exit 0
fi
last=$((NR - 1))
timeout -k 5 "$per" "$RT" run -o "$W/traces/d-slow" --inject "@collective:devdelay=20ms:rank=$last" \
  -- "${MINI[@]}" > "$W/logs/d-slow.log" 2>&1
s=$("$RT" view --json "$W/traces/d-slow" 2> /dev/null | python3 -c '
import json, sys
s = (json.load(sys.stdin).get("device") or {}).get("stragglers") or {}
r = [x for x in s.get("ranks", []) if x["rank"] == s.get("straggler")]
print("rank %s, %.1f ms late" % (s.get("straggler"), r[0]["mean_late_ms"]) if r else "none")')
case "$s" in
  "rank $last, "*) late=${s#*, }; late=${late% ms late}
    # rehearsing on a loaded CPU the injected sleep itself overshoots: 16-30 ms
    hi=$([ "${REHEARSE:-0}" = 1 ] && echo 30 || echo 24)
    ok=$(python3 -c "print('ok' if 16 <= $late <= $hi else 'FAIL')") ;;
  *) ok=FAIL ;;
esac
row "device: straggler (devdelay 20 ms)" "rank $last, 20 ms +-20 %" "$s" "$ok" ""
