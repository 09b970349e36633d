#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_cli.sh - what a user meets before any trace: every error names the
# command ("ranktrace run: ..."), help lists every option the code accepts
# (read from the option tables in cli/cmd_*.c), `inject --list` shows presets
# with their parameters and no placeholders, error-code hints suggest codes
# the function can return, --version says what was built.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
SRC=$(cd "$(dirname "$0")/../.." && pwd)

"$RT" --version > "$T/version"
check "--version: version, git revision, CUDA and NCCL header versions" python3 -c "
import re
l = open('$T/version').read().splitlines()
assert re.fullmatch(r'ranktrace \d+\.\d+\.\d+ \(git ([0-9a-f]{7,}(-dirty)?|unknown)\)', l[0]), l
assert re.fullmatch(r'built against CUDA runtime headers \d+\.\d+, NCCL headers \d+\.\d+\.\d+.*', l[1]), l
"

# Errors: exit 2 and every stderr line that is not usage text names the command.
cmds=$("$RT" --help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
check "--help lists the commands of the table (run view verdict diff export report inject)" bash -c "
  for c in run view verdict diff export report inject; do echo '$cmds' | grep -qx \$c || exit 1; done"
for c in $cmds; do
  argsets=("--bogus-option" "")
  [ "$c" = run ] || argsets+=("a b c d")   # run a b c d runs the command a
  for args in "${argsets[@]}"; do
    # shellcheck disable=SC2086
    "$RT" "$c" $args > /dev/null 2> "$T/err"; rc=$?
    first=$(head -1 "$T/err")
    # verdict's usage error is 128: `git bisect run` stops on it (2 counts as bad)
    want=2; [ "$c" = verdict ] && want=128
    check "ranktrace $c ${args:-(no args)}: exit $want ($rc), the error begins 'ranktrace $c:' ($first)" \
      bash -c "[ $rc -eq $want ] && [[ \"\$(head -1 '$T/err')\" == 'ranktrace $c: '* ]]"
  done
done
"$RT" verdict --bad crahsed "$T" > /dev/null 2> "$T/err"; rc=$?
check "verdict --bad with a typo: exit 128 ($rc), which stops git bisect run instead of counting bad" \
  bash -c "[ $rc -eq 128 ] && grep -q 'expected one of' '$T/err'"
"$RT" verdict --help > "$T/vh"
check "verdict --help documents the usage exit 128" grep -q '128 a usage error' "$T/vh"
"$RT" run --inject 'cudaMalloc:error=ncclSystemError' -- true 2> "$T/err"; rc=$?
check "run --inject with a bad plan: exit 2, 'ranktrace run: bad fault plan'" \
  bash -c "[ $rc -eq 2 ] && head -1 '$T/err' | grep -q '^ranktrace run: bad fault plan'"

# Help: every long option in a command's getopt table is in its --help and in
# the top-level help (the short alias counts there, as in '-o DIR').
"$RT" --help > "$T/top"
for f in "$SRC"/cli/cmd_*.c; do
  c=$(basename "$f" .c); c=${c#cmd_}
  helps="$T/help.$c"; : > "$helps"
  for cmd in $c $( [ "$c" = export ] && echo report ); do "$RT" $cmd --help >> "$helps"; done
  check "$c: every option in cli/cmd_$c.c is in '$c --help' and in 'ranktrace --help'" python3 -c "
import re, sys
src = open('$f').read()
opts = re.findall(r'\{\s*\"([a-z][a-z-]*)\",\s*(?:no|required|optional)_argument,\s*NULL,\s*\'(.)\'', src)
help, top = open('$helps').read(), open('$T/top').read()
missing = []
for name, short in opts:
    if name == 'help':
        continue
    if '--' + name not in help:
        missing.append(f'--{name} not in $c --help')
    if '--' + name not in top and not re.search(r'(^|[\s\[])-' + re.escape(short) + r'\b', top):
        missing.append(f'--{name} not in ranktrace --help')
assert not missing, missing
"
done
check "inject: --list and --check in 'inject --help' and 'ranktrace --help'" bash -c "
  '$RT' inject --help | grep -q -- '--list' && '$RT' inject --help | grep -q -- '--check' &&
  grep -q -- 'inject --list | --check' '$T/top'"
check "top-level help names run's --append and --inject-file" bash -c "grep -q -- '--append' '$T/top' && grep -q -- '--inject-file' '$T/top'"

# inject --list: presets with their parameters, no printf placeholders, and the
# expansion shown (with example values) is a plan --check accepts.
"$RT" inject --list > "$T/list"
check "inject --list prints no raw %s" bash -c "! grep -q '%s' '$T/list'"
check "inject --list: each preset's expansion, its parameters given values, passes --check" python3 -c "
import re, subprocess
text = open('$T/list').read()
pre = text[text.index('presets:'):text.index('examples:')]
rows = re.findall(r'^  (\S+)\s.*\n\s+= (\S+)$', pre, re.M)
assert len(rows) >= 5, rows
for head, exp in rows:
    name, _, params = head.partition('=')
    values = {p: str(i + 2) for i, p in enumerate(params.split('@'))} if params else {}
    for p in params.split('@') if params else []:
        assert re.search(r'\b' + p + r'\b', exp), (head, exp)
    for p, v in values.items():
        exp = re.sub(r'\b' + p + r'\b', v, exp)
    preset = name + ('=' + '@'.join(values[p] for p in params.split('@')) if params else '')
    for plan in (exp, preset):
        r = subprocess.run(['$RT', 'inject', '--check', plan], capture_output=True, text=True)
        assert r.returncode == 0, (plan, r.stderr)
"

# Error-code hints: only codes that function can return, each one accepted.
for plan in 'cudaMalloc:error=ncclSystemError' 'ncclAllReduce:error=cudaErrorMemoryAllocation' 'cudaFree:error=cudaErrorMemoryAllocation'; do
  fn=${plan%%:*}
  "$RT" inject --check "$plan" 2> "$T/hint"; rc=$?
  check "inject --check $plan: exit 2, the hint suggests only what $fn accepts" python3 -c "
import re, subprocess
err = open('$T/hint').read()
assert $rc == 2 and err.startswith('ranktrace inject: bad fault plan'), err
codes = re.search(r'; it can return ([^\n]+)', err).group(1).split(', ')
other = 'nccl' if '$fn'.startswith('cuda') else 'cuda'
assert codes and not [c for c in codes if c.startswith(other)], codes
assert '${plan#*=}' not in codes, codes
for c in codes:
    assert subprocess.run(['$RT', 'inject', '--check', '$fn:error=' + c], capture_output=True).returncode == 0, c
"
done
# NCCL_PROFILER_PLUGIN: a plugin the user chose is kept and said; "ranktrace"
# (NCCL's NAME form) or a path to a libnccl-profiler-ranktrace.so names ours:
# no "keeping it ... CUDA events instead", ours by its path
plug() { NCCL_PROFILER_PLUGIN="$1" "$RT" run -o "$T/plug" -- sh -c 'echo "P=$NCCL_PROFILER_PLUGIN"' \
  > "$T/plug.out" 2> "$T/plug.err"; rm -rf "$T/plug"; }
plug theirs
check "run keeps a profiler plugin the user set, and says so" bash -c \
  "grep -qx 'P=theirs' '$T/plug.out' && grep -q 'NCCL_PROFILER_PLUGIN is already theirs: keeping it' '$T/plug.err'"
OURS=$(readlink -f "$(dirname "${RANKTRACE_LIB:-$B/lib/libranktrace.so}")/libnccl-profiler-ranktrace.so")
for mine in ranktrace /elsewhere/lib/libnccl-profiler-ranktrace.so; do
  plug "$mine"
  check "NCCL_PROFILER_PLUGIN=$mine is ranktrace's own plugin: ours, nothing said" bash -c \
    "[ \"\$(readlink -f \"\$(sed -n 's/^P=//p' '$T/plug.out')\")\" = '$OURS' ] && ! grep -q 'keeping it' '$T/plug.err'"
done
finish
