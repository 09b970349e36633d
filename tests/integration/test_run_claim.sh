#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_run_claim.sh - one trace directory, one run (issue 19, defects 2 and
# 12): two `run -o SAME` started together never merge, even while their
# launchers take 2 s to start the ranks; a tracer refuses a rank directory of
# another run; --append and Slurm's implied append still join one run, but
# --append only while the run is live (a finished or killed one is refused); an
# existing directory this user cannot write is refused, not run untraced.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
LIB=${RANKTRACE_LIB:-$B/lib/libranktrace.so}

# ---- two runs into one -o at once; a launcher that takes 2 s ----
sim timeout -k 5 120 "$RT" run -o "$T/same" -- sh -c 'sleep 2; exec "$@"' sh \
  "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --steps 1 > "$T/a.out" 2>&1 &
A=$!
sleep 0.3
sim timeout -k 5 120 "$RT" run -o "$T/same" -- sh -c 'touch "$0"; sleep 2; shift; exec "$@"' "$T/b.ran" sh \
  "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --steps 1 --trainer-version 4.53.0 > "$T/b.out" 2>&1
rcb=$?
wait "$A"; rca=$?
check "the second run into the same -o is refused: exit 2 ($rcb), its command never ran" \
  bash -c "[ $rcb -eq 2 ] && [ ! -e '$T/b.ran' ]"
check "...saying the directory belongs to another run ($(head -1 "$T/b.out"))" grep -q 'belongs to another run' "$T/b.out"
check "the first run is traced alone: exit 0 ($rca)" [ $rca -eq 0 ]
timeout -k 2 30 "$RT" verdict "$T/same" > "$T/same.v" 2>&1; rc=$?
check "its trace is its own: healthy, exit 0 ($rc, $(head -1 "$T/same.v"))" bash -c "[ $rc -eq 0 ] && [ \"\$(head -1 '$T/same.v')\" = healthy ]"
check "each rank directory carries the run's id" bash -c \
  "for d in '$T/same'/rank-*; do cmp -s <(cat \"\$d/.ranktrace-run\"; echo) '$T/same/ranktrace-run' || exit 1; done"
check "babeltrace2 reads the trace (the id file is hidden from it)" bash -c "babeltrace2 '$T/same' > /dev/null 2>&1"

# ---- the tracer refuses a rank directory of another run ----
mkdir -p "$T/foreign/rank-00000"
printf 0123456789abcdef0123456789abcdef > "$T/foreign/rank-00000/.ranktrace-run"
sim "$B/bin/callstorm" --calls 50 > "$T/plain.out" 2>&1; rc0=$?
sim env RANKTRACE_DIR="$T/foreign" RANKTRACE_RUN_ID=fedcba9876543210fedcba9876543210 RANK=0 WORLD_SIZE=1 \
  LOCAL_RANK=0 LD_PRELOAD="$LIB" "$B/bin/callstorm" --calls 50 > "$T/f.out" 2> "$T/f.err"; rc1=$?
check "another run's rank directory: the program runs as untraced (status $rc0/$rc1, same output)" \
  bash -c "[ $rc0 -eq $rc1 ] && cmp -s '$T/plain.out' '$T/f.out'"
check "...nothing written into it, one warning" bash -c \
  "[ -z \"\$(ls '$T/foreign/rank-00000' | grep -v '^\.')\" ] && [ \$(grep -c 'ranktrace: warning' '$T/f.err') -eq 1 ]"

# ---- --append: nodes join one run while it runs; Slurm joins its own job step only ----
# node 0's run stays live until $T/go is there; node 1 joins meanwhile
sim env RANK=0 timeout -k 5 60 "$RT" run -o "$T/multi" --append -- sh -c 'while [ ! -e "$0" ]; do sleep 0.1; done; shift; exec "$@"' \
  "$T/go" sh "$B/bin/callstorm" --calls 10 > /dev/null 2>&1 &
n0=$!
for _ in $(seq 100); do [ -e "$T/multi/ranktrace-run" ] && break; sleep 0.1; done
sim env RANK=1 "$RT" run -o "$T/multi" --append -- "$B/bin/callstorm" --calls 10 > /dev/null 2>&1; r1=$?
touch "$T/go"
wait $n0; r0=$?
check "--append while the first runs: both traced ($r0 $r1), one run id in DIR and both rank directories" bash -c \
  "[ $r0 -eq 0 ] && [ $r1 -eq 0 ] && [ \"\$(cat '$T/multi/rank-00000/.ranktrace-run')\" = \"\$(cat '$T/multi/ranktrace-run')\" ] && [ \"\$(cat '$T/multi/rank-00001/.ranktrace-run')\" = \"\$(cat '$T/multi/ranktrace-run')\" ]"
check "...and leave no live file behind" [ ! -e "$T/multi/.ranktrace-live" ]
# the run has ended: a second job joining it would merge two jobs' streams
ls -R "$T/multi" > "$T/multi.before"
sim env RANK=2 "$RT" run -o "$T/multi" --append -- sh -c 'touch "$0"' "$T/late.ran" > "$T/late.out" 2>&1; rl=$?
check "--append onto the finished run: refused, exit 2 ($rl), its command never ran" \
  bash -c "[ $rl -eq 2 ] && [ ! -e '$T/late.ran' ]"
check "...saying the run has finished ($(head -c 120 "$T/late.out"))" grep -q 'holds a finished run' "$T/late.out"
check "...nothing added to the trace" bash -c "ls -R '$T/multi' | cmp -s - '$T/multi.before'"
# a run killed by SIGKILL is not live either: its lock went with it
LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" setsid "$RT" run -o "$T/killed" -- sleep 20 > /dev/null 2>&1 &
JOBS+=("$!"); kpid=$!
for _ in $(seq 100); do [ -e "$T/killed/ranktrace-run" ] && break; sleep 0.1; done
sim "$RT" run -o "$T/killed" --append -- true > "$T/live.out" 2>&1; rlive=$?
kill -KILL "$kpid"; wait "$kpid" 2> /dev/null
sim "$RT" run -o "$T/killed" --append -- true > "$T/dead.out" 2>&1; rdead=$?
kill -KILL -- -"$kpid" 2> /dev/null
check "--append joins a run while its \`run\` lives ($rlive), not once SIGKILL ended it ($rdead)" \
  bash -c "[ $rlive -eq 0 ] && [ $rdead -eq 2 ] && grep -q 'holds a finished run' '$T/dead.out'"
slurm() { sim env -u RANK SLURM_JOB_ID=$1 SLURM_STEP_ID=0 SLURM_NTASKS=2 SLURM_PROCID=$2 "$RT" run -o "$T/slurm" -- "$B/bin/callstorm" --calls 10 > "$T/slurm.out" 2>&1; }
slurm 4242 0; s0=$?
slurm 4242 1; s1=$?
check "Slurm (2 tasks of job 4242): both tasks join one run ($s0 $s1)" bash -c \
  "[ $s0 -eq 0 ] && [ $s1 -eq 0 ] && [ \"\$(cat '$T/slurm/ranktrace-run')\" = slurm-4242.0 ] && [ -d '$T/slurm/rank-00001' ]"
slurm 4243 0; s2=$?
check "another Slurm job into that directory: refused, exit 2 ($s2)" bash -c "[ $s2 -eq 2 ] && grep -q 'belongs to another run' '$T/slurm.out'"
check "the joined trace reads cleanly" bash -c "babeltrace2 '$T/slurm' > /dev/null 2>&1 && babeltrace2 '$T/multi' > /dev/null 2>&1"

# ---- an existing directory this user cannot write ----
if [ "$(id -u)" -eq 0 ]; then ro=/proc; else mkdir "$T/ro"; chmod 555 "$T/ro"; ro="$T/ro"; fi
sim "$RT" run -o "$ro" -- sh -c 'touch "$0"' "$T/ro.ran" > "$T/ro.out" 2>&1; rc=$?
check "-o $ro (exists, not writable): refused, exit 2 ($rc), the command did not run" \
  bash -c "[ $rc -eq 2 ] && [ ! -e '$T/ro.ran' ] && grep -q 'cannot write in' '$T/ro.out'"
sim "$RT" run -o "$ro" --allow-untraced -- sh -c 'touch "$0"' "$T/ro.ran" > "$T/ro2.out" 2>&1; rc=$?
check "...with --allow-untraced it runs untraced, with a warning ($rc)" \
  bash -c "[ $rc -eq 0 ] && [ -e '$T/ro.ran' ] && grep -q 'warning' '$T/ro2.out'"
[ -d "$T/ro" ] && chmod 755 "$T/ro"
finish
