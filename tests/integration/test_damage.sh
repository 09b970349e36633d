#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_damage.sh - a corpus of damaged traces (scripts/damage-corpus.py:
# truncations, flipped bytes, zeroed headers, empty metadata, missing and
# duplicate ranks): `verdict` says inconclusive with the reason and exits 125
# in every variant (git bisect skips, never marks a good commit bad), `view`
# exits 3, nothing crashes or hangs (each command under timeout).
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
export SIMGPU_TIMEOUT=5
sim timeout -k 5 120 "$RT" run -o "$T/base" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 2 > /dev/null 2>&1
check "the healthy 4-rank base trace is healthy (exit 0)" bash -c "[ \"\$(timeout -k 5 60 '$RT' verdict '$T/base')\" = healthy ]"
python3 "$(dirname "$0")/../../scripts/damage-corpus.py" "$T/base" "$T/corpus" > "$T/variants"
n=$(wc -l < "$T/variants")
check "the corpus holds at least 30 variants ($n)" [ "$n" -ge 30 ]
while read -r v; do
  d="$T/corpus/$v"
  out=$(timeout -k 5 60 "$RT" verdict "$d" 2> "$T/v.err" < /dev/null); rc=$?
  why=$(grep -m1 'inconclusive: ' "$T/v.err" | sed 's/.*inconclusive: //')
  check "$v: verdict $out, exit $rc, because: ${why:-(none)}" bash -c "[ $rc -eq 125 ] && [ '$out' = inconclusive ] && [ -n \"\$(grep -m1 'inconclusive: ' '$T/v.err')\" ]"
  timeout -k 5 60 "$RT" view "$d" > /dev/null 2>&1 < /dev/null; rc=$?
  check "$v: view exits 3 ($rc)" [ $rc -eq 3 ]
  timeout -k 5 60 "$RT" view "$d" --json > "$T/v.json" 2> /dev/null < /dev/null
  check "$v: view --json: completeness damaged or missing, with the reason" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['completeness'] in ('damaged','missing') and d['inconclusive']" "$T/v.json"
  timeout -k 5 60 "$RT" report "$d" -o "$T/r.html" > /dev/null 2>&1 < /dev/null; rc=$?
  check "$v: report ends without crash or hang ($rc)" [ $rc -lt 124 ]
done < "$T/variants"

# a capped trace (tracing stopped at --max-size, the program went on): 125 with the reason
sim timeout -k 5 120 "$RT" run -o "$T/cap" --max-size 64K -- "$B/bin/callstorm" --calls 100000 > "$T/cap.log" 2>&1
out=$(timeout -k 5 60 "$RT" verdict "$T/cap" 2> "$T/cap.err"); rc=$?
check "capped: verdict inconclusive, exit 125, the reason names the cap ($(grep -o 'inconclusive: .*' "$T/cap.err"))" bash -c "[ $rc -eq 125 ] && [ '$out' = inconclusive ] && grep -qE 'inconclusive: rank-p[0-9]+ trace incomplete: size cap reached at event [0-9]+' '$T/cap.err'"
timeout -k 5 60 "$RT" view "$T/cap" --json > "$T/cap.json" 2> /dev/null
check "capped: view --json completeness capped (trace and rank), no crash finding" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['completeness'] == 'capped' and d['ranks'][0]['completeness'] == 'capped' and not any(f['signature'] == 'crashed' for f in d['findings'])" "$T/cap.json"

# damage elsewhere does not hide a failure that complete evidence shows
sim timeout -k 5 120 "$RT" run -o "$T/dev0" --inject wrong-device -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 1 > /dev/null 2>&1
python3 - "$T/dev0/rank-00003" <<'PY'
import os, sys
d = sys.argv[1]; p = os.path.join(d, sorted(f for f in os.listdir(d) if f.startswith("stream-"))[0])
os.truncate(p, int(os.path.getsize(p) * 0.4) + 13)
PY
out=$(timeout -k 5 60 "$RT" verdict "$T/dev0" --bad device-misplacement 2> /dev/null); rc=$?
check "wrong-device with rank 3 damaged: still device-misplacement, exit 1 ($out, $rc)" bash -c "[ $rc -eq 1 ] && [ '$out' = device-misplacement ]"
timeout -k 5 60 "$RT" view "$T/dev0" --json > "$T/dev0.json" 2> /dev/null; rc=$?
check "... while view exits 3 and says rank 3 is damaged" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert $rc == 3 and d['ranks'][3]['completeness'] == 'damaged' and d['completeness'] == 'damaged'" "$T/dev0.json"
sim timeout -k 5 120 "$RT" run -o "$T/abort" --inject 'ncclAllGather:abort:when=1:rank=3' -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 1 > /dev/null 2>&1
rm -rf "$T/abort/rank-00001"
out=$(timeout -k 5 60 "$RT" verdict "$T/abort" 2> "$T/abort.err"); rc=$?
check "rank 3 killed by SIGABRT (recorded), rank 1 missing: still crashed, exit 1 ($out, $rc)" bash -c "[ $rc -eq 1 ] && [ '$out' = crashed ] && grep -q 'rank 3 was killed by signal 6' '$T/abort.err'"
timeout -k 5 60 "$RT" view "$T/abort" --json > "$T/abort.json" 2> /dev/null
check "... and view --json lists rank 1 as missing" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['missing_ranks'] == [1] and d['completeness'] == 'missing' and d['world_size'] == 4" "$T/abort.json"
finish
