#!/bin/bash
# SPDX-License-Identifier: MIT
# test_hosts.sh - stragglers on the jobs that groups and hosts make hard
# (issue 27 items 4 and 6), on the async simulator, from both device sources
# (ranktrace's NCCL profiler plugin, CUDA events): a group of 20 collectives
# entered 10 ms late once among on-time steps is one late launch, no
# straggler, while a rank 20 ms late into every group is named; ranks 2,3
# as host "b" whose clock reads 50 ms ahead (RANKTRACE_TEST_HOST): the view
# estimates b's offset within 1 ms of it, a healthy job names no straggler,
# a 20 ms straggler on either host (rank 1 delayed on the host, rank 3 on
# the device) is named within 20 % of 20 ms; a clock 50 ms behind alike.
. "$(dirname "$0")/lib.sh" "$1"
. "$(dirname "$0")/device_lib.sh"
export SIMGPU_TIMEOUT=10

# traced NAME [env...] -- [run options] -- program args: 4 ranks, bounded
traced() { local name=$1; shift
  local envs=() opts=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  while [ "$1" != "--" ]; do opts+=("$1"); shift; done
  shift
  env "${envs[@]}" LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout -k 5 120 "$RT" run -o "$T/$name" "${opts[@]}" -- "$B/bin/rt-launch" -n 4 "$@" \
    > "$T/$name.log" 2>&1
  json "$name"
}
STRAGGLER="$DEV['stragglers']['straggler']"
NAMED="[f['rank'] for f in d['findings'] if f['id'] == 'straggler']"
# late NAME RANK: the straggler is RANK, named, its median lateness within 20 % of 20 ms
late() { py "$1" "$STRAGGLER == $2 and $NAMED == [$2] and abs($DEV['stragglers']['ranks'][$2]['median_late_ms'] - 20) <= 4" ||
  { py "$1" "print('# got: straggler', $STRAGGLER, 'median_late_ms', [r['median_late_ms'] for r in $DEV['stragglers']['ranks']]) or True"; false; }; }
# none NAME: no straggler named
none() { py "$1" "$STRAGGLER is None and $NAMED == []" ||
  { py "$1" "print('# got: straggler', $STRAGGLER, 'noise_ms', $DEV['stragglers']['noise_ms'], 'last, median_late_ms', [(r['last'], r['median_late_ms']) for r in $DEV['stragglers']['ranks']], 'hosts', $DEV['hosts']) or True"; false; }; }
# offset NAME MS: host b (ranks 2,3) estimated within 1 ms of MS against the reference host
offset() { py "$1" "len($DEV['hosts']) == 2 and $DEV['hosts'][0]['reference'] and $DEV['hosts'][1]['host'] == 'b' and $DEV['hosts'][1]['ranks'] == [2, 3] and abs($DEV['hosts'][1]['offset_ms'] - ($2)) <= 1" ||
  { py "$1" "print('# got hosts', $DEV['hosts']) or True"; false; }; }
# both CMD1... -- CMD2...: both hold
both() { local a=()
  while [ "$1" != "--" ]; do a+=("$1"); shift; done
  shift
  "${a[@]}" && "$@"; }

GROUP_JOB="$B/bin/comm_shapes group --group 20"
FSDP="$B/bin/fsdp_mini --steps 3"
for src in plugin events; do
  E="RANKTRACE_DEVICE_SOURCE=$src"
  traced g_once_$src "$E" -- -- $GROUP_JOB --rest 1 --steps 16 --late 2:8:10
  # launches judged: 16 at most (the group once, not 20 times; a launch whose
  # start a loaded host saw after its completion is not judged), 8 at least
  check "($src) a group of 20 entered 10 ms late once by rank 2, 15 on-time steps: 8-16 launches judged, no straggler" \
    both py g_once_$src "8 <= $DEV['stragglers']['collectives'] <= 16" -- none g_once_$src
  traced g_every_$src "$E" -- -- $GROUP_JOB --steps 10 --late 2:0:20
  check "($src) rank 2 20 ms late into every group of 20: named, once per group, within 20 %" \
    both late g_every_$src 2 -- py g_every_$src "8 <= $DEV['stragglers']['collectives'] <= 10 and $DEV['stragglers']['ranks'][2]['last'] == $DEV['stragglers']['collectives']"

  H="RANKTRACE_TEST_HOST=2-3=b:+50ms"
  traced hosts_$src "$E" "$H" -- -- $FSDP
  check "($src) ranks 2,3 on host b at +50 ms: offset estimated within 1 ms" offset hosts_$src 50
  check "($src) two hosts, healthy: no straggler" none hosts_$src
  traced late1_$src "$E" "$H" -- --inject '@collective:delay=20ms:rank=1' -- $FSDP
  check "($src) rank 1 (reference host) 20 ms late on the host: named within 20 %" late late1_$src 1
  check "($src) ... and the offset still within 1 ms" offset late1_$src 50
  traced late3_$src "$E" "$H" -- --inject '@collective:devdelay=20ms:rank=3' -- $FSDP
  check "($src) rank 3 (host b) 20 ms late on the device: named within 20 %" late late3_$src 3
  check "($src) ... and the offset still within 1 ms" offset late3_$src 50
  traced behind_$src "$E" RANKTRACE_TEST_HOST=2-3=b:-50ms -- -- $FSDP
  check "($src) host b's clock 50 ms behind: estimated within 1 ms, no straggler" \
    both offset behind_$src -50 -- none behind_$src
done
timeout 60 "$RT" view "$T/hosts_plugin" > "$T/hosts.txt" 2>&1
check "view says host b's clock against the reference's" grep -q 'host b (ranks 2,3): clock +\(49\|50\)\.[0-9]* ms +- [0-9.]* ms against host' "$T/hosts.txt"
finish
