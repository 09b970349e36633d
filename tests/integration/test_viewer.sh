#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_viewer.sh - ranktrace view/verdict/diff on traces of the real bugs,
# reproduced on the simulated cluster; damaged files; JSON.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
export SIMGPU_TIMEOUT=10
trace() { local out=$1; shift; sim "$RT" run -o "$T/$out" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 2 "$@" > "$T/$out.log" 2>&1; }

trace good --trainer-version 4.52.4
trace bad --trainer-version 4.53.0
trace dev0 --device 0
trace skip --skip-collective 2:4

"$RT" verdict "$T/good" > "$T/v"; rc=$?
check "4.52.4: verdict healthy, exit 0" bash -c "[ $rc -eq 0 ] && grep -qx healthy '$T/v'"
"$RT" verdict "$T/bad" > "$T/v"; rc=$?
check "4.53.0: verdict skipped-fsdp-root, exit 1" bash -c "[ $rc -eq 1 ] && grep -qx skipped-fsdp-root '$T/v'"
"$RT" verdict --bad skipped-fsdp-root "$T/bad" > /dev/null
check "--bad skipped-fsdp-root on that trace: 1" [ $? -eq 1 ]
"$RT" verdict --bad collective-mismatch "$T/bad" > /dev/null
check "--bad of another signature: 125 (skip)" [ $? -eq 125 ]
"$RT" verdict "$T/dev0" > "$T/v"; rc=$?
check "all ranks on device 0: device-misplacement, exit 1" bash -c "[ $rc -eq 1 ] && grep -qx device-misplacement '$T/v'"
"$RT" view "$T/dev0" > "$T/view.dev0"
check "device finding names the ranks" grep -q 'ranks 0,1,2,3 all use device 0' "$T/view.dev0"
"$RT" verdict "$T/skip" > "$T/v"; rc=$?
check "rank 2 skips a collective: collective-mismatch, exit 1" bash -c "[ $rc -eq 1 ] && grep -qx collective-mismatch '$T/v'"
"$RT" view "$T/skip" > "$T/view.skip"
check "mismatch finding names rank 2 and sequence 4" grep -q 'mismatch at sequence 4 .*rank 2 called' "$T/view.skip"

# parameters reported on cuda:0 (LOCAL_RANK) while their memory is on device 3
sim env RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 "$RT" run -o "$T/pdev" -- "$B/bin/fsdp_mini" --device 3 --steps 1 > /dev/null 2>&1
"$RT" view "$T/pdev" > "$T/view.pdev"
check "parameters vs allocations: reports pointing into another device's memory are found" grep -q 'rank 0: [0-9]* parameter reports\? points\? into memory of another device' "$T/view.pdev"
check "parameters vs allocations: the rank used device 3, expected 0" grep -q 'rank 0 used device 3, expected device 0 (LOCAL_RANK)' "$T/view.pdev"
check "parameters vs allocations: verdict device-misplacement" [ "$("$RT" verdict "$T/pdev")" = device-misplacement ]

"$RT" view "$T/good" > "$T/view.good"; rc=$?
check "view exits 0 on a clean trace" [ $rc -eq 0 ]
check "view: one row per rank with its device" bash -c "grep -cE '^[0-3] +vm' '$T/view.good' | grep -qx 4 || grep -cE '^[0-3] ' '$T/view.good' | grep -qx 4"
check "view: rank 3 used device 3" grep -qE '^3 +[^ ]+ +3 +3 ' "$T/view.good"
# the same facts from view --json, field by field (what scripts should read)
"$RT" view "$T/good" --json > "$T/good.json"
"$RT" view "$T/dev0" --json > "$T/dev0.json"
"$RT" view "$T/pdev" --json > "$T/pdev.json"
check "view --json: every rank used exactly its LOCAL_RANK's device, allocated and ended 0" python3 -c "
import json, sys
d = json.load(open('$T/good.json'))
assert d['verdict'] == 'healthy' and len(d['ranks']) == 4, d['verdict']
for r in d['ranks']:
    assert r['devices'] == [r['local_rank']] == [r['rank']], r
    assert list(r['peak_device_bytes']) == [str(r['rank'])] and r['allocations'] > 0, r
    assert r['end'] == 'exit 0', r['end']
"
check "view --json: all ranks on device 0 is a device-misplacement finding about ranks 0-3" python3 -c "
import json, sys
d = json.load(open('$T/dev0.json'))
assert d['verdict'] == 'device-misplacement', d['verdict']
assert all(r['devices'] in ([], [0]) for r in d['ranks']), [r['devices'] for r in d['ranks']]
assert any(f['signature'] == 'device-misplacement' and 'ranks 0,1,2,3' in f['text'] for f in d['findings'])
assert any(f['signature'] == 'device-misplacement' and f['ranks'] == [0, 1, 2, 3] and f['comm'] is None for f in d['findings'])
"
"$RT" view "$T/skip" --json > "$T/skip.json"
check "view --json: the mismatch finding carries its ranks [2], communicator and sequence 4, as its text says" python3 -c "
import json
d = json.load(open('$T/skip.json'))
m = [f for f in d['findings'] if f['id'] in ('collective-mismatch', 'never-called')]
assert m and m[0]['ranks'] == [2] and m[0]['seq'] == 4, m
assert 'sequence 4 of communicator %s:' % m[0]['comm'] in m[0]['text'] and len(m[0]['comm']) == 16, m
assert all(f['comm'] is None and f['seq'] is None and f['ranks'] == [f['rank']] for f in d['findings'] if f not in m)
"
check "view --json: parameters on cuda:0 in device 3's memory: devices [3], device-misplacement" python3 -c "
import json, sys
d = json.load(open('$T/pdev.json'))
assert d['verdict'] == 'device-misplacement', d['verdict']
assert d['ranks'][0]['devices'] == [3] and d['ranks'][0]['local_rank'] == 0, d['ranks'][0]
"
check "view: healthy verdict, no failure among the findings" bash -c "grep -q 'verdict: healthy' '$T/view.good' && ! grep -qE 'exited with status|killed|mismatch|never ran|device [0-9]+, expected' '$T/view.good'"
check "view: a healthy run shows no finding by default, says notes are hidden" bash -c "grep -A1 '^findings:' '$T/view.good' | grep -q '^  none' && grep -q '(3 notes not shown: --all)' '$T/view.good'"
"$RT" view --all "$T/good" > "$T/view.good.all"
check "view --all: the note that ranks 1-3 loaded on meta (cpu_ram_efficient_loading), once" \
  grep -q '^  1. note: ranks 1-3: 5 parameters arrived on meta' "$T/view.good.all"
"$RT" view --rank 1 "$T/good" > "$T/view.r1"
check "view --rank 1 shows only rank 1" bash -c "grep -cE '^[0-9]+ ' '$T/view.r1' | grep -qx 1 && grep -qE '^1 ' '$T/view.r1'"
"$RT" view --json "$T/bad" > "$T/bad.json"
"$RT" view --json "$T/good" > "$T/good.json"
check "diagnosis (4.53.0): at most 3 findings shown, the first an error saying the root forward never ran and what to do next, the exits collapsed" python3 -c "
import json
d = json.load(open('$T/bad.json'))
shown = [g for g in d['diagnosis'] if g['level'] != 'note']
assert 1 <= len(shown) <= 3, shown
first = d['findings'][shown[0]['finding']]
assert shown[0]['level'] == 'error' and 'FSDP root forward never ran' in shown[0]['text'], shown[0]
assert first['advice'] and 'unwrapped module' in first['advice'], first
exits = [g for g in shown if 'exited with status 1' in g['text']]
assert len(exits) == 1 and exits[0]['ranks'] == [0, 1, 2, 3] and exits[0]['text'].startswith('ranks 0-3 '), exits
assert all(f['level'] in ('error', 'warning', 'note') for f in d['findings'])
"
check "diagnosis (4.52.4): nothing but notes, so the default view shows no finding" python3 -c "
import json
d = json.load(open('$T/good.json'))
assert d['diagnosis'] and all(g['level'] == 'note' for g in d['diagnosis']), d['diagnosis']
"
"$RT" view "$T/bad" > "$T/view.bad"
check "view (4.53.0): numbered findings 1 and 2 only, the first followed by next:" bash -c "
  grep -q '^  1. error: FSDP root forward never ran' '$T/view.bad' && grep -q '^     next: ' '$T/view.bad' &&
  grep -q '^  2. error: ranks 0-3 exited with status 1' '$T/view.bad' && ! grep -q '^  4\.' '$T/view.bad'"
check "view --json is valid JSON with schema ranktrace.view/1" python3 -c "
import json, sys
d = json.load(open('$T/bad.json'))
assert d['schema'] == 'ranktrace.view/1', d['schema']
assert d['verdict'] == 'skipped-fsdp-root'
assert [r['rank'] for r in d['ranks']] == [0, 1, 2, 3]
assert all(r['collectives']['Broadcast'] == 3 and r['collectives']['AllGather'] == 0 for r in d['ranks'])
assert d['findings'][0]['signature'] == 'skipped-fsdp-root'
"

"$RT" diff --json "$T/good" "$T/bad" > "$T/diff.json"; rc=$?
check "diff --json good bad: exit 1, valid against docs/diff.schema.json" bash -c "[ $rc -eq 1 ] &&
  python3 '$(dirname "$0")/schema_check.py' '$(dirname "$0")/../../docs/diff.schema.json' '$T/diff.json'"
check "diff: led by the root forwards (2 a rank in A, 0 in B), then placement: all 5 storage freed in B, cuda:N in A" python3 -c "
import json
d = json.load(open('$T/diff.json'))
assert d['decisive'] == 'fsdp_root_forwards', d['decisive']
assert [c['id'] for c in d['counts'] if c['differ']] == ['fsdp_root_forwards']
assert [r['counts']['fsdp_root_forwards'] for r in d['ranks']] == [{'a': 2, 'b': 0}] * 4, d['ranks']
p = d['params']
assert (p['compared'], p['placement_differ'], p['shape_differ']) == (5, 5, 0), p
assert [(k['a'], k['b'], k['params']) for k in p['placement']] == [('cuda:N', 'storage freed on every rank', 5)], p['placement']
"
check "diff: every rank diverges after the 3 init broadcasts: A's AllGather #4, B nothing more (exit 1)" python3 -c "
import json
d = json.load(open('$T/diff.json'))
for r in d['ranks']:
    c = r['collectives']
    assert (r['in'], c['identical'], c['diverged'], c['init_broadcasts']) == ('both', 3, True, True), r
    assert (c['a']['kind'], c['a']['seq'], c['b']) == ('AllGather', 4, None), c
    assert r['end'] == {'a': 'exit 0', 'b': 'exit 1'}, r['end']
"
"$RT" diff "$T/good" "$T/bad" > "$T/diff"
check "diff text: the root forwards lead, placement next, the ranks after" bash -c "
  sed -n 4p '$T/diff' | grep -qx 'FSDP root forwards: A 2 on every rank, B 0 on every rank' &&
  sed -n 5p '$T/diff' | grep -q '^parameter placement and shapes (latest report):' && sed -n 7p '$T/diff' | grep -q '^rank 0: '"
"$RT" diff --json "$T/good" "$T/good" > "$T/diff.same"; rc=$?
check "diff of a trace with itself: nothing differs, both healthy (exit 0)" python3 -c "
import json
d = json.load(open('$T/diff.same'))
assert $rc == 0 and d['decisive'] is None and d['params']['differing'] == [] and d['verdicts']['text'] == 'both healthy', d
"
trace inj --trainer-version 4.53.0
"$RT" diff --json "$T/bad" "$T/inj" > "$T/diff2"; rc=$?
check "diff of two 4.53.0 runs: same failure signature, exit 0" python3 -c "
import json
d = json.load(open('$T/diff2'))
assert $rc == 0 and d['verdicts'] == {'same': True, 'text': 'B shows the same failure signature as A'}, d['verdicts']
"

# damaged traces: a clear error naming file and offset, other ranks analysed
cp -r "$T/good" "$T/cut"
f=$(ls "$T"/cut/rank-00001/stream-* | head -1)
python3 - "$f" <<'PY'
import sys
p = sys.argv[1]
data = bytearray(open(p, 'rb').read())
data[80:82] = b'\xfe\xff'  # the first event's id: one no schema has
open(p, 'wb').write(data)
PY
"$RT" view "$T/cut" > "$T/view.cut" 2> "$T/view.cut.err"; rc=$?
check "corrupted rank: view exits 3" [ $rc -eq 3 ]
check "corrupted rank: error names the file and offset" grep -qE "rank-00001/stream-[0-9-]+: offset 80: unknown event id 65534" "$T/view.cut.err"
check "corrupted rank: the other ranks are still analysed" bash -c "grep -qE '^3 .* exit 0' '$T/view.cut' && grep -qE '^0 .* exit 0' '$T/view.cut'"
cp -r "$T/good" "$T/trunc"
f=$(ls "$T"/trunc/rank-00002/stream-* | head -1)
truncate -s 100 "$f"
"$RT" view "$T/trunc" > /dev/null 2> "$T/trunc.err"; rc=$?
check "truncated file: exit 3" [ $rc -eq 3 ]
check "truncated file: names the file, offset and what is wrong" grep -qE "rank-00002/stream-[0-9-]+: offset 0: packet sizes out of bounds .*100 left in the file" "$T/trunc.err"
rm -f "$T/trunc/rank-00003/metadata"
"$RT" view "$T/trunc" > /dev/null 2> "$T/trunc2.err"
check "missing metadata is reported by name" grep -q 'rank-00003/metadata: No such file' "$T/trunc2.err"
"$RT" verdict /nonexistent > /dev/null 2>&1
check "verdict of nothing: 125 (inconclusive)" [ $? -eq 125 ]
"$RT" view > /dev/null 2>&1
check "view without DIR: usage error 2" [ $? -eq 2 ]
finish
