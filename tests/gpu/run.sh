#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run.sh - the real-GPU checks, in one go (< 8 minutes): build
# ranktrace, run a transformers Trainer with FSDP v1 on a tiny local Llama
# (tests/gpu/trainer_fsdp.py: no downloads) through torchrun on every GPU,
#   1. untraced (step time baseline)
#   2. ranktrace run (healthy expected)
#   3. ranktrace run --inject skip-fsdp-root (the transformers 4.53.0 failure)
#   4. fsdp_mini (C, NVIDIA's libcudart/libnccl) healthy and 4.53.0
# and print a short table last. Needs: nvcc/CUDA toolkit, NCCL, cmake, gcc,
# python3 with torch, transformers, accelerate. Changes no GPU setting.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${BUILD:-$ROOT/build-gpu}
OUT=${OUT:-$B/gpu-runs}
PY=${PYTHON:-python3}
STEPS=${STEPS:-30}
mkdir -p "$OUT"
log() { printf '[gpu] %s\n' "$*" >&2; }

log "building (no test dependencies) into $B"
cmake -S "$ROOT" -B "$B" -DRT_TESTS=OFF -DCMAKE_BUILD_TYPE=Release > "$OUT/cmake.log" 2>&1 &&
  cmake --build "$B" -j"$(nproc)" > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log" "$OUT/cmake.log"; exit 1; }
RT="$B/bin/ranktrace"
NGPU=$("$PY" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
[ "$NGPU" -ge 1 ] || { log "no GPU visible to torch"; exit 1; }
VERS=$("$PY" -c 'import torch, transformers, accelerate; print(f"torch {torch.__version__}, transformers {transformers.__version__}, accelerate {accelerate.__version__}")')
log "$NGPU GPU(s); $VERS"
TRAIN=(torchrun --standalone --nproc-per-node "$NGPU" "$ROOT/tests/gpu/trainer_fsdp.py" --steps "$STEPS")
PORT=$((29500 + RANDOM % 1000))

ms() { sed -nE 's/.*ms_per_step=([0-9.]+).*/\1/p' "$1" | tail -1; }
summary() { # verdict, events, params (distinct/freed/meta), root forwards of a trace
  local v
  v=$("$RT" verdict "$1" 2>/dev/null)
  "$RT" view --json "$1" 2>/dev/null | "$PY" -c "
import json, sys
d = json.load(sys.stdin)
r = d['ranks']
print('$v', sum(x['events'] for x in r),
      '%d/%d/%d' % (sum(x['params']['distinct'] for x in r), sum(x['params']['storage_freed'] for x in r),
                    sum(x['params']['ever_meta'] for x in r)),
      sum(x['fsdp_root_forwards'] for x in r), sum(len(x['devices']) for x in r))" 2>/dev/null || echo "$v ? ? ? ?"
}

log "1/5 Trainer, untraced"
timeout 150 env MASTER_PORT=$PORT "${TRAIN[@]}" > "$OUT/plain.log" 2>&1; rc1=$?
log "2/5 Trainer under ranktrace run"
rm -rf "$OUT/t-healthy"
timeout 150 "$RT" run -o "$OUT/t-healthy" -- "${TRAIN[@]}" > "$OUT/healthy.log" 2>&1; rc2=$?
log "3/5 Trainer under ranktrace run --inject skip-fsdp-root"
rm -rf "$OUT/t-skip"
timeout 150 "$RT" run -o "$OUT/t-skip" --inject skip-fsdp-root -- "${TRAIN[@]}" > "$OUT/skip.log" 2>&1; rc3=$?
log "4/5 fsdp_mini on NVIDIA's libraries, healthy"
rm -rf "$OUT/m-healthy" "$OUT/m-bad"
N=$(( NGPU > 8 ? 8 : NGPU ))
timeout 60 "$RT" run -o "$OUT/m-healthy" -- "$B/bin/rt-launch" -n "$N" "$B/bin/fsdp_mini" --steps 5 > "$OUT/m-healthy.log" 2>&1; rc4=$?
log "5/5 fsdp_mini, transformers 4.53.0 behaviour"
timeout 60 "$RT" run -o "$OUT/m-bad" -- "$B/bin/rt-launch" -n "$N" "$B/bin/fsdp_mini" --steps 5 --trainer-version 4.53.0 > "$OUT/m-bad.log" 2>&1; rc5=$?
"$RT" report "$OUT/t-skip" -o "$OUT/t-skip.html" > /dev/null 2>&1
"$RT" export "$OUT/t-healthy" --perfetto "$OUT/t-healthy.json" > /dev/null 2>&1

p=$(ms "$OUT/plain.log"); t=$(ms "$OUT/healthy.log")
over=$(awk -v p="$p" -v t="$t" 'BEGIN { if (p > 0 && t > 0) printf "%+.1f%%", (t - p) / p * 100; else print "?" }')
echo
echo "ranktrace GPU check: $NGPU GPU(s); $VERS; $STEPS steps"
printf '%-34s %-5s %-20s %8s %-12s %5s %5s %10s\n' run exit verdict events "params d/f/m" rootf devs ms/step
printf '%-34s %-5s %-20s %8s %-12s %5s %5s %10s\n' "Trainer FSDP, untraced" "$rc1" - - - - - "${p:-?}"
read -r v e pr rf dv <<< "$(summary "$OUT/t-healthy")"
printf '%-34s %-5s %-20s %8s %-12s %5s %5s %10s\n' "Trainer FSDP, traced" "$rc2" "$v" "$e" "$pr" "$rf" "$dv" "${t:-?} ($over)"
read -r v e pr rf dv <<< "$(summary "$OUT/t-skip")"
printf '%-34s %-5s %-20s %8s %-12s %5s %5s %10s\n' "Trainer FSDP, skip-fsdp-root" "$rc3" "$v" "$e" "$pr" "$rf" "$dv" -
read -r v e pr rf dv <<< "$(summary "$OUT/m-healthy")"
printf '%-34s %-5s %-20s %8s %-12s %5s %5s %10s\n' "fsdp_mini 4.52.4 ($N ranks)" "$rc4" "$v" "$e" "$pr" "$rf" "$dv" -
read -r v e pr rf dv <<< "$(summary "$OUT/m-bad")"
printf '%-34s %-5s %-20s %8s %-12s %5s %5s %10s\n' "fsdp_mini 4.53.0 ($N ranks)" "$rc5" "$v" "$e" "$pr" "$rf" "$dv" -
echo "(params d/f/m: distinct / storage freed / ever on meta, all ranks; rootf: FSDP root forwards; traces in $OUT)"
grep -h 'RuntimeError' "$OUT/skip.log" | head -1 | cut -c1-160
