#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_fsdp_mini.sh - fsdp_mini and rt-launch on the simulated cluster and on
# NVIDIA's real libraries (driverless here).
source "$(dirname "$0")/lib.sh"

for n in 1 2 4; do
  sim "$B/bin/rt-launch" -n $n "$B/bin/fsdp_mini" --trainer-version 4.52.4 --steps 4 \
    > "$T/healthy.$n" 2> "$T/healthy.$n.err"
  check "4.52.4 on $n ranks exits 0" [ $? -eq 0 ]
  grep '^\[rank0\]:step' "$T/healthy.$n" | sed 's/^\[rank0\]://' > "$T/loss.$n"
  check "4.52.4 on $n ranks prints 4 steps" [ "$(wc -l < "$T/loss.$n")" -eq 4 ]
done
check "same losses on 1, 2 and 4 ranks" cmp -s "$T/loss.1" "$T/loss.2"
check "same losses on 1 and 4 ranks" cmp -s "$T/loss.1" "$T/loss.4"
first=$(awk 'NR==1{print $4}' "$T/loss.1"); last=$(awk 'END{print $4}' "$T/loss.1")
check "loss decreases ($first -> $last)" awk -v a="$first" -v b="$last" 'BEGIN{exit !(b < a)}'
check "loss has 4 decimals" grep -qE '^step 1 loss [0-9]+\.[0-9]{4}$' "$T/loss.1"

# the real releases (issue 18): 4.53.0 alone trains the unwrapped module, 4.53.1 has the fix
for v in 4.51.3 4.53.1 4.53.2; do
  sim "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --trainer-version $v --steps 2 > "$T/fixed.$v" 2>&1
  check "$v trains (exit 0)" [ $? -eq 0 ]
done

sim "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --trainer-version 4.53.0 --steps 2 > "$T/broken" 2>&1
rc=$?
check "4.53.0: launcher exits non-zero ($rc)" [ $rc -ne 0 ]
for r in 0 1 2 3; do
  check "4.53.0: rank $r prints the exact error" \
    grep -qxF "[rank$r]:RuntimeError: The tensor has a non-zero number of elements, but its data is not allocated yet." "$T/broken"
done
check "4.53.0: no step completes" bash -c "! grep -q 'step 1 loss' '$T/broken'"

# --mesh (issue 27): HSDP, tensor + data parallel, pipeline parallel (and
# non-blocking communicators) train the same model on the same data: the
# same losses as FULL_SHARD, exactly (4 decimals)
for mesh in hsdp:2 tp:2 pp "pp --microbatches 8" "hsdp:2 --nonblocking-init" \
            "tp:2 --nonblocking-init" "pp --nonblocking-init"; do
  name=$(echo "$mesh" | tr ' :' '__')
  sim timeout -k 5 120 "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 4 --mesh $mesh \
    --call-counts "$T/counts.$name" > "$T/mesh.$name" 2>&1
  check "--mesh $mesh exits 0" [ $? -eq 0 ]
  grep '^\[rank0\]:step' "$T/mesh.$name" | sed 's/^\[rank0\]://' > "$T/loss.$name"
  check "--mesh $mesh: the same 4 losses as FULL_SHARD" cmp -s "$T/loss.4" "$T/loss.$name"
done
calls() { awk -v f="$2" '$1 == f {n += $2} END {print n + 0}' "$T"/counts."$1".rank*; }
check "--mesh hsdp:2: 2 splits per rank, all-reduces across the replicas" \
  bash -c "[ $(calls hsdp_2 ncclCommSplit) -eq 8 ] && [ $(calls hsdp_2 ncclAllReduce) -gt $(calls hsdp_2 ncclReduceScatter) ]"
check "--mesh pp: activations and gradients by Send/Recv (4 stages x 4 microbatches x 2 directions, 4 steps)" \
  bash -c "[ $(calls pp ncclSend) -eq 96 ] && [ $(calls pp ncclRecv) -eq 96 ] && [ $(calls pp ncclAllGather) -eq 0 ]"
check "--nonblocking-init: ncclCommInitRankConfig, polled" \
  bash -c "[ $(calls tp_2_--nonblocking-init ncclCommInitRankConfig) -eq 4 ] && [ $(calls tp_2_--nonblocking-init ncclCommGetAsyncError) -ge 4 ]"
# stage 2 stalls before its 3rd microbatch: stage 3 waits in ncclRecv for it
SIMGPU_TIMEOUT=3 sim timeout -k 5 60 "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --mesh pp \
  --stall-send 2:3 --steps 2 > "$T/pp_skip" 2>&1
check "--stall-send 2:3: the job fails (after SIMGPU_TIMEOUT), no step completes, rank 2 says why" \
  bash -c "[ $? -ne 0 ] && ! grep -q 'step 1 loss' '$T/pp_skip' &&
           grep -q 'rank 2: stalls before sending microbatch 3' '$T/pp_skip'"
sim "$B/bin/fsdp_mini" --mesh tp:3 > "$T/tp3" 2>&1
check "--mesh tp:3 with --hidden 16: refused, says why" bash -c "[ $? -eq 2 ] && grep -q 'divisible by 3' '$T/tp3'"
sim "$B/bin/fsdp_mini" --mesh xp > "$T/xp" 2>&1
check "--mesh xp: refused, names the modes" bash -c "[ $? -eq 2 ] && grep -q 'fsdp, hsdp:S, tp:T or pp' '$T/xp'"

# PyTorch's NCCL watchdog: rank 3 hangs on the host (in cudaMalloc) before the
# all-gather #4 (the 4th collective); on the others it is enqueued and never
# completes on the device, their host threads wait in a synchronisation, and
# their watchdog ends them after FSDP_MINI_NCCL_TIMEOUT_S, as PyTorch's does.
start=$(date +%s)
FSDP_MINI_NCCL_TIMEOUT_S=2 SIMGPU_TIMEOUT=60 sim timeout -k 5 60 "$B/bin/ranktrace" run -o "$T/wd" \
  --inject 'cudaMalloc:hang:rank=3:when=10' -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 2 \
  > "$T/wd.out" 2>&1
rc=$?
check "watchdog: the job ends by SIGABRT (rc $rc)" [ $rc -eq 134 ]
check "watchdog: within 30 s of a 2 s timeout ($(( $(date +%s) - start )) s)" [ $(( $(date +%s) - start )) -lt 30 ]
# the first rank's SIGABRT makes the launcher stop the others: at least one says it
wd='^\[rank([012])\]:\[Rank \1\] Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=4, OpType=_ALLGATHER_BASE, NumelIn=[0-9]+, NumelOut=[0-9]+, Timeout\(ms\)=2000\) ran for [0-9]+ milliseconds before timing out\.$'
check "watchdog: a rank names the collective as PyTorch does" grep -qE "$wd" "$T/wd.out"
check "watchdog: every watchdog line is that one" bash -c "[ \$(grep -c Watchdog '$T/wd.out') -eq \$(grep -cE '$wd' '$T/wd.out') ]"
check "watchdog: the process is taken down, as PyTorch says" grep -qE '^\[rank([012])\]:\[Rank \1\] To avoid data inconsistency, we are taking the entire process down\.$' "$T/wd.out"
check "watchdog: rank 3, hung on the host, has no watchdog ending" bash -c "! grep -q '^\[rank3\]:\[Rank 3\] Watchdog' '$T/wd.out'"
FSDP_MINI_NCCL_TIMEOUT_S=20 sim "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 2 > "$T/wd_ok" 2>&1
check "watchdog: a healthy run with a 20 s timeout is not ended (exit $?)" bash -c "! grep -q Watchdog '$T/wd_ok' && grep -q 'step 2 loss' '$T/wd_ok'"

# NVIDIA's libraries, no driver: a clean CUDA error, not a crash.
env -u LD_LIBRARY_PATH "$B/bin/fsdp_mini" > "$T/real" 2>&1
rc=$?
check "real libcudart: exit status 1, not a signal ($rc)" [ $rc -eq 1 ]
check "real libcudart: message names the CUDA error" grep -qE 'cudaError[A-Za-z]+ \(' "$T/real"
check "real libcudart is the one loaded" bash -c "env -u LD_LIBRARY_PATH ldd '$B/bin/fsdp_mini' | grep libcudart | grep -vq '$SIM'"
check "no rpath to sim/ in fsdp_mini" bash -c "! readelf -d '$B/bin/fsdp_mini' | grep -E 'RPATH|RUNPATH' | grep -q sim"

# rt-launch: environment, prefixes, failure propagation.
"$B/bin/rt-launch" -n 3 sh -c 'echo "$RANK/$LOCAL_RANK/$WORLD_SIZE/$LOCAL_WORLD_SIZE $MASTER_ADDR"' > "$T/env" 2>&1
check "rt-launch sets torchrun's environment" grep -qxF "[rank2]:2/2/3/3 127.0.0.1" "$T/env"
start=$(date +%s)
"$B/bin/rt-launch" -n 3 --grace 1 --monitor-interval 0.2 sh -c '[ "$RANK" = 1 ] && exit 7; exec sleep 60' > "$T/fail" 2>&1
rc=$?
check "rt-launch returns the failing rank's status ($rc)" [ $rc -eq 7 ]
check "rt-launch stops the other ranks quickly" [ $(( $(date +%s) - start )) -lt 10 ]
"$B/bin/rt-launch" -n 2 --grace 1 --monitor-interval 0.2 sh -c '[ "$RANK" = 0 ] && kill -SEGV $$; exec sleep 60' > /dev/null 2>&1
check "rt-launch reports a signal as 128+sig" [ $? -eq 139 ]
"$B/bin/rt-launch" > /dev/null 2>&1
check "rt-launch without a command is a usage error" [ $? -eq 2 ]
finish
