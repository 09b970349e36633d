#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_bisect_env.sh - bisect for real environments, with real pip and no
# network (toy wheels of make_wheels.py, --find-links): --env NAME=VALUE
# reaches every candidate run (after --resume too) and the reproducing
# command; --isolated candidates share one base (the --with pins live there,
# not in each candidate's venv); judged candidates' venvs are removed but the
# two boundaries', all kept with --keep; an install below --min-free is
# refused with one line saying how much is needed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bisect_lib.sh"
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
PY=$(real_python)
python3 "$(dirname "$0")/make_wheels.py" "$T/wheels" || exit 1
mkdir -p "$T/extra"
echo 'WHERE = "extra"' > "$T/extra/extramod.py"
cat > "$T/trainer.py" <<PY
import os, sys
import toydep, toypkg, extramod  # extramod: only there through --env PYTHONPATH
pkg = [k for k, p in enumerate(sys.path) if os.path.isdir(os.path.join(p, "toypkg"))][0]
with open("$T/env.log", "a") as f:  # what each run saw
    f.write("%s %s %s\n" % (os.environ.get("RT_GREETING"), toypkg.VERSION,
                            "overlay-first" if pkg < sys.path.index("$T/extra") else "extra-first"))
exe = os.environ["FSDP_MINI"]
os.execv(exe, [exe, "--trainer-version", toypkg.BEHAVIOUR, "--steps", "2"])
PY
cmd=(-- "$B/bin/rt-launch" -n 2 "$PY" "$T/trainer.py")
pipargs=(--pip toypkg --find-links "$T/wheels" --python "$PY" --with 'toydep<2')
envargs=(--env RT_GREETING=hello --env "PYTHONPATH=$T/extra" --env 'RT_QUOTED=a b')

# --env: every run sees it; the candidate's overlay stays first on PYTHONPATH
bisect -o "$T/e1" "${pipargs[@]}" "${envargs[@]}" --good 1.0 --bad 1.12 --json "${cmd[@]}"
rc=$?
check "--env: exit 0 ($rc), first bad 1.7" [ "$rc-$(field 'j["first_bad"]["id"]')" = 0-1.7 ]
runs=$(field 'j["runs"]')
check "--env: every run's 2 ranks saw RT_GREETING=hello ($runs runs)" \
  [ "$(grep -c '^hello .* overlay-first$' "$T/env.log")" -eq $((2 * runs)) ]
repro=$(field 'j["repro"]')
check "--env: the reproducing command sets it ($repro)" \
  bash -c "grep -q \"RT_GREETING=hello RT_QUOTED='a b' PYTHONPATH=[^ ]*/overlays/toypkg-1.7-[0-9a-f]*:$T/extra \" <<< \"\$1\"" _ "$repro"
: > "$T/env.log"
env -u PYTHONPATH -u RT_GREETING sh -c "$repro" > "$T/repro.out" 2>&1
check "--env: the reproducing command, run by sh, reproduces 1.7's verdict" \
  [ "$("$B/bin/ranktrace" verdict "$T/e1/1.7.repro" 2> /dev/null)" = skipped-fsdp-root ]
check "--env: ...with the variables set (env.log: $(cat "$T/env.log"))" grep -q '^hello 1.7 overlay-first$' "$T/env.log"

# --env kept for --resume: interrupted after its first run, resumed
: > "$T/env.log"
timeout -k 5 300 "$B/bin/ranktrace" bisect -o "$T/e2" "${pipargs[@]}" "${envargs[@]}" --good 1.0 --bad 1.12 \
  "${cmd[@]}" > /dev/null 2> "$T/e2.err" &
pid=$!
for _ in $(seq 300); do [ -s "$T/env.log" ] && break; sleep 0.1; done
kill -INT $pid
wait $pid
rc=$?
check "interrupted: exit 130 ($rc)" [ $rc -eq 130 ]
check "the state keeps --env" grep -qx 'arg RT_GREETING=hello' "$T/e2/.bisect/state"
before=$(wc -l < "$T/env.log")
bisect -o "$T/e2" --resume --json
rc=$?
check "--resume: exit 0 ($rc), first bad 1.7" [ "$rc-$(field 'j["first_bad"]["id"]')" = 0-1.7 ]
check "--resume: the resumed runs saw --env too ($before before, $(wc -l < "$T/env.log") in all)" \
  [ "$(grep -c '^hello ' "$T/env.log")" -eq "$(wc -l < "$T/env.log")" ] && [ "$(wc -l < "$T/env.log")" -gt "$before" ]

# --isolated: one shared base holds the pins; candidates hold their version only
# (CMD's python3 is the candidate venv's: its bin/ comes first on PATH)
icmd=(-- "$B/bin/rt-launch" -n 2 python3 "$T/trainer.py")
bisect -o "$T/i1" "${pipargs[@]}" "${envargs[@]}" --good 1.3 --bad 1.8 --isolated --json "${icmd[@]}"
rc=$?
check "--isolated: exit 0 ($rc), first bad 1.7" [ "$rc-$(field 'j["first_bad"]["id"]')" = 0-1.7 ]
base_site=$(ls -d "$T"/i1/.bisect/base/venv/lib/python*/site-packages)
check "--isolated: the base holds the pin toydep 1.0 and not toypkg" \
  bash -c "[ -d '$base_site/toydep' ] && ! ls -d '$base_site'/toypkg* 2> /dev/null"
site17=$(ls -d "$T"/i1/.bisect/1.7/venv/lib/python*/site-packages)
check "--isolated: 1.7's venv holds toypkg 1.7, no copy of toydep" \
  bash -c "grep -q \"'1.7'\" '$site17/toypkg/__init__.py' && ! ls -d '$site17'/toydep* 2> /dev/null"
check "--isolated: 1.7's venv is small (< 1 MiB: $(du -sk "$T/i1/.bisect/1.7/venv" | cut -f1) KiB)" \
  [ "$(du -sk "$T/i1/.bisect/1.7/venv" | cut -f1)" -lt 1024 ]
kept=$(cd "$T/i1/.bisect" && ls -d */venv | cut -d/ -f1 | grep -v '^base$' | sort | tr '\n' ' ')
check "--isolated: judged venvs removed but the boundaries' ($kept)" [ "$kept" = "1.6 1.7 " ]
check "--isolated: the reproducing command names both venvs' bin on PATH ($(field 'j["repro"]'))" \
  bash -c "grep -qF ' PYTHONPATH=$T/extra ' <<< \"\$1\" && grep -qF 'VIRTUAL_ENV=$T/i1/.bisect/1.7/venv PATH=$T/i1/.bisect/1.7/venv/bin:$T/i1/.bisect/base/venv/bin\${PATH:+:\$PATH} ' <<< \"\$1\"" _ "$(field 'j["repro"]')"
bisect -o "$T/i2" "${pipargs[@]}" "${envargs[@]}" --good 1.3 --bad 1.8 --isolated --keep --json "${icmd[@]}"
rc=$?
tried=$(field '" ".join(sorted(c["id"] for c in j["candidates"]))')
kept=$(cd "$T/i2/.bisect" && ls -d */venv | cut -d/ -f1 | grep -v '^base$' | sort | tr '\n' ' ')
check "--keep: exit 0 ($rc), every judged venv kept ($kept)" [ "$rc-$kept" = "0-$tried " ]

# free space: below the need, one line saying how much; nothing judged
RANKTRACE_CACHE_DIR="$T/cache-s1" bisect -o "$T/s1" "${pipargs[@]}" --good 1.0 --bad 1.12 --min-free 1000T --json "${cmd[@]}"
rc=$?
check "--min-free 1000T (overlay): exit 1 ($rc)" [ $rc -eq 1 ]
check "...one line: how much is needed and how much is free ($(grep 'ranktrace bisect' "$T/err"))" \
  [ "$(grep -c 'ranktrace bisect: not enough free space for an overlay in .*: 1000.0 TiB needed, .* free' "$T/err")" -eq 1 ]
check "...nothing judged, the JSON says why" \
  [ "$(field 'str(j["runs"]) + "|" + str("1000.0 TiB needed" in j["error"])')" = "0|True" ]
check "...no overlay installed" [ -z "$(ls "$T/cache-s1/overlays" 2> /dev/null)" ]
bisect -o "$T/s2" "${pipargs[@]}" --good 1.0 --bad 1.12 --isolated --min-free 1000T "${cmd[@]}"
rc=$?
check "--min-free 1000T (--isolated base): exit 1 ($rc), one line, no base venv" \
  bash -c "[ $rc -eq 1 ] && [ \"\$(grep -c 'not enough free space for the shared base environment' '$T/err')\" -eq 1 ] && [ ! -e '$T/s2/.bisect/base/venv' ]"

# bad input: exit 2, one message, nothing created
for a in NOEQUALS 1A=b =x; do
  timeout -k 5 60 "$B/bin/ranktrace" bisect -o "$T/nope" --versions 1,2 --env "$a" -- true > /dev/null 2> "$T/bad.err"
  rc=$?
  check "--env $a: exit 2 ($rc), one message, nothing created" \
    bash -c "[ $rc -eq 2 ] && [ \"\$(grep -c 'ranktrace bisect: --env' '$T/bad.err')\" -eq 1 ] && [ ! -e '$T/nope' ]"
done
timeout -k 5 60 "$B/bin/ranktrace" bisect -o "$T/nope" --versions 1,2 --min-free 5X -- true > /dev/null 2> "$T/bad.err"
check "--min-free 5X: exit 2 ($?)" grep -q 'ranktrace bisect: --min-free 5X' "$T/bad.err"
finish
