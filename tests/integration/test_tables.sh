#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_tables.sh - meaning is declared once, in format/ (and util/): no room
# keeps a hand-written list of collective kinds, NCCL or probe dtypes, NVIDIA
# error names, RANKTRACE_* variable names, or JSON keys. Greps the sources (not the
# build); each check names the file:line that brought a list back.
# (sim/ is NVIDIA's side of the ABI; tests/, bench/ and fuzz/ are workloads
# that build their own inputs: not searched.)
source "$(dirname "$0")/lib.sh"
S=$(cd "$(dirname "$0")/../.." && pwd)
ROOMS="tracer inject viewer cli bisect lttng python"

# the C and Python files of the rooms that read the tables
sources() {
  for d in $ROOMS; do
    [ -d "$S/$d" ] && find "$S/$d" -type f \( -name '*.c' -o -name '*.h' -o -name '*.py' \)
  done | sort
}

# Lines (file:line: text) matching the extended regex $1 in the rooms'
# sources, outside comments (lines starting with /*, *, //, #) and docstrings.
hits() {
  sources | xargs grep -nE "$1" /dev/null 2>/dev/null |
    grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/?\*|//|#)' || true
}

none() { # what, regex: no hit
  local out
  out=$(hits "$2")
  if [ -z "$out" ]; then ok "$1"; else bad "$1:"; echo "$out" | sed 's/^/    /'; fi
}

# -- collective kinds: the p2p/root/op/label columns of nccl_api.def ------
none "no 'collective, not P2P' written as a comparison with Send or Recv" \
  'RT_CK_(Send|Recv)'
none "no kind list joined by && or || (which kinds have a root or an op)" \
  '[=!]= *RT_CK_[A-Za-z]+ *(&&|\|\|)[^;]*[=!]= *RT_CK_[A-Za-z]+'
# a column of kinds written kind by kind (AG/RS/AR/BC): three or more kinds in one file
many=$(for f in $(sources); do
  n=$(grep -v '^[[:space:]]*\(/\?\*\|//\)' "$f" | grep -oE 'RT_CK_[A-Z][A-Za-z]+' | grep -v RT_CK_COUNT |
      sort -u | wc -l)
  [ "$n" -ge 3 ] && echo "${f#$S/}: $n kinds named"
done)
check "no file names three collective kinds one by one${many:+: $many}" [ -z "$many" ]

# -- dtypes: format/dtypes.def -------------------------------------------------
none "no ncclDataType_t names or sizes written outside format/" \
  'ncclInt8|ncclUint8|ncclFloat16|ncclBfloat16|ncclFloat32|ncclFloat64|\{ *1, *1, *4, *4, *8'
none "no probe dtype list (float32, bfloat16, ...) outside format/" \
  '"bfloat16"|torch\.bfloat16|"float16"'
none "no probe device-type numbers (devtype == N, DEV_META = 2) outside format/" \
  'devtype *[=!]= *[0-9]|DEV_CUDA, *DEV_CPU, *DEV_META *= *[0-9]'

# -- errors: one table (format/errors.def) -------------------------------------
none "no NVIDIA error names written as strings outside format/" \
  '"(cuda(Error[A-Za-z]+|Success)|nccl(Success|UnhandledCudaError|SystemError|InternalError|InvalidArgument|InvalidUsage|RemoteError|InProgress)|CUDA_(SUCCESS|ERROR_[A-Z_]+))"'
rows=$(grep -lE '^[[:space:]]*(RT_CUDA_ERR|RT_NCCL_ERR|RT_RESULT|RT_DRV_RESULT|RT_DRV_ERR)\([0-9]+,' \
  "$S"/format/*.def "$S"/include/*.def 2>/dev/null | sed "s|$S/||" | tr '\n' ' ')
check "NVIDIA's result codes (CUDA, NCCL, driver) in one table (${rows:-none})" \
  [ "$(echo $rows | wc -w)" -eq 1 ]

# -- findings: format/findings.def ----------------------------------------------
# the verdict words and the finding ids, as the table holds them
words=$(sed -n 's/^RT_VERDICT([A-Z_]*, "\([a-z-]*\)".*/\1/p' "$S/format/findings.def")
ids=$(sed -n 's/^RT_FINDING([A-Z_]*, "\([a-z-]*\)".*/\1/p' "$S/format/findings.def")
check "format/findings.def declares the verdicts ($(echo $words | wc -w)) and finding kinds ($(echo $ids | wc -w))" \
  [ "$(echo $words | wc -w)" -ge 7 -a "$(echo $ids | wc -w)" -ge 20 ]
# a verdict word or a finding id with a hyphen as a whole string; any id
# compared by string; a list of verdict words inside a string (usage, errors:
# rt_verdict_bisect_list makes them). Ids that are plain words ("killed",
# "straggler") name other things too (a rank's state, an analysis).
walt=$(echo $words | tr ' ' '|')
halt=$(echo $ids | tr ' ' '\n' | grep -- - | tr '\n' '|' | sed 's/|$//')
ialt=$(echo $ids | tr ' ' '|')
none "no verdict word or finding id written by hand as a string outside format/ (rt_verdicts, rt_findings)" \
  "[\"'](${walt}|${halt})[\"']"
none "no finding compared by its id as a string (f->kind == RT_FK_...)" \
  "strn?cmp\([^;]*[\"'](${ialt})[\"']"
none "no list of verdict words written by hand (usage, errors: rt_verdict_bisect_list)" \
  "\"[^\"]*(${walt})(, | or )(${walt})[^\"]*\""
# the commands list what the table holds: verdict --help every verdict,
# bisect --help and --signature's error every verdict bisect hunts
"$B/bin/ranktrace" verdict --help > "$T/verdict.help" 2>&1
"$B/bin/ranktrace" bisect --help > "$T/bisect.help" 2>&1
"$B/bin/ranktrace" bisect --versions a,b --signature nonsense -- true > /dev/null 2> "$T/bisect.err"
hunted=$(sed -n 's/^RT_VERDICT([A-Z_]*, "\([a-z-]*\)", [0-9]*, 1,.*/\1/p' "$S/format/findings.def")
lacks=$(for w in $words; do grep -qw -- "$w" "$T/verdict.help" || echo "$w"; done | tr '\n' ' ')
check "verdict --help lists every verdict${lacks:+ (not: $lacks)}" [ -z "$lacks" ]
lacks=$(for w in $hunted; do tr -s ' \n' ' ' < "$T/bisect.help" | grep -q -- "$w" || echo "$w"; done | tr '\n' ' ')
check "bisect --help lists every verdict bisect hunts ($(echo $hunted | wc -w))${lacks:+ (not: $lacks)}" [ -z "$lacks" ]
lacks=$(for w in $hunted; do grep -q -- "$w" "$T/bisect.err" || echo "$w"; done | tr '\n' ' ')
check "bisect --signature's error lists every verdict bisect hunts${lacks:+ (not: $lacks)}" [ -z "$lacks" ]
# the docs' tables are the table's: docs/guide.md (verdicts), docs/json.md (kinds)
cp "$S/docs/guide.md" "$S/docs/json.md" "$T/"
if "$B/bin/rt-gen-tables" docs "$T/guide.md" "$T/json.md"; then
  for d in guide json; do
    check "docs/$d.md's tables are format/findings.def's (rt-gen-tables docs docs/$d.md)" \
      diff -u "$S/docs/$d.md" "$T/$d.md"
  done
  missing=$(for i in $ids; do grep -q "| \`$i\` |" "$S/docs/json.md" || echo "$i"; done | tr '\n' ' ')
  check "docs/json.md lists every kind of finding${missing:+ (not: $missing)}" [ -z "$missing" ]
else
  bad "rt-gen-tables docs ran"
fi

# -- roles: one vocabulary (RT_ROLES), fields by id -----------------------------
roles=$(grep -rnE 'enum rt_drv_role|RT_DRV_(NONE|ALLOC|FREE|VMM_[A-Z]+|CTX)\b' "$S/format" $(sources) 2>/dev/null |
  sed "s|$S/||")
check "one role vocabulary (no second enum of roles for the driver)${roles:+: $roles}" [ -z "$roles" ]
none "no event field looked up by its name as a string (RT_FN_name)" 'rt_field_index\([^)]*"'

# -- environment: format/env.def ----------------------------------------------
none "no \"RANKTRACE_...\" variable name written as a C string outside format/env.def" \
  '"RANKTRACE_[A-Z_]+"'
none "no RANKTRACE_... variable read by name in the probe (python/: _tables)" \
  "environ[^)]*['\"]RANKTRACE_"
if [ -f "$S/format/env.def" ]; then
  vars=$(grep -oE '^RT_ENV_VAR\([A-Z_]+' "$S/format/env.def" | sed 's/RT_ENV_VAR(/RANKTRACE_/')
  check "format/env.def lists the variables ($(echo $vars | wc -w))" [ "$(echo $vars | wc -w)" -ge 20 ]
  unknown=$(grep -rhoE 'RANKTRACE_[A-Z][A-Z_]*[A-Z]' $(sources) "$S/scripts" "$S/tests" "$S/README.md" \
      "$S/docs" 2>/dev/null | sort -u | while read -r v; do
    echo "$vars" | grep -qx "$v" || echo "$v"
  done | grep -vE '^RANKTRACE_(H|IMPLEMENTATION)$' | tr '\n' ' ')
  check "every RANKTRACE_ variable the tree names is in format/env.def${unknown:+ (not: $unknown)}" \
    [ -z "$unknown" ]
  # the docs read the table: docs/environment.md is generated from it
  if "$B/bin/rt-gen-tables" env "$T/environment.md"; then
    check "docs/environment.md is format/env.def's (rt-gen-tables env docs/environment.md)" \
      diff -u "$T/environment.md" "$S/docs/environment.md"
    missing=$(for v in $vars; do grep -qw "$v" "$S/docs/environment.md" || echo "$v"; done | tr '\n' ' ')
    check "every variable of format/env.def is documented${missing:+ (not: $missing)}" [ -z "$missing" ]
  else
    bad "rt-gen-tables env ran"
  fi
  # the probe reads its names and dtypes from the generated module
  check "the probe's _tables.py is generated into the build" \
    grep -q '"PROBE": "RANKTRACE_PROBE"' "$B/python/ranktrace_probe/_tables.py"
else
  bad "format/env.def lists the RANKTRACE_* variables"
fi

# -- JSON keys: format/json_keys.def, written through util/json.h -------------
none "no JSON key typed into a room's C code (\\\"key\\\": ...: use RT_JK(key))" \
  '\\"[A-Za-z_][A-Za-z0-9_]*\\": ?'
none "no JSON schema name typed outside format/json_keys.def (RT_JSCHEMA(id))" \
  '"ranktrace\.[a-z]+/[0-9]+"'
unused=$(grep -oE '^RT_JSON_KEY\([A-Za-z_0-9]+\)' "$S/format/json_keys.def" | sed 's/RT_JSON_KEY(//; s/)//' |
  while read -r k; do hits "RT_JK\\($k\\)" | grep -q . || echo "$k"; done | tr '\n' ' ')
check "every key of format/json_keys.def is written by some output${unused:+ (not: $unused)}" [ -z "$unused" ]
finish
