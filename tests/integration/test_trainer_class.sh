#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_trainer_class.sh - the bug class beyond FSDP v1's Trainer, on the real
# releases from PyPI (scripts/setup-trainers.sh; CPU/gloo, 2 ranks, a tiny
# Llama, python -m torch.distributed.run, tests/python/hf_trainer.py), one
# run per cell:
#   - a fault plan that cannot fire (skip-fsdp-root, an FSDP v1 preset, on a
#     DDP job, 4.52.4): healthy, exit 0, and run's stderr, view and view
#     --json say the rule never fired (this real DDP run is also the healthy
#     DDP run the unprepared-model signature must not fire on)
#   - the never-prepared model (--inject skip-prepare-model on 4.52.4 with
#     DDP and FSDP v1, on 5.25.0 with FSDP2): every rank trains its own copy
#     and exits 0; unprepared-model, exit 1
#   - 4.53.0 in an HPO-style loop that catches each failed trial and exits 0:
#     skipped-fsdp-root, exit 1, the exception's text in view; `bisect
#     --versions 4.52.4,4.53.0` over that script (the overlays, 2 runs) names
#     4.53.0
#   - TRL's SFTTrainer (0.19.0): 4.52.4 healthy, 4.53.0 skipped-fsdp-root
#   - transformers 5.25.0 with its default FSDP2 (fully_shard, accelerate
#     1.16): healthy; --inject skip-fsdp-root: skipped-fsdp-root, exit 1
# Asserts on run's exit, verdict's word and exit, view and view --json.
# Skipped (77) when no package index is reachable and the overlays are not
# installed yet, and under make test-asan (trainer_lib.sh).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/trainer_lib.sh"
STEPS=2
TABLE="$T/table"

# cell NAME VERSION INJECT ARGS...: one traced run of hf_trainer.py (INJECT
# "-": none) into $T/NAME; run's exit in $rc, stderr in NAME.err, verdict
# word and exit in NAME.verdict and $vrc, view in NAME.view and NAME.json
cell() {
  local name=$1 v=$2 inj=$3 deps=deps injarg=() t0=$SECONDS note=""; shift 3
  case $v in 5.*) deps=deps5 ;; esac
  [ "$inj" != - ] && injarg=(--inject "$inj")
  for attempt in 1 2; do
    PYTHONPATH="$TD/transformers-$v:$TD/$deps" timeout -k 10 400 "$RT" run -o "$T/$name" \
      "${injarg[@]}" -- "$PY" -m torch.distributed.run --standalone --nproc-per-node 2 "$HFT" \
      --steps $STEPS "$@" > "$T/$name.log" 2> "$T/$name.err"
    rc=$?
    # gloo's teardown aborted a rank after both finished (trainer_lib.sh; here
    # the unprepared run): once more, said in the table
    if [ $rc -ne 0 ] && [ $attempt = 1 ] && aborted_in_teardown "$T/$name.err"; then
      echo "# $name: a rank aborted in teardown after both finished ($(grep -m1 'terminate called' "$T/$name.err")): once more"
      note=" (rerun: teardown abort)"
      rm -rf "${T:?}/$name"
      continue
    fi
    break
  done
  "$RT" verdict "$T/$name" > "$T/$name.verdict" 2> "$T/$name.why"
  vrc=$?
  "$RT" view "$T/$name" > "$T/$name.view" 2>&1
  "$RT" view --json "$T/$name" > "$T/$name.json" 2> /dev/null
  sed -n '/^findings:/,$p' "$T/$name.view" | sed -n '2,3p' | cut -c1-400 | sed "s/^ */# $name: /"
  printf '%-14s %-7s %-19s %-32s %4s %-18s %3ss%s\n' "$name" "$v" "${inj/#-/}" "$*" "$rc" \
    "$(cat "$T/$name.verdict")" $((SECONDS - t0)) "$note" >> "$TABLE"
}
# judged NAME WORD: verdict WORD with its exit code (healthy 0, else 1)
judged() {
  local want="$2-$([ "$2" = healthy ] && echo 0 || echo 1)"
  [ "$(cat "$T/$1.verdict")-$vrc" = "$want" ] ||
    { echo "# $1: verdict $(cat "$T/$1.verdict"), exit $vrc; want $want"; cat "$T/$1.why"; false; }
}
# prepared NAME KIND: both ranks said accelerate prepared KIND (FSDP v1's
# Trainer prepares twice)
prepared() {
  [ "$(grep -E "^hf_trainer: rank [01] prepared $2" "$T/$1.err" | sort -u | wc -l)" -eq 2 ] ||
    { echo "# $1:"; grep '^hf_trainer' "$T/$1.err"; grep -m3 Error "$T/$1.err"; false; }
}
# finding NAME KIND: view --json holds a finding of KIND naming both ranks
finding() {
  python3 - "$T/$1.json" "$2" <<'PY'
import json, sys
d, kind = json.load(open(sys.argv[1])), sys.argv[2]
f = [f for f in d["findings"] if f["id"] == kind]
assert f and sorted(f[0]["ranks"]) == [0, 1], (kind, [(x["id"], x.get("ranks")) for x in d["findings"]])
PY
}

T0=$SECONDS
printf '%-14s %-7s %-19s %-32s %4s %-18s %s\n' cell version inject arguments run verdict time > "$TABLE"

# a plan that cannot fire: an FSDP v1 preset on a DDP job
cell ddp-never 4.52.4 skip-fsdp-root --wrap ddp
check "DDP --inject skip-fsdp-root: accelerate prepared DistributedDataParallel" prepared ddp-never DistributedDataParallel
check "DDP --inject skip-fsdp-root: trains (exit $rc)" [ $rc -eq 0 ]
check "DDP --inject skip-fsdp-root: verdict healthy, exit 0" judged ddp-never healthy
check "DDP --inject skip-fsdp-root: run's stderr says the rule never fired" \
  grep -q "^ranktrace run: warning: skip-fsdp-root never fired: this job ran no FSDP root forward" "$T/ddp-never.err"
check "DDP --inject skip-fsdp-root: verdict says it never fired" \
  grep -q "^ranktrace verdict: warning: skip-fsdp-root never fired" "$T/ddp-never.why"
check "DDP --inject skip-fsdp-root: view says it never fired, on both ranks" \
  grep -qE "skip-fsdp-root never fired: .*fsdp.root_forward was never reached \(ranks 0,1\)" "$T/ddp-never.view"
check "DDP --inject skip-fsdp-root: view --json's injection-never-fired" finding ddp-never injection-never-fired
check "DDP: no unprepared-model on a real DDP run" \
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert not [f for f in d['findings'] if f['id'] == 'unprepared-model']" "$T/ddp-never.json"

# the never-prepared model
cell unprepared 4.52.4 skip-prepare-model --wrap ddp --expect none
check "--inject skip-prepare-model: the model reached the Trainer as given" prepared unprepared "nothing \(LlamaForCausalLM as given\)"
check "--inject skip-prepare-model: every rank trains its own copy, nothing fails (exit $rc)" [ $rc -eq 0 ] ||
  { tail -n 15 "$T/unprepared.err" | sed 's/^/# unprepared stderr: /'; sed -n '/^findings:/,$p' "$T/unprepared.view" | head -8 | sed 's/^/# /'
    # the ranks' own words before torchrun's summary (a teardown abort in CI: aborted_in_teardown)
    grep -iE 'terminate|what\(\)|abort|fatal|error|exception|warning' "$T/unprepared.err" | grep -vE 'elastic|ChildFailedError|error_file' |
      head -n 12 | sed 's/^/# unprepared ranks: /'; }
check "--inject skip-prepare-model: verdict unprepared-model, exit 1" judged unprepared unprepared-model
check "--inject skip-prepare-model: view --json's unprepared-model names both ranks" finding unprepared unprepared-model
check "--inject skip-prepare-model: view says each rank trained its own copy" \
  grep -q "ranks 0,1 each trained their own copy of the model: at least [0-9]* optimizer steps" "$T/unprepared.view"

# the same with FSDP asked for: FSDP v1 (4.52.4) and 5.25.0's default FSDP2
for c in "unprep-fsdp1 4.52.4 1" "unprep-fsdp2 5.25.0 0"; do
  read -r name v fv <<< "$c"
  cell "$name" "$v" skip-prepare-model --fsdp-version "$fv" --expect none
  check "$v FSDP --inject skip-prepare-model: trains unprepared (exit $rc), verdict unprepared-model, exit 1" \
    eval '[ $rc -eq 0 ] && prepared "$name" "nothing \(LlamaForCausalLM as given\)" && judged "$name" unprepared-model'
done

# 4.53.0 in a loop that catches the exception
cell hpo 4.53.0 - --trials 2
check "4.53.0 HPO loop: both trials failed on both ranks and the loop went on (exit $rc)" \
  eval '[ $rc -eq 0 ] && [ "$(grep -cE "^hf_trainer: rank [01] trial [01] failed: " "$T/hpo.err")" -eq 4 ]'
check "4.53.0 HPO loop: verdict skipped-fsdp-root, exit 1" judged hpo skipped-fsdp-root
msg=$(grep -m1 -oE 'trial 0 failed: [A-Za-z]+: .{1,40}' "$T/hpo.err" | sed 's/^trial 0 failed: //')
check "4.53.0 HPO loop: view shows the exception the program caught ($msg)" \
  grep -qF "the exception that left it: $msg" "$T/hpo.view"
check "4.53.0 HPO loop: no rank crashed, and view --json says so" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert [r['end'] for r in d['ranks']] == ['exit 0', 'exit 0'], [r['end'] for r in d['ranks']]
assert [r['fsdp_root_forwards'] for r in d['ranks']] == [0, 0]
f = [f for f in d['findings'] if f['id'] == 'root-forward-unwrapped']
assert f and 'no rank crashed' in f[0]['text'], d['findings']" "$T/hpo.json"
# and a bisect over that script names 4.53.0 (before issue 29 it refused: "the
# bad endpoint 4.53.0 is healthy"): the overlays as --versions, 2 runs
t0=$SECONDS
timeout -k 10 600 "$RT" bisect -o "$T/hpo-bisect" --versions 4.52.4,4.53.0 --timeout 300 --json -- \
  env "PYTHONPATH=$TD/transformers-{version}:$TD/deps" "$PY" -m torch.distributed.run --standalone \
  --nproc-per-node 2 "$HFT" --steps $STEPS --trials 2 > "$T/hpo-bisect.json" 2> "$T/hpo-bisect.err"
rc=$?
[ $rc -eq 0 ] || sed 's/^/  stderr: /' "$T/hpo-bisect.err"
found=$(jfield 'j["first_bad"]["id"] + " " + j["signature"] + " " + j["last_good"]["id"] + " " + str(j["runs"])' \
  "$T/hpo-bisect.json" 2> /dev/null)
printf '%-14s %-7s %-19s %-32s %4s %-18s %3ss\n' hpo-bisect "-" "" "--versions 4.52.4,4.53.0" "$rc" \
  "${found:-?}" $((SECONDS - t0)) >> "$TABLE"
check "bisect over the HPO loop, --versions 4.52.4,4.53.0: exit 0 ($rc); first bad, signature, last good, runs: $found" \
  eval '[ $rc -eq 0 ] && [ "$found" = "4.53.0 skipped-fsdp-root 4.52.4 2" ]'

# TRL's SFTTrainer
cell sft-good 4.52.4 - --sft
check "SFTTrainer 4.52.4: trains (exit $rc), verdict healthy" judged sft-good healthy
cell sft-bad 4.53.0 - --sft
check "SFTTrainer 4.53.0: fails (exit $rc), verdict skipped-fsdp-root" \
  eval '[ $rc -ne 0 ] && judged sft-bad skipped-fsdp-root'
check "SFTTrainer 4.53.0: the unwrapped call from TRL's or transformers' trainer" \
  grep -qE "called LlamaForCausalLM from (trl|transformers)/" "$T/sft-bad.view"

# transformers 5.x's default FSDP2
cell v5-good 5.25.0 - --fsdp-version 0
check "5.25.0 default: accelerate prepared fully_shard (FSDP2)" prepared v5-good "fully_shard \(FSDP2\)"
check "5.25.0 default FSDP2: trains (exit $rc), verdict healthy" judged v5-good healthy
cell v5-inj 5.25.0 skip-fsdp-root --fsdp-version 0
check "5.25.0 FSDP2 --inject skip-fsdp-root: fails (exit $rc), verdict skipped-fsdp-root, exit 1" \
  eval '[ $rc -ne 0 ] && judged v5-inj skipped-fsdp-root'
check "5.25.0 FSDP2 --inject skip-fsdp-root: the rule fired (no never-fired word)" \
  eval '! grep -q "never fired" "$T/v5-inj.err" "$T/v5-inj.view"'

echo "--- verdicts ($((SECONDS - T0)) s, 11 runs of 2 ranks) ---"
cat "$TABLE"
finish
