#!/bin/bash
# SPDX-License-Identifier: MIT
# test_devevents.sh - device-side completion from CUDA events (source 2),
# where no profiler plugin reports it: a plugin the user kept, or the mode
# forced with RANKTRACE_DEVICE_SOURCE=events. Every collective enqueued is
# started and completed on the device; a rank delayed 20 ms on the device
# shows it in the completion times and is named the straggler (healthy: none);
# grouped collectives complete after their ncclGroupEnd; a tight loop drops
# no record; auto mode keeps the plugin when it initialised.
. "$(dirname "$0")/lib.sh" "$1"
. "$(dirname "$0")/device_lib.sh"
DONE="len($DEV['ranks']) == 4 and all(r['source'] == 'cuda-events' and r['enqueued'] == 30 and r['completed'] == 30 and r['started'] == 30 for r in $DEV['ranks'])"
# lat DIR RANK: the least ms from an AllGather's enqueue (the call) to its
# completion (rt_dev_coll, source 2), matched on (comm_id, seq)
lat() {
  timeout 60 babeltrace2 --clock-seconds "$T/$1/rank-0000$2" 2>/dev/null | python3 -c "
import re, sys
enq, done = {}, {}
for l in sys.stdin:
    m = re.match(r'\[(\d+\.\d+)\].* (ncclAllGather|rt_dev_coll): .*comm_id = (\d+), seq = (\d+)', l)
    if not m: continue
    k = (m.group(3), m.group(4))
    if m.group(2) == 'ncclAllGather': enq[k] = float(m.group(1))
    elif 'source = 2' in l: done[k] = float(m.group(1))
v = sorted((done[k] - enq[k]) * 1e3 for k in enq if k in done)
print('%.1f' % v[0] if len(v) >= 10 else -1)"
}

NCCL_PROFILER_PLUGIN=theirs sim run4 theirs "$RT" run -o "$T/theirs" --
check "a plugin the user kept: the job exits 0" grep -q 'ranks 0-3 exited 0\|exit 0' "$T/theirs.log"
json theirs
check "user's plugin kept: every rank's 30 collectives started and completed, from CUDA events" py theirs "$DONE"

RANKTRACE_DEVICE_SOURCE=events sim run4 forced "$RT" run -o "$T/forced" --
json forced
check "forced event mode (our plugin loaded, its reports dropped): 30/30 per rank" py forced "$DONE"

sim run4 auto "$RT" run -o "$T/auto" --
json auto
check "auto mode with our plugin initialised: the plugin is the source, no CUDA events" \
  py auto "all(r['source'] == 'nccl-profiler-plugin' and r['started'] == 30 and r['completed'] == 30 for r in $DEV['ranks'])"

RANKTRACE_DEVICE_SOURCE=events sim run4 slow "$RT" run -o "$T/slow" --inject 'ncclAllGather:devdelay=20ms:rank=2' --
json slow
check "devdelay: every collective still completes" py slow "$DONE"
H=$(lat forced 2); S=$(lat slow 2); S0=$(lat slow 0)
echo "# AllGather enqueue->completion, least ms: healthy rank 2 $H; delayed: rank 2 $S, rank 0 $S0"
check "healthy: some AllGather completes within 15 ms of its enqueue" python3 -c "import sys; sys.exit(0 if 0 <= $H < 15 else 1)"
check "rank 2 delayed 20 ms on the device: every completion comes >= 19 ms after its enqueue" \
  python3 -c "import sys; sys.exit(0 if 19 <= $S < 200 else 1)"
check "the others complete with it (they wait for rank 2 on the device)" \
  python3 -c "import sys; sys.exit(0 if $S0 >= 5 else 1)"
check "healthy event mode names no straggler" py forced "$DEV['stragglers']['straggler'] is None"
check "AllGathers 20 ms late on rank 2's device: view names rank 2 the straggler" \
  py slow "$DEV['stragglers']['straggler'] == 2 and any(f['id'] == 'straggler' and f['rank'] == 2 for f in d['findings'])" ||
  # a rare failure under CI's load (1 in many ASan runs): say what view judged, for the next look
  python3 -c "import json; print('# stragglers:', json.dumps(json.load(open('$T/slow.json'))['device']['stragglers']))"
# aglate DIR: median over AllGathers of rank 2's device start minus the mean
# of the others' (rt_dev_coll started, source 2), ms
aglate() {
  for r in 0 1 2 3; do timeout 60 babeltrace2 --clock-seconds "$T/$1/rank-0000$r" 2>/dev/null | sed "s/^/$r /"; done |
  python3 -c "
import re, sys, statistics as st
ag, start = set(), {}
for l in sys.stdin:
    m = re.match(r'(\d) \[(\d+\.\d+)\].* (ncclAllGather|rt_dev_coll): .*comm_id = (\d+), seq = (\d+)', l)
    if not m: continue
    k = (m.group(4), m.group(5))
    if m.group(3) == 'ncclAllGather': ag.add(k)
    elif 'dev_phase = 1' in l and 'source = 2' in l: start.setdefault(k, {})[int(m.group(1))] = float(m.group(2))
v = [(s[2] - st.mean(s[r] for r in (0, 1, 3))) * 1e3 for k, s in start.items() if k in ag and len(s) == 4]
print('%.1f' % st.median(v) if len(v) >= 5 else -1)"
}
L=$(aglate slow)
echo "# rank 2's AllGathers start on the device $L ms after the others' (median)"
check "its lateness in AllGathers is within 20 % of 20 ms" python3 -c "import sys; sys.exit(0 if abs($L - 20) <= 4 else 1)"
# every collective of rank 2 slowed 20 ms on its device (the acceptance case):
# view's own mean lateness, from the CUDA events' start times
RANKTRACE_DEVICE_SOURCE=events sim run4 slowall "$RT" run -o "$T/slowall" --inject '@collective:devdelay=20ms:rank=2' --
json slowall
# (the median: a host stall of 2 s in one collective, under ASan and load,
# moved the mean to 94 ms in 2 of 3 CI runs; the finding says the median too)
check "every collective 20 ms late on rank 2's device: view names rank 2, its median lateness within 20 % of 20 ms" \
  py slowall "$DEV['stragglers']['straggler'] == 2 and abs($DEV['stragglers']['ranks'][2]['median_late_ms'] - 20) <= 4 and any(f['id'] == 'straggler' and f['rank'] == 2 and abs(f['values']['late_ms'] - 20) <= 4 for f in d['findings'])" ||
  py slowall "print('# got: straggler', $DEV['stragglers']['straggler'], 'median_late_ms', [r['median_late_ms'] for r in $DEV['stragglers']['ranks']], 'mean', [r['mean_late_ms'] for r in $DEV['stragglers']['ranks']]) or True"

# grouped: NCCL launches a group's collectives at its outermost ncclGroupEnd;
# here that end is held 50 ms on the host (delay), so every completion comes
# >= 45 ms after the collective's call (an event recorded after the call
# inside the group completed at once)
RANKTRACE_DEVICE_SOURCE=events sim timeout 120 "$RT" run -o "$T/group" --inject 'ncclGroupEnd:delay=50ms' -- \
  "$B/bin/multi_gpu" --devices 2 --steps 3 > "$T/group.log" 2>&1
json group
check "grouped collectives (2 devices, one thread): 12 enqueued, started and completed" \
  py group "[(r['enqueued'], r['started'], r['completed']) for r in $DEV['ranks']] == [(12, 12, 12)]"
G=$(timeout 60 babeltrace2 --clock-seconds "$T"/group/rank-* 2>/dev/null | python3 -c "
import re, sys
enq, done = {}, {}
for l in sys.stdin:
    m = re.match(r'\[(\d+\.\d+)\].* (ncclAll\w+|rt_dev_coll): .*cur_dev = (\d+), .*comm_id = (\d+), seq = (\d+)', l)
    if not m: continue
    k = (m.group(4), m.group(5))
    if m.group(2) != 'rt_dev_coll': enq[k] = min(enq.get(k, 9e18), float(m.group(1)))
    elif 'dev_phase = 2' in l: done.setdefault(k, []).append(float(m.group(1)))
v = [min(done[k]) - enq[k] for k in enq if k in done]
print('%.1f' % (min(v) * 1e3) if len(v) == 6 else -1)")
echo "# grouped: least ms from a collective's call to its completion: $G"
check "grouped: every completion comes after its group's end (>= 45 ms after the call)" \
  python3 -c "import sys; sys.exit(0 if $G >= 45 else 1)"

# a tight loop: 3000 all-reduces without a pause (4000 with the warm-up)
RANKTRACE_DEVICE_SOURCE=events sim timeout 120 "$RT" run -o "$T/tight" -- \
  "$B/bin/device_cost" 3000 3000 > "$T/tight.log" 2>&1
json tight
check "a tight loop: no event record dropped" bash -c "! grep -q 'dropped' '$T/tight.log'"
check "a tight loop: 4000 enqueued, started and completed" \
  py tight "[(r['enqueued'], r['started'], r['completed']) for r in $DEV['ranks']] == [(4000, 4000, 4000)]"

# threads that come and go: each takes over the queue of the one before
RANKTRACE_DEVICE_SOURCE=events sim timeout 120 "$RT" run -o "$T/threads" -- "$B/bin/coll_threads" 50 \
  > "$T/threads.log" 2>&1
json threads
check "50 short-lived threads: 560 enqueued, the 550 launched started and completed, nothing dropped" \
  py threads "[(r['enqueued'], r['started'], r['completed']) for r in $DEV['ranks']] == [(560, 550, 550)] and 'dropped' not in open('$T/threads.log').read()"
finish
