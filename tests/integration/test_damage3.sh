#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_damage3.sh - the third damage corpus (scripts/damage-corpus3.py, issue
# 28): records lost are told from records never written. A healthy 400-step
# fsdp_mini trace (4 ranks, main and device-thread streams of several files)
# and one whose device records come from CUDA events, each zeroed one way:
# whole files (first, middle, last), packets of a first file with a later
# file after it, the stretch across a file boundary, a page inside a
# packet's records, records cut from a packet, a device thread's and a
# poller's stream. Each such variant: verdict 125 naming the rank, file and
# offset, view exit 3, view --json damaged; never a finding, never a hang.
# Zeros past the last record written are no loss: healthy. The same
# zeroed file in a trace whose metadata promises nothing (an older writer's)
# reads as before: its zeros are the stream's end.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
S="$(dirname "$0")/../../scripts"
export SIMGPU_TIMEOUT=5
sim timeout -k 5 180 "$RT" run -o "$T/base" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 400 > /dev/null 2>&1
RANKTRACE_DEVICE_SOURCE=events sim timeout -k 5 180 "$RT" run -o "$T/events" -- \
  "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 100 > /dev/null 2>&1
for b in base events; do
  out=$(timeout -k 5 60 "$RT" verdict "$T/$b" 2> /dev/null)
  check "base trace $b reads as healthy ($out)" [ "$out" = healthy ]
done
check "rank 1's main stream has files .1 and .2" bash -c "ls '$T'/base/rank-00001/ | grep -q 'stream-\([0-9]*\)-\1\.2$'"
check "the metadata promises whole, counted files" grep -q 'file_records = 1;' "$T/base/rank-00001/metadata"

python3 "$S/damage-corpus3.py" "$T/base" "$T/events" "$T/corpus" > "$T/variants"
n=$(wc -l < "$T/variants")
check "the corpus holds at least 14 variants ($n)" [ "$n" -ge 14 ]
hangs=0; crashes=0
while read -r v cls; do
  read_variant "$T/corpus/$v"
  case $cls in
    damaged)
      # the reason names the rank, a stream file of that rank and an offset
      check "$v: verdict $out, exit $vrc, view exit $view, because: ${why:-(none)}" bash -c \
        "[ $vrc -eq 125 ] && [ '$out' = inconclusive ] && [ $view -eq 3 ] && grep -qE 'inconclusive: rank ([0-9]+) trace damaged: .*/rank-0*\\1/stream-[0-9]+-[0-9]+(\\.[0-9]+)?: offset [0-9]+: ' '$T/v.err'"
      check "$v: view --json says damaged, with the reason" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['completeness'] == 'damaged' and d['inconclusive'], d['completeness']" "$T/v.json" ;;
    healthy)
      check "$v: nothing written was lost: verdict $out, exit $vrc, view exit $view" bash -c "[ $vrc -eq 0 ] && [ '$out' = healthy ] && [ $view -eq 0 ]" ;;
    *) bad "$v: unknown class $cls" ;;
  esac
done < "$T/variants"
check "no reader crashed ($crashes) or hung ($hangs) on $n variants" [ $((crashes + hangs)) -eq 0 ]

# an older writer's trace (no file_records): a zeroed file is its stream's
# end, as the reader always read it (golden outputs keep such traces' views)
cp -r "$T/corpus/zero-rank1-main-file1" "$T/old"
sed -i '/file_records/d' "$T"/old/rank-*/metadata
out=$(timeout -k 5 30 "$RT" verdict "$T/old" 2> "$T/old.err"); rc=$?
check "a trace that promises nothing reads as before: no damage found in the zeroed file ($out, $rc)" \
  bash -c "[ $rc -ne 125 ] && ! grep -q 'trace damaged' '$T/old.err'"
finish
