#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_run_signals.sh - signals under `ranktrace run` and rt-launch (issue 19,
# defect 7 and rt-launch's SIGHUP): a signal sent to run's process group
# (kill -SIG -PGID, a terminal's Ctrl-C or hangup) reaches the program once,
# as untraced, not once from the sender and again forwarded by run; a signal
# sent to run alone is forwarded, once. rt-launch stops its ranks on SIGHUP,
# SIGTERM and SIGINT and exits 128+sig, as torchrun does. Every job runs in
# its own session, bounded, killed by its process group at exit.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
JOBS=()
# at exit: every job's group, then any process still tracing into $T (ranks
# in groups of their own whose keeper a watchdog killed: found by their
# RANKTRACE_DIR, which only this test's jobs have)
trap 'for p in "${JOBS[@]}"; do kill -KILL -- -"$p" 2>/dev/null; done
  for p in $(traced_into "$T/"); do kill -KILL "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
# traced_into PREFIX: the pids whose RANKTRACE_DIR starts with PREFIX
traced_into() { local p
  for p in /proc/[0-9]*; do
    { tr "\\0" "\\n" < "$p/environ" | grep -q "^RANKTRACE_DIR=$1"; } 2> /dev/null && echo "${p#/proc/}"
  done
}
# counts the signals it gets until 1 s after the first; writes the count
cat > "$T/count.py" <<'PY'
import os, signal, sys, time
n = 0
def on(sig, frame):
    global n
    n += 1
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, on)
open(sys.argv[1] + '.ready', 'w').close()
end = time.time() + 30
while n == 0 and time.time() < end:
    time.sleep(0.02)
time.sleep(1.0)  # a second delivery would land here
open(sys.argv[1], 'w').write(str(n))
PY
# start NAME CMD...: in its own session (pgid = its pid), bounded by a watchdog
start() { local name=$1; shift
  setsid "$@" > "$T/$name.log" 2>&1 &
  LAST=$!; JOBS+=("$LAST")
  ( sleep 60; kill -KILL -- -"$LAST" ) > /dev/null 2>&1 &
}
ready() { local i; for i in $(seq 300); do [ -e "$1.ready" ] && return 0; sleep 0.05; done; return 1; }
ended() { local i; for i in $(seq 200); do kill -0 "$1" 2> /dev/null || return 0; sleep 0.05; done; return 1; }

# counted WHO SIG TARGET: the count the program reports, in $T/n.WHO.SIG.TARGET
counted() { local who=$1 sig=$2 target=$3 f="$T/n.$1.$2.$3"
  if [ "$who" = traced ]; then
    start "$who$sig$target" env LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$RT" run -o "$T/t.$sig.$target" -- python3 "$T/count.py" "$f"
  else
    start "$who$sig$target" python3 "$T/count.py" "$f"
  fi
  ready "$f" || { echo "never ready"; return; }
  if [ "$target" = group ]; then kill -"$sig" -- -"$LAST"; else kill -"$sig" "$LAST"; fi
  ended "$LAST"; wait "$LAST" 2> /dev/null
}
n() { cat "$T/n.$1" 2> /dev/null || echo none; }
for sig in INT TERM HUP; do
  counted plain $sig group
  check "untraced, SIG$sig to the process group: the program gets it once ($(n plain.$sig.group))" [ "$(n plain.$sig.group)" = 1 ]
  counted traced $sig group
  check "traced, SIG$sig to run's process group: the program gets it once ($(n traced.$sig.group))" [ "$(n traced.$sig.group)" = 1 ]
  counted traced $sig pid
  check "traced, SIG$sig to run alone: forwarded, the program gets it once ($(n traced.$sig.pid))" [ "$(n traced.$sig.pid)" = 1 ]
done

# a terminal's Ctrl-C (SI_KERNEL, the foreground group) through a pty
python3 - "$RT" "$T/count.py" "$T/n.tty" "$T/t.tty" > "$T/tty.log" 2>&1 <<'PY'
import os, pty, sys, time, signal
rt, prog, f, out = sys.argv[1:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(rt, [rt, 'run', '-o', out, '--', 'python3', prog, f])
end = time.time() + 30
while not os.path.exists(f + '.ready') and time.time() < end:
    time.sleep(0.05)
os.write(fd, b'\x03')   # Ctrl-C: SIGINT to the terminal's foreground group
end = time.time() + 30
while time.time() < end:
    try:
        os.read(fd, 4096)
    except OSError:
        break
    if os.waitpid(pid, os.WNOHANG)[0] == pid:
        break
try:
    os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)
except OSError:
    pass
PY
check "traced, Ctrl-C on its terminal: the program gets SIGINT once ($(cat "$T/n.tty" 2>/dev/null))" [ "$(cat "$T/n.tty" 2>/dev/null)" = 1 ]

# ---- rt-launch: SIGHUP, SIGTERM, SIGINT stop its ranks; exit 128+sig ----
for sig in HUP TERM INT; do
  rm -f "$T"/rank.*
  start "launch$sig" "$B/bin/rt-launch" -n 2 --grace 2 sh -c 'echo $$ > "$0.$RANK"; exec sleep 30' "$T/rank"
  for i in $(seq 100); do [ -s "$T/rank.0" ] && [ -s "$T/rank.1" ] && break; sleep 0.05; done
  pids="$(cat "$T/rank.0" "$T/rank.1" 2> /dev/null | tr '\n' ' ')"
  kill -"$sig" "$LAST"
  ended "$LAST"; wait "$LAST"; rc=$?
  left=0
  for p in $pids; do
    ended "$p" || left=$((left + 1))
  done
  check "rt-launch on SIG$sig: exit $((128 + $(kill -l $sig))) ($rc), both ranks stopped ($left left running)" \
    bash -c "[ $rc -eq $((128 + $(kill -l $sig))) ] && [ $left -eq 0 ] && [ -n '$pids' ]"
  for p in $pids; do kill -KILL "$p" 2> /dev/null; done
done
# ---- run dies, the job dies with it (issue 28): SIGKILL to run alone ----
# A hung 4-rank job (nccl-hang: each rank waits in its 5th collective), run
# killed with SIGKILL: its keeper stops every process below it (SIGTERM,
# then SIGKILL after 3 s); none is left 5 s later, the trace reads "job
# interrupted". Then ranks that left the launcher's session (as torchrun
# starts its workers: start_new_session), out of reach of any group signal.
# job_left DIR: the processes still running with RANKTRACE_DIR=DIR
job_left() { local p n=0
  for p in /proc/[0-9]*; do
    { tr "\\0" "\\n" < "$p/environ" | grep -qx "RANKTRACE_DIR=$1"; } 2> /dev/null && n=$((n + 1))
  done
  echo $n
}
killed_run() { local name=$1; shift
  start "$name" env LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$RT" run -o "$T/$name" \
    --inject nccl-hang=5 -- "$@"
  local until=$((SECONDS + 30)) # the watchdog ends the job at 60 s
  while [ $SECONDS -lt $until ]; do
    [ "$(ls -d "$T/$name"/rank-* 2> /dev/null | wc -l)" -ge 4 ] && [ "$(job_left "$T/$name")" -ge 4 ] && break
    sleep 0.1
  done
  sleep 1 # the ranks into their hung collective
  before=$(job_left "$T/$name")
  kill -KILL "$LAST"
  sleep 5
  after=$(job_left "$T/$name")
  timeout -k 5 60 "$RT" verdict "$T/$name" > "$T/$name.v" 2>&1; vrc=$?
}
killed_run killed "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 2
check "SIGKILL to run (rt-launch, 4 ranks): $before processes of the job, $after left after 5 s" \
  bash -c "[ $before -ge 5 ] && [ $after -eq 0 ]"
check "its trace reads 'job interrupted' (verdict $vrc: $(tail -2 "$T/killed.v" | head -c 200))" \
  bash -c "[ $vrc -eq 125 ] && grep -q 'job interrupted' '$T/killed.v'"
# a launcher whose ranks each run in a session of their own (torchrun's
# start_new_session), and which itself ignores SIGTERM: only the keeper's
# SIGKILL after the grace period ends it
# (a handler, not '' which the ranks would inherit as SIG_IGN)
cat > "$T/sessions.sh" <<'SH'
trap ':' TERM
for r in 0 1 2 3; do RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=$1 setsid "${@:2}" & done
while [ -n "$(jobs -p)" ]; do wait; done
SH
killed_run sessions bash "$T/sessions.sh" $((20000 + $$ % 20000)) "$B/bin/fsdp_mini" --steps 2
check "SIGKILL to run (ranks in sessions of their own, a launcher deaf to SIGTERM): $before processes, $after left after 5 s" \
  bash -c "[ $before -ge 5 ] && [ $after -eq 0 ]"
check "its trace reads 'job interrupted' (verdict $vrc)" \
  bash -c "[ $vrc -eq 125 ] && grep -q 'job interrupted' '$T/sessions.v'"

# ---- SIGTERM again while the first is recorded ----
# A scheduler signals every process of the job and the launcher forwards its
# own copy: a rank gets SIGTERM twice, microseconds apart. The second, taken
# while the handler of the first wrote its record, killed the rank before the
# record (SA_RESETHAND): "rank 1 died inside ncclAllGather" among ranks
# killed by SIGTERM (CI, 1 run in ~40 under load). Each rank of a hung
# 2-rank job gets SIGTERM in a loop until it is gone (the old handler: 4 of
# 8 jobs lost a rank's record), 3 jobs: every trace reads job interrupted.
flooded=0
for round in 1 2 3; do
  d="$T/flood$round"
  start "flood$round" env LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$RT" run -o "$d" \
    --inject nccl-hang=5 -- "$B/bin/rt-launch" -n 2 --grace 20 "$B/bin/fsdp_mini" --steps 2
  until=$((SECONDS + 30))
  while [ $SECONDS -lt $until ] && [ "$(job_left "$d")" -lt 2 ]; do sleep 0.1; done
  sleep 1 # the ranks into their hung collective
  ranks=""
  for p in /proc/[0-9]*; do
    { tr "\\0" "\\n" < "$p/environ" | grep -qx "RANKTRACE_DIR=$d" && [ "$(cat "$p/comm")" = fsdp_mini ]; } 2> /dev/null &&
      ranks="$ranks ${p#/proc/}"
  done
  # kill() succeeds on a zombie too: the loop ends when the pid is reaped
  timeout -k 5 20 python3 -c '
import os, signal, sys
for p in map(int, sys.argv[1:]):
    try:
        for _ in range(100000):
            os.kill(p, signal.SIGTERM)
    except ProcessLookupError:
        pass' $ranks
  ended "$LAST"
  timeout -k 5 60 "$RT" verdict "$d" > "$d.v" 2>&1; vrc=$?
  if [ $vrc -eq 125 ] && grep -q 'job interrupted' "$d.v"; then
    flooded=$((flooded + 1))
  else
    echo "# flood $round: ranks$ranks, verdict $vrc: $(tail -2 "$d.v" | head -c 300)"
  fi
  rm -rf "$d"
done
check "SIGTERM again and again while the first is recorded: $flooded of 3 traces read 'job interrupted'" \
  [ $flooded -eq 3 ]

finish
