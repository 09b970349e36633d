#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gpu-wheelhouse.sh [DIR] - run on a machine with PyPI: downloads the wheels
# tests/gpu/stage_bisect.sh bisects (transformers 4.52.4 and 4.53.0,
# for CPython 3.12 on x86_64 Linux) and the pins they need that a Trainer
# environment may lack (tokenizers, huggingface-hub, safetensors), into DIR
# (default: wheelhouse/ at the top of the tree, where the GPU script looks),
# with DIR/pins.txt (one requirement a line: bisect's --with). Refuses to
# leave more than 60 MB. Copy DIR to the GPU machine next to the tree.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=${1:-$ROOT/wheelhouse}
PY=${PYTHON:-python3}
VERSIONS=(4.52.4 4.53.0)
# what transformers 4.52.4 and 4.53.0 require of these (their METADATA)
PINS=('tokenizers>=0.21,<0.22' 'huggingface-hub>=0.30.0,<1.0' 'safetensors>=0.4.3')
mkdir -p "$D"
target=(--only-binary=:all: --no-deps --python-version 3.12 --implementation cp
        --abi cp312 --abi abi3 --abi none
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
        --platform manylinux2014_x86_64 --platform any)
for v in "${VERSIONS[@]}"; do
  "$PY" -m pip download -q --disable-pip-version-check "${target[@]}" -d "$D" "transformers==$v"
done
"$PY" -m pip download -q --disable-pip-version-check "${target[@]}" -d "$D" "${PINS[@]}"
printf '%s\n' "${PINS[@]}" > "$D/pins.txt"
bytes=$(du -sb "$D" | cut -f1)
ls -1 "$D"
echo "gpu-wheelhouse: $(( bytes / 1000000 )) MB in $D"
if [ "$bytes" -gt 60000000 ]; then
  echo "gpu-wheelhouse: over 60 MB" >&2
  exit 1
fi
