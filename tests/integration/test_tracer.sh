#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_tracer.sh - libranktrace.so and `ranktrace run` on the simulated
# cluster and on NVIDIA's real libraries: traces readable by babeltrace2,
# exact event counts, crash safety, threads, fork, fail-open, rank identity.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
LIB="${RANKTRACE_LIB:-$B/lib/libranktrace.so}"
bt_clean() { # babeltrace2 reads the trace with no warning or error
  babeltrace2 "$1" > "$T/bt.out" 2> "$T/bt.err" && [ ! -s "$T/bt.err" ]
}

# 1. results, errno and data are unchanged by the tracer, call by call
for lib in sim real; do
  if [ $lib = sim ]; then LL="$SIM"; else LL=""; fi
  LD_LIBRARY_PATH="$LL" "$B/bin/api_probe" > "$T/probe.plain" 2> "$T/probe.plain.err"; rc0=$?
  mkdir -p "$T/probe-$lib"
  LD_LIBRARY_PATH="$LL" RANKTRACE_DIR="$T/probe-$lib" LD_PRELOAD="$LIB" "$B/bin/api_probe" > "$T/probe.traced" 2> "$T/probe.traced.err"; rc1=$?
  check "$lib: every interposed call returns the same result/errno/data traced and untraced" cmp -s "$T/probe.plain" "$T/probe.traced"
  check "$lib: same exit status ($rc0/$rc1)" [ $rc0 -eq $rc1 ]
  check "$lib: the probe's trace reads cleanly in babeltrace2" bt_clean "$T/probe-$lib"
done
check "real libcudart: calls fail with cudaErrorInsufficientDriver (35), passed through" grep -q 'cudaMalloc(&d, sizeof(host)) *ret=35' "$T/probe.plain"

# 2. four ranks, healthy: one trace per rank, event counts = calls made
sim "$RT" run -o "$T/good" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --trainer-version 4.52.4 --steps 2 --call-counts "$T/counts" > "$T/good.out" 2>&1
check "ranktrace run returns the command's status (0)" [ $? -eq 0 ]
for r in 0 1 2 3; do
  check "rank-0000$r exists" [ -d "$T/good/rank-0000$r" ]
done
check "no other rank directories (launcher left none)" [ "$(ls "$T/good" | grep -c "^rank-")" -eq 4 ]
check "babeltrace2 reads all ranks with no warning or error" bt_clean "$T/good"
check "run prints one line per rank" [ "$(grep -c '^  rank ' "$T/good.out")" -eq 4 ]
for r in 0 1 2 3; do
  pid=$(awk -F' = |;' '/^\tpid = / {print $2}' "$T/good/rank-0000$r/metadata")
  grep "pid = $pid," "$T/bt.out" | sed -E 's/^.*\] \(.*\) [^ ]+ ([A-Za-z_0-9]+): .*/\1/' | grep -v '^rt_' | sort | uniq -c | awk '{print $2, $1}' | sort > "$T/traced.$r"
  sort "$T/counts.rank$r" > "$T/made.$r"
  check "rank $r: traced calls per API equal the calls fsdp_mini made" cmp -s "$T/traced.$r" "$T/made.$r"
done
check "rank 1 trace: device 1 bound by cudaSetDevice" grep -q 'cudaSetDevice: .*cur_dev = 0, device = 1 }' "$T/bt.out"
grep -E 'nccl(AllGather|ReduceScatter|AllReduce|Broadcast):' "$T/bt.out" | sed -E 's/.*(nccl[A-Za-z]+): .*comm_id = ([0-9]+), seq = ([0-9]+),.*/\1 \2 \3/' | sort | uniq -c > "$T/colls"
check "every collective (kind, comm_id, seq) appears on all 4 ranks" bash -c "[ -s '$T/colls' ] && awk '\$1 != 4 {bad=1} END {exit bad}' '$T/colls'"
check "one communicator identity shared by all ranks" [ "$(awk '{print $3}' "$T/colls" | sort -u | wc -l)" -eq 1 ]
check "every rank recorded exit 0" [ "$(grep -c 'rt_exit: .*status = 0 }' "$T/bt.out")" -eq 4 ]

# 3. 4.53.0: every rank's trace ends with the events just before the failure
sim "$RT" run -o "$T/bad" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --trainer-version 4.53.0 --steps 2 > "$T/bad.out" 2>&1
check "ranktrace run passes the failure through (non-zero)" [ $? -ne 0 ]
bt_clean "$T/bad"
for r in 0 1 2 3; do
  pid=$(awk -F' = |;' '/^\tpid = / {print $2}' "$T/bad/rank-0000$r/metadata")
  # probe events (rt_param, rt_marker...) may follow the last call: look at calls and the end
  grep "pid = $pid," "$T/bt.out" | sed -E 's/^.*\] \(.*\) [^ ]+ ([A-Za-z_0-9]+): .*/\1/' | grep -vE '^rt_(param|param_shape|unwrapped_call|marker|fsdp_forward|fault)$' | tail -2 | tr '\n' ' ' > "$T/tail.$r"
  check "rank $r trace ends: last call cudaMalloc, then exit 1" grep -qx 'cudaMalloc rt_exit ' "$T/tail.$r"
  check "rank $r: exit status 1 recorded" bash -c "grep 'pid = $pid,' '$T/bt.out' | tail -1 | grep -q 'rt_exit: .*status = 1 }'"
  check "rank $r: no all-gather after the init broadcasts" bash -c "! grep 'pid = $pid,' '$T/bt.out' | grep -q ncclAllGather"
done
check "run summary says exit 1 for each rank" [ "$(grep -cE ' exit 1 +[0-9]+ allocation' "$T/bad.out")" -eq 4 ]

# 4. SIGKILL mid-run: everything completed before the kill is read back
mkdir -p "$T/kill"
RANKTRACE_DIR="$T/kill" LD_PRELOAD="$LIB" sim "$B/bin/callstorm" --calls 2000000 --sleep-after 123456 --counter "$T/counter" > "$T/kill.out" 2>&1 &
pid=$!
for i in $(seq 1 300); do grep -q paused "$T/kill.out" 2>/dev/null && break; sleep 0.1; done
kill -9 $pid; wait $pid 2>/dev/null
done_calls=$(od -An -t u8 -N 8 "$T/counter" | tr -d ' ')
check "babeltrace2 reads the killed process's trace cleanly" bt_clean "$T/kill"
check "events read back = calls completed before SIGKILL ($done_calls)" [ "$(bt_count "$T/kill")" = "$done_calls" ]

# 5. 8 threads x 100000 calls: exact counts, one stream per thread (a stream
#    is the files stream-PID-TID[.N], one per chunk: babeltrace2 joins them by
#    the stream instance id in their packet headers)
sim "$RT" run -o "$T/threads" -- "$B/bin/callstorm" --threads 8 --calls 100000 --cheap > "$T/threads.out" 2>&1
dir=$(ls -d "$T"/threads/rank-*)
streams=$(ls "$dir" | grep '^stream-' | sed -E 's/\.[0-9]+$//' | sort -u)
check "8 threads: 8 worker streams + the main thread's (exit)" [ "$(echo "$streams" | wc -l)" -eq 9 ]
per_stream=""
for st in $streams; do
  rm -rf "$T/one" && mkdir "$T/one" && cp "$dir/metadata" "$dir/$st" "$dir/$st".* "$T/one/" 2>/dev/null
  per_stream="$per_stream $(bt_count "$T/one")"
done
check "8 threads: each worker stream holds exactly 100000 events ($per_stream)" \
  [ "$(echo $per_stream | tr ' ' '\n' | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')" = "1:1 100000:8 " ]
check "8 threads x 100000 calls: 800000 events + exit" [ "$(bt_count "$T/threads")" = 800001 ]

# 6. a forked child writes its own files, apart from its parent's rank
# (fork-PID-TID: issue 27, the child's calls on the parent's communicator
# read as the parent's); CUDA's calls fail in it (CUDA's fork rule)
sim "$RT" run -o "$T/fork" -- "$B/bin/callstorm" --calls 1000 --fork > "$T/fork.out" 2>&1
dir=$(ls -d "$T"/fork/rank-*)
check "fork: the rank's stream files are the parent's alone" [ "$(ls "$dir" | grep '^stream-' | sed -E 's/stream-([0-9]+)-.*/\1/' | sort -u | wc -l)" -eq 1 ]
check "fork: the child's are fork-PID-TID" [ "$(ls "$dir" | grep '^fork-' | sed -E 's/fork-([0-9]+)-.*/\1/' | sort -u | wc -l)" -eq 1 ]
check "fork: 2 x 1001 calls + 2 exits, all read by babeltrace2" [ "$(bt_count "$T/fork")" = 2004 ]
check "fork: the rank is the parent's 1001 calls and exit" \
  bash -c "'$RT' view --json '$T/fork' | python3 -c 'import json,sys; r=json.load(sys.stdin)[\"ranks\"][0]; sys.exit(r[\"events\"] != 1002)'"
check "fork: the child's calls failed as CUDA's do in a forked child (cudaErrorInitializationError)" \
  bash -c "mkdir -p '$T/child' && cp '$dir'/fork-* '$dir/metadata' '$T/child/' &&
           babeltrace2 '$T/child' 2>/dev/null | grep cudaMalloc | grep -q 'ret = 3,'"
check "fork: the child's exit is in its own stream" bash -c "babeltrace2 '$T/fork' 2>/dev/null | grep 'rt_exit' | grep -qv \"pid = \$(awk -F' = |;' '/^\tpid = / {print \$2}' '$dir/metadata'),\""

# 6b. a fork soon after the first event, while the tracer's helper thread may
# still be starting: never a hung child (under test-asan, GCC 12's
# AddressSanitizer, which takes no allocator lock around fork, hung about one
# run in 20 before fork waited for the helper's start)
hung=0
for i in $(seq 1 40); do
  rm -rf "$T/forks"
  sim timeout -k 2 20 "$RT" run -o "$T/forks" -- "$B/bin/callstorm" --calls 1000 --fork > /dev/null 2>&1
  [ $? -eq 0 ] || hung=$((hung + 1))
done
rm -rf "$T/forks"
check "fork soon after the first event, 40 runs: none hung or failed ($hung)" [ $hung -eq 0 ]

# 7. fail-open: unwritable output, same output and status
sim "$B/bin/fsdp_mini" --steps 2 > "$T/plain.out" 2> "$T/plain.err"; rc0=$?
sim "$RT" run -o /proc/ranktrace-cannot-write -- "$B/bin/fsdp_mini" --steps 2 > "$T/ro0.out" 2> /dev/null; rc1=$?
check "unwritable -o: refused (exit 2), the job does not run untraced silently" bash -c "[ $rc1 -eq 2 ] && [ ! -s '$T/ro0.out' ]"
sim "$RT" run -o /proc/ranktrace-cannot-write --allow-untraced -- "$B/bin/fsdp_mini" --steps 2 > "$T/ro.out" 2> "$T/ro.err"; rc1=$?
check "unwritable -o --allow-untraced: same exit status ($rc0/$rc1)" [ $rc0 -eq $rc1 ]
check "unwritable -o --allow-untraced: same program output" cmp -s "$T/plain.out" "$T/ro.out"
check "unwritable -o --allow-untraced: exactly one warning" [ "$(grep -c warning "$T/ro.err")" -eq 1 ]
RANKTRACE_DIR=/proc/ranktrace-cannot-write LD_PRELOAD="$LIB" sim "$B/bin/fsdp_mini" --steps 2 > "$T/ro2.out" 2> "$T/ro2.err"; rc2=$?
check "library with an unwritable RANKTRACE_DIR: same status and output" bash -c "[ $rc2 -eq $rc0 ] && cmp -s '$T/plain.out' '$T/ro2.out'"
check "library with an unwritable RANKTRACE_DIR: exactly one warning" [ "$(grep -c 'ranktrace: warning' "$T/ro2.err")" -eq 1 ]

# 8. rank identity from the launcher's environment
sim env -u RANK SLURM_PROCID=5 SLURM_LOCALID=1 SLURM_NTASKS=8 "$RT" run -o "$T/slurm" -- "$B/bin/callstorm" --calls 10 > /dev/null 2>&1
check "Slurm: rank-00005, source SLURM_PROCID" grep -q 'rank_source = "env:SLURM_PROCID"' "$T/slurm/rank-00005/metadata"
check "Slurm: local rank from SLURM_LOCALID" grep -q 'local_rank = 1;' "$T/slurm/rank-00005/metadata"
sim env -u RANK OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_LOCAL_RANK=3 OMPI_COMM_WORLD_SIZE=4 "$RT" run -o "$T/ompi" -- "$B/bin/callstorm" --calls 10 > /dev/null 2>&1
check "Open MPI: rank-00003" grep -q 'rank_source = "env:OMPI_COMM_WORLD_RANK"' "$T/ompi/rank-00003/metadata"
sim env RANK=2 LOCAL_RANK=2 WORLD_SIZE=4 SLURM_PROCID=0 "$RT" run -o "$T/torchrun" -- "$B/bin/callstorm" --calls 10 > /dev/null 2>&1
check "torchrun inside srun: RANK wins" [ -d "$T/torchrun/rank-00002" ]
sim env -u RANK -u SLURM_PROCID "$RT" run -o "$T/nccl" -- "$B/bin/fsdp_mini" --steps 1 > /dev/null 2>&1
check "no launcher: rank learned from ncclCommInitRank" grep -q 'rank_source = "nccl"' "$T/nccl/rank-00000/metadata"
check "no launcher: the trace still reads cleanly after the rename" bt_clean "$T/nccl"

# 9. size cap: a clear record of what was dropped
sim "$RT" run -o "$T/cap" --max-size 1M -- "$B/bin/callstorm" --calls 200000 --cheap > "$T/cap.out" 2> "$T/cap.err"
check "cap: the summary reports discarded events and why" grep -q 'trace incomplete: size cap reached at event .*events discarded: size cap reached' "$T/cap.out"
check "cap: babeltrace2 reports the discarded events" bash -c "babeltrace2 '$T/cap' 2>&1 >/dev/null | grep -qi discarded"
got=$(sed -nE 's/.* ([0-9]+) events .*\(([0-9]+) events discarded.*/\1 \2/p' "$T/cap.out")
# recorded events include the rt_trace_stop record that says why tracing stopped
check "cap: recorded + discarded = calls made + rt_trace_stop ($got)" [ "$(echo $got | awk '{print $1 + $2}')" = 200001 ]
check "cap: the trace says why it stopped" bash -c "babeltrace2 '$T/cap' 2>/dev/null | grep -q 'rt_trace_stop: .*reason = 1,'"

# 10. a crash is recorded and passed through
sim "$RT" run -o "$T/segv" -- "$B/bin/callstorm" --calls 100 --crash > "$T/segv.out" 2>&1
check "SIGSEGV passes through: status 139" [ $? -eq 139 ]
check "SIGSEGV is in the trace" bash -c "babeltrace2 '$T/segv' 2>/dev/null | grep -q 'rt_signal: .*signo = 11'"
check "run summary says signal 11" grep -qE ' signal 11 ' "$T/segv.out"
"$RT" run -o "$T/exit7" -- sh -c 'exit 7' > /dev/null 2>&1
check "ranktrace run returns the command's status (7)" [ $? -eq 7 ]
"$RT" run -o "$T/good" -- true > /dev/null 2>&1
check "refuses to overwrite an existing trace (usage error 2)" [ $? -eq 2 ]
"$RT" run > /dev/null 2>&1
check "run without a command is a usage error" [ $? -eq 2 ]
# two launchers (nodes) on one shared directory, the first live until $T/go
sim env RANK=0 timeout -k 5 60 "$RT" run -o "$T/multi" -- sh -c 'while [ ! -e "$0" ]; do sleep 0.1; done; shift; exec "$@"' \
  "$T/go" sh "$B/bin/callstorm" --calls 10 > /dev/null 2>&1 &
n0=$!
for _ in $(seq 100); do [ -e "$T/multi/ranktrace-run" ] && break; sleep 0.1; done
sim env RANK=1 "$RT" run -o "$T/multi" --append -- "$B/bin/callstorm" --calls 10 > /dev/null 2>&1
sim env RANK=2 SLURM_NTASKS=4 "$RT" run -o "$T/multi" -- "$B/bin/callstorm" --calls 10 > /dev/null 2>&1
touch "$T/go"
wait $n0
check "--append: a second node adds its rank to the same directory" bash -c "[ -d '$T/multi/rank-00000' ] && [ -d '$T/multi/rank-00001' ]"
check "under Slurm with several tasks, --append is implied" [ -d "$T/multi/rank-00002" ]
check "the joined trace reads cleanly" bt_clean "$T/multi"
finish
