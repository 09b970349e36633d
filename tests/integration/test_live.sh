#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_live.sh - live and hung jobs (issue 9 item 4): a job still running is
# never called dead; a 4-rank job hung in a collective (nccl-hang) is `hung`
# while it runs, naming each rank's open collective and its age, and `view
# --watch` shows it; when only rank 2 hangs (in cudaMalloc, injected) while
# the others wait for the collective it never enqueued (device records), rank 2 is named the laggard; after the
# launcher kills the job, each rank's end is told (killed, exited, vanished).
# Every job runs in its own process group under timeout, killed at exit.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
export SIMGPU_TIMEOUT=120  # the simulated NCCL must not time the hang out itself
js() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }

# wait (at most 40 s) until view --json says: 4 ranks running, each inside a call
wait_stuck() { local d=$1 i
  for i in $(seq 80); do
    timeout -k 2 20 "$RT" view "$d" --json > "$T/poll.json" 2> /dev/null
    js "$T/poll.json" "d['running'] == 4 and all(r['open_calls'] for r in d['ranks'])" 2> /dev/null && return 0
    sleep 0.5
  done
  return 1
}

# ---- every rank hangs in its 5th collective ----
start hang nccl-hang=5
check "nccl-hang: 4 ranks running, each inside a call" wait_stuck "$T/hang"
sleep 2.5
timeout -k 2 30 "$RT" verdict "$T/hang" --stall 2s > "$T/hang.v" 2> "$T/hang.verr"; rc=$?
check "while it runs: verdict hung (exit 1, got $(cat "$T/hang.v") $rc)" bash -c "[ $rc -eq 1 ] && [ \"\$(cat '$T/hang.v')\" = hung ]"
for r in 0 1 2 3; do
  check "verdict names rank $r's open collective and its age" grep -qE "rank $r has been inside ncclAllGather #[0-9]+ for [0-9]+ s" "$T/hang.verr"
done
timeout -k 2 30 "$RT" view "$T/hang" --json --stall 2s > "$T/hang.json"
check "view --json: hung, trace live, 4 running ranks inside the same AllGather for >= 2 s" js "$T/hang.json" \
  "d['hung'] and d['verdict'] == 'hung' and d['completeness'] == 'live' and all(r['state'] == 'running' and r['completeness'] == 'live' and r['open_calls'][0]['call'] == 'ncclAllGather' and r['open_calls'][0]['age_s'] >= 2 for r in d['ranks']) and len({r['open_calls'][0]['seq'] for r in d['ranks']}) == 1"
check "a live job is never called dead: no crash finding" js "$T/hang.json" "not any(f['signature'] == 'crashed' for f in d['findings'])"
timeout -k 2 30 "$RT" verdict "$T/hang" --stall 10m > "$T/hang.v2" 2> "$T/hang.v2err"; rc=$?
check "with --stall 10m it is not hung yet: inconclusive (125), still running" bash -c "[ $rc -eq 125 ] && grep -q 'still running' '$T/hang.v2err'"
timeout -k 2 4 "$RT" view "$T/hang" --watch --interval 1 --stall 2s > "$T/watch.out" 2>&1; rc=$?
check "view --watch keeps refreshing while the job runs (rc $rc, $(grep -c '^trace ' "$T/watch.out") screens)" bash -c "[ $rc -eq 124 ] && [ \$(grep -c '^trace .*verdict: hung' '$T/watch.out') -ge 2 ]"
check "view --watch shows each rank inside its collective" [ "$(tail -n 30 "$T/watch.out" | grep -cE '^[0-3] .* live +running, in ncclAllGather')" -ge 4 ]
timeout -k 2 30 "$RT" view "$T/hang" --watch --interval 1 > "$T/watch2.out" 2>&1 &
W=$!
stop "$LAST"
check "the launcher stopped the hung job" [ $? -eq 0 ]
wait "$W"; rc=$?
check "view --watch ends by itself once every rank has ended (rc $rc)" bash -c "[ $rc -ne 124 ] && [ $rc -ne 137 ] && awk '/^trace /{s=\"\"} {s=s \$0 \"\\n\"} END{printf \"%s\", s}' '$T/watch2.out' | grep -q '^completeness: complete'"
timeout -k 2 30 "$RT" view "$T/hang" --json > "$T/hang2.json"
check "after the kill: every rank killed (signal 15) inside its AllGather" js "$T/hang2.json" \
  "all(r['state'] == 'killed' and r['end'] == 'signal 15 in ncclAllGather' for r in d['ranks']) and d['running'] == 0"
timeout -k 2 30 "$RT" verdict "$T/hang" > "$T/hang.v3" 2> "$T/hang.v3err"; rc=$?
# ranks that ended alike share a line ("ranks 0-3 killed: ..."): every rank 0-3 is covered once
# stopped from outside (SIGTERM through the launcher): interrupted, not a crash
check "after the kill: verdict inconclusive (125), job interrupted, how each rank ended on stderr" bash -c "[ $rc -eq 125 ] && grep -q 'inconclusive: job interrupted' '$T/hang.v3err' && python3 - '$T/hang.v3err' <<'PY'
import re, sys
seen = []
for l in open(sys.argv[1]):
    m = re.match(r'ranktrace verdict: ranks? ([0-9,-]+) killed: signal 15 in ncclAllGather', l)
    for part in (m.group(1).split(',') if m else []):
        a, _, b = part.partition('-')
        seen += range(int(a), int(b or a) + 1)
sys.exit(sorted(seen) != [0, 1, 2, 3])
PY"

# ---- only rank 2 hangs, in cudaMalloc; the others wait for the collective ----
# The asynchronous simulator (the default): the others' AllGather returned
# once enqueued, their host threads wait in the synchronous copy after it;
# the collective that never completed is known from the device records
# (viewer/analyse/devhang.c).
start lag 'cudaMalloc:hang:rank=2:when=10'
check "laggard: 4 ranks running, each inside a call" wait_stuck "$T/lag"
sleep 2.5
timeout -k 2 30 "$RT" verdict "$T/lag" --stall 2s > "$T/lag.v" 2> "$T/lag.verr"; rc=$?
check "verdict hung (exit 1)" bash -c "[ $rc -eq 1 ] && [ \"\$(cat '$T/lag.v')\" = hung ]"
timeout -k 2 30 "$RT" view "$T/lag" --json --stall 2s > "$T/lag.json"
check "ranks 0,1,3 wait in the copy after the AllGather they enqueued, rank 2 is inside cudaMalloc" js "$T/lag.json" \
  "[r['open_calls'][0]['call'] for r in d['ranks']] == ['cudaMemcpy', 'cudaMemcpy', 'cudaMalloc', 'cudaMemcpy']"
check "the laggard analysis names rank 2 ($(grep -m1 'hung:' "$T/lag.verr"))" grep -qE 'hung: AllGather #[0-9]+ \(comm [0-9a-f]+, [0-9]+ [KMG]?i?B\) was enqueued by ranks 0,1,3 and never completed on any device; rank 2 never enqueued #[0-9]+: its host thread has been inside cudaMalloc for [0-9]+ s' "$T/lag.verr"
check "view --json carries it too" js "$T/lag.json" "d['laggard'] and 'rank 2 never enqueued' in d['laggard']"
timeout -k 2 30 "$RT" view "$T/lag" --rank 2 --json --stall 2s > "$T/lag2.json"
check "view --rank 2: only rank 2's row and only findings about rank 2 or several ranks" js "$T/lag2.json" \
  "[r['rank'] for r in d['ranks']] == [2] and all(f['rank'] in (-1, 2) for f in d['findings']) and any(f['rank'] == 2 for f in d['findings'])"
stop "$LAST"
timeout -k 2 30 "$RT" view "$T/lag" --json > "$T/lag3.json"
check "after the kill: rank 2 killed inside cudaMalloc, the others inside the copy" js "$T/lag3.json" \
  "[r['end'] for r in d['ranks']] == ['signal 15 in cudaMemcpy'] * 2 + ['signal 15 in cudaMalloc', 'signal 15 in cudaMemcpy'] and all(r['state'] == 'killed' for r in d['ranks'])"

# ---- exited and vanished: rank 1 is SIGKILLed (no end record, no lock) ----
SIMGPU_TIMEOUT=5 sim timeout -k 5 120 "$RT" run -o "$T/dies" --inject rank-dies=1@4 -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 2 > /dev/null 2>&1
timeout -k 2 30 "$RT" view "$T/dies" --json > "$T/dies.json"
check "rank-dies: rank 1 vanished (SIGKILL: no end record, no lock), the others ended and are not running" js "$T/dies.json" \
  "d['ranks'][1]['state'] == 'vanished' and all(r['state'] in ('exited', 'killed') for i, r in enumerate(d['ranks']) if i != 1) and d['running'] == 0"
mkdir "$T/ok"
timeout -k 2 60 "$RT" view "$T/ok" --watch --interval 0.2 > "$T/early.out" 2>&1 &
W=$!
sleep 0.5
sim timeout -k 5 120 "$RT" run -o "$T/ok" -- "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --steps 1 > /dev/null 2>&1
wait "$W"; rc=$?
check "view --watch started before the job waits for it, then ends with it (rc $rc)" bash -c "[ $rc -eq 0 ] && grep -q '^waiting for rank traces' '$T/early.out' && awk '/^trace /{s=\"\"} {s=s \$0 \"\\n\"} END{printf \"%s\", s}' '$T/early.out' | grep -q '^completeness: complete'"
timeout -k 2 30 "$RT" view "$T/ok" --json > "$T/ok.json"
check "a finished healthy job: every rank exited, trace complete" js "$T/ok.json" \
  "all(r['state'] == 'exited' and r['completeness'] == 'complete' for r in d['ranks']) and d['completeness'] == 'complete' and d['verdict'] == 'healthy'"
finish
