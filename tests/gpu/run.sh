#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run.sh - the real-GPU check, in one go (well under 8 minutes), and
# its CPU rehearsal (`--rehearse`, part of `make test`).
#
# Stages, each under `timeout -k`, each row with the verdict it must give:
#   build      ranktrace (Ninja when present), NCCL from the pip package
#              nvidia-nccl-cu13 (NCCL_ROOT, LD_LIBRARY_PATH)
#   fsdp_mini  the C workload on NVIDIA's libcudart/libnccl, 2 ranks: 4.52.4
#              (healthy), 4.53.0 and --inject skip-fsdp-root (skipped-fsdp-root)
#   trainer    transformers Trainer, FSDP v1 (fsdp_config version 1), 2 ranks
#              through python3 -m torch.distributed.run: untraced, traced,
#              skip-fsdp-root (use_orig_params false, then true: traced and
#              skip-fsdp-root again), traced with expandable segments (driver VMM)
#   cupti      ranktrace run --cupti
#   stage_*.sh optional extra stages next to this script (see "hook" below)
# With one GPU both ranks share it: LOCAL_RANK=0 and a per-rank NCCL_HOSTID
# (NCCL's one-rank-per-device check keys on host identity + bus id). If NCCL
# still refuses, the table says so and the rest runs with one rank.
#
# Results: at most 8 files in $OUT (default ./gpu-out): table.txt, env.txt,
# logs.tar.gz, traces.tar.gz, report.html. The table is printed last; the
# exit status is 0 only when every row is as expected.
#
# --rehearse: the same stages on CPU: the simulated cluster (one simulated
# GPU, so the NCCL_HOSTID sharing path runs), torch on CPU (gloo) for the
# Trainer rows (tests/python/fsdp_cpu.py, the same FSDP v1 calls, when
# transformers is not installed; the rows left out, said so, without torch),
# the simulated driver for the VMM row. JSON is read with python3.
# RT_GPU_REUSE_BUILD=DIR (rehearsal only): use that build instead of making one.
#
# Hook: every tests/gpu/stage_*.sh is run (bash, after the built-in stages)
# with RT B W PY LIBS SHIM NR REHEARSE exported and $1 = seconds it may use; it
# prints rows as "name<TAB>expected<TAB>observed<TAB>ok|FAIL<TAB>detail" on
# stdout and writes its logs under $W/logs.
set -uo pipefail
usage() { sed -n '3,35p' "$0" | sed 's/^# \{0,1\}//'; }
REHEARSE=0
case "${1:-}" in
  --rehearse) REHEARSE=1 ;;
  -h|--help) usage; exit 0 ;;
  "") ;;
  *) echo "usage: tests/gpu/run.sh [--rehearse]" >&2; exit 2 ;;
esac
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT" || exit 2
W=$(mktemp -d "${TMPDIR:-/tmp}/rt-gpu.XXXXXX") || exit 2
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/logs" "$W/traces"
BUDGET=${RT_GPU_BUDGET:-$((REHEARSE ? 540 : 420))} # seconds, everything
T0=$SECONDS
ROWS="$W/rows.tsv"
: > "$ROWS"
log() { printf '[gpu %3ds] %s\n' $((SECONDS - T0)) "$*" >&2; }
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >> "$ROWS"; }
left() { echo $((BUDGET - (SECONDS - T0))); }

# run_for LIMIT NAME CMD...: CMD under timeout -k, output in logs/NAME.log;
# 124 without running when the budget has no LIMIT seconds left.
run_for() {
  local lim=$1 name=$2
  shift 2
  if [ "$(left)" -lt "$lim" ]; then
    echo "not run: $(left) s of the budget left, stage needs $lim" > "$W/logs/$name.log"
    return 124
  fi
  timeout -k 5 "$lim" "$@" > "$W/logs/$name.log" 2>&1
}

# ---- environment ----
if [ $REHEARSE = 1 ]; then
  B0=${BUILD:-$ROOT/build}
  PY=${PYTHON:-$B0/venv-torch/bin/python}
else
  PY=${PYTHON:-python3}
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRAINER_OUT="$W/trainer-out"
NCCL_ROOT=$("$PY" -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null || true)
VERS=$("$PY" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null || echo "no torch")
HAVE_HF=0
"$PY" -c 'import transformers, accelerate' 2>/dev/null && HAVE_HF=1 &&
  VERS="$VERS, $("$PY" -c 'import transformers, accelerate; print("transformers", transformers.__version__, "accelerate", accelerate.__version__)')"

# ---- stage: build ----
B="$W/build"
GEN=()
command -v ninja > /dev/null && GEN=(-G Ninja)
TARGETS=(ranktrace ranktrace-cli nccl-profiler-ranktrace fsdp_mini rt-launch driver_probe python-probe)
[ $REHEARSE = 1 ] && TARGETS+=(simcudart simcuda simnccl)
if [ $REHEARSE = 1 ] && [ -n "${RT_GPU_REUSE_BUILD:-}" ]; then
  B=$(cd "$RT_GPU_REUSE_BUILD" && pwd) # a rehearsal over a build made already
  echo "reusing $B" > "$W/logs/build.log"
  rc=0
else
  log "build (${GEN[*]:-make}; NCCL_ROOT=${NCCL_ROOT:-toolkit})"
  run_for $((REHEARSE ? 300 : 150)) build bash -c 'cmake -S "$0" -B "$1" "${@:3}" -DRT_TESTS=OFF -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$1" -j"$(nproc)" --target $2' "$ROOT" "$B" "${TARGETS[*]}" "${GEN[@]}" \
    ${NCCL_ROOT:+-DNCCL_ROOT="$NCCL_ROOT"}
  rc=$?
fi
RT="$B/bin/ranktrace"
if [ $rc -eq 0 ] && [ -x "$RT" ] && [ -n "${RT_GPU_REUSE_BUILD:-}" ]; then
  row build "built" "reused $B" ok ""
elif [ $rc -eq 0 ] && [ -x "$RT" ]; then
  row build "built" "built (${GEN[*]:-make}, NCCL ${NCCL_ROOT:+pip }$(sed -n 's/^NCCL_LIBRARY:FILEPATH=//p' "$B/CMakeCache.txt"))" ok ""
else
  err=$(grep -m3 -E 'error|Error|not found' "$W/logs/build.log" | tr '\t\n' '  ' | cut -c1-200)
  row build "built" "failed (exit $rc)" FAIL "${err:-see logs/build.log}"
  tail -n 20 "$W/logs/build.log" >&2
fi

# ---- what the ranks run on ----
CUDA_LIB=$(sed -n 's/^CUDAToolkit_LIBRARY_DIR:PATH=//p' "$B/CMakeCache.txt" 2>/dev/null)
if [ $REHEARSE = 1 ]; then
  LIBS="$B/sim"
  export SIMGPU_DEVICES=1 SIMGPU_TIMEOUT=20 # one simulated GPU, as on the GPU machine
  NGPU=1
else
  LIBS="${NCCL_ROOT:+$NCCL_ROOT/lib:}${CUDA_LIB}"
  NGPU=$("$PY" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
  [ "$NGPU" -ge 1 ] || row "GPU visible to torch" ">= 1 GPU" "$NGPU" FAIL "$VERS"
fi
LD0=${LD_LIBRARY_PATH:-}
export LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
NR=2
SHIM="$W/rank_shim.sh"
if [ "$NGPU" -ge 2 ]; then
  printf '#!/usr/bin/env bash\nexec "$@"\n' > "$SHIM"
else # two ranks, one GPU: NCCL tells them apart by host identity
  printf '#!/usr/bin/env bash\nexport LOCAL_RANK=0 NCCL_HOSTID="rt-gpu-check-rank${RANK:?}"\nexec "$@"\n' > "$SHIM"
  export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_IB_DISABLE=1
fi
chmod +x "$SHIM"
log "$NGPU GPU(s); $VERS; $NR ranks$([ "$NGPU" -lt 2 ] && echo ' sharing GPU 0 (per-rank NCCL_HOSTID)')"

# JSON is read with python3, never $PY: a rehearsal without torch still judges
# every row it can
# verdict/figures of a trace: "verdict events devices vmm_handles driver_bytes cupti"
facts() {
  "$RT" view --json "$1" 2> /dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin); r = d["ranks"]
print(d["verdict"], sum(x["events"] for x in r), len({v for x in r for v in x["devices"]}),
      sum(x.get("driver", {}).get("vmm_handles", 0) for x in r),
      sum(x.get("driver", {}).get("bytes", 0) for x in r),
      ",".join(sorted({x.get("cupti", {}).get("state", "-") for x in r})))' 2> /dev/null || echo "no-trace 0 0 0 0 -"
}
# parameter placement of a trace (`ranktrace params`), one summary per kind of rank
placement() {
  "$RT" params "$1" --json 2> /dev/null | python3 -c '
import json, sys
print("; ".join(sorted({r["summary"] for r in json.load(sys.stdin)["ranks"]})))' 2> /dev/null
}
# traced row: name expected-verdict trace exit
judge() {
  local name=$1 want=$2 tr=$3 rc=$4 v e dv vmm db cu pl
  read -r v e dv vmm db cu <<< "$(facts "$tr")"
  pl=$(placement "$tr")
  if [ "$v" = "$want" ]; then
    row "$name" "$want" "$v (exit $rc, $e events)" ok "devices $dv; driver bytes $db${pl:+; params: $pl}"
  else
    row "$name" "$want" "$v (exit $rc, $e events)" FAIL "$(grep -m1 -E 'Error|error|WARN' "$W/logs/$(basename "$tr").log" | cut -c1-160)"
  fi
}
# A Trainer-stage run; a rank aborting in teardown after its last step
# ("terminate called without an active exception": torch/gloo exit race, seen
# under load on CPU) is run once more, and the row says so.
NOTE=""
trainer_run() {
  local name=$1 trace=$2 rc
  shift 2
  NOTE=""
  run_for 75 "$name" "$@"
  rc=$?
  if [ $rc -ne 0 ] && grep -q 'terminate called without an active exception' "$W/logs/$name.log" &&
    grep -q 'ms_per_step=' "$W/logs/$name.log"; then
    mv "$W/logs/$name.log" "$W/logs/$name.teardown-abort.log"
    [ -n "$trace" ] && rm -rf "$trace"
    NOTE="rerun once: a rank aborted in teardown after its last step"
    run_for 75 "$name" "$@"
    rc=$?
  fi
  return $rc
}
ms() { sed -nE 's/.*ms_per_step=([0-9.]+).*/\1/p' "$W/logs/$1.log" | tail -1; }

# ---- stage: fsdp_mini on NVIDIA's libraries (the simulated cluster when rehearsing) ----
if [ -x "$RT" ]; then
  MINI=("$B/bin/rt-launch" -n "$NR" "$SHIM" "$B/bin/fsdp_mini" --steps 5)
  log "fsdp_mini 4.52.4"
  run_for 40 m-healthy "$RT" run -o "$W/traces/m-healthy" --max-size 64M -- "${MINI[@]}"
  rc=$?
  if [ $rc -ne 0 ] && [ "$NR" = 2 ] && grep -qE 'Duplicate GPU|ncclInvalidUsage' "$W/logs/m-healthy.log"; then
    row "NCCL: 2 ranks on 1 GPU" "accepted (NCCL_HOSTID)" "refused" FAIL "falling back to 1 rank (no sharding: the 4.53.0 failure cannot appear)"
    NR=1
    MINI=("$B/bin/rt-launch" -n 1 "$SHIM" "$B/bin/fsdp_mini" --steps 5)
    rm -rf "$W/traces/m-healthy"
    run_for 40 m-healthy "$RT" run -o "$W/traces/m-healthy" --max-size 64M -- "${MINI[@]}"
    rc=$?
  fi
  judge "fsdp_mini 4.52.4" healthy "$W/traces/m-healthy" $rc
  BAD=skipped-fsdp-root
  [ "$NR" = 1 ] && BAD=healthy # world size 1: NO_SHARD, nothing freed
  log "fsdp_mini 4.53.0"
  run_for 40 m-453 "$RT" run -o "$W/traces/m-453" --max-size 64M -- "${MINI[@]}" --trainer-version 4.53.0
  judge "fsdp_mini 4.53.0" $BAD "$W/traces/m-453" $?
  log "fsdp_mini --inject skip-fsdp-root"
  run_for 40 m-skip "$RT" run -o "$W/traces/m-skip" --max-size 64M --inject skip-fsdp-root -- "${MINI[@]}"
  judge "fsdp_mini skip-fsdp-root" $BAD "$W/traces/m-skip" $?
fi

# ---- stage: Trainer with FSDP v1, use_orig_params false and true ----
HAVE_TORCH=0
"$PY" -c 'import torch' 2> /dev/null && HAVE_TORCH=1
if [ -x "$RT" ] && [ $REHEARSE = 1 ] && [ $HAVE_TORCH = 0 ]; then
  row "Trainer stage (torch CPU)" "torch importable" "skipped: no torch" ok "$PY cannot import torch; its rows are left out"
fi
if [ -x "$RT" ] && { [ $REHEARSE = 0 ] || [ $HAVE_TORCH = 1 ]; }; then
  if [ $REHEARSE = 1 ] && [ $HAVE_HF = 0 ]; then
    TNAME="FSDP v1 CPU (fsdp_cpu.py; no transformers)"
    TRAIN=("$PY" "$ROOT/tests/python/fsdp_cpu.py" --steps 4 --time)
  else
    TNAME="Trainer FSDP v1"
    TRAIN=("$PY" "$ROOT/tests/gpu/trainer_fsdp.py" --steps 20)
    [ $REHEARSE = 1 ] && TRAIN+=(--cpu)
  fi
  LAUNCH=("$PY" -m torch.distributed.run --standalone --nproc-per-node "$NR" --no-python "$SHIM")
  # torch brings its own CUDA libraries and NCCL (RUNPATH): the toolkit's must
  # not shadow them on the GPU, nor the simulated ones on CPU
  export LD_LIBRARY_PATH="$LD0"
  log "$TNAME untraced"
  trainer_run t-plain "" "${LAUNCH[@]}" "${TRAIN[@]}"
  rc=$?
  p=$(ms t-plain)
  if [ $rc -eq 0 ]; then row "$TNAME untraced" "exit 0" "exit 0" ok "${p:-?} ms/step${NOTE:+; $NOTE}"
  else row "$TNAME untraced" "exit 0" "exit $rc" FAIL "$(grep -m1 -E 'Error' "$W/logs/t-plain.log" | cut -c1-160)"; fi
  log "$TNAME traced"
  trainer_run t-healthy "$W/traces/t-healthy" \
    "$RT" run -o "$W/traces/t-healthy" --max-size 64M -- "${LAUNCH[@]}" "${TRAIN[@]}"
  rc=$?
  judge "$TNAME traced" healthy "$W/traces/t-healthy" $rc
  t=$(ms t-healthy)
  over=$(awk -v p="$p" -v t="$t" 'BEGIN { if (p > 0 && t > 0) printf "%+.1f%%", (t - p) / p * 100; else print "?" }')
  sed -i "\$s/\$/; ${t:-?} ms\/step (overhead $over)${NOTE:+; $NOTE}/" "$ROWS"
  log "$TNAME --inject skip-fsdp-root"
  run_for 75 t-skip "$RT" run -o "$W/traces/t-skip" --max-size 64M --inject skip-fsdp-root -- \
    "${LAUNCH[@]}" "${TRAIN[@]}"
  judge "$TNAME skip-fsdp-root" $BAD "$W/traces/t-skip" $?
  # transformers' default, use_orig_params=true: parameters are views into the
  # flat shard, the skipped root must still be named
  log "$TNAME use_orig_params=true, traced and --inject skip-fsdp-root"
  trainer_run t-orig "$W/traces/t-orig" \
    "$RT" run -o "$W/traces/t-orig" --max-size 64M -- "${LAUNCH[@]}" "${TRAIN[@]}" --orig-params
  judge "$TNAME use_orig_params=true traced" healthy "$W/traces/t-orig" $?
  [ -n "$NOTE" ] && sed -i "\$s/\$/; $NOTE/" "$ROWS"
  run_for 75 t-orig-skip "$RT" run -o "$W/traces/t-orig-skip" --max-size 64M --inject skip-fsdp-root -- \
    "${LAUNCH[@]}" "${TRAIN[@]}" --orig-params
  judge "$TNAME use_orig_params=true skip-fsdp-root" $BAD "$W/traces/t-orig-skip" $?
fi
# expandable segments: PyTorch maps memory with cuMemCreate/cuMemMap through
# cudaGetDriverEntryPointByVersion; on CPU the simulated driver stands in
if [ -x "$RT" ] && { [ $REHEARSE = 1 ] || [ $HAVE_TORCH = 1 ]; }; then
  if [ $REHEARSE = 1 ]; then
    export LD_LIBRARY_PATH="$LIBS${LD0:+:$LD0}"
    XNAME="driver VMM (sim driver_probe; no GPU)"
    run_for 30 t-expand env SIMGPU_DEVICES=4 "$RT" run -o "$W/traces/t-expand" -- "$B/bin/driver_probe" keep
  else
    XNAME="$TNAME traced, expandable segments"
    trainer_run t-expand "$W/traces/t-expand" env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
      "$RT" run -o "$W/traces/t-expand" --max-size 64M -- "${LAUNCH[@]}" "${TRAIN[@]}"
  fi
  rc=$?
  read -r v e dv vmm db cu <<< "$(facts "$W/traces/t-expand")"
  if [ "$v" = healthy ] && [ "$vmm" -gt 0 ]; then
    row "$XNAME" "healthy, VMM handles > 0" "$v, $vmm handles" ok "driver bytes $db"
  else
    row "$XNAME" "healthy, VMM handles > 0" "$v (exit $rc), $vmm handles" FAIL "driver bytes $db"
  fi
fi

# ---- stage: CUPTI ----
if [ -x "$RT" ]; then
  log "cupti"
  export LD_LIBRARY_PATH="$LIBS${LD0:+:$LD0}"
  if [ $REHEARSE = 1 ]; then # NVIDIA's libcupti refuses the simulated driver
    CNAME="run --cupti (sim driver_probe)"
    run_for 40 c-cupti env SIMGPU_DEVICES=4 "$RT" run -o "$W/traces/c-cupti" --cupti -- "$B/bin/driver_probe" keep
    rc=$?
    read -r v e dv vmm db cu <<< "$(facts "$W/traces/c-cupti")"
    want="healthy, cupti unavailable"
    good=$([ "$v" = healthy ] && [ "$cu" = unavailable ] && echo 1)
  else # NCCL's own buffers (cuMem* inside NCCL) reach the trace through CUPTI
    CNAME="run --cupti (fsdp_mini, $NR ranks)"
    run_for 40 c-cupti "$RT" run -o "$W/traces/c-cupti" --cupti -- "${MINI[@]}"
    rc=$?
    read -r v e dv vmm db cu <<< "$(facts "$W/traces/c-cupti")"
    want="healthy, cupti active, driver bytes > 0"
    good=$([ "$v" = healthy ] && [ "$cu" = active ] && [ "$db" -gt 0 ] && echo 1)
  fi
  row "$CNAME" "$want" "$v (exit $rc), cupti $cu" "$([ "${good:-0}" = 1 ] && echo ok || echo FAIL)" "driver bytes $db"
fi

# ---- hook: extra stages (e.g. bisect) ----
for s in "$ROOT"/tests/gpu/stage_*.sh; do
  [ -e "$s" ] && [ -x "$RT" ] || continue
  lim=$(left)
  [ "$lim" -gt 150 ] && lim=150
  log "hook $(basename "$s") (${lim}s)"
  RT="$RT" B="$B" W="$W" PY="$PY" LIBS="$LIBS" SHIM="$SHIM" NR="$NR" REHEARSE="$REHEARSE" \
    timeout -k 5 "$lim" bash "$s" "$lim" >> "$ROWS" 2> "$W/logs/$(basename "$s" .sh).log" ||
    row "$(basename "$s")" "exit 0" "exit $? (timeout $lim s?)" FAIL "see logs"
done

# ---- results: at most 8 files ----
[ -d "$W/traces/t-skip" ] && "$RT" report "$W/traces/t-skip" -o "$OUT/report.html" > /dev/null 2>&1
{ echo "date: $(date -u +%FT%TZ)"; echo "mode: $([ $REHEARSE = 1 ] && echo rehearsal || echo gpu)"
  echo "versions: $VERS"; echo "NCCL_ROOT: ${NCCL_ROOT:-none}"; echo "LD_LIBRARY_PATH: $LD_LIBRARY_PATH"
  echo "ranks: $NR on $NGPU GPU(s)"; nvidia-smi -L 2> /dev/null; } > "$OUT/env.txt"
tar -C "$W" -czf "$OUT/logs.tar.gz" logs 2> /dev/null
tar -C "$W" -czf "$OUT/traces.tar.gz" traces 2> /dev/null
n=$(wc -l < "$ROWS")
okn=$(awk -F'\t' '$4 == "ok"' "$ROWS" | wc -l)
{
  echo "ranktrace GPU check ($([ $REHEARSE = 1 ] && echo "REHEARSAL on CPU: simulated cluster + torch CPU" || echo "$NGPU GPU(s)")); $VERS; $((SECONDS - T0)) s"
  printf '%-44s %-28s %-40s %s\n' row expected observed verdict
  awk -F'\t' '{ printf "%-44s %-28s %-40s %s%s\n", $1, $2, $3, ($4 == "ok" ? "as expected" : "NOT AS EXPECTED"), ($5 != "" ? "  [" $5 "]" : "") }' "$ROWS"
  echo "$okn/$n rows as expected"
} > "$OUT/table.txt"
cat "$OUT/table.txt"
[ "$n" -gt 0 ] && [ "$okn" -eq "$n" ]
