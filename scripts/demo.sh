#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# demo.sh - the story in one run: fsdp_mini on a simulated 4-GPU node, traced,
# as transformers 4.52.4 (healthy) and 4.53.0 (FSDP root forward skipped).
set -uo pipefail
B=$(cd "${1:-build}" && pwd)
export LD_LIBRARY_PATH="$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
OUT=${DEMO_DIR:-$PWD/demo-traces}
rm -rf "$OUT" && mkdir -p "$OUT"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "transformers 4.52.4 (healthy): ranktrace run -- rt-launch -n 4 fsdp_mini"
"$B/bin/ranktrace" run -o "$OUT/good" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --trainer-version 4.52.4 --steps 3
good=$?
say "transformers 4.53.0 (the Trainer runs the unwrapped module)"
"$B/bin/ranktrace" run -o "$OUT/bad" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --trainer-version 4.53.0 --steps 3
bad=$?
say "transformers 4.52.4 again, with the bug injected: --inject skip-fsdp-root"
"$B/bin/ranktrace" run -o "$OUT/injected" --inject skip-fsdp-root -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --trainer-version 4.52.4 --steps 3
inj=$?

say "ranktrace view: the healthy run"
"$B/bin/ranktrace" view "$OUT/good"
say "ranktrace view: transformers 4.53.0"
"$B/bin/ranktrace" view "$OUT/bad"
say "verdicts (exit codes for git bisect run: 0 good, 1 bad, 125 skip)"
for t in good bad injected; do
  v=$("$B/bin/ranktrace" verdict "$OUT/$t"); rc=$?
  printf '%-9s %-20s exit %d\n' "$t" "$v" "$rc"
done
say "ranktrace diff good bad"
"$B/bin/ranktrace" diff "$OUT/good" "$OUT/bad"
say "ranktrace diff bad injected: the injected run fails the same way"
"$B/bin/ranktrace" diff "$OUT/bad" "$OUT/injected" | tail -1
"$B/bin/ranktrace" report "$OUT/injected" -o "$OUT/injected.html" 2>/dev/null
"$B/bin/ranktrace" report "$OUT/bad" -o "$OUT/bad.html" 2>/dev/null
"$B/bin/ranktrace" export "$OUT/good" --perfetto "$OUT/good.perfetto.json" 2>/dev/null
say "summary"
echo "4.52.4: exit status $good (expected 0); 4.53.0: exit status $bad (expected non-zero);"
echo "4.52.4 + skip-fsdp-root: exit status $inj (expected non-zero, as 4.53.0)"
echo "traces: $OUT/good $OUT/bad (babeltrace2 reads them); report: $OUT/bad.html;"
echo "Perfetto: open $OUT/good.perfetto.json in ui.perfetto.dev"

say "ranktrace bisect: which trainer version first fails like the injected run?"
rm -rf "$OUT/bisect"
"$B/bin/ranktrace" bisect -o "$OUT/bisect" --versions 4.51.3,4.52.4,4.53.0,4.53.1 \
  --good 4.51.3 --bad 4.53.0 --like "$OUT/injected" \
  -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --trainer-version {version} --steps 3
bis=$?
echo "bisect: exit status $bis (expected 0: first bad 4.53.0; 4.53.1 has the fix)"
[ "$good" -eq 0 ] && [ "$bad" -ne 0 ] && [ "$inj" -ne 0 ] && [ "$bis" -eq 0 ]
