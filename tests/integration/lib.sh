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
sim() { LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
# live jobs (test_live.sh, test_hangdev.sh). start NAME PLAN: `ranktrace run
# -o $T/NAME --inject PLAN` on 4 ranks of fsdp_mini --steps 2 in the
# background, in its own session (pgid = pid, in $LAST; killed at exit),
# bounded, output in $T/NAME.log. Not through sim(): $! must be the job's own
# pid (setsid execs timeout, which forwards our SIGTERM to ranktrace run).
start() { local out=$1 plan=$2
  LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" setsid timeout -k 5 120 "$B/bin/ranktrace" \
    run -o "$T/$out" --inject "$plan" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 2 \
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
