#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_env.sh - every RANKTRACE_* variable of format/env.def fed a bad value
# (rt-gen-tables env-bad: a value its kind refuses; a missing path for
# PATH kinds): it is said, naming the variable, never read silently as
# something else. The ranktrace command refuses what it or the job it starts
# reads (exit 128, not 2: git bisect run stops instead of marking the commit
# bad, and no trace directory is made); the tracer and the probe, loaded
# without run, warn and keep their fallback, the program unchanged. Variables `ranktrace bisect` sets for the user's
# commands are never read by ranktrace: nothing to feed.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
export SIMGPU_TIMEOUT=5
rt() { timeout -k 5 60 "$RT" "$@"; }

sim rt run -o "$T/t" -- "$B/bin/fsdp_mini" --steps 1 > /dev/null 2>&1
check "a trace to read" test -s "$T/t/rank-00000/metadata"

# refused: `NAME=VALUE ranktrace ARGS...` exits 128, stderr names NAME, no new trace
refused() { local name=$1 value=$2; shift 2
  rm -rf "$T/never"
  env "$name=$value" timeout -k 5 60 "$RT" "$@" > /dev/null 2> "$T/err" < /dev/null
  local rc=$?
  check "$name='$value' ranktrace $1: exit 128 naming it (rc $rc: $(head -c 150 "$T/err"))" \
    bash -c "[ $rc -eq 128 ] && grep -q '^ranktrace [a-z]*: $name=' '$T/err' && [ ! -e '$T/never' ]"
}

# the probe loaded by hand (no run to refuse): one warning naming it, the fallback kept
probe_warns() { local name=$1 value=$2 short=${1#RANKTRACE_}
  env "$name=$value" PYTHONPATH="$B/python" LD_PRELOAD="${RANKTRACE_LIB:-$B/lib/libranktrace.so}" \
    timeout -k 5 60 python3 -c "import ranktrace_probe as p, sys
p.install()
sys.stdout.write(str(p._core.param_every if '$short' == 'PARAM_EVERY' else p._core.lib is not None))" \
    > "$T/probe.out" 2> "$T/probe.err"
  check "the probe warns of $name='$value' and keeps its fallback ($(cat "$T/probe.out"))" \
    bash -c "grep -q 'ranktrace probe: warning: $name=' '$T/probe.err' && \
             grep -qx '$( [ "$short" = PARAM_EVERY ] && echo 100 || echo True)' '$T/probe.out'"
}

# the tracer preloaded by hand (no run to refuse): the program's output and
# exit status are its untraced ones, and one warning names the variable
sim timeout -k 5 60 "$B/bin/fsdp_mini" --steps 1 > "$T/ref.out" 2> /dev/null
ref_rc=$?
tracer_warns() { local name=$1 value=$2 dir="$T/hand-$1"
  env RANKTRACE_DIR="$dir" RANKTRACE_RUN_ID=0123456789abcdef0123456789abcdef RANKTRACE_BACKEND=lttng \
    "$name=$value" LD_PRELOAD="${RANKTRACE_LIB:-$B/lib/libranktrace.so}" \
    LD_LIBRARY_PATH="$SIM" timeout -k 5 60 "$B/bin/fsdp_mini" --steps 1 > "$T/hand.out" 2> "$T/hand.err"
  local rc=$?
  [ "$name" = RANKTRACE_BACKEND ] || sed -i '/LTTng provider/d' "$T/hand.err" # lttng: to read LTTNG_ENTRY
  check "the tracer by hand: $name='$value' said, the program unchanged (rc $rc: $(grep -m1 "$name" "$T/hand.err"))" \
    bash -c "[ $rc -eq $ref_rc ] && cmp -s '$T/ref.out' '$T/hand.out' && \
             grep -q '^ranktrace: warning: .*$name[= ]' '$T/hand.err'"
}

rows=0 fed=0
while read -r name who kind value; do
  rows=$((rows + 1))
  if [ "$kind" = OUT ]; then
    check "$name: set by ranktrace $who for the user's commands, never read by ranktrace" \
      bash -c "! grep -rq 'getenv(RT_ENV_NAME(${name#RANKTRACE_}))' '$(dirname "$0")/../../'{cli,viewer,tracer,bisect,inject,lttng}"
    fed=$((fed + 1)); continue
  fi
  fed=$((fed + 1))
  case "$who:${name#RANKTRACE_}" in
    cli:LIB|cli:PYTHON)   refused "$name" "$value" run -o "$T/never" -- true ;;
    cli:LTTNG|tracer:LTTNG_PROVIDER) refused "$name" "$value" run -o "$T/never" --backend lttng -- true ;;
    tracer:CUPTI_LIB)     refused "$name" "$value" run -o "$T/never" --cupti -- true ;;
    cli:CACHE_DIR)        refused "$name" "$value" bisect -o "$T/never" --versions 1,2 -- true ;;
    cli:*|viewer:*)       refused "$name" "$value" view "$T/t"
                          refused "$name" "$value" verdict "$T/t" ;;
    tracer:*|probe:*|test:TEST_ALLOC_FAIL|test:TEST_HOST)
                          refused "$name" "$value" run -o "$T/never" -- true
                          refused "$name" "$value" bisect -o "$T/never" --versions 1,2 -- true
                          [ "$who" = probe ] && probe_warns "$name" "$value"
                          [ "$who" != probe ] && tracer_warns "$name" "$value" ;;
    test:WHEELHOUSE)
      out=$(env "$name=$value" W="$T" NR=2 bash "$(dirname "$0")/../gpu/stage_bisect.sh" 10 2>&1)
      check "$name='$value': the GPU stage says it skipped and where it looked ($out)" \
        bash -c "echo '$out' | grep -q 'skipped: no wheelhouse' && echo '$out' | grep -q '$value'" ;;
    run:*)                tracer_warns "$name" "$value" ;; # run sets them itself
    *) bad "$name ($who, $kind): no command here reads it; add a row" ;;
  esac
done < <("$B/bin/rt-gen-tables" env-bad)
check "every variable of format/env.def was fed a bad value ($fed of $rows)" \
  bash -c "[ $rows -ge 25 ] && [ $fed -eq $rows ]"

# the acceptance's cases, and the typos that silently turned device recording off
refused RANKTRACE_JOBS 0 verdict "$T/t"
refused RANKTRACE_JOBS abc verdict "$T/t"
for v in bogus EVENTS 'auto ' ' events' off,events; do
  refused RANKTRACE_DEVICE_SOURCE "$v" run -o "$T/never" -- true
done
RANKTRACE_DEVICE_SOURCE='auto ' rt run -o "$T/never" -- true 2> "$T/err"
check "a value with a space is quoted in the message" grep -q "RANKTRACE_DEVICE_SOURCE='auto ': expected auto, events, plugin or off" "$T/err"
RANKTRACE_JOBS=$'\e]0;pwned\a' rt view "$T/t" > /dev/null 2> "$T/err"
check "the value is escaped in the message" bash -c "grep -q 'RANKTRACE_JOBS=\\\\x1b]0;pwned\\\\x07' '$T/err' && ! grep -q $'\\e' '$T/err'"
# good values still go through
RANKTRACE_JOBS=2 rt verdict "$T/t" > /dev/null 2>&1
check "RANKTRACE_JOBS=2 is fine (healthy, exit 0)" [ $? -eq 0 ]
RANKTRACE_DEVICE_SOURCE=events RANKTRACE_HELPER=0 sim rt run -o "$T/ok" -- "$B/bin/fsdp_mini" --steps 1 > /dev/null 2>&1
check "good values: run traces (exit 0)" bash -c "[ $? -eq 0 ] && test -s '$T/ok/rank-00000/metadata'"
finish
