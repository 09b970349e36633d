#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_lttng.sh - the LTTng-UST backend for real: `ranktrace run --backend lttng`
# (an LTTng session, a session daemon started when none runs) on 4-rank
# fsdp_mini 4.52.4 and 4.53.0, against the native backend on the same
# workload: babeltrace2 lists ranktrace:* events; view --json equal except the
# trace directory and idle time; the same verdict; diff, export and report agree.
# Skips (exit 77, reason printed) only when lttng-sessiond cannot run here.
source "$(dirname "$0")/lib.sh"

rt() { timeout -k 5 120 "$B/bin/ranktrace" "$@"; }
job() { echo "$B/bin/rt-launch -n 4 $B/bin/fsdp_mini --steps 3 --trainer-version $1"; }
# the session daemon a run stopped is gone; one left running (another run
# uses it) is stopped by the last run using it
daemon_gone() {
  local pid; pid=$(sed -nE 's/^lttng-sessiond ([0-9]+) \(started by ranktrace\): stopped$/\1/p' "$1")
  grep -q 'left running (another session uses it' "$1" && return 0
  [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null
}
# view --json without what differs by nature: the directory, seconds since the
# last event, the run's own ids (thread ids, NCCL's random unique id) and
# device-side timings (who is last into a collective by microseconds)
norm_view() { python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
j.pop("dir", None)
s = (j.get("device") or {}).get("stragglers")
if s:  # who is last, and whether one stands out, is timing: the count stays
    j["device"]["stragglers"] = {"collectives": s["collectives"]}
def timing(f):
    return isinstance(f, dict) and (f.get("id") == "straggler" or "is the straggler" in str(f.get("text", "")))
for k, v in list(j.items()):
    if isinstance(v, list):
        j[k] = [f for f in v if not timing(f)]
        for f in j[k]:
            if isinstance(f, dict):
                f.pop("finding", None)  # an index that shifts with them
for c in j.get("communicators", []):  # NCCL ids: random in each run
    c.pop("id", None); c.pop("parent", None)
j["communicators"] = sorted(j.get("communicators", []), key=lambda c: json.dumps(c, sort_keys=True))
for r in j.get("ranks", []):
    r.pop("idle_s", None)
    for c in r.get("open_calls", []):
        c.pop("tid", None); c.pop("comm", None)
print(json.dumps(j, sort_keys=True, indent=1))' "$1"; }

# ---- what CI installs (scripts/setup.sh): missing pieces fail, never skip ----
check "libranktrace-lttng.so was built (LTTng-UST found)" test -f "$B/lib/libranktrace-lttng.so"
for c in lttng lttng-sessiond babeltrace2; do
  check "$c is installed" command -v $c
done
check "libranktrace.so does not link liblttng-ust (loads without it)" \
  bash -c "! readelf -d '$B/lib/libranktrace.so' | grep -q lttng-ust"

# ---- fail-open: the LTTng backend asked for, its provider missing: one warning, untouched ----
sim "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --steps 2 --trainer-version 4.52.4 > "$T/fo.plain" 2>&1
plain=$?
mkdir -p "$T/fo"
RANKTRACE_BACKEND=lttng RANKTRACE_LTTNG_PROVIDER=/nonexistent/libranktrace-lttng.so \
  RANKTRACE_DIR="$T/fo" LD_PRELOAD="$B/lib/libranktrace.so" \
  sim "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --steps 2 --trainer-version 4.52.4 > "$T/fo.out" 2>&1
check "provider missing: same exit status as untraced ($plain)" [ $? -eq $plain ]
check "provider missing: the same training output" \
  diff <(grep -v '^ranktrace' "$T/fo.plain") <(grep -v 'ranktrace: warning' "$T/fo.out")
check "provider missing: one warning per process, naming the provider" \
  [ "$(grep -c 'cannot load the LTTng provider libranktrace-lttng.so' "$T/fo.out")" -eq 2 ]

# ---- usage errors ----
rt run --backend nope -o "$T/x" -- true > /dev/null 2>&1
check "--backend nope: exit 2" [ $? -eq 2 ]
rt run --backend lttng --max-size 1M -o "$T/x" -- true > /dev/null 2>&1
check "--backend lttng --max-size: exit 2 (a ctf option)" [ $? -eq 2 ]
rt run --lttng-kernel -o "$T/x" -- true > /dev/null 2>&1
check "--lttng-kernel without --backend lttng: exit 2" [ $? -eq 2 ]

# ---- the first real session decides whether LTTng can run here at all ----
sim rt run --backend lttng -o "$T/l-4.52.4" -- $(job 4.52.4) > "$T/l-4.52.4.out" 2> "$T/l-4.52.4.err"
rc=$?
if grep -qE 'no LTTng session: lttng-sessiond (exited at start|did not become ready)' "$T/l-4.52.4.err"; then
  echo "SKIP - lttng-sessiond cannot run in this environment: $(grep -m1 'no LTTng session' "$T/l-4.52.4.err")"
  echo "       its own words (lttng-sessiond -v --no-kernel, 3 s):"
  timeout -k 1 3 lttng-sessiond -v --no-kernel 2>&1 | tail -5 | sed 's/^/       /'
  exit 77
fi
check "lttng run on 4.52.4 exits 0 ($rc)" [ $rc -eq 0 ]
check "run reports the session's discarded events" \
  grep -qE '^lttng session ranktrace-[0-9]+: [0-9]+ events discarded, [0-9]+ packets lost$' "$T/l-4.52.4.out"
check "run's summary: 4 ranks from the LTTng trace" grep -q '4 ranks in the LTTng trace' "$T/l-4.52.4.out"
check "a session daemon ranktrace started is stopped" daemon_gone "$T/l-4.52.4.out"
sess=$(sed -nE 's/^lttng session (ranktrace-[0-9]+):.*/\1/p' "$T/l-4.52.4.out")
check "its session ($sess) is destroyed" bash -c "[ -n '$sess' ] && ! lttng list 2>/dev/null | grep -qw '$sess'"

for v in 4.52.4 4.53.0; do
  if [ $v != 4.52.4 ]; then
    sim rt run --backend lttng -o "$T/l-$v" -- $(job $v) > "$T/l-$v.out" 2> "$T/l-$v.err"
    rc=$?
  fi
  sim rt run -o "$T/n-$v" -- $(job $v) > "$T/n-$v.out" 2> "$T/n-$v.err"
  check "$v: both backends give the run the same status ($rc)" [ $? -eq $rc ]
  babeltrace2 "$T/l-$v" > "$T/bt-$v" 2> "$T/bt-$v.err"
  check "$v: babeltrace2 reads the LTTng trace" [ $? -eq 0 ]
  check "$v: ... with no warning" bash -c "! grep -qiE 'warn|error' '$T/bt-$v.err'"
  for ev in rt_identity cudaSetDevice cudaMalloc ncclCommInitRank ncclBroadcast rt_param rt_exit; do
    check "$v: babeltrace2 lists ranktrace:$ev" grep -q " ranktrace:$ev: " "$T/bt-$v"
  done
  check "$v: every babeltrace2 event is ranktrace:*" bash -c "! grep -v ' ranktrace:' '$T/bt-$v' | grep -q ."
  rt view --json "$T/n-$v" > "$T/n-$v.json"
  rt view --json "$T/l-$v" > "$T/l-$v.json"
  check "$v: view --json has events" python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['events'] > 100" "$T/l-$v.json"
  norm_view "$T/n-$v.json" > "$T/n-$v.view"
  norm_view "$T/l-$v.json" > "$T/l-$v.view"
  check "$v: view --json equal for both backends (but dir, idle_s, communicator ids)" diff "$T/n-$v.view" "$T/l-$v.view"
  wn=$(rt verdict "$T/n-$v"); en=$?
  wl=$(rt verdict "$T/l-$v"); el=$?
  check "$v: the same verdict ($wn, exit $en / $wl, exit $el)" [ "$wn/$en" = "$wl/$el" ]
  rt export "$T/n-$v" --perfetto "$T/n-$v.pf.json" && rt export "$T/l-$v" --perfetto "$T/l-$v.pf.json"
  check "$v: export --perfetto works on both" [ $? -eq 0 ]
  check "$v: export: the same slices (name, rank) for both" python3 -c '
import json, sys, collections
def slices(p):
    j = json.load(open(p)); ev = j["traceEvents"] if isinstance(j, dict) else j
    return collections.Counter((e.get("name"), e.get("pid")) for e in ev if e.get("ph") in ("X", "B", "i", "I"))
a, b = slices(sys.argv[1]), slices(sys.argv[2])
assert a == b and sum(a.values()) > 0, (a - b, b - a)' "$T/n-$v.pf.json" "$T/l-$v.pf.json"
  rt report "$T/n-$v" -o "$T/n-$v.html" && rt report "$T/l-$v" -o "$T/l-$v.html"
  check "$v: report works on both" [ $? -eq 0 ]
  check "$v: report names the verdict" grep -q "$wl" "$T/l-$v.html"
done
check "4.52.4 healthy, 4.53.0 skipped-fsdp-root through LTTng" \
  [ "$(rt verdict "$T/l-4.52.4")/$(rt verdict "$T/l-4.53.0")" = "healthy/skipped-fsdp-root" ]
rt diff "$T/n-4.52.4" "$T/n-4.53.0" | sed "s|$T/n-|DIR-|g" > "$T/diff.n"
rt diff "$T/l-4.52.4" "$T/l-4.53.0" | sed "s|$T/l-|DIR-|g" > "$T/diff.l"
check "diff 4.52.4 4.53.0: the same text for both backends" diff "$T/diff.n" "$T/diff.l"
if rt params --help > /dev/null 2>&1; then
  rt params "$T/n-4.53.0" > "$T/params.n" 2>&1; rt params "$T/l-4.53.0" > "$T/params.l" 2>&1
  check "params: the same for both backends" diff <(sed "s|$T/n-|DIR-|g" "$T/params.n") \
    <(sed "s|$T/l-|DIR-|g" "$T/params.l")
fi

# ---- an injected fault (the 4.53.0 failure on 4.52.4): rt_fault through LTTng ----
sim rt run -o "$T/in" --inject skip-fsdp-root -- $(job 4.52.4) > /dev/null 2>&1
sim rt run --backend lttng -o "$T/il" --inject skip-fsdp-root -- $(job 4.52.4) > /dev/null 2>&1
check "skip-fsdp-root: babeltrace2 lists ranktrace:rt_fault" bash -c "babeltrace2 '$T/il' | grep -q ' ranktrace:rt_fault: '"
check "skip-fsdp-root: verdict skipped-fsdp-root through LTTng" [ "$(rt verdict "$T/il" 2>/dev/null)" = skipped-fsdp-root ]
rt view --json "$T/in" > "$T/in.json"; rt view --json "$T/il" > "$T/il.json"
check "skip-fsdp-root: view --json equal for both backends (faults included)" \
  diff <(norm_view "$T/in.json") <(norm_view "$T/il.json")

# ---- a rank killed inside a collective: LTTng shows the call it died in, as native does ----
plan='ncclBroadcast:kill=9:when=2:rank=1'
# (asynchronous simulator: the others' broadcast returns, they fail on the
# dead peer and exit 1; rank 1 died inside its broadcast)
sim rt run -o "$T/kn" --inject "$plan" -- $(job 4.52.4) > /dev/null 2>&1; en=$?
sim rt run --backend lttng -o "$T/kl" --inject "$plan" -- $(job 4.52.4) > /dev/null 2>&1; el=$?
check "killed rank: both runs end the same way ($en / $el)" [ $en -eq $el ]
check "killed rank: verdict crashed through LTTng" [ "$(rt verdict "$T/kl" 2>/dev/null)" = crashed ]
rt view --json "$T/kn" > "$T/kn.json"; rt view --json "$T/kl" > "$T/kl.json"
check "killed rank: rank 1 died in ncclBroadcast (LTTng)" python3 -c '
import json, sys; r = json.load(open(sys.argv[1]))["ranks"][1]
assert r["end"] == "died in ncclBroadcast" and r["open_calls"][0]["call"] == "ncclBroadcast", r' "$T/kl.json"
check "killed rank: view --json equal for both backends" diff <(norm_view "$T/kn.json") <(norm_view "$T/kl.json")

# ---- fork() without exec: the child is traced (LTTng's fork helper), apart from its parent's rank ----
sim rt run -o "$T/fn" -- "$B/bin/callstorm" --calls 1000 --fork > /dev/null 2>&1
sim rt run --backend lttng -o "$T/fl" -- "$B/bin/callstorm" --calls 1000 --fork > /dev/null 2>&1
# (the session also records other runs' processes of this user: count this run's)
check "fork: the child says who it is, with its own vpid" \
  [ "$(babeltrace2 "$T/fl" | grep 'ranktrace:rt_identity' | grep "run_id = \"$(cat "$T/fl/ranktrace-run")\"" |
       grep -o 'vpid = [0-9]*' | sort -u | wc -l)" -eq 2 ]
rt view --json "$T/fn" > "$T/fn.json"; rt view --json "$T/fl" > "$T/fl.json"
check "fork: view --json equal for both backends (but the pid in the rank's name)" \
  diff <(norm_view "$T/fn.json" | grep -v '"dir": "rank-p') <(norm_view "$T/fl.json" | grep -v '"dir": "rank-p')

# ---- two runs at once: one session daemon (a race to start it), each trace only its own job ----
for i in 1 2; do
  sim rt run --backend lttng -o "$T/c$i" -- $(job 4.52.4) > "$T/c$i.out" 2>&1 &
done
wait
for i in 1 2; do
  rt view --json "$T/c$i" > "$T/c$i.json"
  check "concurrent run $i: view --json equal to the lone run's" diff <(norm_view "$T/l-4.52.4.json") <(norm_view "$T/c$i.json")
done
left=$(sed -nE 's/^lttng-sessiond ([0-9]+) \(started by ranktrace\): left running.*/\1/p' "$T"/c?.out)
stopped=$(sed -nE 's/^lttng-sessiond ([0-9]+) \(started by ranktrace\): stopped$/\1/p' "$T"/c?.out)
check "concurrent runs: a daemon one left running was stopped by the other ($left / $stopped)" \
  [ -z "$left" -o "$left" = "$stopped" ]

# ---- kernel events: recorded where permitted, else one warning and UST only ----
sim rt run --backend lttng --lttng-kernel -o "$T/k" -- $(job 4.52.4) > "$T/k.out" 2> "$T/k.err"
check "--lttng-kernel: the run still succeeds" [ $? -eq 0 ]
if grep -q 'no kernel events' "$T/k.err"; then
  ok "--lttng-kernel: kernel tracing not permitted here, said so: $(grep -m1 'no kernel events' "$T/k.err")"
else
  check "--lttng-kernel: babeltrace2 lists sched_switch" bash -c "babeltrace2 '$T/k' | grep -q sched_switch"
fi
check "--lttng-kernel: the viewer skips kernel events, same verdict" [ "$(rt verdict "$T/k")" = healthy ]

# ---- a user without root: their own session daemon in LTTNG_HOME ----
if [ "$(id -u)" -eq 0 ] && command -v setpriv > /dev/null; then
  U="$T/user"; mkdir -p "$U"; chmod 777 "$T" "$U"
  LTTNG_HOME="$U" HOME="$U" sim timeout -k 5 120 setpriv --reuid 65534 --regid 65534 --clear-groups \
    "$B/bin/ranktrace" run --backend lttng -o "$U/t" -- $(job 4.52.4) > "$T/u.out" 2> "$T/u.err"
  check "non-root (uid 65534): run exits 0" [ $? -eq 0 ]
  check "non-root: its session daemon ran in LTTNG_HOME" test -d "$U/.lttng"
  check "non-root: the trace is the user's" [ "$(stat -c %u "$U/t")" = 65534 ]
  check "non-root: verdict healthy" [ "$(rt verdict "$U/t")" = healthy ]
  check "non-root: a session daemon of its own was started and stopped" grep -q 'started by ranktrace' "$T/u.out"
  # a root session also records other users' processes: another trace (uid) in the same DIR
  cp -r "$T/l-4.52.4" "$T/mix" && cp -r "$U/t/ust/uid/65534" "$T/mix/ust/uid/"
  rt view --json "$T/mix" > "$T/mix.json"
  check "a second user's trace in DIR: read, and left out (another run)" \
    diff <(norm_view "$T/l-4.52.4.json") <(norm_view "$T/mix.json")
  check "non-root: ... and stopped" daemon_gone "$T/u.out"
fi
finish
