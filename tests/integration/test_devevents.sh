#!/bin/bash
# SPDX-License-Identifier: MIT
# test_devevents.sh - device-side completion from CUDA events (source 2),
# where no profiler plugin reports it: a plugin the user kept, or the mode
# forced with RANKTRACE_DEVICE_SOURCE=events. Every collective enqueued is
# completed on the device; a rank delayed 20 ms on the device shows it in
# the completion times; auto mode keeps the plugin when it initialised.
. "$(dirname "$0")/lib.sh" "$1"
. "$(dirname "$0")/device_lib.sh"
DONE="len($DEV['ranks']) == 4 and all(r['source'] == 'cuda-events' and r['enqueued'] == 30 and r['completed'] == 30 and r['started'] == 0 for r in $DEV['ranks'])"
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
check "user's plugin kept: every rank's 30 collectives completed, from CUDA events" py theirs "$DONE"

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
finish
