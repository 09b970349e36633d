#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_bisect_git.sh - ranktrace bisect --git on a generated repository of a
# small trainer driving fsdp_mini: 31 commits; commit 19 introduces the
# 4.53.0 behaviour (skipped FSDP root), commits 15 and 23 break the set-up,
# commit 22 crashes rank 1 (fixed in 23). Bisect must name commit 19 in at
# most ceil(log2 31) + 2 runs, counted by a fake srun (--launcher); --jobs 3
# in fewer rounds; SIGINT then --resume without re-running finished
# candidates; --find fix on a branch that fixes it at commit 32 names 32;
# bad input exits 2 and creates nothing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bisect_lib.sh"

R=$T/repo
mkdir -p "$R/src/trainer" && cd "$R" || exit 1
git init -q . && git config user.name t && git config user.email t@t.invalid
cat > src/trainer/__main__.py <<'PY'
import os, signal
import trainer
if trainer.CRASH and os.environ.get("RANK") == "1":
    os.kill(os.getpid(), signal.SIGSEGV)  # an unrelated crash
exe = os.environ["FSDP_MINI"]
os.execv(exe, [exe, "--trainer-version", trainer.BEHAVIOUR, "--steps", "2"])
PY
write() { printf 'BEHAVIOUR = "%s"\nCRASH = %s\n' "$1" "$2" > src/trainer/__init__.py; }
build() { if [ "$1" = ok ]; then echo 'exit 0' > build.sh; else echo 'echo "error: build broken" >&2; exit 1' > build.sh; fi; }
behaviour=4.52.4 crash=False setup=ok
write $behaviour $crash; build $setup
git add -A && git commit -qm "c0: trainer"
for k in $(seq 1 30); do
  case $k in
    15) setup=broken ;; 16) setup=ok ;;
    19) behaviour=4.53.0 ;;
    22) crash=True ;; 23) crash=False; setup=broken ;; 24) setup=ok ;;
  esac
  write $behaviour $crash; build $setup; echo "change $k" >> NOTES
  git add -A && git commit -qm "c$k: change $k"
done
# a branch where the skipped root is fixed (commit 32), for --find fix
git checkout -qb fixed
for k in 31 32 33 34; do
  [ $k = 32 ] && behaviour=4.53.1
  write $behaviour $crash; build $setup; echo "change $k" >> NOTES
  git add -A && git commit -qm "c$k: change $k"
done
git checkout -q -
sha() { git -C "$R" log --all --format=%H --grep="^c$1:" -1; }
cd "$T" || exit 1
N=31
MAX_RUNS=$(python3 -c "import math; print(math.ceil(math.log2($N)) + 2)")
common=(--git "$R" --good "$(sha 0)" --bad HEAD --setup 'sh build.sh' --pythonpath src --timeout 60)

# serial, through the fake srun
bisect -o "$T/b1" "${common[@]}" --json --launcher "$T/fake-srun --nodes=1" -- "$B/bin/rt-launch" -n 2 python3 -m trainer
rc=$?
check "git bisect exits 0 ($rc)" [ $rc -eq 0 ]
check "names commit 19 as the first bad" [ "$(field 'j["first_bad"]["id"]')" = "$(sha 19)" ]
check "commit 18 is the last good" [ "$(field 'j["last_good"]["id"]')" = "$(sha 18)" ]
check "the signature is skipped-fsdp-root (the bad endpoint's)" [ "$(field 'j["signature"]')" = skipped-fsdp-root ]
runs=$(launched)
check "runs counted by the launcher: $runs <= ceil(log2 $N) + 2 = $MAX_RUNS" [ "$runs" -le "$MAX_RUNS" ]
check "the JSON's run count matches the launcher's ($runs)" [ "$(field 'j["runs"]')" -eq "$runs" ]
check "the launcher got its own options" grep -q 'opts=\[ --nodes=1 \]' "$LAUNCH_LOG"
check "a set-up failure was skipped" [ "$(field 'sum(c["verdict"] == "set-up-failed" and c["judged"] == "skip" and c["runs"] == 0 for c in j["candidates"])')" -ge 1 ]
check "the crashing commit was skipped" [ "$(field '[c["judged"] for c in j["candidates"] if c["id"] == "'"$(sha 22)"'"]')" = "['skip']" ]
check "skip reason names the other failure" [ "$(field '[c["reason"] for c in j["candidates"] if c["judged"] == "skip" and c["runs"]][0]')" = "another failure: crashed" ]
check "git log range: the one commit" [ "$(field 'len(j["commits"])')" -eq 1 ]
check "every tried candidate has its own trace dir" [ "$(field 'len(set(c["trace"] for c in j["candidates"] if c["trace"]))')" -eq "$runs" ]
check "worktrees removed but the two boundaries" [ "$(git -C "$R" worktree list | wc -l)" -eq 3 ]
rounds1=$(field 'j["rounds"]')

# --jobs 3: same answer, fewer rounds
bisect -o "$T/b3" "${common[@]}" --json --jobs 3 -- "$B/bin/rt-launch" -n 2 python3 -m trainer
rc=$?
check "--jobs 3 exits 0 ($rc)" [ $rc -eq 0 ]
check "--jobs 3 names commit 19" [ "$(field 'j["first_bad"]["id"]')" = "$(sha 19)" ]
rounds3=$(field 'j["rounds"]')
check "--jobs 3 takes fewer rounds ($rounds3 < $rounds1)" [ "$rounds3" -lt "$rounds1" ]
echo "# figures: N=$N, serial $runs runs in $rounds1 rounds; --jobs 3: $(field 'j["runs"]') runs in $rounds3 rounds"

# SIGINT mid-bisect, then --resume
: > "$LAUNCH_LOG"
LAUNCH_SLEEP=1 timeout -k 5 300 "$B/bin/ranktrace" bisect -o "$T/bi" "${common[@]}" \
  --launcher "$T/fake-srun" -- "$B/bin/rt-launch" -n 2 python3 -m trainer > /dev/null 2> "$T/err.int" &
pid=$!
for _ in $(seq 1 600); do
  judged=$(grep -c '^cand [123]' "$T/bi/.bisect/state" 2>/dev/null)
  [ "${judged:-0}" -ge 3 ] && [ "$(launched)" -ge 4 ] && break
  sleep 0.1
done
sleep 0.3
kill -INT $pid
wait $pid
rc=$?
check "SIGINT stops the bisect with 130 ($rc)" [ $rc -eq 130 ]
[ $rc -eq 130 ] || sed 's/^/  stderr: /' "$T/err.int"
before=$(grep -c '^cand [123]' "$T/bi/.bisect/state")
check "judged candidates were saved ($before)" [ "$before" -ge 3 ]
# (processes of this test only: other helpers run the same test on this machine)
left=$(ps -eo stat=,args= | awk -v t="$T/" '$1 !~ /^Z/ && index($0, t) && !/awk/ && /fake-srun|rt-launch|ranktrace/')
[ -z "$left" ] || echo "$left" | sed 's/^/# left: /'
check "the interrupted run's process group is gone (zombies aside)" [ -z "$left" ]
grep '^cand [123]' "$T/bi/.bisect/state" | cut -f2 | sort > "$T/done.before"
: > "$LAUNCH_LOG"
bisect -o "$T/bi" --resume --json
rc=$?
check "--resume exits 0 ($rc)" [ $rc -eq 0 ]
check "--resume names commit 19" [ "$(field 'j["first_bad"]["id"]')" = "$(sha 19)" ]
sed -n 's/.* dir=\([^ ]*\) .*/\1/p' "$LAUNCH_LOG" | sort > "$T/run.after"
check "--resume re-ran no finished candidate" [ -z "$(comm -12 "$T/done.before" "$T/run.after")" ]
check "--resume kept the launcher" [ -s "$T/run.after" ]

# --find fix: the first good after a bad one, on the branch that fixed it
: > "$LAUNCH_LOG"
bisect -o "$T/bf" --git "$R" --find fix --bad "$(sha 25)" --good fixed --setup 'sh build.sh' \
  --pythonpath src --timeout 60 --json --launcher "$T/fake-srun" -- "$B/bin/rt-launch" -n 2 python3 -m trainer
rc=$?
check "--find fix exits 0 ($rc) and names commit 32 the first good" [ "$rc-$(field 'j["first_good"]["id"]')" = "0-$(sha 32)" ]
check "--find fix: commit 31 the last bad, the signature skipped-fsdp-root" \
  [ "$(field 'j["last_bad"]["id"] + " " + j["signature"]')" = "$(sha 31) skipped-fsdp-root" ]
check "--find fix: git log range: the one commit" [ "$(field 'len(j["commits"])')" -eq 1 ]
check "--find fix: 10 candidates oldest first, $(launched) runs <= ceil(log2 10) + 2 = 6" \
  [ "$(field 'str(j["candidates_total"]) + " " + j["order"][0] + " " + j["order"][-1]')" = "10 $(sha 25) $(sha 34)" ] && [ "$(launched)" -le 6 ]

# bad input: one message, exit 2, nothing created
git -C "$R" worktree list > "$T/wt.before"
ls -A "$T" > "$T/ls.before"
bad_input() {
  local what=$1; shift
  timeout -k 5 60 "$B/bin/ranktrace" bisect -o "$T/nope" "$@" > "$T/bad.out" 2> "$T/bad.err"
  local rc=$?
  check "$what: exit 2 ($rc)" [ $rc -eq 2 ]
  check "$what: one message" [ "$(grep -c 'ranktrace bisect: ' "$T/bad.err")" -eq 1 ]
  check "$what: nothing created" [ ! -e "$T/nope" ]
}
cmd=(-- "$B/bin/rt-launch" -n 2 python3 -m trainer)
bad_input "unknown REV" --git "$R" --good nosuchrev --bad HEAD "${cmd[@]}"
bad_input "good == bad" --git "$R" --good HEAD --bad HEAD "${cmd[@]}"
bad_input "good after bad" --git "$R" --good HEAD --bad "$(sha 3)" "${cmd[@]}"
bad_input "--find fix, bad after good" --git "$R" --find fix --good "$(sha 3)" --bad HEAD "${cmd[@]}"
bad_input "not a repository" --git "$T/home" --good a --bad b "${cmd[@]}"
bad_input "command not executable" --git "$R" --good "$(sha 0)" --bad HEAD -- "$T/no-such-trainer"
bad_input "--like not a trace" --git "$R" --good "$(sha 0)" --bad HEAD --like "$T/home" "${cmd[@]}"
bad_input "unknown signature" --git "$R" --good "$(sha 0)" --bad HEAD --signature slow "${cmd[@]}"
bad_input "no command" --git "$R" --good "$(sha 0)" --bad HEAD
bad_input "no source" --good 1 --bad 2 "${cmd[@]}"
check "bad input left the repository's worktrees alone" bash -c "git -C '$R' worktree list | cmp -s - '$T/wt.before'"
ls -A "$T" | grep -v '^bad\.\|^ls\.after' > "$T/ls.after"
check "bad input created no file" bash -c "grep -v '^bad\.' '$T/ls.before' | cmp -s - '$T/ls.after'"
check "nothing written to HOME" [ -z "$(ls -A "$HOME")" ]
git -C "$R" worktree prune
finish
