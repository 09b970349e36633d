#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_bisect_pip.sh - ranktrace bisect --pip with real pip and no network
# (PIP_NO_INDEX, --find-links): wheels of a toy package 1.0 ... 1.16 (1.10
# after 1.9, a 1.8.post1 whose install fails, a 1.11rc1 left out without
# --pre), the 4.53.0 behaviour from 1.7, fixed in 1.15. Bisect names 1.7; a
# second bisect reuses the cached overlays (pip install is not called
# again); --isolated venvs find the same; --find fix --bad 1.9 --good 1.16
# names 1.15, its table oldest first; bad input exits 2 and creates nothing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bisect_lib.sh"
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
PY=$(real_python)
python3 "$(dirname "$0")/make_wheels.py" "$T/wheels" || exit 1
# --python: a wrapper logging every `pip install` bisect asks for
cat > "$T/py" <<SH
#!/bin/sh
case "\$*" in *"-m pip install"*) echo "\$*" >> "$T/pip.log" ;; esac
exec "$PY" "\$@"
SH
chmod +x "$T/py"
cat > "$T/trainer.py" <<'PY'
import os
import toydep, toypkg  # toydep: only there through --with
exe = os.environ["FSDP_MINI"]
os.execv(exe, [exe, "--trainer-version", toypkg.BEHAVIOUR, "--steps", "2"])
PY
pip_installs() { [ -f "$T/pip.log" ] && grep -c 'pip install' "$T/pip.log" || echo 0; }
cmd=(-- "$B/bin/rt-launch" -n 2 "$PY" "$T/trainer.py")
pipargs=(--pip toypkg --find-links "$T/wheels" --python "$T/py" --with 'toydep<2')

bisect -o "$T/b1" "${pipargs[@]}" --good 1.0 --bad 1.12 --json "${cmd[@]}"
rc=$?
check "pip bisect exits 0 ($rc)" [ $rc -eq 0 ]
check "names 1.7 as the first bad" [ "$(field 'j["first_bad"]["id"]')" = 1.7 ]
check "1.6 is the last good" [ "$(field 'j["last_good"]["id"]')" = 1.6 ]
check "PEP 440 order: 1.8, 1.8.post1, 1.9, 1.10 ... 1.12; no 1.11rc1 without --pre" \
  [ "$(field '",".join(j["order"])')" = "1.0,1.1,1.2,1.3,1.4,1.5,1.6,1.7,1.8,1.8.post1,1.9,1.10,1.11,1.12" ]
check "the broken 1.8.post1 was skipped as a set-up failure" \
  [ "$(field '[c["verdict"] + "/" + c["judged"] for c in j["candidates"] if c["id"] == "1.8.post1"]')" = "['set-up-failed/skip']" ]
check "the skip reason says pip install failed" \
  [ "$(field '[c["reason"].startswith("set-up failed: pip install exited 1") for c in j["candidates"] if c["id"] == "1.8.post1"]')" = "[True]" ]
installs=$(pip_installs)
check "one pip install per candidate tried ($installs)" [ "$installs" -eq "$(field 'len(j["candidates"])')" ]
check "overlays installed with --no-deps and the --with pin" grep -q -- "--no-deps --target .* toypkg==1.7 toydep<2" "$T/pip.log"
check "overlays cached under RANKTRACE_CACHE_DIR" [ "$(ls "$T/cache/overlays" | grep -c '^toypkg-')" -ge 3 ]

# a second bisect: cached overlays, no pip install
: > "$T/pip.log"
bisect -o "$T/b2" "${pipargs[@]}" --good 1.0 --bad 1.12 --json "${cmd[@]}"
rc=$?
check "second bisect exits 0 ($rc) and names 1.7" [ "$rc-$(field 'j["first_bad"]["id"]')" = 0-1.7 ]
check "second bisect called pip install only for the broken version" \
  [ "$(grep -c 'pip install' "$T/pip.log")" -eq "$(grep -c 'toypkg==1.8.post1' "$T/pip.log")" ]

# --pre brings 1.11rc1 in, between 1.10 and 1.11
bisect -o "$T/b3" "${pipargs[@]}" --good 1.0 --bad 1.12 --pre --json "${cmd[@]}"
rc=$?
check "--pre: exits 0 ($rc) and names 1.7" [ "$rc-$(field 'j["first_bad"]["id"]')" = 0-1.7 ]
check "--pre: 1.11rc1 between 1.10 and 1.11" [ "$(field '",".join(j["order"][-4:])')" = "1.10,1.11rc1,1.11,1.12" ]

# --isolated: a venv per candidate, same answer
# (CMD's python3 is the venv's: PATH starts with the candidate's venv/bin)
bisect -o "$T/b4" "${pipargs[@]}" --good 1.5 --bad 1.8 --isolated --jobs 2 --json \
  -- "$B/bin/rt-launch" -n 2 python3 "$T/trainer.py"
rc=$?
check "--isolated exits 0 ($rc) and names 1.7" [ "$rc-$(field 'j["first_bad"]["id"]')" = 0-1.7 ]
check "--isolated: the run used the candidate's venv" [ -x "$T/b4/.bisect/1.7/venv/bin/python" ]

# --find fix: the first good after a bad one (1.15), reusing the cached overlays
: > "$T/pip.log"
bisect -o "$T/b5" "${pipargs[@]}" --find fix --bad 1.9 --good 1.16 --json "${cmd[@]}"
rc=$?
check "--find fix exits 0 ($rc) and names 1.15 the first good" [ "$rc-$(field 'j["find"]')-$(field 'j["first_good"]["id"]')" = 0-fix-1.15 ]
check "--find fix: 1.14 the last bad, no first bad" [ "$(field 'j["last_bad"]["id"] + " " + str(j["first_bad"])')" = "1.14 None" ]
check "--find fix: the candidates from the bad endpoint up, in PEP 440 order" \
  [ "$(field '",".join(j["order"])')" = "1.9,1.10,1.11,1.12,1.13,1.14,1.15,1.16" ]
check "--find fix: cached overlays reused (only new versions installed)" \
  [ "$(grep -c 'pip install' "$T/pip.log")" -le "$(grep -cE 'toypkg==1\.1[3-6]' "$T/pip.log")" ]
bisect -o "$T/b6" "${pipargs[@]}" --find fix --bad 1.9 --good 1.16 "${cmd[@]}"
rc=$?
check "--find fix, text: exit 0 ($rc), 'first good: 1.15', 'last bad: 1.14'" \
  grep -qzP 'first good: 1\.15  \(fixes skipped-fsdp-root\)\nlast bad: 1\.14  \(skipped-fsdp-root\)\n' "$T/out.json"
rows=$(awk '/^candidates tried/ { on = 1; next } on && /^  [0-9]/ { print $1 } on && /^$/ { exit }' "$T/out.json" | tr '\n' ,)
check "--find fix, text: the table runs oldest first ($rows)" \
  [ "$rows" = "$(python3 -c 'import sys; r = sys.argv[1].strip(",").split(","); print(",".join(sorted(r, key=lambda v: [int(p) for p in v.split(".")])) + ",")' "$rows")" ]

# bad input: one message, exit 2, nothing created (no BISECT_DIR, no cache)
rm -rf "$T/cache"
bad_input() {
  local what=$1; shift
  timeout -k 5 60 "$B/bin/ranktrace" bisect -o "$T/nope" "$@" > "$T/bad.out" 2> "$T/bad.err"
  local rc=$?
  check "$what: exit 2 ($rc)" [ $rc -eq 2 ]
  check "$what: one message ($(head -c 150 "$T/bad.err"))" [ "$(grep -c 'ranktrace bisect: ' "$T/bad.err")" -eq 1 ]
  check "$what: nothing created" [ ! -e "$T/nope" ] && [ ! -e "$T/cache" ]
}
bad_input "unknown package" --pip nosuchpkg --find-links "$T/wheels" --good 1.0 --bad 1.2 "${cmd[@]}"
bad_input "unknown version" --pip toypkg --find-links "$T/wheels" --good 1.0 --bad 7.0 "${cmd[@]}"
bad_input "not a version" --pip toypkg --find-links "$T/wheels" --good 1.0 --bad latest "${cmd[@]}"
bad_input "good == bad" --pip toypkg --find-links "$T/wheels" --good 1.3 --bad 1.3.0 "${cmd[@]}"
bad_input "good after bad" --pip toypkg --find-links "$T/wheels" --good 1.10 --bad 1.9 "${cmd[@]}"
check "good after bad: the message points at --find fix" grep -q 'looking for the release that fixed it? --find fix' "$T/bad.err"
bad_input "--find fix, bad after good" --pip toypkg --find-links "$T/wheels" --find fix --good 1.9 --bad 1.10 "${cmd[@]}"
bad_input "--find sideways" --pip toypkg --find-links "$T/wheels" --find sideways --good 1.9 --bad 1.10 "${cmd[@]}"
bad_input "no such python" --pip toypkg --find-links "$T/wheels" --python "$T/nopython" --good 1.0 --bad 1.2 "${cmd[@]}"
bad_input "--isolated without --pip" --versions 1,2 --isolated "${cmd[@]}"
bad_input "versions: good after bad" --versions 1,2,3 --good 3 --bad 1 "${cmd[@]}"
bad_input "--jobs 0" --versions 1,2 --jobs 0 "${cmd[@]}"
# (pip itself runs `rustc --version` for its user agent: a rustup proxy makes ~/.rustup)
check "no overlay cache in HOME (RANKTRACE_CACHE_DIR is used)" [ ! -e "$HOME/.cache/ranktrace" ]
finish
