# SPDX-License-Identifier: MIT
# trainer_lib.sh - helpers for the real-trainer tests (sourced after lib.sh):
# transformers releases, accelerate and peft from PyPI in overlays under
# BUILD/trainers (scripts/setup-trainers.sh, one install at a time across
# tests), used with BUILD/venv-torch's python through PYTHONPATH. Exits 77
# (ctest: skipped, with the reason) when no package index is reachable and the
# overlays are not there yet; a missing torch venv or any other set-up failure
# fails the test.
if [ -n "${RT_PLAIN_BUILD:-}" ]; then
  # the C paths they drive (run, verdict, view, bisect) are under ASan in the
  # other integration tests; 19 torch runs again would double CI's longest tests
  echo "SKIP: under make test-asan (the real-trainer runs are make test's)"
  exit 77
fi
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RT="$B/bin/ranktrace"
PY="$B/venv-torch/bin/python"
TB=$B
TD="$TB/trainers"
HFT="$ROOT/tests/python/hf_trainer.py"
if ! "$PY" -c 'import torch' 2> /dev/null; then
  bad "no torch venv at $B/venv-torch (make test runs scripts/setup-torch.sh)"
  finish; exit 1
fi
mkdir -p "$TD"
flock "$TD.lock" timeout -k 10 1200 "$ROOT/scripts/setup-trainers.sh" "$TB" > "$T/setup.log" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
  echo "SKIP: $(cat "$TD/unavailable" 2> /dev/null || echo 'no package index reachable')"
  exit 77
fi
if [ $rc -ne 0 ]; then
  cat "$T/setup.log"
  bad "scripts/setup-trainers.sh $TB exited $rc"
  finish; exit 1
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export OMP_NUM_THREADS=1 TRAINER_OUT="$T/trainer-out" PIP_DISABLE_PIP_VERSION_CHECK=1
# aborted_in_teardown LOG: gloo's teardown aborted a rank ("terminate called")
# after both ranks of hf_trainer.py finished ($STEPS steps, or the trials):
# seen on healthy CPU runs, traced or not (test_trainer.sh), and twice in a
# fresh machine's CI on torch 2.15 ("terminate called without an active
# exception"). The tests run such a run once more and say so.
aborted_in_teardown() {
  grep -q 'terminate called' "$1" &&
    [ "$(grep -cE "^hf_trainer: rank [01] (trained $STEPS steps|ran [0-9]+ trials)$" "$1")" -eq 2 ]
}
# a free TCP port for accelerate's rendezvous (torch.distributed.run --standalone finds its own)
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# jq-like: PY expression on the JSON file $2 (as j)
jfield() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($1)" "$2"; }
