#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_comms.sh - every communicator, every host (issue 27), as the trace
# records them, on the asynchronous simulator: the shapes of comm_shapes and
# fsdp_mini --mesh traced, then read back from the trace itself
# (check_comms.py: babeltrace2's text, field by field): each communicator's
# identity, size and ranks however it was made (split, subsets, non-blocking
# init, shrink, scalable, HSDP's two splits), Send/Recv numbered per peer
# with their device records, a pipeline stage waiting for a Send that never
# came, groups of 20 and 300 bound whole on the device, a second host with a
# shifted clock (RANKTRACE_TEST_HOST), forked children kept apart, and the
# fault plan's comm= aimed at one split. Device records from both sources:
# ranktrace's NCCL profiler plugin and CUDA events.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
CHECK="$(dirname "$0")/check_comms.py"
export SIMGPU_TIMEOUT=10

# traced NAME [env...] -- launcher args: the job on 4 ranks, bounded
traced() { local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout -k 5 120 "$RT" run -o "$T/$name" -- "$B/bin/rt-launch" -n 4 "$@" > "$T/$name.log" 2>&1
}
comms() { python3 "$CHECK" "$@" > "$T/check.out" 2>&1; local rc=$?; cat "$T/check.out"; return $rc; }

for shape in split subsets scalable; do
  traced $shape -- "$B/bin/comm_shapes" $shape
  check "$shape: the job runs traced" [ $? -eq 0 ]
  check "$shape: each communicator's identity, size and ranks as its members see them" comms $shape "$T/$shape"
done
traced shrink -- "$B/bin/comm_shapes" shrink
check "shrink: rank 3 left, the others' communicator says so" comms shrink "$T/shrink" 3
traced nb -- "$B/bin/comm_shapes" nonblocking
check "non-blocking init: being made, then made; its 5 collectives numbered on it" comms nonblocking "$T/nb" 5
traced nb_skip -- "$B/bin/comm_shapes" nonblocking --skip 1:3
check "non-blocking init, rank 1 skips 3 of 5: a collective mismatch, never healthy" \
  bash -c "[ \"\$('$RT' verdict '$T/nb_skip' 2>/dev/null)\" = collective-mismatch ]"

for src in plugin events; do
  traced hsdp_$src RANKTRACE_DEVICE_SOURCE=$src -- "$B/bin/fsdp_mini" --mesh hsdp:2 --nonblocking-init --steps 2
  check "HSDP, non-blocking ($src): trained" grep -q 'step 2 loss' "$T/hsdp_$src.log"
  check "HSDP, non-blocking ($src): shard and replicate splits, members as made" comms hsdp "$T/hsdp_$src"
  traced pp_$src RANKTRACE_DEVICE_SOURCE=$src -- "$B/bin/fsdp_mini" --mesh pp --steps 2
  check "pipeline ($src): Send/Recv per peer, matched, each on the device" comms p2p "$T/pp_$src"
  for g in 20 300; do
    traced g${g}_$src RANKTRACE_DEVICE_SOURCE=$src -- "$B/bin/comm_shapes" group --group $g --steps 3
    check "a group of $g ($src): one rt_group each, every device record bound" comms groups "$T/g${g}_$src" $g 3
  done
  # stage 2 stalls before microbatch 17: stage 3 waits in its 17th Recv from 2
  traced hang_$src RANKTRACE_DEVICE_SOURCE=$src SIMGPU_TIMEOUT=4 -- "$B/bin/fsdp_mini" --mesh pp \
    --microbatches 8 --steps 3 --stall-send 2:17
  check "pipeline hang ($src): the job fails" bash -c "! grep -q 'step 3 loss' '$T/hang_$src.log'"
  check "pipeline hang ($src): rank 3's Recv #17 from 2 started, never completed; 2 sent 16" \
    comms hang_recv "$T/hang_$src" 3 2 17
done

# a second host: ranks 2-3 on host b, their clock 50 ms ahead (as NTP might leave it)
traced hosts RANKTRACE_TEST_HOST=2-3=b:+50ms -- "$B/bin/fsdp_mini" --steps 2
check "two hosts: ranks 2-3 say host b, their completions 50 ms later" comms hosts "$T/hosts" b 2,3 50
check "two hosts: the knob says what it did, once per rank" \
  bash -c "[ \$(grep -c 'test knob RANKTRACE_TEST_HOST' '$T/hosts.log') -eq 2 ]"

traced fork -- "$B/bin/comm_shapes" fork
check "fork: the children's calls are theirs, not their ranks'" comms fork "$T/fork"
check "fork: verdict healthy (every parent called every collective)" \
  bash -c "[ \"\$('$RT' verdict '$T/fork' 2>/dev/null)\" = healthy ]"
check "fork: each child's cudaMalloc failed as CUDA's (initialization error), its ncclAllReduce too" \
  bash -c "[ \$(grep -c 'forked child: cudaMalloc: cudaErrorInitializationError, ncclAllReduce: ' '$T/fork.log') -eq 4 ] &&
    ! grep 'forked child' '$T/fork.log' | grep -q 'ncclAllReduce: no error'"
check "fork: view says nothing wrong; each parent's 5 all-reduces and no error its own, the world's 5" \
  python3 -c "import json,subprocess,sys
d=json.loads(subprocess.run(['$RT','view','--json','$T/fork'],capture_output=True,text=True,timeout=60).stdout)
bad=[f['text'] for f in d['findings'] if f['level'] != 'note']
colls=[(r['collectives']['AllReduce'], r['errors']) for r in d['ranks']]
world=[(c['collectives'], c['collectives_fewest']) for c in d['communicators']]
print(bad, colls, world)
sys.exit(bool(bad) or colls != [(5, 0)] * 4 or world != [(5, 5)])"

# comm=: rank 1 skips its 2nd all-reduce on its 2nd split (HSDP's replicate group)
sim timeout -k 5 120 "$RT" run -o "$T/skip" --inject 'ncclAllReduce:skip:rank=1:when=2:comm=split2' -- \
  "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --mesh hsdp:2 --steps 2 > "$T/skip.log" 2>&1
check "comm=split2: fired on rank 1's 2nd all-reduce of that group alone" comms comm_skip "$T/skip" 1 2 2
# view --json: a finding's communicator comes with its members, the global
# ranks whose rt_comm records name it (babeltrace2's text, independently)
"$RT" view --json "$T/skip" > "$T/skip.json" 2> /dev/null
members_ok() { python3 - "$T/skip.json" "$T/skip" <<'PY'
import json, re, subprocess, sys, glob
d = json.load(open(sys.argv[1]))
fs = [f for f in d["findings"] if f["comm"]]
if not fs:
    sys.exit("no finding on a communicator")
for f in fs:
    cid, want = int(f["comm"], 16), {}
    for rd in sorted(glob.glob(sys.argv[2] + "/rank-*")):
        out = subprocess.run(["babeltrace2", rd], capture_output=True, text=True).stdout
        for m in re.finditer(r"rt_comm: .*comm_id = (\d+), nranks = \d+, rank = (\d+), global_rank = (\d+)", out):
            if int(m.group(1)) == cid:
                want[int(m.group(2))] = int(m.group(3))
    got = f["members"]
    if got != [want[k] for k in sorted(want)] or not got:
        sys.exit("%s on %s: members %s, the records say %s" % (f["id"], f["comm"], got, want))
print(len(fs))
PY
}
check "view --json: each finding's communicator with its members, as the rt_comm records say ($(members_ok 2>&1 | tail -1))" members_ok
finish
