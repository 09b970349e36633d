#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_interrupted.sh - an interrupted job is told as one (issue 19, defect 6
# and the SIGSTOPped rank): SIGTERM or SIGINT to `ranktrace run` stops every
# rank through the launcher, a collective apart; the verdict is inconclusive
# (125, "job interrupted"), never collective-mismatch ("never called by rank
# N") nor crashed. A job hung before it was stopped is hung with --stall. A
# live job with one SIGSTOPped rank is hung and names that rank. Every job
# runs in its own session, bounded, killed by its process group at exit.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
export SIMGPU_TIMEOUT=120
JOBS=()
trap 'for p in "${JOBS[@]}"; do kill -CONT -- -"$p"; kill -KILL -- -"$p"; done 2>/dev/null; rm -rf "$T"' EXIT
js() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }
# start OUT [RUN OPTIONS]: run in its own session ($! is run's pid and
# group), bounded by a watchdog that kills the group after 120 s
start() { local out=$1; shift
  LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" setsid "$RT" run \
    -o "$T/$out" "$@" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 100000 > "$T/$out.log" 2>&1 &
  LAST=$!; JOBS+=("$LAST")
  ( sleep 120; kill -KILL -- -"$LAST" ) > /dev/null 2>&1 &
}
# until view --json says: 4 ranks running (and, with "open", each inside a call), at most 60 s
running4() { local i want="d['running'] == 4"
  [ "${2:-}" = open ] && want="$want and all(r['open_calls'] for r in d['ranks'])"
  for i in $(seq 120); do
    timeout -k 2 20 "$RT" view "$1" --json > "$T/poll.json" 2> /dev/null
    js "$T/poll.json" "$want" 2> /dev/null && return 0
    sleep 0.5
  done
  return 1
}
ended() { local i; for i in $(seq 600); do kill -0 "$1" 2> /dev/null || return 0; sleep 0.1; done; return 1; }

# ---- healthy jobs interrupted at various moments: SIGTERM to run, or SIGINT to its group ----
mismatch=0; crashed=0; inter=0
for i in 1 2 3 4; do
  start "i$i"
  running4 "$T/i$i" || echo "# i$i: not running"
  sleep "0.$((i * 3))"
  if [ $((i % 2)) -eq 0 ]; then kill -INT -- -"$LAST"; sig=2; else kill -TERM "$LAST"; sig=15; fi
  ended "$LAST"
  timeout -k 2 30 "$RT" verdict "$T/i$i" > "$T/i$i.v" 2> "$T/i$i.err"; rc=$?
  timeout -k 2 30 "$RT" view "$T/i$i" --json > "$T/i$i.json" 2> /dev/null
  grep -q 'never called\|collective-mismatch' "$T/i$i.v" "$T/i$i.err" && mismatch=$((mismatch + 1))
  js "$T/i$i.json" "any(f['signature'] in ('crashed', 'collective-mismatch') for f in d['findings'])" && crashed=$((crashed + 1))
  [ $rc -eq 125 ] && [ "$(cat "$T/i$i.v")" = inconclusive ] &&
    grep -q "inconclusive: job interrupted: every rank was stopped by signal $sig" "$T/i$i.err" &&
    js "$T/i$i.json" "d['verdict'] == 'inconclusive' and any(f['id'] == 'interrupted' for f in d['findings']) and all(r['state'] == 'killed' for r in d['ranks'])" &&
    inter=$((inter + 1))
  [ $rc -eq 125 ] || { echo "# i$i: verdict $(cat "$T/i$i.v") ($rc)"; head -3 "$T/i$i.err"; }
done
check "4 interrupted jobs: verdict inconclusive (125), 'job interrupted' with the signal ($inter of 4)" [ $inter -eq 4 ]
check "...never collective-mismatch or 'never called' ($mismatch of 4)" [ $mismatch -eq 0 ]
check "...no crash or mismatch among the findings ($crashed of 4)" [ $crashed -eq 0 ]
check "...and stderr says how each rank ended" grep -q 'killed: signal' "$T/i1.err"

# ---- hung (nccl-hang), then interrupted ----
start hang --inject nccl-hang=5
running4 "$T/hang" open || echo "# hang: not running"
sleep 3
kill -TERM "$LAST"; ended "$LAST"
timeout -k 2 30 "$RT" verdict "$T/hang" --stall 2s > "$T/hang.v" 2> "$T/hang.err"; rc=$?
check "hung, then interrupted: with --stall 2s, hung (exit 1, $(cat "$T/hang.v") $rc)" bash -c "[ $rc -eq 1 ] && [ \"\$(cat '$T/hang.v')\" = hung ]"
check "...when the job was interrupted, every rank inside the same AllGather" \
  grep -qE 'hung when the job was interrupted: ranks 0,1,2,3 wait in ncclAllGather #[0-9]+ \([0-9]+ s\)$' "$T/hang.err"
timeout -k 2 30 "$RT" view --json --stall 2s "$T/hang" > "$T/hang.json" 2> /dev/null
check "...and view --json carries the hang's values as data (interrupted, stall_s 2, the call)" \
  js "$T/hang.json" "[(f['values'].get('interrupted'), f['values'].get('stall_s'), f['values'].get('call', '').split(' #')[0]) for f in d['findings'] if f['id'] == 'hang'] == [(True, 2.0, 'ncclAllGather')]"
timeout -k 2 30 "$RT" verdict "$T/hang" > "$T/hang.v2" 2> "$T/hang.err2"; rc=$?
check "...with the default --stall (30 s, more than it hung): inconclusive, interrupted ($rc)" \
  bash -c "[ $rc -eq 125 ] && grep -q 'job interrupted' '$T/hang.err2'"

# ---- a live job, rank 2 SIGSTOPped ----
start stop
running4 "$T/stop" || echo "# stop: not running"
pid2=$(ls "$T/stop/rank-00002" | sed -n 's/^stream-\([0-9]*\)-.*/\1/p' | sort -n | head -1)
kill -STOP "$pid2"
sleep 3
timeout -k 2 30 "$RT" verdict "$T/stop" --stall 2s > "$T/stop.v" 2> "$T/stop.err"; rc=$?
check "rank 2 stopped: hung (exit 1, $(cat "$T/stop.v") $rc)" bash -c "[ $rc -eq 1 ] && [ \"\$(cat '$T/stop.v')\" = hung ]"
check "...naming the stopped rank: $(grep -m1 'hung:' "$T/stop.err")" grep -q 'hung: rank 2 is stopped (process state T' "$T/stop.err"
check "...and only it" bash -c "! grep -qE 'rank [013] has been inside .*stopped|rank [013] is alive.*stopped' '$T/stop.err' && grep -qE 'rank 2 (has been inside|is alive).*its process is stopped' '$T/stop.err'"
kill -CONT "$pid2"
kill -TERM "$LAST"; ended "$LAST"
finish
