#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_jobs.sh - the model's parallel pass (viewer/load/parallel.c): view, view
# --json and verdict say the same, byte for byte, for --jobs 1, 2, 3 and 8
# and for windows of 1, 5 and 300 events (RANKTRACE_ROUND_EVENTS: the
# replay then overlaps the rank jobs many times), on real traces: healthy,
# 4.53.0, split communicators, a 4-thread callstorm, a SIGKILLed rank, a
# synthetic 16-rank trace, a 200-rank one with damage in five ranks (the
# load's threads: load/fanout.c), and every variant of the damage corpus.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
L="$B/bin/rt-launch"
export SIMGPU_TIMEOUT=5

outputs() { # DIR OUT JOBS [WINDOW]: view, view --json, verdict into OUT
  local d=$1 o=$2 j=$3 w=${4:-}
  (
    if [ -n "$w" ]; then export RANKTRACE_ROUND_EVENTS=$w; fi
    timeout -k 5 60 "$RT" view "$d" --all --jobs "$j" > "$o.view" 2>&1 < /dev/null; echo "rc $?" >> "$o.view"
    timeout -k 5 60 "$RT" view "$d" --json --jobs "$j" > "$o.json" 2>&1 < /dev/null; echo "rc $?" >> "$o.json"
    RANKTRACE_JOBS=$j timeout -k 5 60 "$RT" verdict "$d" > "$o.verdict" 2>&1 < /dev/null; echo "rc $?" >> "$o.verdict"
  )
}
same() { # NAME DIR: every --jobs and window against --jobs 1
  local n=$1 d=$2 diffs=""
  outputs "$d" "$T/$n.ref" 1
  for j in 2 3 8; do
    for w in "" 1 5 300; do
      outputs "$d" "$T/$n.j$j" "$j" "$w"
      for k in view json verdict; do
        cmp -s "$T/$n.ref.$k" "$T/$n.j$j.$k" || diffs="$diffs --jobs $j window ${w:-default} ($k);"
      done
    done
  done
  check "$n: same output for --jobs 1, 2, 3, 8 and any window${diffs:+: differs at$diffs}" [ -z "$diffs" ]
}

run() { # NAME CMD...: traced
  local n=$1; shift
  sim timeout -k 5 120 "$RT" run -o "$T/$n" -- "$@" > /dev/null 2>&1
}
run healthy "$L" -n 4 "$B/bin/fsdp_mini" --steps 3
same healthy "$T/healthy"
run tf4530 "$L" -n 4 "$B/bin/fsdp_mini" --steps 3 --trainer-version 4.53.0
same tf4530 "$T/tf4530"
run split "$L" -n 4 "$B/bin/split_job"
same split "$T/split"
run storm "$B/bin/callstorm" --calls 20000 --threads 4
same callstorm "$T/storm"
sim timeout -k 5 120 "$RT" run -o "$T/killed" --inject 'rank-dies=2@3' -- \
  "$L" -n 4 "$B/bin/fsdp_mini" --steps 3 > /dev/null 2>&1
same killed "$T/killed"
"$B/bin/gen_trace" --ranks 16 --events 20000 --out "$T/gen" > /dev/null
same gen16 "$T/gen"
# 200 ranks: the load reads their metadata and opens their streams on the
# pass's threads (load/fanout.c, chunks of 32 ranks); damage in ranks of
# different chunks reads the same, in the same order, for any --jobs
"$B/bin/gen_trace" --ranks 200 --events 40 --out "$T/wide" > /dev/null
rm "$T/wide/rank-00037/metadata"                                  # no metadata
truncate -s 3000 "$T/wide/rank-00101/metadata"                    # metadata cut short
s=$(ls "$T/wide/rank-00150/" | grep '^stream-' | head -1)
rm "$T/wide/rank-00150/$s" && ln -s /dev/zero "$T/wide/rank-00150/$s" # a stream that is a link
s=$(ls "$T/wide/rank-00170/" | grep '^stream-' | head -1)
truncate -s 3000 "$T/wide/rank-00170/$s"                          # a stream cut in its packet
mkdir "$T/wide/rank-00064x"                                       # a rank directory, empty
same wide200 "$T/wide"
check "wide200: its five damaged ranks are warned of, in rank order" \
  bash -c "grep '^ranktrace view: warning: ' '$T/wide200.ref.view' | grep -o 'rank-[0-9x]*' | tr '\n' ' ' |
           grep -qx 'rank-00037 rank-00064x rank-00101 rank-00150 rank-00170 '"
check "the verdicts differ between these traces (the comparison is not blind)" \
  bash -c "[ \"\$(cat '$T'/*.ref.verdict | sort -u | wc -l)\" -ge 3 ]"

python3 "$(dirname "$0")/../../scripts/damage-corpus.py" "$T/healthy" "$T/corpus" > "$T/variants"
bad=""
while read -r v; do
  outputs "$T/corpus/$v" "$T/d.ref" 1
  for j in 2 8; do
    outputs "$T/corpus/$v" "$T/d.j" "$j" 3
    for k in view json verdict; do cmp -s "$T/d.ref.$k" "$T/d.j.$k" || bad="$bad $v/--jobs $j ($k)"; done
  done
done < "$T/variants"
check "damage corpus ($(wc -l < "$T/variants") variants): same output for --jobs 1, 2 and 8${bad:+: differs at$bad}" [ -z "$bad" ]
finish
