#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_fidelity.sh - the program's descriptors, limits and signals stay its
# own (issue 19): programs that close every descriptor, dup2 over low
# numbers, set RLIMIT_NOFILE 16 or RLIMIT_FSIZE 16 KiB, or run 2000 threads
# give the same stdout, exit status and files traced and untraced, with the
# helper thread and without (RANKTRACE_HELPER=0); their traces read, and a
# trace that could not be written whole is never called healthy.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
LIB="${RANKTRACE_LIB:-$B/lib/libranktrace.so}"
FID="$B/bin/fidelity"

# fidelity NAME MODE ARGS...: run `fidelity MODE ARGS... FILE` untraced and
# traced (both helper modes) and compare; the trace must read (view exit 0)
# and be healthy, or inconclusive (125) when it is not complete. $NOFILE:
# the programs' ulimit -n.
fidelity() {
  local name=$1 o; shift
  o="$T/$name"
  mkdir -p "$o"
  # (stdout through a pipe: RLIMIT_FSIZE does not apply to the program's own output)
  (ulimit -n "${NOFILE:-$(ulimit -n)}" && sim timeout -k 5 120 "$FID" "$@" "$o/plain.file" \
    2> "$o/plain.err" | cat > "$o/plain.out"; echo "${PIPESTATUS[0]}" > "$o/plain.rc")
  for helper in 1 0; do
    local d="$o/trace-$helper"
    (ulimit -n "${NOFILE:-$(ulimit -n)}" && RANKTRACE_HELPER=$helper RANKTRACE_DIR="$d" LD_PRELOAD="$LIB" \
      sim timeout -k 5 120 "$FID" "$@" "$o/traced.file" 2> "$o/traced.err" | cat > "$o/traced.out"
      echo "${PIPESTATUS[0]}" > "$o/traced.rc")
    check "$name (helper=$helper): same stdout traced and untraced" cmp "$T/$name/plain.out" "$T/$name/traced.out"
    check "$name (helper=$helper): same exit status ($(cat "$T/$name/plain.rc")/$(cat "$T/$name/traced.rc"))" \
      cmp -s "$T/$name/plain.rc" "$T/$name/traced.rc"
    check "$name (helper=$helper): the program's file byte for byte" cmp "$T/$name/plain.file" "$T/$name/traced.file"
    local expect=${TRACE_EXPECT:-complete}
    [ $helper = 0 ] && expect=${TRACE_EXPECT0:-$expect}
    check_trace "$name (helper=$helper)" "$d" "$expect"
    rm -rf "$d" "$T/$name/traced.file"
  done
}

# check_trace WHAT DIR complete|capped|untraced
check_trace() {
  local what=$1 d=$2 expect=$3 rc v
  timeout -k 5 60 "$RT" view --json "$d" > "$T/view.json" 2> "$T/view.err"; rc=$?
  timeout -k 5 60 "$RT" verdict "$d" > "$T/verdict.out" 2> "$T/verdict.err"; v=$?
  if [ "$expect" = complete ] || [ "$expect" = capped ]; then
    check "$what: the trace reads (view exit $rc), $expect" \
      bash -c "[ $rc -eq 0 ] && grep -q '\"completeness\": \"$expect\"' '$T/view.json'"
  fi
  if [ "$expect" = complete ]; then
    check "$what: verdict healthy ($v)" [ $v -eq 0 ]
    local made got
    made=$(awk '/ CUDA calls$/ {print $1 + 1}' "$(dirname "$d")/traced.out") # + rt_exit
    got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["events"])' "$T/view.json" 2> /dev/null)
    check "$what: every call in the trace ($got events for $made)" [ "$got" = "$made" ]
  elif [ "$expect" = capped ]; then
    check "$what: events dropped: inconclusive (125, $v), the stop named" \
      bash -c "[ $v -eq 125 ] && grep -q 'trace incomplete: ' '$T/verdict.err'"
    check "$what: the program was warned once" [ "$(grep -c 'tracing stops (' "$(dirname "$d")/traced.err")" = 1 ]
  else
    check "$what: no trace could be written: never a clean bill (verdict $v)" [ $v -eq 125 ]
  fi
}

# 1. a daemon closes every descriptor, opens its file (fd 3), keeps calling:
#    the tracer closed "its" old number and made a stream file on it
fidelity closeall closeall
# ... and while it runs, after closing every descriptor, a reader still sees
#    the rank live (a stream file locked), in both helper modes
locked() { python3 - "$1" <<'PY'
import fcntl, os, struct, sys, glob
n = 0
for f in glob.glob(sys.argv[1] + "/rank-*/stream-*"):
    fd = os.open(f, os.O_RDONLY)
    r = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, struct.pack("hhqqi4x", fcntl.F_RDLCK, 0, 0, 0, 0))
    n += struct.unpack("hhqqi4x", r)[0] != fcntl.F_UNLCK
    os.close(fd)
print(n)
PY
}
for helper in 1 0; do
  d="$T/live-$helper"
  # (bounded by its own 30 s pause and the kill below)
  FIDELITY_PAUSE=1 RANKTRACE_HELPER=$helper RANKTRACE_DIR="$d" LD_PRELOAD="$LIB" \
    LD_LIBRARY_PATH="$SIM" "$FID" closeall "$T/live.file" > /dev/null 2> "$T/live.err" &
  pid=$!
  for i in $(seq 1 300); do grep -q paused "$T/live.err" 2> /dev/null && break; sleep 0.1; done
  check "closeall (helper=$helper): paused, every descriptor closed: the rank is still live" \
    [ "$(locked "$d")" -ge 1 ]
  kill -9 $pid; wait $pid 2> /dev/null
  check "closeall (helper=$helper): killed: no lock left" [ "$(locked "$d")" = 0 ]
  rm -rf "$d"
done

# 2. dup2 over every number 3..63 while streams are being written
fidelity dup2 dup2
# 3. RLIMIT_NOFILE 16: as many files as untraced (was 8 instead of 12); then
#    every number taken, a new thread calls CUDA: the helper makes its file in
#    its own table (the trace whole); without a helper no file can be made:
#    tracing stops and says so (was: that thread's events lost unsaid)
TRACE_EXPECT0=capped fidelity nofile nofile
check "RLIMIT_NOFILE 16, no helper: the warning names the cause" grep -q 'I/O error on the trace file: Too many open files' "$T/nofile/traced.err"
# 4. RLIMIT_FSIZE (exit 153, SIGXFSZ, before): 16 KiB from the start, below
#    the metadata: untraced, said so; 24 KiB: stream files fit the limit, the
#    trace whole; 16 KiB once tracing began: whole; 4 KiB then, below one
#    packet: tracing stops, the trace says so and the verdict is 125
TRACE_EXPECT=untraced fidelity fsize16 fsize 16
check "RLIMIT_FSIZE 16 KiB: the warning names the limit's error" grep -q 'File too large' "$T/fsize16/traced.err"
fidelity fsize24 fsize 24
# ... 0 (ulimit -f 0), a run id to write in the rank directory: untraced,
#     not killed by that write nor by the warning on a stderr file
RANKTRACE_RUN_ID=fidelity-run TRACE_EXPECT=untraced fidelity fsize0 fsize 0
fidelity fsize-late16 fsize-late 16
TRACE_EXPECT=capped fidelity fsize-late4 fsize-late 4
check "RLIMIT_FSIZE 4 KiB: the warning names the limit's error" grep -q 'File too large' "$T/fsize-late4/traced.err"
# 5. 2000 live threads, one CUDA call each, under ulimit -n 1024: the
#    program's open() after them works (one descriptor per thread before)
NOFILE=1024 fidelity threads threads 2000
# 6. ... and the disk full at the 500th file: the threads that never got one
#    have nowhere to say it, the main thread (no CUDA call) neither: the
#    threads that had a file say it as they end (was: "complete", verdict 1,
#    "no recorded end")
RANKTRACE_TEST_ALLOC_FAIL=500:28 TRACE_EXPECT=capped fidelity threads-full threads 2000

finish
