#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_probe_boot.sh - the PyTorch probe loads in every Python process of a
# traced job whatever the launch does to PYTHONPATH or site: the tracer
# imports it once Python starts the program (tracer/interpose/pyboot.c), so
# `python -I`, `python -S`, `env -u PYTHONPATH`, a script that sets
# PYTHONPATH outright and conda-style activation all get it, and the program
# sees the same sys.path, __main__ and exit status as untraced (before:
# every one of them ran without the probe, silently). A rank's metadata
# records the probe (python_probe: 1 loaded, 2 off, 3 failed); a probe that
# cannot load is said by run (stderr) and makes the verdict inconclusive
# (125) naming it; a process without Python records nothing. Real PyTorch:
# FSDP v1 with transformers 4.53.0's bug (tests/python/fsdp_cpu.py), launched
# by a wrapper that sets PYTHONPATH= and runs python -I: skipped-fsdp-root.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
W="$(cd "$(dirname "$0")/../python" && pwd)/fsdp_cpu.py"
need_torch
# prints what the program can see of the tracer: sys.path, __main__'s names,
# the probe; makes one event (a marker) when the library is there; exits 3 (or argv[1])
cat > "$T/prog.py" <<'PYEOF'
import ctypes, json, os, sys
lib = ctypes.CDLL(None)
if hasattr(lib, "rt_marker"):
    lib.rt_marker(b"prog", 1)
print(json.dumps({"path": sys.path, "main": sorted(k for k in globals() if k not in ("lib",)),
                  "pythonpath": os.environ.get("PYTHONPATH")}))
print("probe" if "ranktrace_probe" in sys.modules else "no probe")
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
PYEOF
# a conda-style activation: its own PATH, PYTHONPATH and prefix, then the program
mkdir -p "$T/env/bin"
ln -s "$PY" "$T/env/bin/python"
cat > "$T/env/bin/activate" <<SH
export CONDA_PREFIX="$T/env" CONDA_DEFAULT_ENV=env PATH="$T/env/bin:\$PATH"
export PYTHONPATH="$T/env/lib/site"
unset PYTHONHOME
SH
launch() { # NAME: the program started one way (untraced, or traced with RT=...)
  case $1 in
    plain) "$PY" "$T/prog.py" ;;
    isolated) "$PY" -I "$T/prog.py" ;;
    nosite) "$PY" -S "$T/prog.py" ;;
    unset) env -u PYTHONPATH "$PY" "$T/prog.py" ;;
    outright) sh -c 'PYTHONPATH=/opt/cluster/lib exec "$0" "$1"' "$PY" "$T/prog.py" ;;
    conda) sh -c '. "$0/bin/activate" && exec python "$1"' "$T/env" "$T/prog.py" ;;
  esac
}
export -f launch
export PY T
for way in plain isolated nosite unset outright conda; do
  env RANK=0 WORLD_SIZE=1 bash -c "launch $way" > "$T/$way.0" 2>&1; rc0=$?
  "$RT" run -o "$T/$way" -- env RANK=0 WORLD_SIZE=1 bash -c "launch $way" > "$T/$way.all" 2> "$T/$way.err"; rc1=$?
  grep -v '^ranktrace:\|^  rank' "$T/$way.all" > "$T/$way.1"
  check "$way: the probe loaded ($(tail -1 "$T/$way.1"))" bash -c "[ \"\$(tail -1 '$T/$way.1')\" = probe ] && grep -qx 'no probe' '$T/$way.0'"
  check "$way: sys.path, __main__ and PYTHONPATH as untraced, exit status 3/3 ($rc0/$rc1)" \
    bash -c "[ $rc0 -eq 3 ] && [ $rc1 -eq 3 ] && cmp -s <(head -1 '$T/$way.0') <(head -1 '$T/$way.1')"
  check "$way: the rank's metadata records the probe loaded" grep -q 'python_probe = 1;' "$T/$way/rank-00000/metadata"
done
check "no probe on sys.path, no sitecustomize in PYTHONPATH" bash -c "! grep -q 'ranktrace\|/python/site' '$T/plain.1'"

# RANKTRACE_PROBE=0: off on purpose, said, not a reason to be inconclusive
"$RT" run -o "$T/off" -- env RANKTRACE_PROBE=0 RANK=0 WORLD_SIZE=1 "$PY" "$T/prog.py" 0 > "$T/off.all" 2> "$T/off.err"
check "RANKTRACE_PROBE=0: not loaded, recorded as off" bash -c "grep -qx 'no probe' '$T/off.all' && grep -q 'python_probe = 2;' '$T/off/rank-00000/metadata'"
"$RT" verdict "$T/off" > /dev/null 2>&1
check "RANKTRACE_PROBE=0: the verdict is not inconclusive for it (healthy, $?)" [ $? -eq 0 ]

# where the probe truly cannot load: run says which rank, the verdict is 125 naming the probe
"$RT" run -o "$T/broken" -- env RANKTRACE_PROBE_PATH="$T/nowhere" RANK=0 WORLD_SIZE=1 "$PY" "$T/prog.py" \
  > "$T/broken.all" 2> "$T/broken.err"
check "cannot load: the program still runs (exit 3), without the probe" bash -c "[ $? -eq 3 ] && grep -qx 'no probe' '$T/broken.all'"
# (a rank that crashed without the probe: crashed, or the 4.53.0 bug? not known)
check "cannot load: the metadata says failed, and why" bash -c "grep -q 'python_probe = 3;' '$T/broken/rank-00000/metadata' && grep -q 'python_probe_detail = \"FileNotFoundError' '$T/broken/rank-00000/metadata'"
check "cannot load: run's stderr names the rank and the probe ($(grep -c probe "$T/broken.err") line)" \
  grep -q 'ranktrace run: warning: rank 0 ran Python without the ranktrace probe (FileNotFoundError' "$T/broken.err"
"$RT" verdict "$T/broken" > "$T/broken.v" 2>&1; rc=$?
check "cannot load, the rank exited 3: verdict inconclusive, 125 ($rc), the reason naming the probe" \
  bash -c "[ $rc -eq 125 ] && grep -q 'inconclusive: rank 0 ran Python without the ranktrace probe' '$T/broken.v'"

# a process without Python records no probe state
sim "$RT" run -o "$T/c" -- "$B/bin/rt-launch" -n 1 "$B/bin/fsdp_mini" --steps 1 > /dev/null 2>&1
check "no Python: python_probe 0 in the metadata" grep -q 'python_probe = 0;' "$T/c/rank-00000/metadata"

# real PyTorch: the 4.53.0 bug behind a wrapper that sets PYTHONPATH outright and runs python -I
cat > "$T/wrapper.sh" <<SH
#!/bin/sh
# a cluster's launch script: its own PYTHONPATH, an isolated interpreter
PYTHONPATH= exec "$PY" -I -m torch.distributed.run --standalone --nproc-per-node 2 "$W" --trainer-version 4.53.0 --steps 2
SH
chmod +x "$T/wrapper.sh"
OMP_NUM_THREADS=1 timeout -k 10 300 "$RT" run -o "$T/fsdp" -- "$T/wrapper.sh" > "$T/fsdp.log" 2>&1; rc=$?
check "wrapper (PYTHONPATH=, python -I), FSDP v1 at 4.53.0: the job fails ($rc)" [ $rc -ne 0 ]
"$RT" verdict "$T/fsdp" > "$T/fsdp.v" 2> "$T/fsdp.v.err"; rc=$?
check "wrapper: skipped-fsdp-root, exit 1 ($rc: $(head -1 "$T/fsdp.v"))" bash -c "[ $rc -eq 1 ] && [ \"\$(head -1 '$T/fsdp.v')\" = skipped-fsdp-root ]"
check "wrapper: both ranks' probe loaded" bash -c "grep -q 'python_probe = 1;' '$T/fsdp/rank-00000/metadata' && grep -q 'python_probe = 1;' '$T/fsdp/rank-00001/metadata'"
finish
