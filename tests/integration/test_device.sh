#!/bin/bash
# SPDX-License-Identifier: MIT
# test_device.sh - device-side completion of collectives through ranktrace's
# NCCL profiler plugin loaded by the simulated NCCL (v5, and v4 as NCCL 2.26
# loads it), and stragglers: a rank delayed on the device by 20 ms per
# collective (devdelay) is named with its lateness within 20 %; a healthy
# run names none; a plugin the user chose is kept.
. "$(dirname "$0")/lib.sh" "$1"
. "$(dirname "$0")/device_lib.sh"
ALL30="len($DEV['ranks']) == 4 and all(r['enqueued'] == 30 and r['started'] == 30 and r['completed'] == 30 for r in $DEV['ranks'])"

sim run4 healthy "$RT" run -o "$T/healthy" --
check "healthy run exits 0" grep -q 'ranks 0-3 exited 0\|exit 0' "$T/healthy.log"
json healthy
check "every rank: 30 collectives enqueued, started and completed on the device" py healthy "$ALL30"
check "the plugin (API v5) was the source" py healthy "all(r['source'] == 'nccl-profiler-plugin' and r['plugin_version'] == 5 for r in $DEV['ranks'])"
check "a healthy run names no straggler" py healthy "$DEV['stragglers']['collectives'] == 30 and $DEV['stragglers']['straggler'] is None"
check "a healthy run has no straggler finding" py healthy "not any(f['id'] == 'straggler' for f in d['findings'])"

sim run4 slow "$RT" run -o "$T/slow" --inject '@collective:devdelay=20ms:rank=2' --
json slow
check "devdelay: every collective still completes on every device" py slow "$ALL30"
check "rank 2, 20 ms late on the device, is the straggler" py slow "$DEV['stragglers']['straggler'] == 2"
check "its mean lateness is within 20 % of 20 ms" py slow "abs($DEV['stragglers']['ranks'][2]['mean_late_ms'] - 20) <= 4"
check "it was last into most collectives" py slow "$DEV['stragglers']['ranks'][2]['share'] >= 0.9"
check "the straggler finding names rank 2 (rank and ranks)" py slow "any(f['id'] == 'straggler' and f['rank'] == 2 and f['ranks'] == [2] for f in d['findings'])"
timeout 60 "$RT" view "$T/slow" > "$T/slow.txt"
check "view says so" grep -q 'rank 2 is the straggler: last into' "$T/slow.txt"

timeout 60 "$RT" export "$T/slow" --perfetto "$T/slow.pf.json" > /dev/null 2>&1
check "Perfetto: 30 device-side slices per rank on a track of their own" python3 -c "
import json, sys
ev = json.load(open('$T/slow.pf.json'))['traceEvents']
dev = [e for e in ev if e.get('cat') == 'device']
names = [e for e in ev if e.get('name') == 'thread_name' and e['args']['name'] == 'device: collectives']
sys.exit(0 if len(names) == 4 and all(sum(e['pid'] == r for e in dev) == 30 for r in range(4)) else 1)"
check "Perfetto: rank 2's collectives waited ~20 ms on their stream, the others' did not" python3 -c "
import json, sys
dev = [e for e in json.load(open('$T/slow.pf.json'))['traceEvents'] if e.get('cat') == 'device']
q = lambda r: sorted(e['args']['queued_us'] for e in dev if e['pid'] == r)[15]
sys.exit(0 if abs(q(2) - 20000) < 4000 and q(0) < 2000 else 1)"

SIMGPU_SYNC=1 sim run4 sync "$RT" run -o "$T/sync" --inject '@collective:devdelay=20ms:rank=2' --
json sync
check "synchronous simulator (collectives inside the call): the same records, the same straggler" \
  py sync "$ALL30 and $DEV['stragglers']['straggler'] == 2"

SIMGPU_PROFILER_VERSION=4 sim run4 v4 "$RT" run -o "$T/v4" --
json v4
check "loaded as NCCL 2.26 would (API v4): the same device records" py v4 "$ALL30 and all(r['plugin_version'] == 4 for r in $DEV['ranks'])"

NCCL_PROFILER_PLUGIN=theirs sim run4 theirs "$RT" run -o "$T/theirs" --
check "a plugin the user set is kept, and run says so" grep -q 'NCCL_PROFILER_PLUGIN is already theirs: keeping it' "$T/theirs.log"
json theirs
check "then completion comes from CUDA events instead (test_devevents.sh)" py theirs "all(r['source'] == 'cuda-events' and r['started'] == 30 for r in $DEV['ranks'])"

NCCL_PROFILER_PLUGIN="$B/lib/libnccl-profiler-ranktrace.so" sim timeout 60 \
  "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --steps 1 > "$T/untraced.log" 2>&1
check "the plugin without the tracer: NCCL runs without it" test $? -eq 0
finish
