#!/usr/bin/env bash
# test_hangdev.sh - a hang judged on device truth (viewer/devhang.c), the
# asynchronous simulator (no SIMGPU_SYNC), 4 ranks of fsdp_mini with the
# NCCL profiler plugin: the waiting ranks' host threads are in a stream
# synchronisation, the collective that never completed shows only in the
# device records.
#  - host-side hang: rank 2 hangs in cudaMalloc before AllGather #4; live
#    `verdict --stall` and `view --stall` name #4, ranks 0,1,3 that enqueued
#    it, rank 2 and its host thread inside cudaMalloc;
#  - the same with a 3 s watchdog: post-mortem, the waiting ranks ended by
#    the NCCL watchdog on #4, rank 2 named as the cause;
#  - device-side hang: rank 2's device never starts a collective (a 600 s
#    devdelay): enqueued by all 4, started on 0,1,3, never on rank 2's.
# Usage: test_hangdev.sh BUILD_DIR
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/device_lib.sh"
export SIMGPU_TIMEOUT=120  # the simulated NCCL must not time the hang out itself
unset SIMGPU_SYNC
# until verdict --stall 2s says hung (40 s at most)
wait_hung() { local d=$1 i
  for i in $(seq 40); do
    [ "$(timeout -k 2 20 "$RT" verdict "$d" --stall 2s 2> /dev/null)" = hung ] && return 0
    sleep 1
  done
  return 1
}
COLL='AllGather #([0-9]+) \(comm [0-9a-f]+, [0-9]+ [KMG]?i?B\)'

# 1. host-side hang, live
FSDP_MINI_NCCL_TIMEOUT_S=600 start host 'cudaMalloc:hang:rank=2:when=10'
check "host hang: the live job is hung" wait_hung "$T/host"
# a live job moves on: on a loaded host the last of ranks 0,1,3 may enqueue
# #N a moment after the job first reads hung; ask again for 20 s at most
HOSTRE="hung: $COLL was enqueued by ranks 0,1,3 and never completed on any device; rank 2 never enqueued #[0-9]+: its host thread has been inside cudaMalloc for [0-9]+ s \(last collective it enqueued: #[0-9]+\)"
for i in $(seq 20); do
  timeout -k 2 30 "$RT" verdict "$T/host" --stall 2s > "$T/host.v" 2> "$T/host.verr"
  grep -qE "$HOSTRE" "$T/host.verr" && break
  sleep 1
done
check "verdict --stall: #N enqueued by 0,1,3, never completed; rank 2 never enqueued it, inside cudaMalloc ($(grep -m1 'hung:' "$T/host.verr"))" \
  grep -qE "$HOSTRE" "$T/host.verr" || cat "$T/host.verr"
check "the rank that never enqueued it had enqueued the one before" bash -c "grep -m1 'hung:' '$T/host.verr' | sed -E 's/.*AllGather #([0-9]+).*last collective it enqueued: #([0-9]+).*/\1 \2/' | awk '{exit !(\$1 == \$2 + 1)}'"
timeout -k 2 30 "$RT" view "$T/host" --stall 2s > "$T/host.view" 2>&1
check "view --stall says the same" grep -qE "error: hung: $COLL was enqueued by ranks 0,1,3 and never completed on any device; rank 2 never enqueued" "$T/host.view"
stop "$LAST"
check "the hung job stopped" [ $? -eq 0 ]

# 2. the watchdog's ending, post-mortem
FSDP_MINI_NCCL_TIMEOUT_S=3 sim run4 wd "$RT" run -o "$T/wd" --inject 'cudaMalloc:hang:rank=2:when=10' --; rc=$?
check "watchdog: the job ended by SIGABRT (rc $rc), PyTorch's message" bash -c "[ $rc -eq 134 ] && grep -q 'Watchdog caught collective operation timeout' '$T/wd.log'" || tail -8 "$T/wd.log"
timeout -k 2 30 "$RT" verdict "$T/wd" > "$T/wd.v" 2> "$T/wd.verr"
# the first watchdog to fire aborts its communicator: the others may fail on
# the aborted peer (exit 1) before their own watchdog fires
check "post-mortem: the aborted ranks ended by the NCCL watchdog on #N; rank 2 never enqueued it, killed inside cudaMalloc ($(head -1 "$T/wd.verr"))" \
  grep -qE "ranks? [013](,[013])* (was|were) ended by the NCCL watchdog \(SIGABRT\) on $COLL, enqueued and never completed on any device; rank 2 never enqueued #[0-9]+: it was killed \(signal 15\) inside cudaMalloc" "$T/wd.verr"
check "the watchdog finding comes first" bash -c "head -1 '$T/wd.verr' | grep -q 'NCCL watchdog'"

# 3. device-side hang: rank 2's device never starts its 4th collective
FSDP_MINI_NCCL_TIMEOUT_S=600 start dev '@collective:devdelay=600s:rank=2:when=4'
check "device hang: the live job is hung" wait_hung "$T/dev"
timeout -k 2 30 "$RT" verdict "$T/dev" --stall 2s > "$T/dev.v" 2> "$T/dev.verr"
check "verdict --stall: enqueued by all 4, never completed, started on 0,1,3 not on rank 2's ($(grep -m1 'hung:' "$T/dev.verr"))" \
  grep -qE "hung: [A-Za-z]+ #[0-9]+ \(comm [0-9a-f]+, [0-9]+ [KMG]?i?B\) was enqueued by ranks 0,1,2,3 and never completed on any device; it started on the devices of ranks 0,1,3, never on rank 2's" "$T/dev.verr"
stop "$LAST"
check "the hung job stopped" [ $? -eq 0 ]
finish
