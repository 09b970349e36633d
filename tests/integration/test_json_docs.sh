#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_json_docs.sh - docs/json.md against what the commands print, both
# ways (schema_check.py --doc --complete): every object the JSON outputs hold
# has its table, every key printed is documented with its type, no key is
# printed twice in one object, and every documented key is printed by one of
# the outputs of a small corpus made to reach them all: a healthy run and
# 4.53.0 (view, params at two points, device records and stragglers), a
# dropped collective (a finding naming its collective; diff's first unlike
# call), a parameter 2-D in one trace and 1-D in another (diff's shape
# kinds), a trace capped by --max-size (trace_stop), a job
# hung in a collective viewed while it runs (open calls, idle time), the
# probe's own calls through ctypes (unwrapped-call sites, teardown, a DTensor's
# layout in params), and a
# bisect that finds, one that stops at its endpoints, one --find fix. Then the checker
# itself must catch an undocumented key, a key twice, a wrong type and a
# documented key nothing prints.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
DOC="$(dirname "$0")/../../docs/json.md"
CHK="$(dirname "$0")/schema_check.py"
export SIMGPU_TIMEOUT=120
mkdir -p "$T/j"
run() { local name=$1; shift; sim timeout -k 5 120 "$RT" run -o "$T/$name" "$@" > "$T/$name.log" 2>&1; }
fsdp() { local name=$1; shift; run "$name" -- "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --steps 2 "$@"; }
js() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }

fsdp good
fsdp bad --trainer-version 4.53.0
# two hosts: rank 1 as host b, its clock 50 ms ahead (device.hosts)
RANKTRACE_TEST_HOST=1=b:+50ms fsdp hosts
run skip --inject 'ncclAllGather:skip:rank=1:when=4' -- "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --steps 2
run capped --max-size 64K -- "$B/bin/callstorm" --calls 30000
# more collectives in flight than the device source keeps (65,536): drops
run drops -- "$B/bin/cuda_state" inflight 70000
# the probe's calls as the PyTorch probe makes them (ctypes), without PyTorch:
# an unwrapped module's call site, teardown, a parameter of shape DIMS
probe() { local name=$1 dims=$2
  RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 run "$name" -- python3 -c "
import ctypes
lib = ctypes.CDLL(None)
dims = ($dims,)
lib.rt_unwrapped_call(b'model.layers.0', b'train.py:12 training_step', ctypes.c_uint64(4))
lib.rt_param_shape(b'w', len(dims), (ctypes.c_int64 * len(dims))(*dims))
local = (dims[0] // 2,) + dims[1:]   # a DTensor sharded on dim 0 over a mesh of 2
lib.rt_param_dtensor(b'w', 1, (ctypes.c_int64 * 1)(2), (ctypes.c_int * 1)(0), len(local),
                     (ctypes.c_int64 * len(local))(*local))
lib.rt_param(b'w', 1, -1, 0, ctypes.c_uint64(32), ctypes.c_uint64(128), ctypes.c_void_p(4096))
lib.rt_marker(b'rt.teardown', ctypes.c_int64(1))"
}
probe probe 4,8
probe probe1d 32
for t in good bad skip capped probe drops hosts; do
  timeout -k 2 60 "$RT" view "$T/$t" --json > "$T/j/view-$t.json" 2> /dev/null
done
timeout -k 2 60 "$RT" params "$T/good" --json > "$T/j/params-good.json"
timeout -k 2 60 "$RT" params "$T/bad" --json --at wrap > "$T/j/params-bad-wrap.json"
timeout -k 2 60 "$RT" params "$T/probe" --json > "$T/j/params-probe.json"
timeout -k 2 60 "$RT" diff "$T/good" "$T/bad" --json > "$T/j/diff-bad.json"
timeout -k 2 60 "$RT" diff "$T/skip" "$T/good" --json > "$T/j/diff-skip.json"
timeout -k 2 60 "$RT" diff "$T/probe" "$T/probe1d" --json > "$T/j/diff-shapes.json"
check "the corpus has what it is for: a trace_stop, a finding with its collective, shape kinds, unwrapped sites, drops, two hosts" \
  bash -c "$(declare -f js); js '$T/j/view-capped.json' \"any(r['trace_stop'] for r in d['ranks'])\" &&
    js '$T/j/view-skip.json' \"any(f['seq'] is not None for f in d['findings'])\" &&
    js '$T/j/diff-shapes.json' \"d['params']['shapes']\" &&
    js '$T/j/diff-skip.json' \"any(r['collectives'] and r['collectives']['b'] for r in d['ranks'])\" &&
    js '$T/j/view-probe.json' \"d['ranks'][0]['unwrapped']['sites']\" &&
    js '$T/j/view-drops.json' \"d['device']['ranks'][0]['drops']\" &&
    js '$T/j/view-hosts.json' \"len(d['device']['hosts']) == 2\""

# a job hung in its 2nd collective, viewed while it runs
start hang nccl-hang=2
for i in $(seq 80); do
  timeout -k 2 20 "$RT" view "$T/hang" --json --stall 1s > "$T/j/view-hang.json" 2> /dev/null
  js "$T/j/view-hang.json" "d['hung'] and all(r['open_calls'] for r in d['ranks'])" 2> /dev/null && break
  sleep 0.5
done
check "a live hang: open collectives with their sequence numbers" js "$T/j/view-hang.json" \
  "d['hung'] and all('seq' in r['open_calls'][0] for r in d['ranks'])"
stop "$LAST"

# bisect: one that finds, one that stops at a healthy "bad" endpoint
cat > "$T/trainer.sh" <<SH
#!/bin/sh
case \$1 in good*) v=4.52.4 ;; *) v=4.53.0 ;; esac
exec "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --trainer-version \$v --steps 2
SH
chmod +x "$T/trainer.sh"
sim timeout -k 5 300 "$RT" bisect -o "$T/b1" --versions good1,good2,bad1 --json -- "$T/trainer.sh" {version} \
  > "$T/j/bisect-found.json" 2> /dev/null
sim timeout -k 5 300 "$RT" bisect -o "$T/b2" --versions good1,good2 --json -- "$T/trainer.sh" {version} \
  > "$T/j/bisect-error.json" 2> /dev/null
sim timeout -k 5 300 "$RT" bisect -o "$T/b3" --versions bad1,good1 --find fix --json -- "$T/trainer.sh" {version} \
  > "$T/j/bisect-fix.json" 2> /dev/null
check "bisect: one found, one stopped with its error, one fix found" bash -c "$(declare -f js); js '$T/j/bisect-found.json' \"d['found']\" &&
  js '$T/j/bisect-error.json' \"'error' in d\" && js '$T/j/bisect-fix.json' \"d['first_good']['id'] == 'good1'\""

check "docs/json.md and the outputs agree, both ways" python3 "$CHK" --doc "$DOC" --complete "$T"/j/*.json

# the checker catches what it is for
python3 - "$T/j/view-good.json" "$T/bogus.json" "$T/twice.json" "$T/type.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["ranks"][0]["bogus"] = 1
json.dump(d, open(sys.argv[2], "w"))
text = open(sys.argv[1]).read().replace('"events":', '"events": 1, "events":', 1)
open(sys.argv[3], "w").write(text)
d = json.load(open(sys.argv[1]))
d["ranks"][0]["events"] = "many"
json.dump(d, open(sys.argv[4], "w"))
PY
# catches WHAT DOC ARGS...: the checker fails on ARGS and says WHAT
catches() { local what=$1 doc=$2; shift 2
  ! python3 "$CHK" --doc "$doc" "$@" > "$T/chk.out" && grep -qF "$what" "$T/chk.out"
}
check "control: an undocumented key fails" catches "key 'bogus' printed but not documented" "$DOC" "$T/bogus.json"
check "control: a key twice in one object fails" catches "key 'events' twice" "$DOC" "$T/twice.json"
check "control: a value of another type fails" catches "'many' is not" "$DOC" "$T/type.json"
sed 's/^| `ring_bytes` |/| `ring_bytes`, `never_printed` |/' "$DOC" > "$T/doc.md"
check "control: a documented key no output prints fails" \
  catches "key 'never_printed' documented but never printed" "$T/doc.md" --complete "$T"/j/*.json
finish
