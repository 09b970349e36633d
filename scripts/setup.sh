#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# setup.sh - install what ranktrace needs to build and test, only what is missing.
# Called by `make demo` and `make test`; safe to run again (does nothing then).
set -euo pipefail

need_pkgs=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in build-essential cmake pkg-config libcriterion-dev babeltrace2 libbabeltrace2-dev lttng-tools liblttng-ust-dev python3 python3-venv chromium clang \
         python3-pip python3-packaging; do # pip + packaging: bisect --pip and its tests
  have_pkg "$p" || need_pkgs+=("$p")
done

if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "setup: installing ${need_pkgs[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

# The CUDA toolkit (headers, libcudart) and NCCL cannot come from Debian in
# the version we build against; say so clearly rather than fail in CMake.
if ! command -v nvcc >/dev/null 2>&1 && [ ! -e /usr/local/cuda/include/cuda_runtime_api.h ]; then
  echo "setup: the CUDA toolkit (13.x, with NCCL) is required: install it so that" >&2
  echo "       /usr/local/cuda/include/cuda_runtime_api.h and nccl.h exist, or set CUDAToolkit_ROOT / NCCL_ROOT." >&2
  exit 1
fi
