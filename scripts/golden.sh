#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# golden.sh - is every reader's output byte-identical across a change? For
# refactors that must not change what users see (issue 21).
#
#   scripts/golden.sh corpus BUILD DIR      traces to compare on, once, into DIR:
#                                           the demo's good/bad/injected runs,
#                                           injected faults (wrong device, OOM,
#                                           dying rank, collective error, drop),
#                                           one process with two GPUs, the two
#                                           damage corpora, and, when BUILD has
#                                           the torch venv and the trainer
#                                           overlays, transformers' Trainer
#                                           4.52.4/4.53.0 and the injected run
#   scripts/golden.sh outputs BUILD DIR OUT every reader on every trace of DIR
#                                           (view, view --json, verdict,
#                                           params --json, export, report, diff
#                                           of each pair that matters): stdout,
#                                           stderr and exit status, one file each
#   diff -r OUT-before OUT-after            the comparison
#
# Every command runs under timeout; nothing is written outside DIR and OUT.
set -uo pipefail
mode=${1:?usage: golden.sh corpus|outputs BUILD DIR [OUT]}
B=$(cd "${2:?BUILD}" && pwd)
D=${3:?DIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RT="$B/bin/ranktrace"
export SIMGPU_TIMEOUT=5 SIMGPU_SYNC=${SIMGPU_SYNC:-}

sim() { LD_LIBRARY_PATH="$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
fsdp() { # NAME [run options] -- fsdp_mini options
	local name=$1; shift
	local opts=()
	while [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	sim timeout -k 5 120 "$RT" run -o "$D/traces/$name" "${opts[@]}" -- \
		"$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" "$@" > "$D/logs/$name" 2>&1
	echo "golden: $name ($?)"
}

trainer() { # NAME VERSION [run options]
	local name=$1 v=$2; shift 2
	local py="$B/venv-torch/bin/python" tr="$B/trainers"
	[ -x "$py" ] && [ -d "$tr/transformers-$v" ] || { echo "golden: $name skipped (no trainer overlay)"; return; }
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1 \
	TRAINER_OUT="$D/logs/$name-out" PYTHONPATH="$tr/transformers-$v:$tr/deps" \
		timeout -k 10 300 "$RT" run -o "$D/traces/$name" "$@" -- \
		"$py" -m torch.distributed.run --standalone --nproc-per-node 2 \
		"$ROOT/tests/python/hf_trainer.py" --orig-params true > "$D/logs/$name" 2>&1
	echo "golden: $name ($?)"
}

corpus() {
	mkdir -p "$D/traces" "$D/logs" "$D/damage1" "$D/damage2"
	fsdp good -- --trainer-version 4.52.4 --steps 3
	fsdp bad -- --trainer-version 4.53.0 --steps 3
	fsdp injected --inject skip-fsdp-root -- --trainer-version 4.52.4 --steps 3
	fsdp dev --inject 'cudaSetDevice:device=5:rank=1' -- --steps 6
	fsdp oom --inject 'cudaMalloc:error=cudaErrorMemoryAllocation:rank=2:when=20+' -- --steps 3
	fsdp killed --inject 'ncclAllGather:kill=9:rank=3:when=5' -- --steps 3
	fsdp ncclerr --inject 'ncclReduceScatter:error=ncclSystemError:rank=0:when=2' -- --steps 3
	fsdp dropped --inject 'ncclAllGather:skip:rank=1:when=4' -- --steps 3
	sim timeout -k 5 120 "$RT" run -o "$D/traces/multigpu" -- "$B/bin/multi_gpu" --devices 2 --steps 2 > "$D/logs/multigpu" 2>&1
	sim timeout -k 5 120 "$RT" run -o "$D/storm" -- "$B/bin/callstorm" --calls 30000 > "$D/logs/storm" 2>&1
	python3 "$ROOT/scripts/damage-corpus.py" "$D/traces/good" "$D/damage1" > "$D/logs/damage1"
	python3 "$ROOT/scripts/damage-corpus2.py" "$D/traces/good" "$D/traces/dev" "$D/storm" "$D/damage2" > "$D/logs/damage2"
	trainer hf-4.52.4 4.52.4
	trainer hf-4.53.0 4.53.0
	trainer hf-injected 4.52.4 --inject skip-fsdp-root
	echo "golden: $(ls "$D/traces" | wc -l) traces, $(ls "$D/damage1" "$D/damage2" | wc -l) damaged variants in $D"
}

# one command: OUT/NAME.{out,err,rc}
one() {
	local name=$1; shift
	timeout -k 5 60 "$@" > "$OUT/$name.out" 2> "$OUT/$name.err" < /dev/null
	echo $? > "$OUT/$name.rc"
}

readers() { # NAME TRACE
	local n=$1 t=$2
	one "$n.view" "$RT" view "$t"
	one "$n.view-all" "$RT" view "$t" --all
	one "$n.view-json" "$RT" view "$t" --json
	one "$n.verdict" "$RT" verdict "$t"
	one "$n.params" "$RT" params "$t" --json
	one "$n.params-txt" "$RT" params "$t"
	one "$n.export" "$RT" export "$t" --perfetto "$OUT/$n.perfetto.json"
	one "$n.report" "$RT" report "$t" -o "$OUT/$n.html"
}

outputs() {
	OUT=${1:?OUT}
	mkdir -p "$OUT"
	for t in "$D"/traces/*/; do readers "$(basename "$t")" "$t"; done
	for t in "$D"/damage1/*/ "$D"/damage2/*/; do
		[ -d "$t" ] || continue
		n="$(basename "$(dirname "$t")").$(basename "$t")"
		one "$n.view-json" "$RT" view "$t" --json
		one "$n.verdict" "$RT" verdict "$t"
	done
	for p in good:bad bad:injected good:dev good:killed hf-4.52.4:hf-4.53.0 hf-4.53.0:hf-injected; do
		a=$D/traces/${p%%:*} b=$D/traces/${p#*:}
		[ -d "$a" ] && [ -d "$b" ] || continue
		one "diff.${p/:/.}" "$RT" diff "$a" "$b"
		one "diff-json.${p/:/.}" "$RT" diff "$a" "$b" --json
	done
	# outputs name where the trace lies; compare across DIRs by name only
	grep -rlF -e "$D" -e "$OUT" "$OUT" 2> /dev/null | xargs -r sed -i -e "s#$OUT#OUT#g" -e "s#$D#GOLDEN#g"
	echo "golden: $(ls "$OUT" | wc -l) files in $OUT"
}

case $mode in
corpus) corpus ;;
outputs) outputs "${4:-}" ;;
*) echo "golden.sh: unknown mode $mode (corpus|outputs)" >&2; exit 2 ;;
esac
