#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# setup-torch.sh BUILD - a venv with PyTorch from PyPI for the probe's CPU
# tests, cached under BUILD/venv-torch (pip's own cache makes a rebuild fast).
set -euo pipefail
V="$1/venv-torch"
if [ -x "$V/bin/python" ] && "$V/bin/python" -c 'import torch' 2>/dev/null; then
  exit 0
fi
echo "setup-torch: installing torch from PyPI into $V (first time: a few minutes)"
rm -rf "$V"
python3 -m venv "$V"
"$V/bin/pip" install -q --disable-pip-version-check torch numpy
"$V/bin/python" -c 'import torch; print("setup-torch: torch", torch.__version__)'
