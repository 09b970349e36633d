#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_bisect_trainers.sh - a real bisect over transformers releases from
# PyPI: `ranktrace bisect --pip transformers` with transformers' own Trainer
# (tests/python/hf_trainer.py: FSDP v1 through accelerate, CPU/gloo, 2 ranks,
# use_orig_params at transformers' default, true), accelerate and peft from
# BUILD/trainers/deps through --env PYTHONPATH. 4.52.4..4.53.0 and
# 4.51.3..4.53.0 both name 4.53.0 as skipped-fsdp-root in at most
# ceil(log2 N) + 2 runs (counted in --json and in the saved state);
# --find fix --bad 4.53.0 --good 4.53.2 names 4.53.1, the release that fixed
# it, in 3 runs. The overlays are cached in BUILD/trainers/bisect-cache, so a
# second `make test` installs nothing. Skipped (77) when no package index is reachable (bisect
# lists the releases there).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/trainer_lib.sh"
if ! timeout -k 5 120 "$PY" -m pip index versions transformers > "$T/index.out" 2>&1; then
  if grep -qiE 'connection|unreachable|resolution|timed out|proxy' "$T/index.out"; then
    echo "SKIP: no package index reachable (bisect --pip lists the releases there): $(grep -iE 'connection|unreachable|resolution|timed out|proxy' "$T/index.out" | tail -1)"
    exit 77
  fi
  cat "$T/index.out"
  bad "pip index versions transformers failed"
  finish; exit 1
fi
export RANKTRACE_CACHE_DIR="$TB/trainers/bisect-cache"
pipopts=(--pip transformers --python "$PY" --env "PYTHONPATH=$TD/deps" --env HF_HUB_OFFLINE=1 --timeout 300)
trainer=(-- "$PY" -m torch.distributed.run --standalone --nproc-per-node 2 "$HFT" --steps 2)
common=("${pipopts[@]}" --json "${trainer[@]}")
field() { jfield "$1" "$T/out.json"; }
# bisect NAME GOOD BAD: bounded, JSON in $T/out.json, the time in $T/NAME.s
bisect() {
  local t0=$SECONDS rc
  timeout -k 10 1200 "$RT" bisect -o "$T/$1" --good "$2" --bad "$3" "${common[@]}" > "$T/out.json" 2> "$T/$1.err"
  rc=$?
  echo $((SECONDS - t0)) > "$T/$1.s"
  [ $rc -eq 0 ] || sed 's/^/  stderr: /' "$T/$1.err"
  return $rc
}
# max runs: ceil(log2 N) + 2
allowed() { python3 -c "import math, sys; print(math.ceil(math.log2(int(sys.argv[1]))) + 2)" "$1"; }
# judge NAME ORDER: the checks common to both bisects
judge() {
  local name=$1 order=$2 n runs state_runs
  check "$name: 4.53.0 is the first bad, skipped-fsdp-root, 4.52.4 the last good" \
    [ "$(field 'j["first_bad"]["id"] + " " + j["signature"] + " " + j["last_good"]["id"]')" = "4.53.0 skipped-fsdp-root 4.52.4" ]
  check "$name: the releases pip lists, in order ($(field '",".join(j["order"])'))" \
    [ "$(field '",".join(j["order"])')" = "$order" ]
  n=$(field 'j["candidates_total"]')
  runs=$(field 'j["runs"]')
  check "$name: $runs runs for $n candidates, at most ceil(log2 N) + 2 = $(allowed "$n")" \
    [ "$runs" -le "$(allowed "$n")" ]
  state_runs=$(awk '/^cand / { s += $3 } END { print s + 0 }' "$T/$name/.bisect/state")
  check "$name: the saved state counts the same runs ($state_runs)" [ "$state_runs" -eq "$runs" ]
  "$RT" verdict "$(field 'j["first_bad"]["trace"]')" > /dev/null 2>&1
  check "$name: the first bad's trace: verdict exit 1" [ $? -eq 1 ]
  "$RT" verdict "$(field 'j["last_good"]["trace"]')" > /dev/null 2>&1
  check "$name: the last good's trace: verdict exit 0" [ $? -eq 0 ]
  check "$name: the reproducing command keeps --env after the overlay" \
    bash -c "grep -qF 'HF_HUB_OFFLINE=1 ' <<< \"\$1\" && grep -q 'PYTHONPATH=[^ ]*/overlays/transformers-4.53.0-[0-9a-f]*:$TD/deps ' <<< \"\$1\"" _ "$(field 'j["repro"]')"
}

bisect narrow 4.52.4 4.53.0
rc=$?
check "4.52.4..4.53.0: exit 0 ($rc, $(cat "$T/narrow.s") s)" [ $rc -eq 0 ]
judge narrow "4.52.4,4.53.0"
bisect wide 4.51.3 4.53.0
rc=$?
check "4.51.3..4.53.0: exit 0 ($rc, $(cat "$T/wide.s") s)" [ $rc -eq 0 ]
judge wide "4.51.3,4.52.1,4.52.2,4.52.3,4.52.4,4.53.0"
# which release fixed it: the first good after 4.53.0, the table oldest first
timeout -k 10 1200 "$RT" bisect -o "$T/fix" --find fix --bad 4.53.0 --good 4.53.2 "${pipopts[@]}" "${trainer[@]}" \
  > "$T/fix.out" 2> "$T/fix.err"
rc=$?
[ $rc -eq 0 ] || sed 's/^/  stderr: /' "$T/fix.err"
check "--find fix 4.53.0..4.53.2: exit 0 ($rc), first good 4.53.1, last bad 4.53.0" \
  grep -qzP 'first good: 4\.53\.1  \(fixes skipped-fsdp-root\)\nlast bad: 4\.53\.0  \(skipped-fsdp-root\)\n' "$T/fix.out"
check "--find fix: the table in version order, 3 runs" \
  [ "$(awk '/^candidates tried/ { on = 1; next } on && /^  4\./ { printf "%s,", $1 } on && /^$/ { exit }' "$T/fix.out")" = "4.53.0,4.53.1,4.53.2," ]
check "--find fix: the diff reads the last bad against the first good" \
  grep -q "^ranktrace diff $T/fix/4.53.0 $T/fix/4.53.1:" "$T/fix.out"
sed -n '/^candidates tried/,/^$/p' "$T/fix.out"

python3 - "$T/out.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for c in j["candidates"]:
    print("  %-8s %-18s %-5s %d run(s) %6.1f s  round %d" % (c["id"], c["verdict"], c["judged"], c["runs"], c["seconds"], c["round"]))
PY
finish
