#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_probe.sh - the PyTorch probe on real PyTorch (CPU, gloo, FSDP v1
# FULL_SHARD, 2 ranks): healthy, skip-fsdp-root, parameters on meta; Python
# programs without torch or with their own sitecustomize are unchanged.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
W="$(cd "$(dirname "$0")/../python" && pwd)/fsdp_cpu.py"
need_torch
run2() { local out=$1; shift; "$RT" run -o "$T/$out" "$@" > "$T/$out.log" 2>&1; }

run2 good -- "$B/bin/rt-launch" -n 2 "$PY" "$W" --steps 3
check "healthy: exit 0" [ $? -eq 0 ]
check "healthy: verdict healthy" [ "$("$RT" verdict "$T/good")" = healthy ]
"$RT" view --json "$T/good" > "$T/good.json"
check "healthy: every parameter located on both ranks, root forwards counted per step" python3 -c "
import json
d = json.load(open('$T/good.json'))
for r in d['ranks']:
    assert r['params']['distinct'] == 10, r['params']      # embedding, 2 blocks x 4, lm_head
    assert r['fsdp_root_forwards'] == 3, r['fsdp_root_forwards']
    assert r['end'] == 'exit 0', r['end']
"
"$RT" params --json "$T/good" > "$T/good.params.json"
check "params --json (real FSDP): valid against docs/params.schema.json" python3 "$(dirname "$0")/schema_check.py" "$(dirname "$0")/../../docs/params.schema.json" "$T/good.params.json"
check "params (real FSDP, healthy): the model's 10 parameters, cpu as wrapped, storage freed (resharded) after, not wrong" python3 -c "
import json
d = json.load(open('$T/good.params.json'))
names = [p['name'] for p in d['params']]
assert len(names) == 10 and 'embed_tokens.weight' in names and 'layers.1.mlp.weight' in names, names
for p in d['params']:
    for r in p['ranks']:
        assert r['points']['wrap']['where'] == 'cpu' and r['points']['wrap']['bytes'] > 0, (p['name'], r)
        assert r['placement']['where'] == 'storage-freed', (p['name'], r)
assert [r['wrong'] for r in d['ranks']] == [False, False], d['ranks']
"
"$RT" report "$T/good" -o "$T/good.html" 2> /dev/null
timeout 120 chromium --headless --no-sandbox --disable-gpu --dump-dom "file://$T/good.html" > "$T/good.dom" 2> /dev/null
check "report (real FSDP): the timeline starts at the first event drawn (>= 60 % of its width active)" \
  python3 "$(dirname "$0")/check_report.py" "$T/good.dom" --no-device-memory
check "healthy: the probe named the parameters as PyTorch does" bash -c "babeltrace2 '$T/good' | grep -q 'name = \"layers.1.mlp.weight\"'"

run2 skip --inject skip-fsdp-root -- "$B/bin/rt-launch" -n 2 "$PY" "$W" --steps 3
check "skip-fsdp-root: the run fails" [ $? -ne 0 ]
for r in 0 1; do
  check "skip-fsdp-root: rank $r raises RuntimeError in the embedding" bash -c "grep -q '^\[rank$r\]:.*RuntimeError' '$T/skip.log' && grep -q '^\[rank$r\]:.*in embedding' '$T/skip.log'"
done
check "skip-fsdp-root: verdict skipped-fsdp-root" [ "$("$RT" verdict "$T/skip")" = skipped-fsdp-root ]
"$RT" view "$T/skip" > "$T/skip.view"
check "skip-fsdp-root: the probe saw the unwrapped module called from the training loop, with freed storage" grep -q 'FSDP root forward skipped (probe): ranks 0-1 called TinyLM from fsdp_cpu.py:[0-9]* main while no FSDP root forward ran (at least 2 calls in all; no root forward ran before; their parameters then: 0 shard views, 20 at storage FSDP freed); each of them crashed' "$T/skip.view"
"$RT" view --json "$T/skip" > "$T/skip.json"
check "skip-fsdp-root: parameters shown as storage-freed" python3 -c "
import json
d = json.load(open('$T/skip.json'))
assert all(r['params']['storage_freed'] == 10 and r['fsdp_root_forwards'] == 0 for r in d['ranks'])
assert all(r['unwrapped']['calls'] == 1 and r['unwrapped']['sites'][0]['module'] == 'TinyLM' for r in d['ranks']), d['ranks'][0]['unwrapped']
assert [f['id'] for f in d['findings']][0] == 'root-forward-unwrapped', d['findings']
"
"$RT" params --json "$T/skip" > "$T/skip.params.json"
check "params (real FSDP, skip-fsdp-root): every parameter storage freed on both ranks, both wrong" python3 -c "
import json
d = json.load(open('$T/skip.params.json'))
assert len(d['params']) == 10
assert all(r['placement']['where'] == 'storage-freed' for p in d['params'] for r in p['ranks'])
assert [r['wrong'] for r in d['ranks']] == [True, True], d['ranks']
"
run2 v453 -- "$B/bin/rt-launch" -n 2 "$PY" "$W" --steps 3 --trainer-version 4.53.0
"$RT" diff "$T/v453" "$T/skip" > "$T/diff"; rc=$?
check "4.53.0 vs the injected run: the same failure signature" bash -c "[ $rc -eq 0 ] && grep -q 'B shows the same failure signature as A' '$T/diff'"
"$RT" diff --json "$T/good" "$T/v453" > "$T/diff.json"; rc=$?
check "diff 4.52.4 4.53.0 (real FSDP, no collective, placement alike): led by the root forwards, 3 a rank against 0" python3 -c "
import json
d = json.load(open('$T/diff.json'))
assert $rc == 1 and d['decisive'] == 'fsdp_root_forwards', ($rc, d['decisive'])
assert [(r['rank'], r['counts']['fsdp_root_forwards']) for r in d['ranks']] == [(0, {'a': 3, 'b': 0}), (1, {'a': 3, 'b': 0})], d['ranks']
assert all(r['counts']['unwrapped_calls']['a'] == 0 < r['counts']['unwrapped_calls']['b'] for r in d['ranks']), d['ranks']
assert d['params']['compared'] == 10 and d['params']['placement_differ'] == 0, d['params']
"

run2 meta -- "$B/bin/rt-launch" -n 2 "$PY" "$W" --steps 2 --meta-rank1
"$RT" view --json "$T/meta" > "$T/meta.json"
check "meta: rank 1's parameters are shown on meta as loaded, rank 0's are not" python3 -c "
import json
d = {r['rank']: r for r in json.load(open('$T/meta.json'))['ranks']}
assert d[1]['params']['ever_meta'] == 10 and d[0]['params']['ever_meta'] == 0, d
"
"$RT" params --json --at wrap "$T/meta" > "$T/meta.params.json"
check "params --at wrap (real FSDP, --meta-rank1): rank 0 cpu, rank 1 meta" python3 -c "
import json
d = json.load(open('$T/meta.params.json'))
assert len(d['params']) == 10
assert all([(r['rank'], r['placement']['where']) for r in p['ranks']] == [(0, 'cpu'), (1, 'meta')] for p in d['params']), d['params'][0]
"
check "meta: the finding (a note, shown with --all) says so" bash -c "'$RT' view --all '$T/meta' | grep -q 'note: rank 1: 10 parameters arrived on meta'"

# Python programs that do not use torch, or bring their own sitecustomize
python3 -c 'import sys; print("plain", sys.argv); sys.exit(3)' a b > "$T/p0" 2>&1; rc0=$?
"$RT" run -o "$T/plain" -- python3 -c 'import sys; print("plain", sys.argv); sys.exit(3)' a b > "$T/p1.all" 2>&1; rc1=$?
grep -v '^ranktrace:\|^  rank' "$T/p1.all" > "$T/p1"
check "no torch: same output and exit status ($rc0/$rc1)" bash -c "[ $rc0 -eq $rc1 ] && cmp -s '$T/p0' '$T/p1'"
check "no torch: torch was never imported by the probe" bash -c "'$RT' run -o '$T/plain2' -- python3 -c 'import sys; print(\"torch\" in sys.modules)' | grep -qx False"
mkdir -p "$T/usersite"
echo 'import os; os.environ["USER_SITECUSTOMIZE"] = "ran"; print("user sitecustomize ran")' > "$T/usersite/sitecustomize.py"
PYTHONPATH="$T/usersite" python3 -c 'import os; print(os.environ.get("USER_SITECUSTOMIZE"))' > "$T/s0" 2>&1
PYTHONPATH="$T/usersite" "$RT" run -o "$T/site" -- python3 -c 'import os; print(os.environ.get("USER_SITECUSTOMIZE"))' > "$T/s1.all" 2>&1
grep -v '^ranktrace:\|^  rank' "$T/s1.all" > "$T/s1"
check "own sitecustomize: still runs, same output" bash -c "cmp -s '$T/s0' '$T/s1' && grep -qx ran '$T/s1'"
finish
