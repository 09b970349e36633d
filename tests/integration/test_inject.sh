#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_inject.sh - fault plans on the simulated cluster: skip-fsdp-root on a
# healthy version, NCCL errors, wrong device, OOM at the N-th allocation,
# corrupt/skip/delay/abort, seeded repeatability, bad plans refused.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
export SIMGPU_TIMEOUT=5
run4() { local out=$1 plan=$2; shift 2; sim "$RT" run -o "$T/$out" --inject "$plan" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" "$@" > "$T/$out.log" 2>&1; }
bt() { babeltrace2 "$T/$1" 2>/dev/null; }
pid_of() { awk -F' = |;' '/^\tpid = / {print $2}' "$T/$1/rank-0000$2/metadata"; }

# the mission: the skipped-preparation bug on a healthy trainer
run4 inj skip-fsdp-root --trainer-version 4.52.4 --steps 2
check "4.52.4 + skip-fsdp-root: the run fails" [ $? -ne 0 ]
for r in 0 1 2 3; do
  check "4.52.4 + skip-fsdp-root: rank $r prints the 4.53.0 error" grep -qxF "[rank$r]:RuntimeError: The tensor has a non-zero number of elements, but its data is not allocated yet." "$T/inj.log"
done
sim "$RT" run -o "$T/broken" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --trainer-version 4.53.0 --steps 2 > /dev/null 2>&1
sim "$RT" run -o "$T/good" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --trainer-version 4.52.4 --steps 2 > /dev/null 2>&1
check "verdict of the injected run: skipped-fsdp-root" [ "$("$RT" verdict "$T/inj")" = skipped-fsdp-root ]
check "verdict of 4.53.0: skipped-fsdp-root" [ "$("$RT" verdict "$T/broken")" = skipped-fsdp-root ]
"$RT" view "$T/inj" --json > "$T/inj.json"
check "view --json confirms it with the probe's evidence: the first finding" python3 -c "
import json
d = json.load(open('$T/inj.json'))
f = d['findings'][0]
assert (f['id'], f['level'], f['signature']) == ('root-forward-probe', 'error', 'skipped-fsdp-root'), f
"
check "view --json: one injected fault on every rank, said once for ranks 0-3" python3 -c "
import json
d = json.load(open('$T/inj.json'))
assert [r['faults'] for r in d['ranks']] == [1, 1, 1, 1], [r['faults'] for r in d['ranks']]
inj = [g for g in d['diagnosis'] if d['findings'][g['finding']]['id'] == 'injected-faults']
assert len(inj) == 1 and inj[0]['ranks'] == [0, 1, 2, 3] and inj[0]['level'] == 'warning', inj
assert 'fsdp.root_forward:bypass at call 1' in inj[0]['text'], inj[0]
"
"$RT" diff "$T/inj" "$T/broken" --json > "$T/d1.json"; rc=$?
check "diff --json injected vs 4.53.0: the same failure signature (exit 0)" python3 -c "
import json
d = json.load(open('$T/d1.json'))
assert $rc == 0 and d['verdicts']['same'] is True, ($rc, d['verdicts'])
"
"$RT" diff "$T/good" "$T/inj" --json > "$T/d2.json"
check "diff --json healthy vs injected: every rank diverges after the 3 init broadcasts, A's AllGather #4 against nothing" python3 -c "
import json
d = json.load(open('$T/d2.json'))
assert [r['rank'] for r in d['ranks']] == [0, 1, 2, 3], d['ranks']
for r in d['ranks']:
    c = r['collectives']
    assert c['identical'] == 3 and c['init_broadcasts'] and c['diverged'], (r['rank'], c)
    assert (c['a']['kind'], c['a']['seq'], c['b']) == ('AllGather', 4, None), (r['rank'], c)
"
"$RT" report "$T/inj" -o "$T/inj.html" 2> /dev/null
check "report: parameters shown as storage freed" grep -q 'title="storage freed"' "$T/inj.html"

# an NCCL error on one rank's fifth all-reduce
run4 nerr 'ncclAllReduce:error=ncclSystemError:when=5:rank=2' --steps 6
check "the run fails" [ $? -ne 0 ]
pid2=$(pid_of nerr 2)
bt nerr > "$T/nerr.bt"
check "rank 2's fifth all-reduce returned ncclSystemError (2)" bash -c "[ \"\$(grep 'pid = $pid2,' '$T/nerr.bt' | grep 'ncclAllReduce:' | sed -n 5p | grep -o 'ret = [0-9]*')\" = 'ret = 2' ]"
check "its first four succeeded" [ "$(grep "pid = $pid2," "$T/nerr.bt" | grep 'ncclAllReduce:' | head -4 | grep -c 'ret = 0,')" -eq 4 ]
check "the trace shows the injected fault" grep -q "rt_fault: { pid = $pid2, .*target = \"ncclAllReduce\", action = 1, arg = 2, call = 5" "$T/nerr.bt"
check "rank 2 prints the NCCL error" grep -q '\[rank2\]:fsdp_mini: rank 2: ncclAllReduce failed: unhandled system error' "$T/nerr.log"
# asynchronous NCCL: the others learn of it on the device, and their next call fails
check "the other ranks fail as NCCL does (remote error or timeout), not hang" grep -qE '\[rank[013]\]:fsdp_mini: rank [013]: nccl[A-Za-z]+ failed: (remote process exited|unhandled system error)' "$T/nerr.log"

# every rank on device 0
run4 dev0 wrong-device --steps 1
check "wrong-device: Duplicate GPU detected at communicator init" grep -q 'Duplicate GPU detected' "$T/dev0.log"
check "wrong-device: verdict device-misplacement" [ "$("$RT" verdict "$T/dev0")" = device-misplacement ]

# exactly the third allocation fails
sim "$RT" run -o "$T/oom" --inject 'cudaMalloc:error=cudaErrorMemoryAllocation:when=3' -- "$B/bin/fsdp_mini" --steps 1 > "$T/oom.log" 2>&1
bt oom | grep ' cudaMalloc: {' | grep -o 'ret = [0-9]*' | tr '\n' ' ' > "$T/oom.rets"
check "cudaMalloc results: ok, ok, out of memory, and the program stops ($(cat "$T/oom.rets"))" grep -qx 'ret = 0 ret = 0 ret = 2 ' "$T/oom.rets"
check "the workload reports out of memory" grep -q 'cudaMalloc failed: cudaErrorMemoryAllocation (out of memory)' "$T/oom.log"

# corrupt: the loss all-reduce's output is damaged
sim "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --steps 1 > "$T/clean.out" 2>&1
sim "$RT" run -o "$T/corrupt" --inject 'ncclAllReduce:corrupt:when=1' -- "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --steps 1 > "$T/corrupt.out" 2>&1
check "corrupt: the printed loss changed" bash -c "! cmp -s <(grep 'step 1' '$T/clean.out') <(grep 'step 1' '$T/corrupt.out')"
check "corrupt: the fault is in the trace" bash -c "babeltrace2 '$T/corrupt' 2>/dev/null | grep -q 'rt_fault: .*target = \"ncclAllReduce\", action = 6'"

# skip: rank 1 never makes its first broadcast
run4 skip 'ncclBroadcast:skip:when=1:rank=1' --steps 1
bt skip > "$T/skip.bt"
pid1=$(pid_of skip 1)
check "skip: rank 1's first broadcast is recorded as injected" grep -q "rt_fault: { pid = $pid1, .*target = \"ncclBroadcast\", action = 3" "$T/skip.bt"
check "skip: the others fail in the next collective (NCCL sees a rank missing)" grep -qE 'ncclBroadcast failed|ncclAllGather failed' "$T/skip.log"

# delay: the second allocation takes at least 200 ms
sim "$RT" run -o "$T/delay" --inject 'cudaMalloc:delay=200ms:when=2' -- "$B/bin/fsdp_mini" --steps 1 > /dev/null 2>&1
dur=$(bt delay | grep 'cudaMalloc:' | sed -n 2p | sed -E 's/.*dur_ns = ([0-9]+).*/\1/')
check "delay: the second cudaMalloc lasted >= 200 ms ($dur ns)" [ "${dur:-0}" -ge 200000000 ]

# abort: rank 3 dies at its first all-gather (asynchronous simulator: the
# others' all-gather returns, they fail on the aborted peer and exit 1); an
# abort inside the call is no watchdog's (viewer/analyse/devhang.c)
run4 abort 'ncclAllGather:abort:when=1:rank=3' --steps 1
check "abort: rank 3 was killed by SIGABRT" grep -qE 'rank 3 +.*signal 6' "$T/abort.log"
check "abort: its trace ends with the fault, then the signal (the plan's rules aside)" bash -c "babeltrace2 '$T/abort' 2>/dev/null | grep 'pid = $(pid_of abort 3),' | grep -v ' rt_inj_rule: ' | tail -2 | grep -c -E 'rt_fault|rt_signal' | grep -qx 2"
check "abort: each rule and how often it fired, recorded as rank 3 died" bash -c "babeltrace2 '$T/abort' 2>/dev/null | grep 'pid = $(pid_of abort 3),' | grep ' rt_inj_rule: ' | grep -q 'rule = 0, spec = \"ncclAllGather:abort:when=1:rank=3\", seen = 1, fired = 1'"

# verdict's stderr names each rank's ending once (issue 18): the crash finding's
# ranks are not listed again with the other endings
ends_once() {  # stderr of verdict, ranks expected
  python3 - "$1" "$2" <<'PY'
import re, sys
said = []
for line in open(sys.argv[1]):
    m = re.search(r'\branks? ([0-9][0-9,-]*)', line)
    for part in (m.group(1).split(',') if m else []):
        a, _, b = part.partition('-')
        said += range(int(a), int(b or a) + 1)
assert sorted(said) == list(range(int(sys.argv[2]))), (said, open(sys.argv[1]).read())
PY
}
"$RT" verdict "$T/abort" > /dev/null 2> "$T/abort.err"
check "abort: verdict's stderr says each rank's ending once (rank 3's in the crash finding)" ends_once "$T/abort.err" 4
sim "$RT" run -o "$T/oom1" --inject 'cudaMalloc:error=cudaErrorMemoryAllocation:when=1' -- \
  "$B/bin/rt-launch" -n 3 "$B/bin/fsdp_mini" --steps 1 > /dev/null 2>&1
check "every rank exits 1: verdict crashed" [ "$("$RT" verdict "$T/oom1" 2> "$T/oom1.err")" = crashed ]
check "every rank exits 1: one line says so for ranks 0-2, nothing else" bash -c "
  [ \$(wc -l < '$T/oom1.err') -eq 1 ] && grep -q '^ranktrace verdict: ranks 0-2 exited with status 1' '$T/oom1.err'"

# same plan and seed: the same faults at the same calls
for k in 1 2; do
  sim "$RT" run -o "$T/seed$k" --inject 'cudaGetDevice:error=cudaErrorInvalidValue:prob=0.3:seed=42' -- "$B/bin/callstorm" --calls 2000 --cheap > /dev/null 2>&1
  bt "seed$k" | grep rt_fault | sed -E 's/.*call = ([0-9]+).*/\1/' > "$T/calls$k"
done
sim "$RT" run -o "$T/seed3" --inject 'cudaGetDevice:error=cudaErrorInvalidValue:prob=0.3:seed=43' -- "$B/bin/callstorm" --calls 2000 --cheap > /dev/null 2>&1
bt seed3 | grep rt_fault | sed -E 's/.*call = ([0-9]+).*/\1/' > "$T/calls3"
check "seed 42 twice: identical fault calls ($(wc -l < "$T/calls1") faults)" bash -c "[ -s '$T/calls1' ] && cmp -s '$T/calls1' '$T/calls2'"
check "another seed: other calls" bash -c "! cmp -s '$T/calls1' '$T/calls3'"
check "prob=0.3 fires about 30 % of 1999 calls" bash -c "n=\$(wc -l < '$T/calls1'); [ \$n -gt 480 ] && [ \$n -lt 720 ]"

# bad plans never run
for plan in 'cudaMallc:skip' 'cudaMalloc:explode' 'cudaMalloc:error=cudaErrorOutOfCheese' \
            'cudaFree:error=cudaErrorMemoryAllocation' 'cudaMalloc:skip:when=2..1' 'cudaMalloc:skip:rank=x'; do
  "$RT" run -o "$T/never" --inject "$plan" -- touch "$T/started" > /dev/null 2> "$T/bad.err"; rc=$?
  check "bad plan '$plan': exit 2, nothing started, the plan quoted" bash -c "[ $rc -eq 2 ] && [ ! -e '$T/started' ] && [ ! -e '$T/never' ] && grep -qF -- '$plan' '$T/bad.err' && grep -q '\\^' '$T/bad.err'"
done
printf '# a plan file\nskip-fsdp-root   # the bug\n\nncclAllGather:delay=1ms:when=99\n' > "$T/plan.txt"
sim "$RT" run -o "$T/file" --inject-file "$T/plan.txt" -- "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --steps 1 > /dev/null 2>&1
check "--inject-file with comments: skip-fsdp-root applied" [ "$("$RT" verdict "$T/file")" = skipped-fsdp-root ]
"$RT" inject --list > "$T/list"
check "inject --list shows targets, actions, presets, examples" bash -c "grep -q ncclAllReduce '$T/list' && grep -q 'corrupt' '$T/list' && grep -q 'rank-dies' '$T/list' && grep -q 'examples:' '$T/list'"
finish
