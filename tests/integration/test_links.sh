#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_links.sh - which rooms' libraries a room's library needs, from their
# symbols (nm): bisect/ needs util/ and format/ only, never the viewer (it
# judges a run by spawning `ranktrace verdict`; its report writes JSON
# through util/'s writer). The same check on the CLI's objects finds the
# viewer (the check can fail). And cli/ stays the thin layer it is meant to
# be (options, loads, exit statuses): at most 2,500 lines; what commands
# print is viewer/render/'s, what run and bisect do run/'s and bisect/'s.
source "$(dirname "$0")/lib.sh"
L="$B/lib"
command -v nm > /dev/null || { echo "nm not found"; exit 77; }

# the symbols objects need that they do not define themselves
needs() { nm -u "$@" 2>/dev/null | awk '$1 == "U" { print $2 }' | sort -u; }
defines() { nm --defined-only "$@" 2>/dev/null | awk 'NF == 3 && $2 ~ /[TDBR]/ { print $3 }' | sort -u; }
# what objects need from ranktrace's libraries other than the ones allowed
# (rt_*, bs_*, simulated or NVIDIA symbols are ranktrace's or libc's)
outside() { local objs=$1; shift
  comm -23 <(needs $objs) <(defines $objs "$@") | grep -E '^(rt|bs)_' || true
}

check "librtbisect.a exists" test -f "$L/librtbisect.a"
extra=$(outside "$L/librtbisect.a" "$L/librtutil.a" "$L/librtformat.a")
check "bisect/ needs nothing beyond util/ and format/ (got: ${extra:-none})" test -z "$extra"
check "bisect/ needs no viewer symbol" bash -c "! nm -u '$L/librtbisect.a' | grep -q ' rt_vw_'"
check "bisect/ writes its JSON through util/'s writer" bash -c "nm -u '$L/librtbisect.a' | grep -q ' rt_json_str$'"
cli=$(ls "$B"/cli/CMakeFiles/ranktrace-cli.dir/*.o 2>/dev/null | tr '\n' ' ')
if [ -n "$cli" ]; then
  extra=$(outside "$cli" "$L/librtutil.a" "$L/librtformat.a")
  check "control: the same check finds the CLI's use of the viewer" bash -c "grep -q '^rt_vw_' <<< '$extra'"
fi
S=$(cd "$(dirname "$0")/../.." && pwd)
lines=$(cat "$S"/cli/*.c "$S"/cli/*.h | wc -l)
check "cli/ is a thin layer: $lines lines, at most 2,500" [ "$lines" -le 2500 ]
# every source file at most 600 lines (STYLE.md): a longer one is split by concept
long=$(cd "$S" && git ls-files '*.c' '*.h' '*.py' '*.sh' 2> /dev/null | while read -r f; do
  n=$(wc -l < "$f"); [ "$n" -le 600 ] || echo "$f:$n"; done | tr '\n' ' ')
nfiles=$(cd "$S" && git ls-files '*.c' '*.h' '*.py' '*.sh' 2> /dev/null | wc -l)
check "every source file at most 600 lines (of $nfiles; over: ${long:-none})" \
  bash -c "[ $nfiles -gt 100 ] && [ -z '$long' ]"
finish
