#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# coverage.sh BUILD - line coverage (gcov) of the model: build with --coverage,
# run the unit tests of the model, matcher, detectors, memory and reader
# (events built in memory), print each viewer file's lines executed and the
# model's total; fails under MIN percent (default 85).
set -uo pipefail
B=${1:-build-cov}
MIN=${MIN:-85}
MODEL="model.c matcher.c detectors.c memory.c alloc_map.c"
cmake -S . -B "$B" -DRT_COVERAGE=ON >/dev/null || exit 1
cmake --build "$B" -j"${JOBS:-2}" --target test_model test_memory test_reader test_format >/dev/null || exit 1
find "$B" -name '*.gcda' -delete
(cd "$B" && ctest -R '^(model|memory|reader|format)\.' --output-on-failure >/dev/null) || { echo "coverage: unit tests failed"; exit 1; }
obj="$B/viewer/CMakeFiles/rtviewer.dir"
cd "$obj" || exit 1
total=0; hit=0
printf '%-16s %8s %8s\n' file lines covered
for f in *.c.gcda; do
  src=${f%.gcda}
  out=$(gcov -n "$src.o" 2>/dev/null | awk -v s="${src}" '$0 ~ "^File .*/viewer/"s"'"'"'" {f=1; next} f && /Lines executed/ {print; exit}')
  pct=$(sed -E 's/Lines executed:([0-9.]+)% of ([0-9]+)/\1/' <<<"$out"); n=$(sed -E 's/.* of ([0-9]+)/\1/' <<<"$out")
  [ -n "$out" ] || continue
  printf '%-16s %8s %7s%%\n' "$src" "$n" "$pct"
  for m in $MODEL; do
    if [ "$m" = "$src" ]; then
      total=$((total + n)); hit=$(awk -v h="$hit" -v p="$pct" -v n="$n" 'BEGIN {printf "%d", h + p * n / 100 + 0.5}')
    fi
  done
done
pct=$(awk -v h="$hit" -v t="$total" 'BEGIN {printf "%.1f", t ? 100 * h / t : 0}')
echo "model ($MODEL): $hit of $total lines, $pct %"
awk -v p="$pct" -v m="$MIN" 'BEGIN {exit !(p >= m)}' || { echo "coverage: model under $MIN %"; exit 1; }
