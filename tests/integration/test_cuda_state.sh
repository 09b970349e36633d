#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_cuda_state.sh - the tracer never changes the CUDA state a program can
# see (issue 28 item 4): bin/cuda_state's four programs (a pending error
# before each of 200 collectives; the current device across a collective on
# another device's communicator; a global-mode capture beside a collective
# in flight; a collective on a stream held busy) print the same, exit the
# same, traced under every device source as untraced. The simulator models
# what they look at as CUDA documents it (tests/unit/test_sim_capture.c).
# Before the fix: the CUDA-event source took the pending error of 2 of the
# 200 (make_chunk's cudaGetLastError), and its poller's cudaEventQuery
# invalidated the program's capture (cudaErrorStreamCaptureInvalidated).
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
export SIMGPU_TIMEOUT=10

for mode in pending device capture sync; do
  sim timeout -k 5 60 "$B/bin/cuda_state" "$mode" > "$T/$mode.plain" 2> "$T/$mode.plain.err"
  rc=$?
  check "untraced $mode (exit $rc): $(head -1 "$T/$mode.plain")" grep -q "^$mode: " "$T/$mode.plain"
  # every source; auto twice: with ranktrace's plugin, and beside a plugin the
  # user chose, which auto keeps (the events then come from CUDA events)
  for src in off auto auto-theirs plugin events; do
    d="$T/$mode-$src"
    envs=(RANKTRACE_DEVICE_SOURCE="${src%-theirs}")
    [ "$src" = auto-theirs ] && envs+=(NCCL_PROFILER_PLUGIN="$T/libnccl-profiler-theirs.so")
    sim env "${envs[@]}" timeout -k 5 90 "$RT" run -o "$d" -- "$B/bin/cuda_state" "$mode" \
      > "$d.out" 2> "$d.err"
    trc=$?
    grep -v '^ranktrace: \|^  rank ' "$d.out" > "$d.prog" # run's summary is not the program's
    check "traced ($src) $mode: the same output and exit as untraced ($trc: $(head -1 "$d.prog"))" \
      bash -c "[ $trc -eq $rc ] && cmp -s '$T/$mode.plain' '$d.prog'"
    check "traced ($src) $mode: no warning of the tracer's" bash -c "! grep -q 'ranktrace: warning' '$d.err' '$d.out'"
  done
done
check "untraced: 200 collectives, each kept its pending error" \
  grep -q 'pending: 200 collectives, 200 kept their error, 0 lost it' "$T/pending.plain"
check "untraced: the capture ends in success" grep -q 'cudaStreamEndCapture: cudaSuccess' "$T/capture.plain"
check "untraced: the current device stays 0" grep -q 'current device 0' "$T/device.plain"

# the events were the device's: in event mode the collectives on device 1's
# communicator completed from their CUDA events (none failed to record)
timeout -k 5 60 "$RT" view --json "$T/device-events" > "$T/device.json"
check "event mode, a communicator on device 1 beside current device 0: 20 of 20 completed on the device" \
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d['device']['ranks'][0]
sys.exit(0 if r['source'] == 'cuda-events' and r['completed'] == 20 else 1)" "$T/device.json"
finish
