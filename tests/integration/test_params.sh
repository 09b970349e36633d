#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_params.sh - `ranktrace params` on the demo's runs (fsdp_mini, 4 simulated
# GPUs): transformers 4.52.4 has every parameter on cuda:N on rank N after its
# root forwards; 4.53.0 has every parameter's storage freed on every rank and no
# root forward; as loaded (--at wrap) rank 0 holds them on cpu, the others on
# meta. --json is checked against docs/params.schema.json. Then real PyTorch with
# use_orig_params=True: shapes, elements and own bytes per rank and report point.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
SCHEMA="$SRC/docs/params.schema.json"
for v in 4.52.4 4.53.0; do
  sim timeout -k 5 120 "$RT" run -o "$T/$v" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --trainer-version $v --steps 3 > "$T/$v.log" 2>&1
done
for v in 4.52.4 4.53.0; do
  for at in last wrap first-forward; do
    "$RT" params --json --at $at "$T/$v" > "$T/$v.$at.json"
    check "$v --at $at: --json valid against the schema" python3 "$(dirname "$0")/schema_check.py" "$SCHEMA" "$T/$v.$at.json"
  done
done

check "4.52.4: every parameter on cuda:N on rank N (latest report), none wrong" python3 -c "
import json
d = json.load(open('$T/4.52.4.last.json'))
assert [r['rank'] for r in d['ranks']] == [0, 1, 2, 3] and not any(r['wrong'] for r in d['ranks']), d['ranks']
assert len(d['params']) == 5, [p['name'] for p in d['params']]
for p in d['params']:
    assert [r['rank'] for r in p['ranks']] == [0, 1, 2, 3], p
    for r in p['ranks']:
        pl = r['placement']
        assert (pl['where'], pl['device'], pl['label']) == ('cuda', r['rank'], 'cuda:%d' % r['rank']), (p['name'], r)
        assert pl['numel'] > 0 and pl['bytes'] == 4 * pl['numel'] and pl['dtype'] == 'float32', pl
        assert pl['param_bytes'] == pl['bytes'], pl          # a whole tensor: its own storage
        want = [32, 16] if 'embed' in p['name'] else [16, 16] if p['name'].endswith('weight') else [16]
        assert pl['shape'] == want and pl['ndim'] == len(want), (p['name'], pl['shape'])
"
check "4.53.0: every parameter's storage freed on every rank, every rank wrong" python3 -c "
import json
d = json.load(open('$T/4.53.0.last.json'))
assert all(r['wrong'] and 'no FSDP root forward ran' in r['summary'] for r in d['ranks']), d['ranks']
assert len(d['params']) == 5
for p in d['params']:
    assert [(r['rank'], r['placement']['where'], r['placement']['bytes']) for r in p['ranks']] == \
        [(k, 'storage-freed', 0) for k in range(4)], p
"
check "--at wrap: as loaded, rank 0 on cpu (in its cudaMallocHost buffer), ranks 1-3 on meta" python3 -c "
import json
for v in ('4.52.4', '4.53.0'):
    d = json.load(open('$T/%s.wrap.json' % v))
    assert d['at'] == 'wrap'
    for p in d['params']:
        got = [(r['rank'], r['placement']['where']) for r in p['ranks']]
        assert got == [(0, 'cpu'), (1, 'meta'), (2, 'meta'), (3, 'meta')], (v, p['name'], got)
        a = p['ranks'][0]['placement']['allocation']
        assert a and a['call'] == 'cudaMallocHost' and a['device'] == -1, a
"
check "changes: 4.52.4 names storage freed -> cuda:N at first-forward" python3 -c "
import json
d = json.load(open('$T/4.52.4.last.json'))
for p in d['params']:
    for r in p['ranks']:
        assert r['changed'] == {'from': 'storage freed', 'to': 'cuda:%d' % r['rank'], 'at': 'first-forward'}, r['changed']
"

"$RT" params "$T/4.53.0" > "$T/bad.txt"
check "text: the four ranks collapsed in one summary line naming a parameter" \
  grep -q '^ranks 0-3: 5 of 5 parameters point at freed storage and no FSDP root forward ran, e.g. model\.' "$T/bad.txt"
"$RT" params "$T/4.52.4" > "$T/good.txt"
check "text: healthy ranks collapse to 'all 5 parameters on cuda:N'" grep -qx 'ranks 0-3: all 5 parameters on cuda:N' "$T/good.txt"
check "text: one row per parameter when the ranks agree (cuda:N on ranks 0-3)" \
  bash -c "[ \$(grep -c '^model\..* 0-3  *cuda:N ' '$T/good.txt') -eq 5 ]"
"$RT" params --rank 2 "$T/4.52.4" > "$T/r2.txt"
check "--rank 2: devices shown as they are (cuda:2)" bash -c "grep -qx 'rank 2: all 5 parameters on cuda:2' '$T/r2.txt' && [ \$(grep -c ' 2  *cuda:2 ' '$T/r2.txt') -eq 5 ]"
"$RT" params --json --param 'model.layers.*.bias' "$T/4.52.4" > "$T/glob.json"
check "--param GLOB keeps only matching parameters" python3 -c "
import json
assert [p['name'] for p in json.load(open('$T/glob.json'))['params']] == ['model.layers.0.mlp.bias', 'model.layers.1.mlp.bias']
"
# Perfetto: parameter and marker names, fault specs as strings; placement changes as instants
sim timeout -k 5 120 "$RT" run -o "$T/inj" --inject skip-fsdp-root -- \
  "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --trainer-version 4.52.4 --steps 2 > "$T/inj.log" 2>&1
sim env RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 timeout -k 5 60 "$RT" run -o "$T/oom" --inject 'oom-at=1' -- \
  "$B/bin/fsdp_mini" --steps 1 > "$T/oom.log" 2>&1
for v in 4.52.4 inj oom; do "$RT" export "$T/$v" --perfetto "$T/$v.pf.json" 2> /dev/null; done
check "Perfetto: rt_param args carry the parameter names as strings, the same as params --json" python3 -c "
import json
ev = json.load(open('$T/4.52.4.pf.json'))['traceEvents']
names = {p['name'] for p in json.load(open('$T/4.52.4.last.json'))['params']}
got = {e['args']['name'] for e in ev if e.get('name') == 'rt_param'}
assert got == names, (got, names)
marks = {e['args']['name'] for e in ev if e.get('name') == 'rt_marker'}
assert {'step', 'rt.params'} <= marks, marks
"
check "Perfetto: placement changes are instants on each rank's track (storage freed -> cuda:N)" python3 -c "
import json
ev = json.load(open('$T/4.52.4.pf.json'))['traceEvents']
inst = [e for e in ev if e.get('ph') == 'i' and e.get('cat') == 'placement']
for r in range(4):
    mine = [e for e in inst if e['pid'] == r and e['args']['to'] == 'cuda:%d' % r]
    assert len(mine) == 5 and all(e['args']['from'] == 'storage freed' and e['s'] == 'p' for e in mine), (r, mine)
"
check "Perfetto: a fired fault's spec is a string with NVIDIA's error name" python3 -c "
import json
ev = json.load(open('$T/inj.pf.json'))['traceEvents']
specs = [e['args'] for e in ev if e.get('name') == 'rt_fault']
assert specs and all(a['spec'] == 'fsdp.root_forward:bypass' and a['target'] == 'fsdp.root_forward' for a in specs), specs
ev = json.load(open('$T/oom.pf.json'))['traceEvents']
specs = [e['args']['spec'] for e in ev if e.get('name') == 'rt_fault']
assert specs == ['cudaMalloc:error=cudaErrorMemoryAllocation'], specs
"
check "Perfetto: the exports pass the structural check" bash -c "python3 '$(dirname "$0")/check_perfetto.py' '$T/4.52.4.pf.json' 4 >/dev/null && python3 '$(dirname "$0")/check_perfetto.py' '$T/inj.pf.json' 2 > /dev/null"

# Real PyTorch (CPU, gloo, FSDP v1, 2 ranks) with use_orig_params=True, transformers'
# default: after wrapping, each rank's parameter is a 1-D view of its part of the flat
# shard. Elements, shape and own bytes are each rank's at each report point; the
# storage (the flat shard) is its own field.
PY="$B/venv-torch/bin/python"
W="$(cd "$(dirname "$0")/../python" && pwd)/fsdp_cpu.py"
if "$PY" -c 'import torch' 2>/dev/null; then
  for v in 4.52.4 4.53.0; do
    timeout -k 5 300 "$RT" run -o "$T/orig$v" -- "$B/bin/rt-launch" -n 2 "$PY" "$W" --steps 3 \
      --orig-params --trainer-version $v > "$T/orig$v.log" 2>&1
  done
  check "use_orig_params 4.53.0: dies as transformers 4.53.0 did ('weight' must be 2-D)" \
    grep -q "RuntimeError: 'weight' must be 2-D" "$T/orig4.53.0.log"
  check "run's summary of a job with no CUDA or NCCL call says what the probe recorded" bash -c "
    [ \$(grep -c '^  rank [01]  .*  no CUDA or NCCL call; probe: 10 parameters, 3 FSDP root forwards\$' '$T/orig4.52.4.log') -eq 2 ] &&
    [ \$(grep -cE '^  rank [01]  .*  no CUDA or NCCL call; probe: 10 parameters, 0 FSDP root forwards, [0-9]+ unwrapped-module calls?\$' '$T/orig4.53.0.log') -eq 2 ]"
  check "run's summary of fsdp_mini (CUDA used): allocations and peaks as before" bash -c "
    [ \$(grep -cE '^  rank [0-3]  .* exit 0  *[0-9]+ allocations, peak [0-9]:[0-9]+ B\$' '$T/4.52.4.log') -eq 4 ]"
  for at in wrap last; do
    "$RT" params --json --at $at "$T/orig4.52.4" > "$T/orig.$at.json"
    check "use_orig_params --at $at: --json valid against the schema" python3 "$(dirname "$0")/schema_check.py" "$SCHEMA" "$T/orig.$at.json"
  done
  check "use_orig_params --at wrap: every rank reports the module's shapes, own bytes = 4 x elements" python3 -c "
import json
want = {'embed_tokens.weight': [64, 32], 'layers.0.norm.weight': [32], 'layers.1.mlp.weight': [32, 32],
        'layers.1.mlp.bias': [32], 'lm_head.weight': [64, 32]}
d = json.load(open('$T/orig.wrap.json'))
assert len(d['params']) == 10, [p['name'] for p in d['params']]
for p in d['params']:
    for r in p['ranks']:
        pl = r['placement']
        n = 1
        for k in pl['shape']:
            n *= k
        assert pl['numel'] == n and pl['ndim'] == len(pl['shape']) and pl['param_bytes'] == 4 * n, (p['name'], r)
        if p['name'] in want:
            assert pl['shape'] == want[p['name']], (p['name'], pl['shape'])
"
  check "use_orig_params --at last: per rank a 1-D view of its part; the ranks' parts add up to the parameter" python3 -c "
import json
wrap = {p['name']: p['ranks'][0]['placement']['numel'] for p in json.load(open('$T/orig.wrap.json'))['params']}
d = json.load(open('$T/orig.last.json'))
split = 0
for p in d['params']:
    pls = [r['placement'] for r in p['ranks']]
    assert [r['rank'] for r in p['ranks']] == [0, 1]
    for pl in pls:
        assert pl['ndim'] == 1 and pl['shape'] == [pl['numel']], (p['name'], pl)
        assert pl['param_bytes'] == 4 * pl['numel'] and pl['bytes'] >= pl['param_bytes'], (p['name'], pl)
    assert sum(pl['numel'] for pl in pls) == wrap[p['name']], (p['name'], [pl['numel'] for pl in pls], wrap[p['name']])
    split += len({pl['numel'] for pl in pls}) > 1
assert split >= 2, 'expected parameters whose elements differ between the ranks'
assert any(pl['bytes'] > pl['param_bytes'] > 0 for p in d['params'] for pl in [r['placement'] for r in p['ranks']]), \
    'the flat shard (storage) is larger than a parameter in it'
"
  "$RT" params "$T/orig4.52.4" > "$T/orig.txt"
  check "use_orig_params text: elements, shape, bytes and storage columns are each rank's (as --json)" python3 -c "
import json
d = json.load(open('$T/orig.last.json'))
want = {(p['name'], r['rank']): r['placement'] for p in d['params'] for r in p['ranks']}
rows, name = {}, None
for line in open('$T/orig.txt'):
    f = line.split()
    if len(f) < 9 or f[0] == 'parameter' or not (f[2] == 'cpu' or f[1] == 'cpu'):
        continue
    if f[1] == 'cpu':            # a continuation row: no name
        f = [name] + f
    name = f[0]
    rows[(name, int(f[1]))] = f
for (n, rank), pl in want.items():
    f = rows[(n, rank)]
    assert int(f[3]) == pl['numel'] and f[4] == '[%d]' % pl['numel'], (n, rank, f, pl)
"
  check "use_orig_params text: no cuda:N footnote (CUDA was not used)" bash -c "! grep -q '^cuda:N' '$T/orig.txt'"
  "$RT" diff --json "$T/orig4.52.4" "$T/orig4.53.0" > "$T/orig.diff.json"; rc=$?
  check "use_orig_params diff 4.52.4 4.53.0: exit 1, valid, led by the root forwards (3 a rank against 0), then unwrapped-module calls (0 against some)" python3 -c "
import json, subprocess
d = json.load(open('$T/orig.diff.json'))
assert $rc == 1
assert subprocess.call(['python3', '$(dirname "$0")/schema_check.py', '$SRC/docs/diff.schema.json', '$T/orig.diff.json']) == 0
assert d['decisive'] == 'fsdp_root_forwards', d['decisive']
assert [(r['rank'], r['counts']['fsdp_root_forwards']) for r in d['ranks']] == [(0, {'a': 3, 'b': 0}), (1, {'a': 3, 'b': 0})], d['ranks']
assert [c['id'] for c in d['counts'] if c['differ']] == ['fsdp_root_forwards', 'unwrapped_calls'], d['counts']
assert all(r['counts']['unwrapped_calls']['a'] == 0 < r['counts']['unwrapped_calls']['b'] for r in d['ranks']), d['ranks']
assert (d['a']['verdict'], d['b']['verdict']) == ('healthy', 'skipped-fsdp-root'), (d['a'], d['b'])
"
else
  bad "no torch venv at $B/venv-torch (make test runs scripts/setup-torch.sh)"
fi

"$RT" params --at bogus "$T/4.52.4" 2> "$T/err"; rc=$?
check "--at bogus: exit 2, 'ranktrace params: --at bogus'" bash -c "[ $rc -eq 2 ] && grep -q '^ranktrace params: --at bogus' '$T/err'"
"$RT" params --rank 9 "$T/4.52.4" 2> "$T/err"; rc=$?
check "--rank 9 of 4 ranks: exit 2" bash -c "[ $rc -eq 2 ] && grep -q '^ranktrace params: no rank 9' '$T/err'"
finish
