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

finish
