#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_trainer.sh - the verdict on transformers' own Trainer (FSDP v1 through
# accelerate, CPU/gloo, 2 ranks, a tiny Llama built from a config, 2 steps),
# with the releases from PyPI (scripts/setup-trainers.sh: transformers 4.52.4,
# 4.53.0, 4.53.1, accelerate 1.8.1, peft 0.15.2): 4.52.4 and 4.53.1 healthy,
# 4.53.0 and 4.52.4 with --inject skip-fsdp-root skipped-fsdp-root, under both
# use_orig_params settings and both launchers (python -m torch.distributed.run
# with TrainingArguments' fsdp_config; accelerate launch --config_file). Each
# (release, setting) cell runs once; the launchers alternate so that every
# release and every setting meets both. Plus peft LoRA and gradient
# checkpointing, healthy on 4.52.4 and skipped-fsdp-root on 4.53.0.
# RT_TRAINER_FULL=1: every cell under both launchers (docs/guide.md's table).
# Asserts on `ranktrace verdict`'s exit code and word and on `view --json`;
# tests/python/hf_trainer.py checks that accelerate prepared a
# FullyShardedDataParallel with the setting asked for. Skipped (77) when no
# package index is reachable and the overlays are not installed yet.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/trainer_lib.sh"
STEPS=2
sed 's/^\(  fsdp_use_orig_params:\) true$/\1 false/' "$ROOT/tests/python/accelerate_fsdp.yaml" > "$T/acc-false.yaml"
cp "$ROOT/tests/python/accelerate_fsdp.yaml" "$T/acc-true.yaml"
check "the false config differs in use_orig_params only" \
  [ "$(diff "$T/acc-true.yaml" "$T/acc-false.yaml" | grep -c '^[<>]')" -eq 2 ]

# launch_cmd LAUNCHER SETTING VARIANT: the training command into LAUNCH
launch_cmd() {
  local extra=()
  case $3 in lora) extra=(--lora) ;; gc) extra=(--grad-ckpt) ;; esac
  if [ "$1" = torchrun ]; then
    LAUNCH=("$PY" -m torch.distributed.run --standalone --nproc-per-node 2 "$HFT"
      --orig-params "$2" --steps $STEPS "${extra[@]}")
  else
    LAUNCH=("$TD/deps/bin/accelerate" launch --config_file "$T/acc-$2.yaml"
      --main_process_port "$(free_port)" "$HFT" --steps $STEPS "${extra[@]}")
  fi
}

# cell VERSION INJECT SETTING LAUNCHER VARIANT EXPECTED: one traced run, judged
TABLE="$T/table"
cell() {
  local v=$1 inj=$2 set=$3 la=$4 var=$5 want=$6 injarg=() rc vrc t0 note=""
  local name="$v-$inj-$set-$la-$var"
  local what
  what="$v$([ "$inj" != - ] && echo " --inject $inj") use_orig_params=$set $la$([ "$var" != - ] && echo " $var")"
  [ "$inj" != - ] && injarg=(--inject "$inj")
  launch_cmd "$la" "$set" "$var"
  t0=$SECONDS
  for attempt in 1 2; do
    PYTHONPATH="$TD/transformers-$v:$TD/deps" timeout -k 10 400 \
      "$RT" run -o "$T/$name" "${injarg[@]}" -- "${LAUNCH[@]}" > "$T/$name.log" 2>&1
    rc=$?
    # gloo's teardown aborted a rank after training (trainer_lib.sh): once more
    if [ $rc -ne 0 ] && [ $attempt = 1 ] && [ "$want" = healthy ] && aborted_in_teardown "$T/$name.log"; then
      note=" (rerun: a rank aborted in teardown after training)"
      rm -rf "${T:?}/$name"
      continue
    fi
    break
  done
  "$RT" verdict "$T/$name" > "$T/$name.verdict" 2> /dev/null
  vrc=$?
  "$RT" view --json "$T/$name" > "$T/$name.json" 2> /dev/null
  printf '%-8s %-16s %-6s %-10s %-5s %-18s %3ss%s\n' "$v" "${inj/#-/}" "$set" "$la" "${var/#-/}" \
    "$(cat "$T/$name.verdict")" $((SECONDS - t0)) "$note" >> "$TABLE"
  check "$what: the script prepared FullyShardedDataParallel, use_orig_params=$set, on both ranks" \
    [ "$(grep -E "^hf_trainer: rank [01] prepared FullyShardedDataParallel use_orig_params=$set$" "$T/$name.log" | sort -u | wc -l)" -eq 2 ]
  if [ "$want" = healthy ]; then
    check "$what: trains (exit $rc)" [ $rc -eq 0 ]
    check "$what: verdict healthy, exit 0 ($(cat "$T/$name.verdict"), $vrc)" \
      [ "$(cat "$T/$name.verdict")-$vrc" = healthy-0 ]
  else
    check "$what: the run fails (exit $rc)" [ $rc -ne 0 ]
    check "$what: verdict $want, exit 1 ($(cat "$T/$name.verdict"), $vrc)" \
      [ "$(cat "$T/$name.verdict")-$vrc" = "$want-1" ]
  fi
  check "$what: view --json agrees (verdict, 2 ranks, root forwards, unwrapped calls)" \
    python3 - "$T/$name.json" "$want" $STEPS <<'PY'
import json, sys
d, want, steps = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
assert d["verdict"] == want, d["verdict"]
assert d["world_size"] == 2 and len(d["ranks"]) == 2, (d["world_size"], len(d["ranks"]))
fwd = [r["fsdp_root_forwards"] for r in d["ranks"]]
unw = [r["unwrapped"] for r in d["ranks"]]
if want == "healthy":
    assert all(f >= steps for f in fwd), fwd           # the root forward ran every step
    assert all(u["calls"] == 0 for u in unw), unw      # checkpointing's re-runs included
    assert all(r["end"] == "exit 0" for r in d["ranks"]), [r["end"] for r in d["ranks"]]
else:
    assert fwd == [0, 0], fwd                           # the Trainer never called the root
    assert any(f["signature"] == want for f in d["findings"]), d["findings"]
    # the evidence: each rank called the unwrapped model from the Trainer itself
    for u in unw:
        assert u["calls"] >= 1 and u["root_forwards_before"] == 0, u
        assert all(s["caller"].startswith("transformers/trainer.py:") for s in u["sites"]), u
PY
  [ "$failures" -eq 0 ] || sed -n '/Error/p' "$T/$name.log" | sort | uniq -c | sort -rn | head -3
}

T0=$SECONDS
printf '%-8s %-16s %-6s %-10s %-5s %-18s %s\n' version inject orig launcher var verdict time > "$TABLE"
# version inject setting launcher variant expected
CELLS="4.52.4 - true torchrun - healthy
4.52.4 - false accelerate - healthy
4.53.0 - true accelerate - skipped-fsdp-root
4.53.0 - false torchrun - skipped-fsdp-root
4.53.1 - true torchrun - healthy
4.53.1 - false accelerate - healthy
4.52.4 skip-fsdp-root true accelerate - skipped-fsdp-root
4.52.4 skip-fsdp-root false torchrun - skipped-fsdp-root
4.52.4 - false accelerate lora healthy
4.53.0 - true torchrun lora skipped-fsdp-root
4.52.4 - true torchrun gc healthy
4.53.0 - false accelerate gc skipped-fsdp-root"
if [ "${RT_TRAINER_FULL:-0}" = 1 ]; then # the other launcher of each cell too
  CELLS="$CELLS
$(echo "$CELLS" | awk '{ $4 = ($4 == "torchrun" ? "accelerate" : "torchrun"); print }')"
fi
while read -r v inj set la var want; do
  cell "$v" "$inj" "$set" "$la" "$var" "$want"
done <<< "$CELLS"
echo "--- verdicts ($((SECONDS - T0)) s, $(echo "$CELLS" | wc -l) runs of 2 ranks) ---"
cat "$TABLE"
finish
