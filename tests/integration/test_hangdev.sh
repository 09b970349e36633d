#!/usr/bin/env bash
# test_hangdev.sh - a hang judged on device truth (viewer/analyse/devhang.c), the
# asynchronous simulator (no SIMGPU_SYNC), 4 ranks of fsdp_mini: the waiting
# ranks' host threads are in a stream synchronisation, the collective that
# never completed shows only in the device records. Each case runs once per
# device source: ranktrace's NCCL profiler plugin (RANKTRACE_DEVICE_SOURCE=
# plugin) and CUDA events (=events), each with device start and completion.
#  - host-side hang: rank 2 hangs in cudaMalloc before AllGather #4; live
#    `verdict --stall` and `view --stall` name #4, ranks 0,1,3 that enqueued
#    it, rank 2 and its host thread inside cudaMalloc; post-mortem (the job
#    stopped), `verdict --stall` says the same as it stood;
#  - the same with a 3 s watchdog: post-mortem, the waiting ranks ended by
#    the NCCL watchdog on #4 (the one its message names), rank 2 the cause;
#  - device-side hang: rank 2's device never starts a collective (a 600 s
#    devdelay): enqueued by all 4, never completed; started on 0,1,3, never
#    on rank 2's (both sources record device starts); post-mortem the same.
#  - either hang stopped with rank 2 first, the others after they returned
#    from their wait (rank 2 gone fails their collective) and went on: the
#    post-mortem verdict judges the job at its first stop, the same.
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
# says NAME RE: the live verdict --stall 2s of $T/NAME matches RE (stderr in
# $T/NAME.verr). A live job moves on: on a loaded host the last of ranks
# 0,1,3 may enqueue #N a moment after the job first reads hung; ask again
# for 20 s at most
says() { local i
  for i in $(seq 20); do
    timeout -k 2 30 "$RT" verdict "$T/$1" --stall 2s > "$T/$1.v" 2> "$T/$1.verr"
    grep -qE "$2" "$T/$1.verr" && return 0
    sleep 1
  done
  return 1
}

# from_source NAME [EXPR]: the live trace's device records come from $SRC's
# source ($SRCNAME), on every rank (and EXPR holds for each rank r)
from_source() { timeout -k 2 30 "$RT" view "$T/$1" --json --stall 2s > "$T/$1.json"
  py "$1" "len($DEV['ranks']) == 4 and all(r['source'] == '$SRCNAME' and (${2:-True}) for r in $DEV['ranks'])"
}

HOST_PLAN='cudaMalloc:hang:rank=2:when=10'
HOST_RE="hung: $COLL was enqueued by ranks 0,1,3 and never completed on any device; rank 2 never enqueued #[0-9]+: its host thread has been inside cudaMalloc for [0-9]+ s \(last collective it enqueued: #[0-9]+\)"
DEV_PLAN='@collective:devdelay=600s:rank=2:when=4'
DEV_RE="hung: [A-Za-z]+ #[0-9]+ \(comm [0-9a-f]+, [0-9]+ [KMG]?i?B\) was enqueued by ranks 0,1,2,3 and never completed on any device; it started on the devices of ranks 0,1,3, never on rank 2's"

# 1. host-side hang, live
host_hang() { local d=$SRC-host re=$HOST_RE
  FSDP_MINI_NCCL_TIMEOUT_S=600 start "$d" "$HOST_PLAN"
  check "$SRC: host hang: the live job is hung" wait_hung "$T/$d"
  says "$d" "$re"
  check "$SRC: verdict --stall: #N enqueued by 0,1,3, never completed; rank 2 never enqueued it, inside cudaMalloc ($(grep -m1 'hung:' "$T/$d.verr"))" \
    grep -qE "$re" "$T/$d.verr" || cat "$T/$d.verr"
  check "$SRC: the rank that never enqueued it had enqueued the one before" bash -c "grep -m1 'hung:' '$T/$d.verr' | sed -E 's/.*AllGather #([0-9]+).*last collective it enqueued: #([0-9]+).*/\1 \2/' | awk '{exit !(\$1 == \$2 + 1)}'"
  timeout -k 2 30 "$RT" view "$T/$d" --stall 2s > "$T/$d.view" 2>&1
  check "$SRC: view --stall says the same" grep -qE "error: $re" "$T/$d.view" || grep hung: "$T/$d.view"
  check "$SRC: the device records came from $SRCNAME" from_source "$d"
  stop "$LAST"
  check "$SRC: the hung job stopped" [ $? -eq 0 ]
  # post-mortem: as the job stood when it was stopped
  timeout -k 2 30 "$RT" verdict "$T/$d" --stall 2s > /dev/null 2> "$T/$d.pm"
  check "$SRC: post-mortem verdict --stall: the same, hung when the job was interrupted" \
    grep -qE "hung when the job was interrupted: ${re#hung: }" "$T/$d.pm" || head -1 "$T/$d.pm"
}

# 2. the watchdog's ending, post-mortem
watchdog() { local d=$SRC-wd rc n
  FSDP_MINI_NCCL_TIMEOUT_S=3 sim run4 "$d" "$RT" run -o "$T/$d" --inject 'cudaMalloc:hang:rank=2:when=10' --; rc=$?
  # the launcher's status is the first rank's end: SIGABRT, or (1 run in ~8)
  # a rank that failed on the aborted peer (exit 1) before the aborting one died
  check "$SRC: watchdog: the job ended by SIGABRT (rc $rc), PyTorch's message" bash -c "{ [ $rc -eq 134 ] || { [ $rc -eq 1 ] && grep -q 'failed (exit status 1)' '$T/$d.log'; }; } && grep -q 'Watchdog caught collective operation timeout' '$T/$d.log'" || tail -8 "$T/$d.log"
  timeout -k 2 30 "$RT" verdict "$T/$d" > "$T/$d.v" 2> "$T/$d.verr"
  # the first watchdog to fire aborts its communicator: the others may fail on
  # the aborted peer (exit 1) before their own watchdog fires
  check "$SRC: post-mortem: the aborted ranks ended by the NCCL watchdog on #N; rank 2 never enqueued it, killed inside cudaMalloc ($(head -1 "$T/$d.verr"))" \
    grep -qE "ranks? [013](,[013])* (was|were) ended by the NCCL watchdog \(SIGABRT\) on $COLL, enqueued and never completed on any device; rank 2 never enqueued #[0-9]+: it was killed \(signal 15\) inside cudaMalloc" "$T/$d.verr"
  check "$SRC: the watchdog finding comes first" bash -c "head -1 '$T/$d.verr' | grep -q 'NCCL watchdog'"
  n=$(grep -m1 -oE 'SeqNum=[0-9]+, OpType=_?ALLGATHER' "$T/$d.log" | grep -oE '[0-9]+')
  check "$SRC: #N is the AllGather the watchdog's message names (SeqNum=$n)" grep -qE "NCCL watchdog \(SIGABRT\) on AllGather #${n:-x} " "$T/$d.verr"
}

# 3. device-side hang: rank 2's device never starts its 4th collective
device_hang() { local d=$SRC-dev re=$DEV_RE
  FSDP_MINI_NCCL_TIMEOUT_S=600 start "$d" "$DEV_PLAN"
  check "$SRC: device hang: the live job is hung" wait_hung "$T/$d"
  timeout -k 2 30 "$RT" verdict "$T/$d" --stall 2s > "$T/$d.v" 2> "$T/$d.verr"
  timeout -k 2 30 "$RT" view "$T/$d" --stall 2s > "$T/$d.view" 2>&1
  check "$SRC: the device records came from $SRCNAME, with device starts" from_source "$d" "r['started'] > 0"
  check "$SRC: verdict --stall: enqueued by all 4, never completed; started on 0,1,3, never on rank 2's ($(grep -m1 'hung:' "$T/$d.verr"))" grep -qE "$re" "$T/$d.verr"
  check "$SRC: view --stall says the same" grep -qE "error: $re" "$T/$d.view" || grep hung: "$T/$d.view"
  stop "$LAST"
  check "$SRC: the hung job stopped" [ $? -eq 0 ]
  # post-mortem: as the job stood when it was stopped
  timeout -k 2 30 "$RT" verdict "$T/$d" --stall 2s > /dev/null 2> "$T/$d.pm"
  check "$SRC: post-mortem verdict --stall: the same, hung when the job was interrupted" \
    grep -qE "hung when the job was interrupted: ${re#hung: }" "$T/$d.pm" || head -1 "$T/$d.pm"
}

# 4. the watchdog's ending on a device that never started the collective
# (issue 28 item 8): rank 3's device held 30 s before its 4th collective, a
# 3 s watchdog; the ending names rank 3's device (it said only "enqueued and
# never completed on any device" before)
watchdog_device() { local d=$SRC-wddev rc
  FSDP_MINI_NCCL_TIMEOUT_S=3 sim run4 "$d" "$RT" run -o "$T/$d" --inject '@collective:devdelay=30s:rank=3:when=4' --; rc=$?
  timeout -k 2 30 "$RT" verdict "$T/$d" > "$T/$d.v" 2> "$T/$d.verr"
  # the launcher's status is the first rank's end: a watchdog's SIGABRT, or
  # (under load) a rank that failed on the aborted peer first: no ending of
  # the watchdog's to name then
  if [ $rc -ne 134 ]; then echo "# $SRC: watchdog_device: the job ended with $rc, not by the watchdog: not judged"; return; fi
  check "$SRC: watchdog, rank 3's device held: the ending names the device that never started it ($(grep -m1 'NCCL watchdog' "$T/$d.verr"))" \
    grep -qE "ranks? [0-3](,[0-3])* (was|were) ended by the NCCL watchdog \(SIGABRT\) on [A-Za-z]+ #[0-9]+ \(comm [0-9a-f]+, [0-9]+ [KMG]?i?B\), enqueued and never completed on any device; it started on the devices of ranks 0,1,2, never on rank 3's" "$T/$d.verr" || head -3 "$T/$d.verr"
}

# 5. the stop reaching rank 2 first (CI, under load: the launcher's SIGTERMs
# a moment apart): rank 2 gone fails ranks 0,1,3's collective (0.1 s later
# in the simulator; NCCL's watchdog aborts it), their wait returns and they
# go on (held in their next collective by a 60 s delay) before their own
# SIGTERM. Each rank is signalled here, in that order (rt-launch's monitor
# interval 60 s: it stops no one itself); the post-mortem verdict must say
# what the live one said, judged at the first stop ("inconclusive: job
# interrupted" before: ranks 0,1,3 read at their own stop, just returned).
# open_in NAME CALL SEQ: ranks 0,1,3 of the live job are inside CALL #SEQ
open_in() { timeout -k 2 30 "$RT" view "$T/$1" --json > "$T/$1.open.json" 2> /dev/null &&
  python3 -c "import json,sys; d=json.load(open('$T/$1.open.json'))
sys.exit(0 if all(any(o['call'] == '$2' and o.get('seq') == $3 for o in r['open_calls'])
                  for r in d['ranks'] if r['rank'] != 2) else 1)"
}
# term_rank NAME R: SIGTERM to rank R's process (its pid from the trace's metadata)
term_rank() { local pid
  pid=$(sed -n 's/^\tpid = \([0-9][0-9]*\);$/\1/p' "$T/$1/rank-0000$2/metadata" | head -1)
  [ -n "$pid" ] && kill -TERM "$pid"
}
stopped_apart() { local what=$1 plan=$2 re=$3 d=$SRC-apart-$1 i n t0 gap
  FSDP_MINI_NCCL_TIMEOUT_S=600 start "$d" "$plan;@collective:delay=60s:rank=0,1,3:when=5" --monitor-interval 60
  check "$SRC: $what hang, stopped apart: the live job is hung" wait_hung "$T/$d"
  says "$d" "$re"
  check "$SRC: $what: live verdict --stall ($(grep -m1 'hung:' "$T/$d.verr"))" grep -qE "$re" "$T/$d.verr"
  t0=$(date +%s%N)
  check "$SRC: $what: rank 2 stopped first" term_rank "$d" 2
  for i in $(seq 100); do open_in "$d" ncclAllGather 5 && break; sleep 0.2; done
  check "$SRC: $what: ranks 0,1,3 returned from their wait after rank 2's stop, inside AllGather #5" open_in "$d" ncclAllGather 5
  n=0
  for i in 0 1 3; do term_rank "$d" $i && n=$((n + 1)); done
  gap=$((($(date +%s%N) - t0) / 1000000))
  check "$SRC: $what: then ranks 0,1,3 stopped, $gap ms after rank 2" [ $n -eq 3 ]
  for i in $(seq 60); do kill -0 "$LAST" 2> /dev/null || break; sleep 0.5; done
  check "$SRC: $what: the job ended" stop "$LAST"
  timeout -k 2 30 "$RT" verdict "$T/$d" --stall 2s > /dev/null 2> "$T/$d.pm"
  # ranks stopped more than 10 s after the first are no one stop (hang.c):
  # a host so loaded that this took 8 s leaves the case unjudged
  if [ $gap -gt 8000 ]; then echo "# $SRC: $what: stopped $gap ms apart: not judged"; return; fi
  check "$SRC: $what: post-mortem verdict --stall, stopped apart: the same as live, judged at the first stop" \
    grep -qE "hung when the job was interrupted: ${re#hung: }" "$T/$d.pm" || head -3 "$T/$d.pm"
}

for SRC in plugin events; do
  export RANKTRACE_DEVICE_SOURCE=$SRC
  SRCNAME=$([ $SRC = plugin ] && echo nccl-profiler-plugin || echo cuda-events)
  host_hang
  watchdog
  device_hang
  watchdog_device
  stopped_apart host "$HOST_PLAN" "$HOST_RE"
  if [ $SRC = events ]; then stopped_apart device "$DEV_PLAN" "$DEV_RE"; fi
done

# 6. no device records (RANKTRACE_DEVICE_SOURCE=off): a live hang names the
# rank the host trace shows never called the collective (it said "no call
# returned on any live rank for N s" before)
export RANKTRACE_DEVICE_SOURCE=off
d=off-host
FSDP_MINI_NCCL_TIMEOUT_S=600 start "$d" 'cudaMalloc:hang:rank=2:when=10'
check "off: host hang: the live job is hung" wait_hung "$T/$d"
re="hung: AllGather #([0-9]+) \(comm [0-9a-f]+, [0-9]+ [KMG]?i?B\) was called by ranks 0,1,3, not by every rank of its communicator \(no device record shows it\); rank 2 never called #[0-9]+: its host thread has been inside cudaMalloc for [0-9]+ s \(last collective it called: #[0-9]+\)"
for i in $(seq 20); do
  timeout -k 2 30 "$RT" verdict "$T/$d" --stall 2s > "$T/$d.v" 2> "$T/$d.verr"
  grep -qE "$re" "$T/$d.verr" && break
  sleep 1
done
check "off: verdict --stall names rank 2, which never called #N, and where it is ($(grep -m1 'hung:' "$T/$d.verr"))" \
  grep -qE "$re" "$T/$d.verr"
stop "$LAST"
finish
