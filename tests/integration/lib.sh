# SPDX-License-Identifier: MIT
# lib.sh - helpers for integration tests: sourced, with the build dir as $1.
set -uo pipefail
B=$(cd "$1" && pwd)
SIM="$B/sim"
# under `make test-asan`: the tracer and sim/ from the plain build (they load
# into uninstrumented processes); the CLI and workloads from $B, instrumented
if [ -n "${RT_PLAIN_BUILD:-}" ]; then
  SIM="$RT_PLAIN_BUILD/sim"
  export RANKTRACE_LIB="$RT_PLAIN_BUILD/lib/libranktrace.so"
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-test.XXXXXX")
JOBS=()
trap 'for p in "${JOBS[@]}"; do kill -KILL -- -"$p" 2>/dev/null; done; rm -rf "$T"' EXIT
failures=0
checks=0
ok()   { checks=$((checks + 1)); echo "ok - $*"; }
bad()  { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL - $*"; }
# fails (status 1) when the check does: `check ... || { show why; }`
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; return 1; fi; }
finish() { echo "$((checks - failures)) passed, $failures failed"; [ "$failures" -eq 0 ]; }
# need_torch: PY is the torch venv's python (make test makes it with
# scripts/setup-torch.sh); without torch there the test fails here, with
# the checks it made so far counted
need_torch() { PY="$B/venv-torch/bin/python"
  "$PY" -c 'import torch' 2> /dev/null && return 0
  bad "no torch venv at $B/venv-torch (make test runs scripts/setup-torch.sh)"
  finish; exit 1
}
sim() { LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
# live jobs (test_live.sh, test_hangdev.sh). start NAME PLAN [OPTION...]:
# `ranktrace run -o $T/NAME --inject PLAN` on 4 ranks of fsdp_mini --steps 2
# (rt-launch given OPTIONs) in the background, in its own session (pgid =
# pid, in $LAST; killed at exit), bounded, output in $T/NAME.log. Not
# through sim(): $! must be the job's own pid (setsid execs timeout, which
# forwards our SIGTERM to ranktrace run).
start() { local out=$1 plan=$2; shift 2
  LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" setsid timeout -k 5 120 "$B/bin/ranktrace" \
    run -o "$T/$out" --inject "$plan" -- "$B/bin/rt-launch" "$@" -n 4 "$B/bin/fsdp_mini" --steps 2 \
    > "$T/$out.log" 2>&1 &
  JOBS+=("$!"); LAST=$!
}
# stop PID: SIGTERM to `ranktrace run` (it forwards to the launcher, which
# stops the ranks as torchrun does), then wait for it, 30 s at most (then its
# group is killed and stop fails)
stop() { local i; kill -TERM "$1" 2>/dev/null
  for i in $(seq 60); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.5; done
  kill -KILL -- -"$1" 2>/dev/null; return 1
}
# read_variant DIR (damage corpora): `ranktrace verdict`, `view` and `view
# --json` of one trace, each bounded (30 s): $out and $vrc (verdict's word and
# exit), $why (its "inconclusive:" reason), $view and $json (exits), the JSON
# in $T/v.json, stderr in $T/v.err; a hang or a crash is counted in $hangs
# and $crashes (the caller sets both to 0) and said.
read_variant() { local d=$1 rc
  out=$(timeout -k 5 30 "$B/bin/ranktrace" verdict "$d" 2> "$T/v.err" < /dev/null); vrc=$?
  why=$(grep -m1 'inconclusive: ' "$T/v.err" | sed 's/.*inconclusive: //')
  timeout -k 5 30 "$B/bin/ranktrace" view "$d" > /dev/null 2>&1 < /dev/null; view=$?
  timeout -k 5 30 "$B/bin/ranktrace" view "$d" --json > "$T/v.json" 2> /dev/null < /dev/null; json=$?
  for rc in $vrc $view $json; do
    { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } && hangs=$((hangs + 1)) && echo "# ${d##*/}: hung"
    [ "$rc" -gt 125 ] && [ "$rc" -ne 137 ] && crashes=$((crashes + 1)) && echo "# ${d##*/}: exit $rc"
  done
  return 0
}
# file_records DIR: the rt_stream_file records of a native trace, or of one
# rank's directory (each used stream file, stream-* or a forked child's
# fork-*, begins with one: the store's bookkeeping, which babeltrace2 counts
# as an event and ranktrace's readers do not deliver)
file_records() {
  python3 - "$1" <<'PY'
import glob, os, re, struct, sys
n = 0
for meta in glob.glob(os.path.join(sys.argv[1], "rank-*", "metadata")) + \
        glob.glob(os.path.join(sys.argv[1], "metadata")):
    m = re.search(r'name = "rt_stream_file";\n\tid = (\d+);', open(meta, errors="replace").read())
    files = [f for p in ("stream-*", "fork-*")
             for f in glob.glob(os.path.join(os.path.dirname(meta), p))]
    for f in files if m else []:
        h = open(f, "rb").read(80 + 6)
        n += len(h) == 86 and h[80:86] == struct.pack("<HI", 0xFFFF, int(m.group(1)))
print(n)
PY
}
# bt_count DIR: the events babeltrace2 reads in a native trace, the store's
# rt_stream_file records left out (as `ranktrace view` counts them)
bt_count() {
  local all
  all=$(timeout -k 5 120 babeltrace2 --component=sink.utils.counter "$1" 2> /dev/null |
    awk '/ Event messages?$/ {n = $1} END {print n + 0}')
  echo $((all - $(file_records "$1")))
}

