#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_hostile.sh - hostile input, found by trying (issue 9 item 5): each check
# failed before its fix. Fault plans that never fired, spun or wrapped; plan
# files that hung or were split; planted symlinks and FIFOs; invalid UTF-8;
# -o that is a file or under a missing parent; strict --rank.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
export SIMGPU_TIMEOUT=5
# every command bounded: a hang is a failure, not a stuck CI
rt() { timeout -k 5 60 "$RT" "$@"; }
jq_py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# ---- fault plans ----
# the 9th rule of one function fired never, although `inject --check` said ok
plan9=""
for i in 1 2 3 4 5 6 7 8; do plan9+="cudaMalloc:delay=1ns:when=100000;"; done
plan9+="cudaMalloc:error=cudaErrorMemoryAllocation:when=2"
check "inject --check accepts 9 rules for cudaMalloc" bash -c "'$RT' inject --check '$plan9' | grep -qx 'ok: 9 rules'"
sim timeout -k 5 60 "$RT" run -o "$T/p9" --inject "$plan9" -- "$B/bin/fsdp_mini" --steps 1 > "$T/p9.log" 2>&1
rt view "$T/p9" --json > "$T/p9.json"
check "the 9th rule fires: one fault, one failed allocation" [ "$(jq_py "$T/p9.json" "d['ranks'][0]['faults'], d['ranks'][0]['failed_allocations']")" = "1 1" ]
check "the workload saw out of memory" grep -q 'cudaMalloc failed: cudaErrorMemoryAllocation' "$T/p9.log"

# values that spun at 100 % CPU, never fired, wrapped, or acted as bypass
for p in 'cudaMalloc:delay=1e12s' 'cudaMalloc:delay=nans' 'cudaMalloc:delay=infms' \
         'cudaMalloc:skip:prob=nan' 'my.point:error=4294967296' 'fsdp.root_forward:error=1'; do
  rt inject --check "$p" > /dev/null 2>&1
  check "plan '$p' refused (exit 2)" [ $? -eq 2 ]
  timeout -k 5 20 "$RT" run -o "$T/never" --inject "$p" -- true > /dev/null 2>&1
  check "run --inject '$p' refused before anything runs (exit 2, no trace)" bash -c "[ $? -eq 2 ] && [ ! -e '$T/never' ]"
done

# --inject-file: NUL byte, long lines, devices, a directory
printf 'cudaMalloc:skip\0;cudaFree:skip\n' > "$T/nul.plan"
{ printf '#%.0s' $(seq 1100); printf ' cudaMalloc:skip\n'; echo 'cudaMalloc:error=cudaErrorMemoryAllocation:when=2'; } > "$T/long.plan"
for f in "$T/nul.plan" /dev/zero /dev/urandom "$T"; do
  timeout -k 5 20 "$RT" run -o "$T/never" --inject-file "$f" -- true > /dev/null 2> "$T/pf.err"
  rc=$?
  check "--inject-file $f: one clear error, exit 2, in time (rc $rc: $(head -c 120 "$T/pf.err"))" bash -c "[ $rc -eq 2 ] && [ \$(wc -l < '$T/pf.err') -eq 1 ] && [ ! -e '$T/never' ]"
done
sim timeout -k 5 60 "$RT" run -o "$T/longp" --inject-file "$T/long.plan" -- "$B/bin/fsdp_mini" --steps 1 > "$T/longp.log" 2>&1
check "--inject-file: a 1100-byte comment line stays one comment (the plan after it fires)" grep -q 'cudaMalloc failed: cudaErrorMemoryAllocation' "$T/longp.log"

# ---- trace directories and outputs ----
sim timeout -k 5 60 "$RT" run -o "$T/base" -- "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --steps 1 > /dev/null 2>&1
check "a 2-rank trace to damage" [ -d "$T/base/rank-00001" ]

# report/export wrote through OUT.tmpPID: a planted symlink redirected the write
echo precious > "$T/victim"
for c in "report -o" "export --perfetto"; do
  bash -c 'ln -sf "$1" "$2.tmp$$"; exec timeout -k 5 60 '"$RT"' '"${c%% *}"' "$3" '"${c#* }"' "$2"' _ "$T/victim" "$T/out.${c%% *}" "$T/base" 2> /dev/null
  check "${c%% *}: a planted OUT.tmpPID symlink is not followed (victim intact)" grep -qx precious "$T/victim"
  check "${c%% *}: the output is written" test -s "$T/out.${c%% *}"
  rm -f "$T"/out.*.tmp*
done

# run -o DIR where DIR/rank-00000 is a planted symlink: refused, never followed
mkdir -p "$T/plant" "$T/elsewhere"; ln -s "$T/elsewhere" "$T/plant/rank-00000"
for a in "" --append; do
  sim timeout -k 5 60 "$RT" run -o "$T/plant" $a -- "$B/bin/fsdp_mini" --steps 1 > /dev/null 2> "$T/plant.err"
  check "run ${a:-(fresh)} into a planted rank-00000 symlink: refused (exit 2), nothing written there" bash -c "[ $? -eq 2 ] && [ -z \"\$(ls -A '$T/elsewhere')\" ] && grep -q 'symbolic link' '$T/plant.err'"
done
# planted after the CLI looked: the tracer refuses it too
sim env RANKTRACE_DIR="$T/plant" RANKTRACE_RUN_ID=0123456789abcdef0123456789abcdef RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 \
  LD_PRELOAD="${RANKTRACE_LIB:-$B/lib/libranktrace.so}" timeout -k 5 60 "$B/bin/fsdp_mini" --steps 1 > "$T/plant2.log" 2>&1
check "the tracer does not follow a planted rank-00000 symlink, the program still runs (rc $?)" bash -c "[ -z \"\$(ls -A '$T/elsewhere')\" ] && grep -q 'step 1' '$T/plant2.log'"

# -o a file, or under missing parents: never run untraced silently
touch "$T/afile"
timeout -k 5 20 "$RT" run -o "$T/afile" -- touch "$T/ran" > /dev/null 2>&1
check "-o FILE: refused (exit 2), the command did not run" bash -c "[ $? -eq 2 ] && [ ! -e '$T/ran' ]"
timeout -k 5 20 "$RT" run -o "$T/afile" --allow-untraced -- touch "$T/ran" > /dev/null 2> "$T/untraced.err"
check "-o FILE --allow-untraced: runs untraced, with a warning" bash -c "[ $? -eq 0 ] && [ -e '$T/ran' ] && grep -q 'untraced' '$T/untraced.err'"
sim timeout -k 5 60 "$RT" run -o "$T/miss/ing/parent" -- "$B/bin/fsdp_mini" --steps 1 > /dev/null 2>&1
check "-o under missing parents: created (mkdir -p) and traced" test -s "$T/miss/ing/parent/rank-00000/metadata"

# -o too long for the rank directories below it (each rank would have run
# untraced, exit 0, a warning only): refused before anything is made or run
long="$T/$(python3 -c "print('/'.join(['d' * 200] * 20))")"
timeout -k 5 20 "$RT" run -o "$long" -- touch "$T/ranlong" > /dev/null 2> "$T/long.err"
check "-o a path too long for its rank directories: refused (exit 2), not made, not run" \
  bash -c "[ $? -eq 2 ] && [ ! -e '$T/ranlong' ] && [ ! -e '$T/dddd' ] && grep -q 'too long for the rank directories' '$T/long.err'"
timeout -k 5 20 "$RT" run -o "$long" --allow-untraced -- touch "$T/ranlong" > /dev/null 2> "$T/long.err"
check "-o too long --allow-untraced: runs untraced, with a warning" \
  bash -c "[ $? -eq 0 ] && [ -e '$T/ranlong' ] && grep -q 'untraced' '$T/long.err'"
rm -rf "$T/dddd"*

# metadata that is a FIFO or a symlink to /dev/zero: skipped with an error, no hang
cp -r "$T/base" "$T/fifo"; rm "$T/fifo/rank-00001/metadata"; mkfifo "$T/fifo/rank-00001/metadata"
cp -r "$T/base" "$T/zero"; rm "$T/zero/rank-00001/metadata"; ln -s /dev/zero "$T/zero/rank-00001/metadata"
for d in fifo zero; do
  for c in "view --json" "verdict --bad crashed" "export --perfetto $T/$d.json" "report -o $T/$d.html"; do
    timeout -k 2 20 "$RT" ${c%% *} "$T/$d" ${c#* } > /dev/null 2> "$T/$d.err" < /dev/null
    rc=$?
    check "metadata $d: ${c%% *} ends in time with an error naming it (rc $rc)" bash -c "[ $rc -ne 124 ] && [ $rc -ne 137 ] && grep -q 'rank-00001/metadata.*not a regular file' '$T/$d.err'"
  done
done

# a hostname with invalid UTF-8: view --json and Perfetto stay valid JSON (UTF-8)
cp -r "$T/base" "$T/utf"
python3 - "$T/utf/rank-00001/metadata" <<'PY'
import sys; p = sys.argv[1]; b = open(p, 'rb').read()
open(p, 'wb').write(b.replace(b'hostname = "', b'hostname = "\xff\xfe\xc3(\xed\xa0\x80x', 1))
PY
timeout -k 5 60 "$RT" view "$T/utf" --json > "$T/utf.json"
timeout -k 5 60 "$RT" export "$T/utf" --perfetto "$T/utf.pf.json" 2> /dev/null
check "view --json with an invalid-UTF-8 hostname is valid JSON" python3 -c "import json,sys; d=json.loads(open(sys.argv[1],'rb').read().decode('utf-8')); assert d['ranks'][1]['host'].startswith('\ufffd\ufffd\ufffd(')" "$T/utf.json"
check "the Perfetto export too" python3 -c "import json,sys; json.loads(open(sys.argv[1],'rb').read().decode('utf-8'))" "$T/utf.pf.json"

# view: strict --rank, a missing directory is a usage error (3 is for damage)
for r in abc 1x '' -1 99999999999; do
  timeout -k 5 20 "$RT" view "$T/base" --rank "$r" > /dev/null 2>&1
  check "view --rank '$r': exit 2" [ $? -eq 2 ]
done
timeout -k 5 20 "$RT" view /nonexistent > /dev/null 2> "$T/ne.err"
check "view /nonexistent: exit 2, 'no such directory'" bash -c "[ $? -eq 2 ] && grep -q 'no such directory' '$T/ne.err'"

# ---- 25 hostile names and plans reach every output escaped (issue 28) ----
# Names a trace carries (parameters, markers, unwrapped modules and callers,
# failure points: bin/hostile_names; the host from NCCL_HOSTID; the trace
# directory) and fault plans: escape sequences (OSC title, CSI, APC, DCS), C1
# controls (raw and as UTF-8), bidi overrides, isolates and marks, line
# separators, invalid UTF-8, DEL/BEL/BS/CR, HTML and JSON's own characters,
# one printable UTF-8 name that must pass as it is. check_safe.py: no output
# holds a raw control character (newline and tab aside), bidi control,
# separator or invalid UTF-8.
hostile_names() {
  printf 'layer\033]0;pwned\007.weight\n'; printf 'x\033[2J\033[H\n'; printf 'csi\302\23331m\n'
  printf 'raw\23331m\n'; printf 'rlo\342\200\256gnp.exe\n'; printf 'lri\342\201\246x\342\201\251\n'
  printf 'lrm\342\200\216\n'; printf 'ls\342\200\250ps\342\200\251\n'; printf 'bad\377\376\n'
  printf 'cut\346\227\n'; printf 'overlong\300\257\n'; printf 'surrogate\355\240\200\n'
  printf 'del\177\n'; printf 'bell\007\010\010\n'; printf 'cr\rfake line\n'; printf 'tab\tsep\n'
  printf '<script>alert(1)</script>\n'; printf '"quote\\back"\n'; printf 'ctl\001\002\037\n'
  printf 'nel\302\205\n'; printf 'apc\033_payload\033\\\n'; printf 'dcs\033P1;2|x\033\\\n'
  printf 'alm\330\234\n'; printf 'caf\303\251 \346\227\245 \360\237\230\200\n'
  printf 'long%.0s\033' $(seq 300); printf '\n'
}
hostile_names > "$T/names.txt"
check "25 hostile names" [ "$(wc -l < "$T/names.txt")" -eq 25 ]
O="$T/out"; mkdir -p "$O"
HD="$T/trace"$'\e]0;dir\a\xe2\x80\xae\xff'
sim env NCCL_HOSTID=$'node\e]0;host\a\xc2\x9b' timeout -k 5 60 "$RT" run -o "$HD" -- "$B/bin/rt-launch" -n 2 \
  "$B/bin/hostile_names" "$T/names.txt" --crash > "$O/run.out" 2> "$O/run.err"
check "a 2-rank trace full of hostile names (verdict skipped-fsdp-root)" \
  bash -c "[ \"\$('$RT' verdict '$HD' 2> /dev/null)\" = skipped-fsdp-root ]"
n=0
for c in "view" "view --all" "view --json" "view --rank 1" "params" "params --json" "params --rank 0 --at last" \
         "verdict" "verdict --bad crashed" "diff $T/base" "diff --json $T/base"; do
  timeout -k 5 60 "$RT" ${c%% *} "$HD" ${c#* } > "$O/c$n.out" 2> "$O/c$n.err" < /dev/null
  [ "$c" = "${c#* }" ] && timeout -k 5 60 "$RT" "$c" "$HD" > "$O/c$n.out" 2> "$O/c$n.err" < /dev/null
  n=$((n + 1))
done
timeout -k 5 60 "$RT" diff "$T/base" "$HD" > "$O/diffba.out" 2>&1
timeout -k 5 60 "$RT" export "$HD" --perfetto "$O/perfetto.json" > "$O/export.out" 2>&1
timeout -k 5 60 "$RT" report "$HD" -o "$O/report.html" > "$O/report.out" 2>&1
check "view --json names each parameter (escaped, not lost)" \
  bash -c "grep -q 'layer\\\\u001b]0;pwned\\\\u0007.weight' '$O/c2.out'"
check "the HTML report quotes a name escaped" grep -q 'layer\\x1b]0;pwned\\x07.weight' "$O/report.html"
check "a printable UTF-8 name passes as it is" grep -q $'caf\xc3\xa9 \xe6\x97\xa5' "$O/c4.out"
# plans: each name as a target, as an action and after a good spec; a plan file of them
i=0
while LC_ALL=C IFS= read -r name; do # C: a cut UTF-8 sequence keeps its newline
  for p in "$name:skip" "cudaMalloc:$name" "cudaMalloc:skip;$name" "cudaMalloc:delay=1ms:when=$name"; do
    timeout -k 5 20 "$RT" inject --check "$p" > "$O/plan$i.out" 2> "$O/plan$i.err"
    i=$((i + 1))
  done
  timeout -k 5 20 "$RT" run -o "$T/never" --inject "$name" -- true > "$O/plan$i.out" 2> "$O/plan$i.err"
  i=$((i + 1))
done < "$T/names.txt"
timeout -k 5 20 "$RT" run -o "$T/never" --inject-file "$T/names.txt" -- true > "$O/pf.out" 2> "$O/pf.err"
timeout -k 5 20 "$RT" run -o "$T/never" --inject-file "$T/names.txt"$'\e]0;f\a' -- true > "$O/pf2.out" 2> "$O/pf2.err"
check "125 hostile plans refused, none ran (exit 2)" bash -c "[ $i -eq 125 ] && [ ! -e '$T/never' ] && \
  [ \$(grep -l 'bad fault plan' '$O'/plan*.err | wc -l) -eq 125 ]"
# bisect: hostile versions, set-up output, command and arguments
cp /bin/true "$T/tr"$'\e[2J'"ue"
timeout -k 5 60 "$RT" bisect -o "$T/bis0" --versions $'1.0,2\e]0;x\a\xc2\x9b,3.0' -- true > "$O/bis0.out" 2> "$O/bis0.err"
timeout -k 5 120 "$RT" bisect -o "$T/bis" --versions 1.0,2.0,3.0 --setup $'echo \e]0;x\a\xe2\x80\xae; exit 1' \
  -- "$T/tr"$'\e[2J'"ue" $'arg\e]0;y\a' > "$O/bis.out" 2> "$O/bis.err"
timeout -k 5 60 "$RT" bisect --resume -o "$T/bis" --json > "$O/bisj.out" 2> "$O/bisj.err"
check "bisect said something about each (outputs not empty)" bash -c "[ -s '$O/bis0.err' ] && [ -s '$O/bis.err' ] && [ -s '$O/bisj.out' ]"
unsafe=$(python3 "$(dirname "$0")/check_safe.py" "$O"/* 2>&1 | head -5)
check "no raw control, bidi control, separator or invalid UTF-8 in any of $(ls "$O" | wc -l) outputs${unsafe:+: $unsafe}" \
  [ -z "$unsafe" ]

finish
