# SPDX-License-Identifier: MIT
# device_lib.sh - helpers for the device-side tests (test_device.sh,
# test_devevents.sh, test_hangdev.sh), sourced after lib.sh: 4 ranks of
# fsdp_mini on the simulated cluster, their view --json read in python.
RT="$B/bin/ranktrace"
# run4 NAME CMD...: CMD (`ranktrace run ... --`) then rt-launch -n 4
# fsdp_mini --steps 3, bounded; output in $T/NAME.log, CMD's status
run4() { local out=$1; shift; timeout 120 "$@" "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 3 \
  > "$T/$out.log" 2>&1; }
# json NAME: view --json of the trace $T/NAME into $T/NAME.json
json() { timeout 60 "$RT" view --json "$T/$1" > "$T/$1.json"; }
# py NAME EXPR: EXPR over $T/NAME.json (as d), true when it holds
py() { python3 -c "import json,sys; d=json.load(open('$T/$1.json')); sys.exit(0 if ($2) else 1)"; }
DEV="d['device']"
