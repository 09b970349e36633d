#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_damage2.sh - the second damage corpus (scripts/damage-corpus2.py, issue
# 19): empty, non-regular and missing stream files, times no clock reaches
# and times that can still be ordered, sparse and zero tails, metadata cut
# anywhere or swapped. Every reader (view, view --json, verdict, params,
# export, report, diff) ends under timeout without crash; a damaged variant
# gets verdict 125 with the reason (or, where complete evidence elsewhere
# decides, the signature), view exit 3, never a clean bill. Also: one
# process driving two GPUs (ncclCommInitAll) reads complete and healthy, and
# names from a trace reach the terminal and the report escaped.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
export SIMGPU_TIMEOUT=5
S="$(dirname "$0")/../../scripts"
sim timeout -k 5 120 "$RT" run -o "$T/base" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 2 > /dev/null 2>&1
sim timeout -k 5 120 "$RT" run -o "$T/dev" --inject 'cudaSetDevice:device=5:rank=1' -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 6 > /dev/null 2>&1
sim timeout -k 5 120 "$RT" run -o "$T/storm" -- "$B/bin/callstorm" --calls 30000 > /dev/null 2>&1
for b in base:healthy dev:device-misplacement storm:healthy; do
  out=$(timeout -k 5 60 "$RT" verdict "$T/${b%%:*}" 2> /dev/null)
  check "base trace ${b%%:*} reads as ${b#*:} ($out)" [ "$out" = "${b#*:}" ]
done
check "the storm's stream has several files (.1, .2)" bash -c "ls '$T'/storm/rank-*/ | grep -q 'stream-.*\.2$'"

# ---- defect 11: one process, two GPUs, one ncclCommInitAll ----
sim timeout -k 5 60 "$RT" run -o "$T/mg" -- "$B/bin/multi_gpu" --devices 2 --steps 2 > "$T/mg.log" 2>&1
check "multi_gpu ran under ranktrace (exit 0)" grep -q "multi_gpu: 2 devices, 2 steps, done" "$T/mg.log"
timeout -k 5 60 "$RT" view "$T/mg" --json > "$T/mg.json" 2> /dev/null; rc=$?
check "ncclCommInitAll on 2 devices: view exit 0, complete, no missing rank, devices 0,1 ($rc)" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert $rc == 0 and d['completeness'] == 'complete' and d['missing_ranks'] == [] and d['ranks'][0]['devices'] == [0, 1] and d['ranks'][0]['collectives']['AllReduce'] == 4, d['inconclusive']" "$T/mg.json"
out=$(timeout -k 5 60 "$RT" verdict "$T/mg" 2> "$T/mg.err"); rc=$?
check "ncclCommInitAll on 2 devices: verdict healthy, exit 0 ($out, $rc: $(head -c 200 "$T/mg.err"))" bash -c "[ $rc -eq 0 ] && [ '$out' = healthy ]"

# ---- the corpus ----
python3 "$S/damage-corpus2.py" "$T/base" "$T/dev" "$T/storm" "$T/corpus" > "$T/variants"
n=$(wc -l < "$T/variants")
check "the corpus holds at least 40 variants ($n: $(cut -d' ' -f2 "$T/variants" | sort | uniq -c | tr -s ' ' | tr '\n' ','))" [ "$n" -ge 40 ]
crashes=0; hangs=0
while read -r v cls; do
  d="$T/corpus/$v"
  read_variant "$d"
  for c in params export report diff; do
    case $c in
      export) timeout -k 5 30 "$RT" export "$d" -o "$T/v.perfetto.json" ;;
      report) timeout -k 5 30 "$RT" report "$d" -o "$T/v.html" ;;
      diff) timeout -k 5 30 "$RT" diff "$T/base" "$d" ;;
      *) timeout -k 5 30 "$RT" $c "$d" ;;
    esac > /dev/null 2>&1 < /dev/null
    rc=$?
    [ $rc -eq 124 ] || [ $rc -eq 137 ] && hangs=$((hangs + 1)) && echo "# $v: $c hung"
    [ $rc -gt 124 ] && [ $rc -ne 137 ] && crashes=$((crashes + 1)) && echo "# $v: $c exit $rc"
  done
  case $cls in
    damaged)
      check "$v: verdict $out, exit $vrc, view exit $view, because: ${why:-(none)}" bash -c "[ $vrc -eq 125 ] && [ '$out' = inconclusive ] && [ -n '${why//\'/}' ] && [ $view -eq 3 ]"
      check "$v: view --json says damaged or missing, with the reason" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['completeness'] in ('damaged','missing') and d['inconclusive']" "$T/v.json" ;;
    damaged1)
      check "$v: never a clean bill: verdict $out, exit $vrc (1 or 125), view exit $view, ${why:-}" bash -c "{ [ $vrc -eq 1 ] && [ '$out' = device-misplacement ]; } || { [ $vrc -eq 125 ] && [ -n '${why//\'/}' ]; } && [ $view -eq 3 ]" ;;
    keeps1)
      check "$v: times still ordered: verdict $out, exit $vrc (device-misplacement, 1), view exit $view (0)" bash -c "[ $vrc -eq 1 ] && [ '$out' = device-misplacement ] && [ $view -eq 0 ]" ;;
    *) bad "$v: unknown class $cls" ;;
  esac
done < "$T/variants"
check "no reader crashed ($crashes) or hung ($hangs) on $n variants" [ $((crashes + hangs)) -eq 0 ]
# ---- names from a trace reach the terminal and the report escaped ----
H="$T/$(printf 'tr\033[31mace\nname\377')"
cp -r "$T/base" "$H"
python3 - "$H" "$S" <<'PY'
import importlib.util, os, struct, sys
d, s = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("c2", os.path.join(s, "damage-corpus2.py"))
c2 = importlib.util.module_from_spec(spec); spec.loader.exec_module(c2)
m = os.path.join(d, "rank-00001", "metadata")
b = open(m, "rb").read()
open(m, "wb").write(b.replace(b'hostname = "', b'hostname = "ev\x1b[2J\x07pwned', 1))
rd = os.path.join(d, "rank-00002")
lay = c2.event_layout(os.path.join(rd, "metadata"))
pid = [i for i, e in lay.items() if e[0] == "rt_param"][0]
st = c2.streams(rd)[0]
data = bytearray(open(st, "rb").read())
n = 0
for pkt, off, ext, eid, ts, hdr in c2.events(bytes(data), lay):
    if eid == pid:
        at = off + hdr + lay[eid][2]["_name"]
        data[at:at + 64] = b"w\x1b[2J\n\xc2\x9bX\xff".ljust(64, b"\0")
        n += 1
open(st, "wb").write(bytes(data))
assert n > 0, "no rt_param event to rename"
PY
for c in view params verdict diff report; do
  case $c in
    diff) timeout -k 5 30 "$RT" diff "$T/base" "$H" ;;
    report) timeout -k 5 30 "$RT" report "$H" -o "$T/h.html" ;;
    params) timeout -k 5 30 "$RT" params "$H" --rank 2 ;;
    *) timeout -k 5 30 "$RT" $c "$H" ;;
  esac > "$T/h.$c" 2>&1 < /dev/null
  check "$c: no raw ESC, BEL, C1 or invalid UTF-8 from the trace's names reaches the terminal" python3 -c "
import sys; b = open(sys.argv[1], 'rb').read(); b.decode('utf-8')
assert not any(x in b for x in (b'\x1b', b'\x07', b'\xc2\x9b', b'\ntrace\\x1b[31mace')), b[:300]" "$T/h.$c"
done
check "view shows the hostile directory and host escaped" bash -c "grep -q 'ace\\\\x0aname\\\\xff' '$T/h.view' && grep -q '^1 .*ev\\\\x1b\\[2J' '$T/h.view'"
check "params shows the hostile parameter name escaped" grep -q 'w\\x1b\[2J\\x0a\\u009bX\\xff' "$T/h.params"
check "the report holds only valid UTF-8, no control byte but tab and newline" python3 -c "
import sys; t = open(sys.argv[1], 'rb').read().decode('utf-8')
assert not [c for c in t if (ord(c) < 32 and c not in '\t\n\r') or 0x7f <= ord(c) <= 0x9f]; assert 'pwned' in t" "$T/h.html"
timeout -k 5 30 "$RT" view "$H" --json > "$T/h.json" 2> /dev/null
check "view --json stays valid JSON with the names" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert 'pwned' in d['ranks'][1]['host']" "$T/h.json"
finish
