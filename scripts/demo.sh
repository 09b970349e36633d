#!/usr/bin/env bash
# demo.sh - the story in one run: fsdp_mini on a simulated 4-GPU node, as
# transformers 4.52.4 (healthy) and 4.53.0 (FSDP root forward skipped).
set -uo pipefail
B=$(cd "${1:-build}" && pwd)
export LD_LIBRARY_PATH="$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "fsdp_mini, 4 ranks, transformers 4.52.4 (healthy)"
"$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --trainer-version 4.52.4 --steps 3
good=$?
say "fsdp_mini, 4 ranks, transformers 4.53.0 (the Trainer runs the unwrapped module)"
"$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --trainer-version 4.53.0 --steps 3
bad=$?
say "summary"
echo "4.52.4: launcher exit status $good (expected 0)"
echo "4.53.0: launcher exit status $bad (expected non-zero: every rank died at the embedding)"
[ "$good" -eq 0 ] && [ "$bad" -ne 0 ]
