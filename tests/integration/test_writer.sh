#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_writer.sh - the native writer under the conditions that break traces:
# SIGKILL at random instants with threads writing, exit() from a signal
# handler, a full filesystem, the free-space reserve, the size cap, the
# flight recorder, short-lived threads, threads freeing each other's
# pointers, and the live-process lock. Every trace is removed after its
# checks; every process is bounded by timeout.
source "$(dirname "$0")/lib.sh" "$1"
RT="$B/bin/ranktrace"
LIB="${RANKTRACE_LIB:-$B/lib/libranktrace.so}"
CS="$B/bin/callstorm"
bt_clean() { timeout -k 5 120 babeltrace2 "$1" > "$T/bt.out" 2> "$T/bt.err" && [ ! -s "$T/bt.err" ]; }
jfield() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
counted() { od -v -An -t u8 "$1" | tr -s ' ' '\n' | awk '{s += $1} END {print s + 0}'; }

# 1. SIGKILL at 20 random instants of a 4-thread allocating rank: every trace
#    reads with rc 0 in view and babeltrace2, and holds every call completed
#    before the kill (at most one call in flight per thread on top: its entry
#    is recorded, marked as never returned).
ok_kills=0; detail=""
for i in $(seq 1 20); do
  d="$T/kill$i"; mkdir -p "$d"
  # no timeout wrapper here: the kill must reach callstorm itself (it always comes)
  # (a plain command, so that $! is callstorm's pid, not a subshell's)
  LD_LIBRARY_PATH="$SIM" RANKTRACE_DIR="$d" LD_PRELOAD="$LIB" "$CS" --threads 4 --calls 3000000 \
    --counter "$T/kill$i.c" > /dev/null 2>&1 &
  pid=$!
  # random instants while the threads write (after the first calls completed)
  for w in $(seq 1 100); do [ "$(counted "$T/kill$i.c" 2> /dev/null)" -gt 0 ] 2> /dev/null && break; sleep 0.01; done
  sleep "0.$(printf '%03d' $((RANDOM % 250)))"
  kill -9 $pid 2> /dev/null; wait $pid 2> /dev/null
  done_calls=$(counted "$T/kill$i.c")
  timeout -k 5 60 "$RT" view --json "$d" > "$T/kv.json" 2> "$T/kv.err"; vrc=$?
  bt=$(timeout -k 5 120 babeltrace2 --component=sink.utils.counter "$d" 2> "$T/kb.err" | awk '/ Event messages?$/ {n = $1} END {print n + 0}')
  brc=${PIPESTATUS[0]}
  bt=$((bt - $(file_records "$d")))
  ev=$(jfield "$T/kv.json" 'd["events"]' 2> /dev/null)
  if [ $vrc -eq 0 ] && [ $brc -eq 0 ] && [ ! -s "$T/kb.err" ] && [ "$bt" = "$ev" ] &&
     [ "$ev" -ge "$done_calls" ] && [ "$ev" -le $((done_calls + 4)) ]; then
    ok_kills=$((ok_kills + 1))
  else
    detail="$detail [kill $i: view rc $vrc, babeltrace2 rc $brc, $bt/$ev events, $done_calls calls: $(head -c 200 "$T/kv.err" "$T/kb.err" | tr '\n' ' ')]"
  fi
  rm -rf "$d" "$T/kill$i.c"
done
check "20 SIGKILLs of a 4-thread rank: $ok_kills/20 traces whole (view and babeltrace2 rc 0, every completed call)$detail" [ $ok_kills -eq 20 ]

# 2. exit() from a signal handler while 4 threads allocate
d="$T/exith"; mkdir -p "$d"
RANKTRACE_DIR="$d" LD_PRELOAD="$LIB" sim timeout -k 1 30 "$CS" --threads 4 --calls 3000000 --exit-in-handler 150 > /dev/null 2>&1
check "exit() in a signal handler: the program's status (3) passes through" [ $? -eq 3 ]
timeout -k 5 60 "$RT" view --json "$d" > "$T/eh.json"; vrc=$?
check "exit() in a signal handler: view reads the trace (rc $vrc)" [ $vrc -eq 0 ]
check "exit() in a signal handler: babeltrace2 reads it cleanly" bt_clean "$d"
check "exit() in a signal handler: the exit status is recorded" [ "$(jfield "$T/eh.json" 'd["ranks"][0]["end"]')" = "exit 3" ]
rm -rf "$d" "$T/bt.out"
# 2b. the same, the threads going on for 300 ms after the tracer's exit work
#     (an atexit handler sleeps): the files they still need take the numbers
#     of the unused ones removed at exit, never leaving a hole (a missing .4
#     before a .5 failed 10 of 10 such runs before, and ~10% of case 2's)
d="$T/exitl"; mkdir -p "$d"
RANKTRACE_DIR="$d" LD_PRELOAD="$LIB" sim timeout -k 1 30 "$CS" --threads 4 --calls 3000000 --exit-in-handler 150 --linger-at-exit 300 > /dev/null 2>&1
check "exit() in a signal handler, threads going on after it: status 3" [ $? -eq 3 ]
timeout -k 5 60 "$RT" view --json "$d" > "$T/el.json" 2> "$T/el.err"; vrc=$?
check "exit() in a signal handler, threads going on after it: no stream file missing (rc $vrc: $(head -c 300 "$T/el.err"))" [ $vrc -eq 0 ]
check "exit() in a signal handler, threads going on after it: babeltrace2 reads it cleanly" bt_clean "$d"
rm -rf "$d" "$T/bt.out"

# 3. a full trace filesystem: the job runs as if untraced, the trace says why
#    it is incomplete. A 1 MiB tmpfs where we may mount one (root, or a user
#    namespace); else ENOSPC injected at the writer's allocation (test knob).
args=(--trainer-version 4.52.4 --steps 20)
sim timeout -k 5 120 "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" "${args[@]}" > "$T/plain.out" 2> /dev/null; rc0=$?
cat > "$T/full.sh" <<EOF
set -u
if mount -t tmpfs -o size=1m tmpfs "$T/mnt" 2> /dev/null; then how=tmpfs; dir="$T/mnt/trace"; else how=knob; dir="$T/full"; export RANKTRACE_TEST_ALLOC_FAIL=2:28; fi
LD_LIBRARY_PATH="$SIM" timeout -k 5 120 "$RT" run -o "\$dir" --min-free 0 -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" ${args[*]} > "$T/full.out" 2> "$T/full.err"
echo \$? > "$T/full.rc"
[ \$how = tmpfs ] && cp -r "\$dir" "$T/full" && umount "$T/mnt"
echo \$how > "$T/full.how"
EOF
mkdir -p "$T/mnt"
if [ "$(id -u)" = 0 ]; then bash "$T/full.sh"; else unshare -rm bash "$T/full.sh" 2> /dev/null || bash "$T/full.sh"; fi
how=$(cat "$T/full.how")
sed '/^ranktrace: [0-9]* rank traces\{0,1\} in /,$d' "$T/full.out" > "$T/full.prog"
check "full filesystem ($how): same exit status ($rc0/$(cat "$T/full.rc"))" [ "$rc0" = "$(cat "$T/full.rc")" ]
check "full filesystem ($how): same program output" cmp -s "$T/plain.out" "$T/full.prog"
check "full filesystem ($how): one warning per process at most" bash -c "[ \$(grep -c 'tracing stops (disk full)' '$T/full.err') -le 4 ]"
timeout -k 5 60 "$RT" view --json "$T/full" > "$T/full.json"
stops=$(jfield "$T/full.json" '" ".join(r["trace_stop"]["reason"] for r in d["ranks"] if r["trace_stop"])')
check "full filesystem ($how): view --json names the reason (${stops:-none})" bash -c "echo '$stops' | grep -q disk-full"
timeout -k 5 60 "$RT" view "$T/full" > "$T/full.view"
check "full filesystem ($how): view says 'trace incomplete: disk full at event N'" grep -q 'trace incomplete: disk full at event [0-9]' "$T/full.view"
check "full filesystem ($how): no rank called 'killed?'" bash -c "! grep -q 'killed?' '$T/full.view' '$T/full.out'"
check "full filesystem ($how): run's summary says so" grep -q 'trace incomplete.*disk full' "$T/full.out"
timeout -k 5 60 "$RT" verdict "$T/full" > "$T/full.verdict" 2>&1; vrc=$?
check "full filesystem ($how): verdict 125 (inconclusive), saying disk full (rc $vrc)" \
  bash -c "[ $vrc -eq 125 ] && grep -q 'disk full' '$T/full.verdict'"
timeout -k 5 60 babeltrace2 "$T/full" > /dev/null 2> "$T/full.bterr"; brc=$?
check "full filesystem ($how): babeltrace2 reads what was written (rc $brc; it warns of the discarded events)" \
  bash -c "[ $brc -eq 0 ] && ! grep -qE ' E |ERROR' '$T/full.bterr' && grep -q 'discarded' '$T/full.bterr'"
rm -rf "$T/full" "$T/mnt"

# 4. the free-space reserve: tracing stops before the filesystem gets full
#    (a reserve larger than any disk stops it at once), the program unchanged
sim timeout -k 5 120 "$RT" run -o "$T/rsv" --min-free 1000T -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" "${args[@]}" > "$T/rsv.out" 2> "$T/rsv.err"; rc=$?
sed '/^ranktrace: [0-9]* rank traces\{0,1\} in /,$d' "$T/rsv.out" > "$T/rsv.prog"
check "reserve: same exit status and program output" bash -c "[ $rc = $rc0 ] && cmp -s '$T/plain.out' '$T/rsv.prog'"
timeout -k 5 60 "$RT" view --json "$T/rsv" > "$T/rsv.json"
check "reserve: every rank's trace says it stopped at the free-space reserve" \
  [ "$(jfield "$T/rsv.json" 'sorted(set(r["trace_stop"]["reason"] for r in d["ranks"] if r["trace_stop"]))')" = "['reserve']" ]
check "reserve: the trace stays small (first file of each thread: $(du -sk "$T/rsv" | cut -f1) KiB)" [ "$(du -sk "$T/rsv" | cut -f1)" -le 400 ]
rm -rf "$T/rsv"

# 5. the size cap: on by default (2 GiB per rank process, in the metadata),
#    and a cap that is reached stops tracing, the program unchanged
sim timeout -k 5 120 "$RT" run -o "$T/dflt" -- "$CS" --calls 10 > /dev/null 2>&1
check "default cap: 2 GiB per rank process, recorded in the metadata" grep -q 'max_bytes = 2147483648;' "$T"/dflt/rank-*/metadata
args40=(--trainer-version 4.52.4 --steps 40)
sim timeout -k 5 120 "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" "${args40[@]}" > "$T/plain40.out" 2> /dev/null; rc40=$?
sim timeout -k 5 120 "$RT" run -o "$T/cap" --max-size 32K -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" "${args40[@]}" > "$T/cap.out" 2> /dev/null; rc=$?
sed '/^ranktrace: [0-9]* rank traces\{0,1\} in /,$d' "$T/cap.out" > "$T/cap.prog"
check "cap: same exit status and program output" bash -c "[ $rc = $rc40 ] && cmp -s '$T/plain40.out' '$T/cap.prog'"
timeout -k 5 60 "$RT" view --json "$T/cap" > "$T/cap.json"
check "cap: each rank's trace says it was capped" \
  [ "$(jfield "$T/cap.json" '[r["trace_stop"]["reason"] if r["trace_stop"] else None for r in d["ranks"]]')" = "['capped', 'capped', 'capped', 'capped']" ]
for a in -1 1e3 99999999999999999999 16777216T 12Q ''; do
  "$RT" run -o "$T/bad" --max-size "$a" -- true > /dev/null 2>&1
  check "--max-size '$a' is refused (exit 2)" [ $? -eq 2 ]
done
"$RT" run -o "$T/small" --max-size 1K -- true > /dev/null 2> "$T/small.err"
check "--max-size below one file is rounded up with a message" grep -q 'using 32K' "$T/small.err"
rm -rf "$T/dflt" "$T/cap" "$T/small" "$T/bad"

# 6. flight recorder: each thread keeps only its last SIZE, readable, with
#    the end of the run in it
sim timeout -k 5 120 "$RT" run -o "$T/ring" --ring 1M -- "$CS" --threads 4 --calls 400000 --counter "$T/ring.c" > /dev/null 2>&1
dir=$(ls -d "$T"/ring/rank-*)
biggest=$(ls "$dir" | grep '^stream-' | sed -E 's/\.[0-9]+$//' | sort -u | while read -r st; do
  cat "$dir/$st" "$dir/$st".* 2> /dev/null | wc -c; done | sort -n | tail -1)
check "ring 1M: no thread keeps more than 1 MiB ($biggest bytes)" [ "$biggest" -le 1048576 ]
check "ring 1M: babeltrace2 reads it cleanly" bt_clean "$T/ring"
timeout -k 5 60 "$RT" view --json "$T/ring" > "$T/ring.json"; vrc=$?
check "ring 1M: view reads it (rc $vrc), ring_bytes in its JSON" bash -c "[ $vrc -eq 0 ] && [ \"\$(jfield() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"ranks\"][0][\"ring_bytes\"])' \"\$1\"; }; jfield '$T/ring.json')\" = 1048576 ]"
check "ring 1M: older events were overwritten ($(jfield "$T/ring.json" 'd["events"]') of $(counted "$T/ring.c") kept)" [ "$(jfield "$T/ring.json" 'd["events"]')" -lt "$(counted "$T/ring.c")" ]
tails=$(awk '{last[$11] = $4} END {for (k in last) print last[k]}' "$T/bt.out" | sort | uniq -c | tr -s ' ' | tr '\n' ';')
check "ring 1M: every worker's last event is its last call, the process's is its exit ($tails)" [ "$tails" = " 4 cudaFree:; 1 rt_exit:;" ]
timeout -k 5 60 "$RT" view "$T/ring" > "$T/ring.view"
check "ring 1M: view says where the trace begins" grep -q 'flight recorder (each thread kept its last 1.0 MiB): the trace begins' "$T/ring.view"
rm -rf "$T/ring" "$T/bt.out"
sim timeout -k 5 120 "$RT" run -o "$T/ringf" --ring 128K -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" "${args[@]}" > /dev/null 2>&1
sim timeout -k 5 120 "$RT" run -o "$T/fullf" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" "${args[@]}" > /dev/null 2>&1
last_coll() { # each rank's last collective, "name seq", sorted
  babeltrace2 "$1" 2> /dev/null | sed -nE 's/^.* (nccl[A-Za-z]+): \{ pid = ([0-9]+),.* seq = ([0-9]+),.*/\2 \1 \3/p' |
    awk '{last[$1] = $2 " " $3} END {for (k in last) print last[k]}' | sort | tr '\n' ';'; }
lr=$(last_coll "$T/ringf"); lf=$(last_coll "$T/fullf")
check "ring 128K on fsdp_mini: the final collective of every rank is kept ($lr / $lf)" bash -c "[ -n '$lf' ] && [ '$lr' = '$lf' ]"
rm -rf "$T/ringf" "$T/fullf"

# 7. short-lived threads: 5000 threads cost a small first file each
sim timeout -k 5 300 "$RT" run -o "$T/short" -- "$CS" --threads 100 --waves 50 --calls 2 > /dev/null 2>&1
kib=$(du -sk "$T/short" | cut -f1)
check "5000 short-lived threads: $kib KiB of trace (8 KiB per thread; was 256 KiB)" [ "$kib" -le 60000 ]
timeout -k 5 60 "$RT" view --json "$T/short" > "$T/short.json"
check "5000 short-lived threads: all 15001 events read" [ "$(jfield "$T/short.json" 'd["events"]')" = 15001 ]
rm -rf "$T/short"

# 8. threads freeing what other threads allocated (addresses reused across
#    threads): no false "freed pointers it never allocated"
sim timeout -k 5 300 "$RT" run -o "$T/mt" -- "$CS" --threads 100 --waves 10 --calls 2000 > /dev/null 2>&1
timeout -k 5 60 "$RT" view --json "$T/mt" > "$T/mt.json"
check "1000 threads doing malloc/free: no 'never allocated' finding" bash -c "! grep -q 'never allocated' '$T/mt.json'"
rm -rf "$T/mt"

# 9. a live rank holds an OFD write lock on its stream files; a killed one does not
d="$T/lock"; mkdir -p "$d"
LD_LIBRARY_PATH="$SIM" RANKTRACE_DIR="$d" LD_PRELOAD="$LIB" "$CS" --calls 2000000 --sleep-after 300000 > "$T/lock.out" 2>&1 &
pid=$!
for i in $(seq 1 300); do grep -q paused "$T/lock.out" 2> /dev/null && break; sleep 0.1; done
locked() { python3 - "$@" <<'PY'
import fcntl, os, struct, sys, glob
n = 0
for f in glob.glob(sys.argv[1] + "/rank-*/stream-*"):
    fd = os.open(f, os.O_RDONLY)
    lk = struct.pack("hhqqi4x", fcntl.F_RDLCK, 0, 0, 0, 0)
    r = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, lk)
    n += struct.unpack("hhqqi4x", r)[0] != fcntl.F_UNLCK
    os.close(fd)
print(n)
PY
}
n_live=$(locked "$d"); total=$(ls "$d"/rank-*/ | grep -c '^stream-')
check "a live rank: its first and its current stream file are locked ($n_live of $total)" [ "$n_live" -ge 1 ]
check "a live rank: the process's first stream file is locked" bash -c "[ \"\$(python3 - '$d' <<'PY'
import fcntl, os, struct, sys, glob
f = sorted(glob.glob(sys.argv[1] + '/rank-*/stream-*'), key=lambda p: (len(p), p))[0]
fd = os.open(f, os.O_RDONLY)
r = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, struct.pack('hhqqi4x', fcntl.F_RDLCK, 0, 0, 0, 0))
print(struct.unpack('hhqqi4x', r)[0] == fcntl.F_WRLCK)
PY
)\" = True ]"
kill -9 $pid; wait $pid 2> /dev/null
check "a killed rank: no lock left" [ "$(locked "$d")" = 0 ]
rm -rf "$d"

finish
