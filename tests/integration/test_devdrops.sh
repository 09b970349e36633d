#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_devdrops.sh - every collective's device record is kept or said
# (issue 28 item 2): for each device source, each collective the program
# made has a device completion tied to its call, or an rt_dev_drop record in
# the trace with the collective's (comm_id, seq) and why: more in flight
# than a source keeps (the plugin's pool, the event queue), a group larger
# than a source ties to its calls or keeps, an error of the program's
# pending, a stream being captured. Before: the event source's drops were
# one stderr line at exit, the plugin's silent, and the trace said nothing.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
export SIMGPU_TIMEOUT=20
command -v babeltrace2 > /dev/null || { echo "babeltrace2 is needed"; exit 1; }

# counts DIR: "N completions tied to a call, D drops, by reason R:n ..., seqs a-b"
counts() {
  timeout -k 5 120 babeltrace2 "$1"/rank-* 2> /dev/null | python3 -c '
import re, sys, collections
done, drops, why, seqs = set(), 0, collections.Counter(), []
for l in sys.stdin:
    m = re.search(r"rt_dev_coll: .*dev_phase = 2, comm_id = (\d+), seq = (\d+)", l)
    if m and m.group(1) != "0":
        done.add((m.group(1), m.group(2)))
    m = re.search(r"rt_dev_drop: .*drop_reason = (\d+), comm_id = (\d+), seq = (\d+)", l)
    if m:
        drops += 1; why[int(m.group(1))] += 1; seqs.append(int(m.group(3)))
print(len(done), drops, ",".join("%d:%d" % kv for kv in sorted(why.items())),
      "%d-%d" % (min(seqs), max(seqs)) if seqs else "-")'
}
# job NAME SOURCE ARGS...: bin/cuda_state ARGS traced with that source
job() { local name=$1 src=$2; shift 2
  sim env RANKTRACE_DEVICE_SOURCE="$src" timeout -k 5 120 "$RT" run -o "$T/$name" -- \
    "$B/bin/cuda_state" "$@" > "$T/$name.log" 2>&1
  read -r done drops why seqs <<< "$(counts "$T/$name")"
}
R_POOL=1 R_QUEUE=2 R_GROUP=3 R_PENDING=4 R_CAPTURE=5 R_UNBOUND=6

for src in events plugin; do
  job inflight-$src $src inflight 6000
  r=$([ $src = events ] && echo $R_QUEUE || echo $R_POOL)
  check "$src: 6000 collectives in flight: $done completed, $drops dropped ($why), seqs $seqs" \
    bash -c "[ $done -eq 4096 ] && [ $drops -eq 1904 ] && [ '$why' = '$r:1904' ] && [ '$seqs' = '4097-6000' ]"
  job group-$src $src group 300
  check "$src: a group of 300: every collective completed or said ($done + $drops = 300; $why)" \
    bash -c "[ $((done + drops)) -eq 300 ] && [ $drops -gt 0 ]"
  check "$src: no stderr line of ours for the drops (the trace says them)" \
    bash -c "! grep -q 'dropped' '$T/inflight-$src.log' '$T/group-$src.log'"
done
read -r done drops why seqs <<< "$(counts "$T/group-events")"
check "events: the group's cut is its 44 collectives past 256 ($why, seqs $seqs)" \
  bash -c "[ '$why' = '$R_GROUP:44' ] && [ '$seqs' = '257-300' ]"

job pending events pending 200
check "events: 200 collectives (and 4 more in groups) with an error of the program's pending: each said, none recorded ($done, $drops, $why)" \
  bash -c "[ $done -eq 0 ] && [ $drops -eq 204 ] && [ '$why' = '$R_PENDING:204' ]"
check "... and the program kept its error 200 times" grep -q '200 kept their error, 0 lost' "$T/pending.log"
job capture events capture
check "events: a collective captured into a CUDA graph is said ($why, seq $seqs), the one beside it completed ($done)" \
  bash -c "[ '$why' = '$R_CAPTURE:1' ] && [ '$seqs' = '2-2' ] && [ $done -eq 1 ]"
finish
