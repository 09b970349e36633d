#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_bisect_setup.sh - bisect --setup never runs a version's or a path's
# text as shell (issue 19, defect 10): {version} and {dir} reach `sh -c` as
# variables, exact, whatever they hold; --versions entries must be versions.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bisect_lib.sh"
cat > "$T/trainer.sh" <<SH
#!/bin/sh
case \$1 in good*) b=4.52.4 ;; *) b=4.53.0 ;; esac
exec "$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --trainer-version \$b --steps 1
SH
chmod +x "$T/trainer.sh"
setup='echo "{version}" > {dir}/v; echo {version} > '\''{dir}'\''/w'

# a version holding $(...): refused before anything is set up
cd "$T" || exit 1
bisect -o "$T/v1" --versions 'good1,good2$(touch pwned1),bad1' --setup "$setup" -- "$T/trainer.sh" {version}
rc=$?
check "--versions with \$(touch ...): usage error, exit 2 ($rc)" [ $rc -eq 2 ]
check "...saying which entry is not a version" grep -q "'good2\$(touch pwned1)' is not a version" "$T/err"
check "...and nothing ran it" [ -z "$(find "$T" -name 'pwned1*')" ]
for v in '../up' '-rf' '.hidden' 'a b' 'a;b' 'a`id`'; do
  bisect -o "$T/v2" --versions "good1,$v,bad1" -- "$T/trainer.sh" {version}
  check "--versions entry '$v' refused (exit 2)" [ $? -eq 2 ]
done

# {dir} holding $(...): the set-up gets the path as data
out="$T/b \$(touch pwned2)"
bisect -o "$out" --versions 'good1,good2+local.1,bad1' --setup "$setup" -- "$T/trainer.sh" {version}
rc=$?
check "a bisect whose -o holds \$(touch ...) runs: first bad bad1, exit 0 ($rc)" [ $rc -eq 0 ]
check "...and the shell never ran the path's text" [ -z "$(find "$T" -name 'pwned2*')" ]
n=0
for d in "$out"/.bisect/*/; do
  c=$(basename "$d")
  [ -f "$d/v" ] || continue
  n=$((n + 1))
  check "setup of $c: {version} exact inside \"...\" and unquoted ($(cat "$d/v"))" \
    bash -c "[ \"\$(cat '$d/v')\" = '$c' ] && [ \"\$(cat '$d/w')\" = '$c' ]"
done
check "every candidate set up was checked ($n >= 2)" [ $n -ge 2 ]
finish
