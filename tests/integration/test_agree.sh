#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_agree.sh - one model, five outputs: run's summary, view, view --json,
# the Perfetto export and the HTML report agree for every rank on the devices
# used, peak bytes per device, allocation count and how it ended; Perfetto's
# flows all close. On a healthy run, transformers 4.53.0, a device
# misplacement, a run using cudaMallocPitch and a run on split communicators.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
HERE=$(cd "$(dirname "$0")" && pwd)
L="$B/bin/rt-launch"

agree() { # NAME: the five outputs of $T/NAME agree
  local n=$1
  "$RT" view "$T/$n" > "$T/$n.view" 2> /dev/null
  "$RT" view "$T/$n" --json > "$T/$n.json" 2> /dev/null
  "$RT" export "$T/$n" --perfetto "$T/$n.perfetto.json" 2> /dev/null
  "$RT" report "$T/$n" -o "$T/$n.html" 2> /dev/null
  check "$n: run summary, view, view --json, Perfetto and report agree" \
    python3 "$HERE/check_agree.py" "$T/$n.summary" "$T/$n.view" "$T/$n.json" "$T/$n.perfetto.json" "$T/$n.html"
}
run() { # NAME CMD...: traced, its summary kept
  local n=$1; shift
  sim timeout -k 5 120 "$RT" run -o "$T/$n" -- "$@" > "$T/$n.summary" 2> "$T/$n.err"
}

run healthy "$L" -n 4 "$B/bin/fsdp_mini" --steps 2
agree healthy
run tf4530 "$L" -n 4 "$B/bin/fsdp_mini" --steps 2 --trainer-version 4.53.0
agree tf4530
run misplaced "$L" -n 4 "$B/bin/fsdp_mini" --steps 2 --device 0
agree misplaced
check "misplaced: the verdict is device-misplacement" \
  python3 -c "import json,sys; sys.exit(json.load(open('$T/misplaced.json'))['verdict'] != 'device-misplacement')"
run pitch "$B/bin/api_probe"
agree pitch
check "pitch: cudaMallocPitch counted in Perfetto's memory counters (pitch * height bytes)" \
  python3 -c "
import json, sys
j = json.load(open('$T/pitch.json'))['ranks'][0]
sys.exit(0 if max(j['peak_device_bytes'].values()) >= 512 * 10 else 1)"
run split "$L" -n 4 "$B/bin/split_job"
agree split
check "split: healthy, every collective matched on both halves" \
  python3 -c "import json,sys; j=json.load(open('$T/split.json')); sys.exit(j['verdict'] != 'healthy' or any(r['collectives']['AllReduce'] != 3 for r in j['ranks']))"
finish
