#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_cupti.sh - `ranktrace run --cupti` (tracer/device/cupti.c) with synthesized CUPTI
# data: a fake libcupti (tests/fakes/fake_cupti.c) fires driver callbacks and
# hands out activity records; the subscription-taken path (Nsight, unknown
# client), no libcupti at all, and NVIDIA's real libcupti against the simulated
# driver (which refuses it). The traced program's output and status never change.
source "$(dirname "$0")/lib.sh"
if [ ! -x "$B/bin/cupti_probe" ]; then
  bad "no cupti_probe: CUPTI's headers were not found when configuring (tracer/CMakeLists.txt)"
  finish; exit 1
fi
RT="$B/bin/ranktrace"
FAKE="$B/lib/libfake_cupti.so"
MiB=1048576
jq_py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
rows=$(grep -c '^RT_DRV(' "$(dirname "$0")/../../format/driver_api.def")
ptsz=$(grep -cE '^RT_DRV\([^,]+, [^,]+, [0-9]+, 1,' "$(dirname "$0")/../../format/driver_api.def")

# 1. CUPTI active: callbacks of every driver_api.def row (+ _ptsz twins) enabled,
#    synthesized callbacks recorded as driver events, activity flushed at exit
RANKTRACE_CUPTI_LIB="$FAKE" "$RT" run --cupti -o "$T/on" -- "$B/bin/cupti_probe" "$FAKE" > "$T/on.out" 2>&1
check "active: the program runs (exit 0)" [ $? -eq 0 ]
check "active: one callback per table row and _ptsz twin ($rows + $ptsz), MEMORY2 + MEMORY_POOL enabled" \
  grep -qx "enabled $((rows + ptsz)) kinds 3" "$T/on.out"
"$RT" view --json "$T/on" > "$T/on.json"
check "active: state, 3 activity records, 1 MiB allocated by MEMORY2 records" \
  [ "$(jq_py "$T/on.json" 'd["ranks"][0]["cupti"]["state"], d["ranks"][0]["cupti"]["memory_records"], d["ranks"][0]["cupti"]["allocated_bytes"]')" = "active 3 $MiB" ]
check "active: in the model: callback 1 MiB on device 2 (its context), cuMemCreate 2 MiB on device 1, the interposed 4 MiB on device 0" \
  [ "$(jq_py "$T/on.json" 'd["ranks"][0]["device_bytes"]')" = "{'0': $((4 * MiB)), '1': $((2 * MiB)), '2': $MiB}" ]
check "active: the failed cuMemAlloc_v2 callback counted as failed, one handle mapped" \
  [ "$(jq_py "$T/on.json" 'd["ranks"][0]["failed_allocations"], d["ranks"][0]["driver"]["vmm_maps"]')" = "1 1" ]
babeltrace2 "$T/on" > "$T/on.bt" 2>/dev/null
check "active: the callback fired inside the interposed cuMemAlloc_v2 is not recorded again (3 events: 2 callbacks + 1 interposed)" \
  [ "$(grep -c ' cuMemAlloc_v2: ' "$T/on.bt")" -eq 3 -a "$(grep -c ' cuMemAlloc_v2: .*size = 4194304' "$T/on.bt")" -eq 1 ]
check "active: activity records precede the exit record (flushed at exit)" \
  bash -c "grep -n 'rt_cupti_mem\|rt_exit' '$T/on.bt' | tail -1 | grep -q rt_exit && [ \$(grep -c rt_cupti_mem '$T/on.bt') -eq 3 ]"

# 2. another client holds CUPTI: recorded, named, tracing goes on
FAKE_CUPTI_TAKEN=1 NSYS_PROFILING_SESSION_ID=7 RANKTRACE_CUPTI_LIB="$FAKE" \
  "$RT" run --cupti -o "$T/taken" -- "$B/bin/cupti_probe" "$FAKE" > "$T/taken.out" 2>&1
check "taken: the program runs unchanged (exit 0)" [ $? -eq 0 ]
"$RT" view --json "$T/taken" > "$T/taken.json"
check "taken: cupti unavailable, held by Nsight Systems" \
  [ "$(jq_py "$T/taken.json" 'd["ranks"][0]["cupti"]["state"], d["ranks"][0]["cupti"]["detail"]')" = \
    "unavailable subscription held by Nsight Systems" ]
check "taken: interposition goes on (the 4 MiB cuMemAlloc_v2), nothing comes from CUPTI" \
  [ "$(jq_py "$T/taken.json" 'd["ranks"][0]["driver"]["allocations"], d["ranks"][0]["driver"]["bytes"], d["ranks"][0]["cupti"]["memory_records"]')" = "1 $((4 * MiB)) 0" ]
FAKE_CUPTI_TAKEN=1 RANKTRACE_CUPTI_LIB="$FAKE" "$RT" run --cupti -o "$T/taken2" -- "$B/bin/cupti_probe" "$FAKE" > /dev/null 2>&1
check "taken, no hint: an unknown client" \
  [ "$("$RT" view --json "$T/taken2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ranks"][0]["cupti"]["detail"])')" = \
    "subscription held by an unknown CUPTI client" ]

# 3. no libcupti: the tracer loads and runs without it
check "libranktrace.so does not link libcupti" bash -c "! readelf -d '${RANKTRACE_LIB:-$B/lib/libranktrace.so}' | grep -q cupti"
#    a path that is not there is the user's typo: run refuses it before the job starts
RANKTRACE_CUPTI_LIB=/nonexistent/libcupti.so "$RT" run --cupti -o "$T/typo" -- \
  "$B/bin/cupti_probe" "$FAKE" > "$T/typo.out" 2>&1
check "a RANKTRACE_CUPTI_LIB that is not there: run refuses it (exit 128, named), nothing ran" \
  bash -c "[ $? -eq 128 ] && grep -q RANKTRACE_CUPTI_LIB '$T/typo.out' && [ ! -e '$T/typo' ]"
#    a file that is there but no libcupti (dlopen fails): the tracer goes on without CUPTI
: > "$T/not-a-library.so"
RANKTRACE_CUPTI_LIB="$T/not-a-library.so" "$RT" run --cupti -o "$T/none" -- "$B/bin/cupti_probe" "$FAKE" > "$T/none.out" 2>&1
check "no libcupti: the program runs (exit 0)" [ $? -eq 0 ]
check "no libcupti: recorded as unavailable" \
  [ "$("$RT" view --json "$T/none" | python3 -c 'import json,sys; c=json.load(sys.stdin)["ranks"][0]["cupti"]; print(c["state"], c["detail"][:18])')" = "unavailable libcupti not found" ]

# 4. NVIDIA's libcupti with the simulated driver (cuInit runs the injection):
#    CUPTI refuses a driver it does not know; interposition alone gives the same figures
sim "$RT" run --cupti -o "$T/real" -- "$B/bin/driver_probe" keep > "$T/real.out" 2>&1
check "real libcupti + sim driver: program unchanged" bash -c "[ $? -eq 0 ] && grep -qx 'driver_probe: ok' '$T/real.out'"
"$RT" view --json "$T/real" > "$T/real.json"
check "real libcupti + sim driver: unavailable, driver bytes as without --cupti" \
  [ "$(jq_py "$T/real.json" 'd["ranks"][0]["cupti"]["state"], d["ranks"][0]["driver"]["bytes"]')" = "unavailable $((19 * MiB))" ]
finish
