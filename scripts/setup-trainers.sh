#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# setup-trainers.sh BUILD - transformers' own Trainer for the real-trainer
# tests, from PyPI, beside the torch venv (scripts/setup-torch.sh):
#   BUILD/trainers/deps                 accelerate, peft and what transformers
#                                       needs, torch aside (pinned, --no-deps)
#   BUILD/trainers/transformers-V       one release each (--no-deps)
# used as PYTHONPATH=BUILD/trainers/transformers-V:BUILD/trainers/deps with
# BUILD/venv-torch/bin/python. Each overlay is installed into a temporary
# directory and renamed into place with a stamp of what it holds, so an
# interrupted install is redone and a finished one is never repeated (pip's
# own cache makes a fresh clone's install quick).
# Exit 0 ready; 77 when no package index is reachable and the overlays are
# not there yet (the tests report themselves skipped with the reason from
# BUILD/trainers/unavailable); 1 on any other failure.
set -uo pipefail
B=$(cd "$1" && pwd)
PY="$B/venv-torch/bin/python"
D="$B/trainers"
# the releases the tests and the bisect use
VERSIONS=${RT_TRAINER_VERSIONS:-"4.52.4 4.53.0 4.53.1"}
# contemporary with transformers 4.53 (June-July 2025); torch is the venv's
DEPS="accelerate==1.8.1 peft==0.15.2 huggingface-hub==0.33.1 tokenizers==0.21.2
safetensors==0.5.3 regex==2024.11.6 PyYAML==6.0.2 tqdm==4.67.1 psutil==7.0.0
packaging==25.0 requests==2.32.4 certifi==2025.6.15 charset-normalizer==3.4.2
idna==3.10 urllib3==2.5.0"

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

# shellcheck disable=SC2086 # DEPS is a list of requirements
overlay deps $DEPS || exit $?
for v in $VERSIONS; do
  overlay "transformers-$v" "transformers==$v" || exit $?
done
exit 0
