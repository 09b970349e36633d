#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_probe_fsdp2.sh - the PyTorch probe on FSDP2 (fully_shard; real
# PyTorch, CPU, gloo, 2 ranks, tests/python/fsdp2_cpu.py: torchtitan's
# layout, blocks then the root owning the embedding and the head). Healthy
# with activation checkpointing and eval forwards: one root forward per
# forward, no unwrapped call, each parameter named from the model's root,
# whole as handed to fully_shard and each rank's DTensor shard after (its
# mesh, placement and local shape in params). The
# root's hooks bypassed (--inject skip-fsdp-root, or model.forward() called
# directly: FSDP2's own form of the skipped root) read skipped-fsdp-root from
# the embedding the root owns, used while its parameters were still sharded.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
W="$(cd "$(dirname "$0")/../python" && pwd)/fsdp2_cpu.py"
need_torch

# run NAME [ranktrace run options] -- fsdp2_cpu.py arguments: bounded, 2 ranks
run() {
  local name=$1; shift
  local pre=()
  while [ "$1" != "--" ]; do pre+=("$1"); shift; done; shift
  timeout 180 "$RT" run "${pre[@]}" -o "$T/$name" -- "$B/bin/rt-launch" -n 2 "$PY" "$W" "$@" \
    > "$T/$name.log" 2>&1
  echo $? > "$T/$name.rc"
  "$RT" verdict "$T/$name" > /dev/null 2>&1; echo $? > "$T/$name.vrc"
  "$RT" view --json "$T/$name" > "$T/$name.json" 2> /dev/null
}
# evidence NAME VERDICT ROOT_FORWARDS CALLER_RE: verdict and exit code, and the
# probe's evidence in view --json (the embedding, called from CALLER_RE)
evidence() {
  python3 - "$T/$1.json" "$2" "$3" "$4" "$(cat "$T/$1.vrc")" <<'PY'
import json, re, sys
d, want, fwd, caller, vrc = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
assert (d['verdict'], vrc) == (want, 0 if want == 'healthy' else 1), (d['verdict'], vrc, d['findings'])
assert [r['fsdp_root_forwards'] for r in d['ranks']] == [fwd, fwd], d['ranks']
for r in d['ranks']:
    if want == 'healthy':
        assert r['unwrapped']['calls'] == 0, r['unwrapped']
        continue
    site = r['unwrapped']['sites'][0]
    assert site["module"] == "embed_tokens (Embedding)" and re.match(caller, site["caller"]), site
    assert r['unwrapped']['root_forwards_before'] == 0, r['unwrapped']
PY
}

run good -- 3 --checkpointing --eval
check "healthy, checkpointing and eval forwards: exit 0" [ "$(cat "$T/good.rc")" = 0 ]
check "healthy: verdict healthy, 6 root forwards a rank, no unwrapped call" evidence good healthy 6 -
"$RT" params --json "$T/good" > "$T/good.params.json"
check "params: each parameter named from the model's root, whole as handed to fully_shard, then each rank's half (the DTensor's local shard)" python3 -c "
import json
d = json.load(open('$T/good.params.json'))
names = sorted(p['name'] for p in d['params'])
assert len(names) == 10 and 'layers.1.mlp.weight' in names and 'mlp.weight' not in names, names
for p in d['params']:
    for r in p['ranks']:
        wrap, last = r['points']['wrap'], r['placement']
        assert wrap['bytes'] == wrap['param_bytes'] > 0, (p['name'], wrap)
        assert last['numel'] == wrap['numel'] and 2 * last['bytes'] == last['param_bytes'], (p['name'], last)
        # the DTensor's layout: sharded on dim 0 over a mesh of 2, half of dim 0 local
        dt, shape = last['dtensor'], last['shape']
        assert wrap['dtensor'] is None and dt['mesh'] == [2] and dt['placements'] == ['Shard(0)'], (p['name'], dt)
        assert dt['local_shape'] == [shape[0] // 2] + shape[1:], (p['name'], shape, dt)
"
"$RT" params "$T/good" > "$T/good.params"
check "params: the shape column shows the DTensor's placement and mesh" \
  grep -qE "^layers\.1\.mlp\.weight +.*\[[0-9]+, [0-9]+\] Shard\(0\) mesh \[2\]" "$T/good.params" ||
  cat "$T/good.params"

run inj --inject skip-fsdp-root -- 2 --checkpointing --eval
check "--inject skip-fsdp-root: skipped-fsdp-root, exit 1, the embedding called from the training loop" \
  evidence inj skipped-fsdp-root 0 "fsdp2_cpu.py:[0-9]+ step$"
check "--inject skip-fsdp-root: torch failed at the embedding's sharded weight" \
  grep -q "RuntimeError: aten.embedding.default got mixed torch.Tensor and DTensor" "$T/inj.log"

run direct -- 2 --direct-forward
check "model.forward() called directly: skipped-fsdp-root, exit 1, from the loop's line" \
  evidence direct skipped-fsdp-root 0 "fsdp2_cpu.py:[0-9]+ step$"
finish
