#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_bisect_versions.sh - ranktrace bisect --versions: judging rules on
# small lists (a run over --timeout, a flaky signature with --retries, a
# repeated one, endpoints misjudged, --like, --signature, --find fix),
# {version} in CMD and --setup, the progress bar on a terminal.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bisect_lib.sh"
cat > "$T/trainer.sh" <<SH
#!/bin/sh
# good*: 4.52.4; bad*: 4.53.0; hang: never ends; flaky: 4.53.0 the first time only
case \$1 in
  good*) b=4.52.4 ;;
  bad*) b=4.53.0 ;;
  hang) exec sleep 60 ;;
  flaky) if [ -e "$T/flaky.seen" ]; then b=4.52.4; else touch "$T/flaky.seen"; b=4.53.0; fi ;;
esac
exec "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --trainer-version \$b --steps 2
SH
chmod +x "$T/trainer.sh"
tr=(-- "$T/trainer.sh" {version})

bisect -o "$T/v1" --versions good1,hang,bad1 --timeout 3 --json "${tr[@]}"
rc=$?
check "only a hanging candidate between: not found, exit 1 ($rc)" [ $rc -eq 1 ]
check "the hanging run is skipped for --timeout" [ "$(field '[c["judged"] + ":" + c["reason"] for c in j["candidates"] if c["id"] == "hang"]')" = "['skip:run over --timeout 3s']" ]
check "first_bad is null, the range names both" [ "$(field 'str(j["first_bad"]) + " " + ",".join(j["first_bad_range"])')" = "None hang,bad1" ]
check "the hanging run's process group was killed" bash -c "! pgrep -f 'sleep 6[0]' > /dev/null || ! ps -eo args= | grep -F '$T' | grep -q 'sleep 6[0]'"

bisect -o "$T/v2" --versions good1,flaky,bad1 --retries 1 --json "${tr[@]}"
rc=$?
check "--retries 1: a signature that does not repeat is skipped, exit 1 ($rc)" [ $rc -eq 1 ]
check "the flaky candidate: skip, 2 runs, 'flaky'" [ "$(field '[(c["judged"], c["runs"], c["reason"].split(":")[0]) for c in j["candidates"] if c["id"] == "flaky"]')" = "[('skip', 2, 'flaky')]" ]

bisect -o "$T/v3" --versions good1,bad0,bad1 --retries 1 --json "${tr[@]}"
rc=$?
check "--retries 1: a repeated signature is bad, exit 0 ($rc)" [ $rc -eq 0 ]
check "bad0 is the first bad after 2 runs" [ "$(field 'j["first_bad"]["id"] + "/" + str(j["first_bad"]["runs"])')" = bad0/2 ]
check "the repeat has its own trace directory" [ -d "$T/v3/bad0.run2/rank-00000" ] && [ -d "$T/v3/bad0/rank-00000" ]

bisect -o "$T/v4" --versions good1,good2 --json "${tr[@]}"
rc=$?
check "bad endpoint healthy: exit 1 ($rc)" [ $rc -eq 1 ]
check "...with a message saying so" grep -q 'the "bad" endpoint good2 is healthy' "$T/err"
check "...and --json says it: found false, the error, the endpoint tried" \
  [ "$(field 'str(j["found"]) + "|" + str("endpoint good2 is healthy" in j["error"]) + "|" + ",".join(c["id"] for c in j["candidates"])')" = 'False|True|good2' ]
bisect -o "$T/v5" --versions bad0,bad1 --json "${tr[@]}"
rc=$?
check "good endpoint bad: exit 1 ($rc)" [ $rc -eq 1 ]
check "...with a message saying so" grep -q 'the "good" endpoint bad0 already shows skipped-fsdp-root' "$T/err"
bisect -o "$T/v6" --versions good1,bad1 --signature crashed --json "${tr[@]}"
rc=$?
check "--signature crashed, bad endpoint skipped-fsdp-root: exit 1 ($rc)" [ $rc -eq 1 ]
check "...the bad endpoint could not be judged: another failure" grep -q '"bad" endpoint bad1 could not be judged: another failure: skipped-fsdp-root' "$T/err"

"$B/bin/ranktrace" run -o "$T/inj" --inject skip-fsdp-root -- "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --steps 2 > /dev/null 2>&1
bisect -o "$T/v7" --versions good1,good2,bad0,bad1 --like "$T/inj" --setup 'echo "{version}" > {dir}/v' --json "${tr[@]}"
rc=$?
check "--like an injected trace: exit 0 ($rc), first bad bad0" [ "$rc-$(field 'j["first_bad"]["id"]')" = 0-bad0 ]
check "--like: the signature is the injected trace's" [ "$(field 'j["signature"]')" = skipped-fsdp-root ]
check "--setup ran in the candidate's work dir with {version}" [ "$(cat "$T/v7/.bisect/bad0/v")" = bad0 ]

# --find fix: the first good after the bad ones, endpoints by default (first and last)
bisect -o "$T/v9" --versions bad0,bad1,good1,good2,good3 --find fix --json "${tr[@]}"
rc=$?
check "--find fix: exit 0 ($rc), good1 the first good, bad1 the last bad" \
  [ "$rc $(field 'j["first_good"]["id"] + " " + j["last_bad"]["id"] + " " + j["signature"]')" = "0 good1 bad1 skipped-fsdp-root" ]
check "--find fix: the bad endpoint (bad0) was judged first" [ "$(field '[c["id"] for c in j["candidates"] if c["round"] == 1]')" = "['bad0']" ]
bisect -o "$T/v10" --versions bad0,good1 --find fix --bad good1 --good bad0 --json "${tr[@]}"
rc=$?
check "--find fix, endpoints given the other way: exit 2 ($rc)" [ $rc -eq 2 ]
check "...saying the bad one must come first" grep -q -- '--find fix: --bad comes after --good in --versions' "$T/err"

# a terminal: the progress bar (script(1) gives the bisect a tty)
if command -v script > /dev/null; then
  timeout -k 5 60 script -qec "'$B/bin/ranktrace' bisect -o '$T/v8' --versions good1,good2,good3,bad0,bad1 -- '$T/trainer.sh' {version}" /dev/null > "$T/tty.out" 2>&1
  check "on a terminal: a bar redrawn with \\r" grep -q $'\r.*\\[#' "$T/tty.out"
fi
finish
