# SPDX-License-Identifier: MIT
# bisect_lib.sh - helpers for the bisect tests (sourced after lib.sh): a fake
# launcher standing in for srun that records each run, JSON field access, a
# bounded bisect.
export HOME="$T/home" XDG_CACHE_HOME="$T/home/.cache" RANKTRACE_CACHE_DIR="$T/cache"
mkdir -p "$HOME"
export LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FSDP_MINI="$B/bin/fsdp_mini"
export LAUNCH_LOG="$T/launcher.log"
cat > "$T/fake-srun" <<'SH'
#!/bin/sh
# stands in for srun: records its options and the run (the trace dir), then runs it
opts=""
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do opts="$opts $1"; shift; done
dir=""
prev=""
for a in "$@"; do [ "$prev" = "-o" ] && dir=$a; prev=$a; done
echo "$$ opts=[$opts ] dir=$(basename "$dir") sleep=${LAUNCH_SLEEP:-0}" >> "$LAUNCH_LOG"
[ -n "${LAUNCH_SLEEP:-}" ] && sleep "$LAUNCH_SLEEP"
exec "$@"
SH
chmod +x "$T/fake-srun"
# bisect ARGS...: ranktrace bisect, bounded; stdout to $T/out.json, stderr to $T/err
bisect() {
  timeout -k 5 300 "$B/bin/ranktrace" bisect "$@" > "$T/out.json" 2> "$T/err"
  local rc=$?
  [ $rc -eq 0 ] || sed "s/^/  stderr: /" "$T/err"
  return $rc
}
# jq-like: field PATH of $T/out.json (python expression on j)
field() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($1)" "${2:-$T/out.json}"; }
launched() { [ -f "$LAUNCH_LOG" ] && wc -l < "$LAUNCH_LOG" || echo 0; }
# the interpreter itself, for a test's `pip install`, not a pyenv shim: a
# shim's `pip install` ends in `pyenv rehash`, which fails (exit 1, "cannot
# rehash") while another test's pip holds the shims' lock under ctest -j2
real_python() { python3 -c 'import sys; print(sys.executable)'; }
