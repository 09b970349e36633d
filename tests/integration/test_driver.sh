#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_driver.sh - driver-level memory on the simulated driver (sim/libcuda.so.1)
# and NVIDIA's real libcudart: allocations through cuGetProcAddress pointers,
# cudaGetDriverEntryPointByVersion pointers, the linked cuMemAlloc_v2 symbol and
# cuMemCreate+cuMemMap appear in the trace and in `view --json`'s per-device
# bytes, once each; a parameter inside a mapped range resolves to its mapping's
# device; the traced program's output and status are unchanged.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
LIB="${RANKTRACE_LIB:-$B/lib/libranktrace.so}"
MiB=1048576
jq_py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# 1. unchanged behaviour: output and status, sim, traced vs untraced
sim "$B/bin/driver_probe" keep > "$T/plain.out" 2>&1; rc0=$?
sim "$RT" run -o "$T/keep" -- "$B/bin/driver_probe" keep > "$T/keep.out" 2>&1; rc1=$?
check "sim: driver_probe runs (status $rc0)" [ $rc0 -eq 0 ]
check "sim: same status traced ($rc1)" [ $rc1 -eq $rc0 ]
check "sim: same output traced" grep -qx "$(cat "$T/plain.out")" "$T/keep.out"
check "babeltrace2 reads the driver events" babeltrace2 "$T/keep" > "$T/bt.out" 2>/dev/null

# 2. every path's allocation is in the trace (entry points handed out our wrappers)
check "cuMemAlloc_v2 recorded 3 times (cuGetProcAddress, entry point, symbol)" \
  [ "$(grep -c ' cuMemAlloc_v2: ' "$T/bt.out")" -eq 3 ]
check "cuGetProcAddress handed out wrappers (rt_drv_entry wrapped = 1)" \
  grep -q 'rt_drv_entry: .*symbol = "cuMemAlloc", version = 12000, flags = 0, wrapped = 1, result = 0' "$T/bt.out"
check "two cuMemCreate on device 3 and two cuMemMap" \
  [ "$(grep -c ' cuMemCreate: .*device = 3 }' "$T/bt.out")" -eq 2 -a "$(grep -c ' cuMemMap: ' "$T/bt.out")" -eq 2 ]
"$RT" view --json "$T/keep" > "$T/keep.json"
check "per-device bytes: 7 MiB on 0, 1+3 MiB on 1, 5 MiB on 2, 2x2 MiB physical on 3 (mapping not counted again)" \
  [ "$(jq_py "$T/keep.json" 'd["ranks"][0]["device_bytes"]')" = \
    "{'0': $((7 * MiB)), '1': $((4 * MiB)), '2': $((5 * MiB)), '3': $((4 * MiB))}" ]
check "driver path: 5 allocations, 19 MiB, 2 handles, 2 mappings" \
  [ "$(jq_py "$T/keep.json" 'd["ranks"][0]["driver"]')" = \
    "{'allocations': 5, 'bytes': $((19 * MiB)), 'vmm_handles': 2, 'vmm_maps': 2, 'seen_twice': 0}" ]
check "devices 0-3 used; verdict healthy (parameter on cuda:3 lives in device 3's mapping)" \
  [ "$(jq_py "$T/keep.json" 'd["ranks"][0]["devices"], d["verdict"]')" = "[0, 1, 2, 3] healthy" ]

"$RT" params "$T/keep" --json > "$T/params.json"
check "params: the parameter's data pointer lies in the cuMemMap mapping (2 MiB on cuda:3, base = pointer - 4 KiB)" \
  [ "$(jq_py "$T/params.json" '(lambda p: (p["allocation"]["call"], p["allocation"]["device"], p["allocation"]["size"], int(p["ptr"], 16) - int(p["allocation"]["base"], 16)))(d["params"][0]["ranks"][0]["placement"])')" = \
    "('cuMemMap', 3, $((2 * MiB)), 4096)" ]

# 3. a cuda:0 parameter whose data lies inside the mapping on device 3 is found out
sim "$RT" run -o "$T/mis" -- "$B/bin/driver_probe" keep 0 > /dev/null 2>&1
"$RT" view --json "$T/mis" > "$T/mis.json"
check "pointer inside a mapped range resolves to its mapping: device-misplacement" \
  [ "$(jq_py "$T/mis.json" 'd["verdict"]')" = "device-misplacement" ]

# 4. everything freed: bytes back to zero, no unknown frees, peaks kept
sim "$RT" run -o "$T/free" -- "$B/bin/driver_probe" free > /dev/null 2>&1
"$RT" view --json "$T/free" > "$T/free.json"
check "freed: no device bytes left, 6 allocations, 6 frees (4 frees + 2 releases)" \
  [ "$(jq_py "$T/free.json" 'd["ranks"][0]["device_bytes"], d["ranks"][0]["allocations"], d["ranks"][0]["frees"]')" = "{} 6 6" ]
check "freed: peaks stay" [ "$(jq_py "$T/free.json" 'd["ranks"][0]["peak_device_bytes"]["3"]')" = $((4 * MiB)) ]
check "freed: no finding (no unknown free)" [ "$(jq_py "$T/free.json" 'len(d["findings"])')" = 0 ]

# 5. runtime-only program on the sim: cuGetProcAddress itself fetched through the
#    runtime leads to our lookup, so its cuMemAlloc is traced too: same figures
sim "$RT" run -o "$T/rt" -- "$B/bin/driver_probe_rt" keep > "$T/rt.out" 2>&1
check "sim runtime-only: runs" grep -q "driver_probe: ok" "$T/rt.out"
"$RT" view --json "$T/rt" > "$T/rt.json"
check "sim runtime-only: the same per-device bytes" \
  [ "$(jq_py "$T/rt.json" 'd["ranks"][0]["device_bytes"]')" = "$(jq_py "$T/keep.json" 'd["ranks"][0]["device_bytes"]')" ]

# 6. NVIDIA's libcudart without a driver: the entry-point wrapper passes its error through
"$B/bin/driver_probe_rt" keep > "$T/nv.plain" 2>&1; nv0=$?
RANKTRACE_DIR="$T/nv" LD_PRELOAD="$LIB" "$B/bin/driver_probe_rt" keep > "$T/nv.traced" 2>&1; nv1=$?
check "real libcudart: same output traced and untraced" cmp -s "$T/nv.plain" "$T/nv.traced"
check "real libcudart: same status ($nv0/$nv1), cudaErrorInsufficientDriver (35)" [ $nv0 -eq $nv1 -a $nv0 -eq 35 ]
check "real libcudart: the first call's result printed" grep -qx 'driver_probe: rt_entry("cuGetProcAddress", (void \*\*)&gpa) -> 35' "$T/nv.traced"
babeltrace2 "$T/nv" > "$T/nv.bt" 2>/dev/null
check "real libcudart: the failed lookup is recorded, not wrapped" \
  grep -q 'rt_drv_entry: .*symbol = "cuGetProcAddress", version = 12000, flags = 0, wrapped = 0, result = 35' "$T/nv.bt"

# 8. faults reach driver calls made through entry-point pointers, with CUresult names
sim "$RT" run -o "$T/inj" --inject 'cuMemCreate:error=CUDA_ERROR_OUT_OF_MEMORY:when=2' -- "$B/bin/driver_probe" keep > "$T/inj.out" 2>&1
check "injected: the 2nd cuMemCreate (a cudaGetDriverEntryPointByVersion pointer) returns CUDA_ERROR_OUT_OF_MEMORY (2)" \
  grep -qx 'driver_probe: v.create(&h\[1\], 2 \* MiB, &prop, 0) -> 2' "$T/inj.out"
"$RT" view --json "$T/inj" > "$T/inj.json"
check "injected: one fault, one failed allocation, the first error named as the driver names it" \
  [ "$(jq_py "$T/inj.json" 'd["ranks"][0]["faults"], d["ranks"][0]["failed_allocations"], any("cuMemCreate returned CUDA_ERROR_OUT_OF_MEMORY" in f["text"] for f in d["findings"])')" = "1 1 True" ]
check "a runtime error name is refused for a driver function (exit 2)" \
  bash -c "'$RT' inject --check 'cuMemAlloc_v2:error=cudaErrorMemoryAllocation' > /dev/null 2>&1; [ \$? -eq 2 ]"

# 7. two ranks on one GPU follow NCCL's rule: one rank per device per NCCL host
#    (NCCL_HOSTID), which the tracer records as the trace's nccl_host
cat > "$T/shim.sh" <<'EOS'
#!/usr/bin/env bash
export LOCAL_RANK=0
[ -n "${SHIM_HOSTID:-}" ] && export NCCL_HOSTID="rt-$SHIM_HOSTID-rank$RANK"
exec "$@"
EOS
chmod +x "$T/shim.sh"
sim timeout -k 5 60 "$RT" run -o "$T/dup" -- "$B/bin/rt-launch" -n 2 "$T/shim.sh" "$B/bin/fsdp_mini" --steps 2 > /dev/null 2>&1
"$RT" view --json "$T/dup" > "$T/dup.json"
check "two ranks, one device, one NCCL host: NCCL refuses, finding names the device" \
  [ "$(jq_py "$T/dup.json" 'd["verdict"], "ranks 0,1 all use device 0" in d["findings"][0]["text"]')" = "device-misplacement True" ]
SHIM_HOSTID=h sim timeout -k 5 60 "$RT" run -o "$T/two" -- "$B/bin/rt-launch" -n 2 "$T/shim.sh" "$B/bin/fsdp_mini" --steps 2 > /dev/null 2>&1
check "per-rank NCCL_HOSTID: both ranks train on device 0 (exit 0)" [ $? -eq 0 ]
"$RT" view --json "$T/two" > "$T/two.json"
check "per-rank NCCL_HOSTID: recorded as nccl_host, no duplicate-device finding, healthy" \
  [ "$(grep -h nccl_host "$T/two"/rank-*/metadata | sort | tr -d '\t\n')$(jq_py "$T/two.json" 'd["verdict"]')" = \
    'nccl_host = "rt-h-rank0";nccl_host = "rt-h-rank1";healthy' ]
finish
