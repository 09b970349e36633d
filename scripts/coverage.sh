#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# coverage.sh [BUILD] - line coverage (gcov) of viewer/, bisect/ and inject/
# from the unit tests (events built in memory, fake hosts, fake judges) and
# the integration tests of viewer/ and bisect/ (below).
#
# Builds BUILD (default build-cov) with -DRT_COVERAGE=ON, runs every unit
# test ctest lists (label unit: a new test file is measured without editing
# this script) except the simulated cluster's (sim_*: they test sim/, which
# is not measured), then reads every object's notes and counts with gcov's
# JSON output. A source compiled into several programs counts once: a line
# is covered when any of them ran it; a file no unit test runs counts with
# all its lines uncovered. Prints each measured file and each
# room's total; exits 1 when a room is under its minimum:
#   MIN_VIEWER (85), MIN_BISECT (80), MIN_INJECT (80) percent of lines.
# bisect/ is measured where it lives: bisect/*.c, or cli/bisect_*.c in a tree
# from before the module moved.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
B=${1:-build-cov}
JOBS=${JOBS:-2}
export MIN_VIEWER=${MIN_VIEWER:-85} MIN_BISECT=${MIN_BISECT:-80} MIN_INJECT=${MIN_INJECT:-80}

cmake -S . -B "$B" -DRT_COVERAGE=ON >/dev/null || { echo "coverage: cmake failed"; exit 1; }
# everything, so that a file of a measured room that no unit test links still
# has its notes (.gcno) and counts, uncovered
cmake --build "$B" -j"$JOBS" >"$B/coverage-build.log" 2>&1 ||
  { tail -20 "$B/coverage-build.log"; echo "coverage: build failed ($B/coverage-build.log)"; exit 1; }
find "$B" -name '*.gcda' -delete
(cd "$B" && ctest -L unit -E '^sim_' -j"$JOBS" --output-on-failure >coverage-tests.log 2>&1) ||
  { grep -E 'Failed|\*\*\*' "$B/coverage-tests.log" | head -20
    echo "coverage: unit tests failed ($B/coverage-tests.log)"; exit 1; }

# Integration tests reach what unit tests cannot: the CLI's outputs (report,
# Perfetto), the LTTng reader, a live job, hostile files; bisect's real pip,
# venvs, git worktrees and traced runs. ROOM_INTEGRATION=0 (VIEWER_, BISECT_)
# leaves a room's out. They run this build's instrumented CLI with the tracer
# and simulated libraries of the plain build PLAIN (default build) when it has
# them, as `make test-asan` does. A failing check is reported with its log;
# its lines still count (`make test` judges the tests, this measures lines).
VIEWER_TESTS="viewer export lttng live damage2 hostile json_docs"
BISECT_TESTS="bisect_versions bisect_setup bisect_git bisect_pip bisect_env"
integration() {
  local room=$1 t failed=""
  shift
  for t in "$@"; do
    [ -f "tests/integration/test_$t.sh" ] || continue
    bash "tests/integration/test_$t.sh" "$B" >"$B/coverage-$t.log" 2>&1 || failed="$failed test_$t"
  done
  [ -z "$failed" ] || echo "coverage: $room: failing checks in$failed (logs: $B/coverage-NAME.log); lines counted"
}
PLAIN=${PLAIN:-build}
if [ -e "$PLAIN/lib/libranktrace.so" ] && [ -d "$PLAIN/sim" ]; then
  RT_PLAIN_BUILD=$(cd "$PLAIN" && pwd)
  export RT_PLAIN_BUILD
fi
# shellcheck disable=SC2086 # one word per test
[ "${VIEWER_INTEGRATION:-1}" = 0 ] || integration viewer $VIEWER_TESTS
# shellcheck disable=SC2086
[ "${BISECT_INTEGRATION:-1}" = 0 ] || integration bisect $BISECT_TESTS

python3 - "$B" "$PWD" <<'EOF'
import glob, json, os, subprocess, sys

build, src = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
rooms = [("viewer", ["viewer/*/*.c"], "MIN_VIEWER"),
         ("bisect", ["bisect/*.c"], "MIN_BISECT"),
         ("inject", ["inject/*.c"], "MIN_INJECT")]
if not glob.glob(os.path.join(src, "bisect/*.c")):
    rooms[1] = ("bisect", ["cli/bisect_*.c"], "MIN_BISECT")

lines = {}  # source path -> {line: covered}
# every compiled object's notes (.gcno): a file compiled but never run counts
# with all its lines uncovered (gcov reads a missing .gcda as "not executed")
for gcno in glob.glob(os.path.join(build, "**", "*.gcno"), recursive=True):
    out = subprocess.run(["gcov", "--json-format", "--stdout", "-o", os.path.dirname(gcno), gcno],
                         capture_output=True, text=True, cwd=build).stdout
    for doc in out.splitlines():
        if not doc.startswith("{"):
            continue
        for f in json.loads(doc).get("files", []):
            path = os.path.realpath(os.path.join(build, f["file"]))
            seen = lines.setdefault(path, {})
            for ln in f["lines"]:
                seen[ln["line_number"]] = seen.get(ln["line_number"], False) or ln["count"] > 0

failed = False
print("%-28s %7s %7s %7s" % ("file", "lines", "covered", "%"))
for room, patterns, env in rooms:
    files = sorted({os.path.realpath(p) for pat in patterns for p in glob.glob(os.path.join(src, pat))})
    total = hit = 0
    for path in files:
        seen = lines.get(path)
        rel = os.path.relpath(path, src)
        if seen is None:  # not part of this build (read_bt2_none.c beside libbabeltrace2)
            print("%-28s %7s %7s %7s  not in this build" % (rel, "-", "-", "-"))
            continue
        n, c = len(seen), sum(seen.values())
        total, hit = total + n, hit + c
        print("%-28s %7d %7d %6.1f" % (rel, n, c, 100.0 * c / n if n else 0))
    pct = 100.0 * hit / total if total else 0.0
    need = float(os.environ[env])
    verdict = "ok" if pct >= need else "UNDER %g %%" % need
    print("%-28s %7d %7d %6.1f  %s\n" % (room + "/ total", total, hit, pct, verdict))
    failed |= pct < need
sys.exit(1 if failed else 0)
EOF
