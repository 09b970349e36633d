#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_probe_configs.sh - the skipped FSDP root named from the probe's direct
# evidence (a module the root wraps called while no root forward ran) in every
# configuration a trainer uses, on real PyTorch (CPU, gloo, FSDP v1, 2 ranks):
# each row of CONFIGS runs healthy (4.52.4-style: the wrapped model trains),
# 4.53.0-style (the unwrapped module trains) and injected (--inject
# skip-fsdp-root on the healthy script); then DDP under the same injection
# stays healthy (FSDP2: test_probe_fsdp2.sh). Rows group the options so that each appears once
# with use_orig_params true and false where it matters (tests/python/fsdp_cpu.py
# says what each does).
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
W="$(cd "$(dirname "$0")/../python" && pwd)/fsdp_cpu.py"
need_torch

# name | fsdp_cpu.py options (--cpu-offload is left out: FSDP's CPU offload
# pins host memory, which needs CUDA; the probe does nothing different for it)
CONFIGS=(
  "orig-manual-reentrant|--orig-params --manual-wrap --checkpointing reentrant --eval --generate"
  "flat-bf16-nonreentrant|--no-auto-wrap --mixed-precision --checkpointing non-reentrant --eval --generate"
  "orig-bf16-wrapper|--orig-params --mixed-precision --checkpointing wrapper --eval"
)

# run NAME [ranktrace run options] -- fsdp_cpu.py options: bounded, 2 ranks
run() {
  local name=$1; shift
  local pre=()
  while [ "$1" != "--" ]; do pre+=("$1"); shift; done; shift
  timeout 180 "$RT" run "${pre[@]}" -o "$T/$name" -- "$B/bin/rt-launch" -n 2 "$PY" "$W" "$@" \
    > "$T/$name.log" 2>&1
  "$RT" verdict "$T/$name" > /dev/null 2>&1; echo $? > "$T/$name.vrc"
  "$RT" view --json "$T/$name" > "$T/$name.json" 2> /dev/null
}

# expect NAME healthy|skipped STEPS_WITH_ROOT_FORWARD: the verdict's exit code and view --json
expect() {
  local name=$1 want=$2 fwd=$3
  if [ "$want" = healthy ]; then
    check "$name: verdict exit 0" [ "$(cat "$T/$name.vrc")" = 0 ]
  else
    check "$name: verdict exit 1" [ "$(cat "$T/$name.vrc")" = 1 ]
  fi
  check "$name: view --json says $want" python3 - "$T/$name.json" "$want" "$fwd" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); want, fwd = sys.argv[2], int(sys.argv[3])
ranks = d['ranks']
assert len(ranks) == 2, ranks
if want == 'healthy':
    assert d['verdict'] == 'healthy', (d['verdict'], d['findings'])
    assert all(r['unwrapped']['calls'] == 0 for r in ranks), [r['unwrapped'] for r in ranks]
    assert all(r['fsdp_root_forwards'] == fwd for r in ranks), [r['fsdp_root_forwards'] for r in ranks]
else:
    assert d['verdict'] == 'skipped-fsdp-root', (d['verdict'], d['findings'])
    f = d['findings'][0]
    assert f['id'] == 'root-forward-unwrapped' and 'ranks 0-1 called TinyLM from fsdp_cpu.py:' in f['text'], f
    for r in ranks:
        site = r['unwrapped']['sites'][0]
        assert site['module'] == 'TinyLM' and site['caller'].endswith(' main'), site
        assert r['fsdp_root_forwards'] == 0 and r['unwrapped']['root_forwards_before'] == 0, r
PY
}

t0=$(date +%s)
for row in "${CONFIGS[@]}"; do
  name=${row%%|*}; read -ra opts <<< "${row#*|}"
  extra=()
  [ "$name" = orig-manual-reentrant ] && extra=(--teardown-abort)
  run "$name.good" -- --steps 2 "${opts[@]}" "${extra[@]}"
  fwd=2; [[ " ${opts[*]} " == *" --eval "* ]] && fwd=4
  expect "$name.good" healthy "$fwd"
  run "$name.v453" -- --steps 1 --trainer-version 4.53.0 "${opts[@]}"
  expect "$name.v453" skipped 0
  run "$name.inj" --inject skip-fsdp-root -- --steps 1 "${opts[@]}"
  expect "$name.inj" skipped 0
done

# the teardown abort of the first row: healthy, the rank named, not "crashed"
check "teardown: rank 1 crashed in teardown, a warning; the verdict is the training's" python3 - "$T/orig-manual-reentrant.good.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = {x['rank']: x for x in d['ranks']}
assert r[1]['teardown'] == {'began': 'destroy_process_group', 'crashed': True}, r[1]['teardown']
assert r[1]['end'].startswith('signal 6'), r[1]['end']
# rank 0 may be ended by the launcher while it tears down too: also in teardown
assert r[0]['teardown']['began'] == 'destroy_process_group', r[0]['teardown']
f = [f for f in d['findings'] if f['id'] == 'crashed-in-teardown' and f['rank'] == 1]
assert len(f) == 1 and f[0]['level'] == 'warning', d['findings']
assert 'rank 1 crashed in teardown, after training finished' in f[0]['text'], f
assert not [f for f in d['findings'] if f['id'] == 'killed'], d['findings']
PY

# the LTTng backend records the same evidence (from the same table)
if command -v lttng > /dev/null && command -v babeltrace2 > /dev/null; then
  read -ra opts <<< "${CONFIGS[0]#*|}"
  run lttng.v453 --backend lttng -- --steps 1 --trainer-version 4.53.0 "${opts[@]}"
  expect lttng.v453 skipped 0
  check "LTTng: the same unwrapped-call evidence as the native trace" python3 -c "
import json
a, b = (json.load(open('$T/' + n + '.json')) for n in ('orig-manual-reentrant.v453', 'lttng.v453'))
assert [r['unwrapped'] for r in a['ranks']] == [r['unwrapped'] for r in b['ranks']], (a['ranks'], b['ranks'])
"
fi

# DDP knows no FSDP root: the injection finds nothing to skip
run ddp.inj --inject skip-fsdp-root -- --steps 2 --ddp --eval --generate
expect ddp.inj healthy 0

echo "# $(( $(date +%s) - t0 )) s for $(ls -d "$T"/*/ | wc -l) traced runs"
finish
