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
trap 'rm -rf "$T"' EXIT
failures=0
checks=0
ok()   { checks=$((checks + 1)); echo "ok - $*"; }
bad()  { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL - $*"; }
# fails (status 1) when the check does: `check ... || { show why; }`
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; return 1; fi; }
finish() { echo "$((checks - failures)) passed, $failures failed"; [ "$failures" -eq 0 ]; }
sim() { LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
