#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# setup-trainers.sh BUILD - transformers' own Trainer for the real-trainer
# tests, from PyPI, beside the torch venv (scripts/setup-torch.sh):
#   BUILD/trainers/deps                 accelerate, peft, TRL and what
#                                       transformers 4.x needs, torch aside
#                                       (pinned, --no-deps)
#   BUILD/trainers/deps5                the same for transformers 5.x
#                                       (huggingface-hub 2, tokenizers 0.23,
#                                       accelerate 1.16)
#   BUILD/trainers/transformers-V       one release each (--no-deps)
# used as PYTHONPATH=BUILD/trainers/transformers-V:BUILD/trainers/deps (5.x:
# deps5) with BUILD/venv-torch/bin/python. Each overlay is installed into a
# temporary directory and renamed into place with a stamp of what it holds,
# so an interrupted install is redone and a finished one is never repeated
# (pip's own cache makes a fresh clone's install quick).
# Exit 0 ready; 77 when no package index is reachable and the overlays are
# not there yet (the tests report themselves skipped with the reason from
# BUILD/trainers/unavailable); 1 on any other failure.
set -uo pipefail
B=$(cd "$1" && pwd)
PY="$B/venv-torch/bin/python"
D="$B/trainers"
# the releases the tests and the bisect use: 4.x with deps, 5.x with deps5
VERSIONS=${RT_TRAINER_VERSIONS:-"4.52.4 4.53.0 4.53.1 5.25.0"}
# contemporary with transformers 4.53 (June-July 2025); torch is the venv's.
# TRL's SFTTrainer needs datasets (and pyarrow, pandas: the largest wheels)
DEPS="accelerate==1.8.1 peft==0.15.2 huggingface-hub==0.33.1 tokenizers==0.21.2
safetensors==0.5.3 regex==2024.11.6 PyYAML==6.0.2 tqdm==4.67.1 psutil==7.0.0
packaging==25.0 requests==2.32.4 certifi==2025.6.15 charset-normalizer==3.4.2
idna==3.10 urllib3==2.5.0
trl==0.19.0 datasets==3.6.0 pyarrow==20.0.0 pandas==2.3.0 python-dateutil==2.9.0.post0
pytz==2025.2 tzdata==2025.2 six==1.17.0 dill==0.3.8 multiprocess==0.70.16 xxhash==3.5.0
fsspec==2025.3.0"
# what transformers 5.25.0 and accelerate 1.16.0 need, as pip resolves them
# (`pip install --dry-run --report`) beside the venv's torch and numpy
DEPS5="accelerate==1.16.0 huggingface-hub==2.4.0 tokenizers==0.23.3 safetensors==0.8.0
regex==2026.12.2 PyYAML==6.0.4 tqdm==4.70.1 psutil==7.2.2 packaging==26.4 kernels==0.19.1
typer==0.29.2 click==8.5.1 rich==15.0.0 shellingham==1.5.4 annotated-doc==0.0.7 hf-xet==1.8.0
httpx2==2.17.0 httpcore2==2.17.0 h11==0.16.0 anyio==4.16.0 idna==3.20 truststore==0.10.5
pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
tomlkit==0.15.3 markdown-it-py==4.3.0 mdurl==0.1.2 Pygments==2.21.0"

if ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "setup-trainers: no torch venv at $B/venv-torch (scripts/setup-torch.sh makes it)" >&2
  exit 1
fi
mkdir -p "$D"
rm -f "$D/unavailable"
# what pip says when it cannot reach the index
OFFLINE="failed to establish a new connection: [^')]*|network is unreachable|temporary failure in name resolution|name or service not known|read timed out|proxyerror[^')]*"

# overlay NAME SPEC...: BUILD/trainers/NAME holding SPEC (no dependencies)
overlay() {
  local name=$1; shift
  local dir="$D/$name" tmp="$D/.tmp-$name-$$" stamp="$*" log="$D/.log-$name"
  if [ -f "$dir/.rt-stamp" ] && [ "$(cat "$dir/.rt-stamp")" = "$stamp" ]; then
    return 0
  fi
  echo "setup-trainers: installing $name ($*) from PyPI into $dir"
  rm -rf "$tmp"
  if ! timeout -k 10 900 "$PY" -m pip install -q --disable-pip-version-check --no-deps \
      --no-compile --retries 2 --timeout 60 --target "$tmp" "$@" > "$log" 2>&1; then
    rm -rf "$tmp"
    if grep -qiE 'connection|network is unreachable|name resolution|timed out|proxy' "$log"; then
      why=$(grep -oiE "$OFFLINE" "$log" | tail -1)
      echo "no package index reachable (${why:-see pip output}) and $name not installed yet" > "$D/unavailable"
      echo "setup-trainers: $(cat "$D/unavailable")" >&2
      return 77
    fi
    echo "setup-trainers: pip install $* failed:" >&2
    tail -5 "$log" >&2
    return 1
  fi
  echo "$stamp" > "$tmp/.rt-stamp"
  rm -rf "$dir"
  mv "$tmp" "$dir" && rm -f "$log"
}

# shellcheck disable=SC2086 # DEPS and DEPS5 are lists of requirements
case " $VERSIONS " in *" 4."*) overlay deps $DEPS || exit $? ;; esac
case " $VERSIONS " in *" 5."*) overlay deps5 $DEPS5 || exit $? ;; esac
for v in $VERSIONS; do
  overlay "transformers-$v" "transformers==$v" || exit $?
done
exit 0
