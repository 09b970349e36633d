#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_gpu_rehearse.sh - tests/gpu/run.sh --rehearse: every stage of the real-GPU
# check on CPU (simulated cluster with one GPU shared by two ranks through
# NCCL_HOSTID, torch CPU FSDP v1 under both use_orig_params settings, the
# simulated driver), every row as expected, at most 8 files in OUT, the table
# printed last; again without torch (over the same build): JSON still read.
source "$(dirname "$0")/lib.sh"
if [ -n "${RT_PLAIN_BUILD:-}" ]; then
  # run.sh builds its own uninstrumented copy: under test-asan it would only repeat `make test`
  echo "skipped under make test-asan (the rehearsal builds and runs its own plain build)"
  exit 0
fi
OUT="$T/out" BUILD="$B" timeout -k 10 580 bash "$(dirname "$0")/../gpu/run.sh" --rehearse > "$T/run.out" 2> "$T/run.err"
rc=$?
check "run.sh --rehearse exits 0 (every row as expected)" [ $rc -eq 0 ] || { cat "$T/run.out"; tail -20 "$T/run.err"; }
check "at most 8 files in OUT ($(ls "$T/out" | wc -l))" [ "$(ls "$T/out" | wc -l)" -le 8 ]
check "table.txt, logs and traces tarballs, env.txt are there" \
  bash -c "cd '$T/out' && [ -s table.txt ] && tar tzf logs.tar.gz > /dev/null && tar tzf traces.tar.gz > /dev/null && [ -s env.txt ]"
check "the table is the last thing printed" bash -c "tail -1 '$T/run.out' | grep -qE '^([0-9]+)/\\1 rows as expected$'"
n=$(awk -F'  +' 'NR > 2 && /as expected/' "$T/out/table.txt" | wc -l)
check "every stage has its rows (build, 3 fsdp_mini, 6 trainer with both use_orig_params, cupti: >= 11, got $n)" [ "$n" -ge 11 ]
check "the Trainer stage ran with use_orig_params=true too, traced and injected" \
  [ "$(grep -cE 'use_orig_params=true (traced|skip-fsdp-root) .*as expected' "$T/out/table.txt")" -eq 2 ]
check "two ranks shared the one simulated GPU (NCCL_HOSTID recorded per rank)" \
  bash -c "tar xzf '$T/out/traces.tar.gz' -C '$T' && grep -h nccl_host '$T'/traces/m-healthy/rank-*/metadata | sort -u | wc -l | grep -qx 2"
# no torch where the rehearsal looks (no venv yet): the rows that need no
# torch are judged all the same (their JSON read with python3), the Trainer
# rows left out and said so; over the build made already
OUT="$T/out2" BUILD="$B" PYTHON="$T/no-such-python" RT_GPU_REUSE_BUILD="$B" timeout -k 10 300 \
  bash "$(dirname "$0")/../gpu/run.sh" --rehearse > "$T/run2.out" 2> "$T/run2.err"
rc=$?
check "no torch: run.sh --rehearse exits 0 ($rc)" [ $rc -eq 0 ] || { cat "$T/run2.out"; tail -20 "$T/run2.err"; }
check "no torch: the three fsdp_mini rows as expected" \
  [ "$(grep -c '^fsdp_mini .*as expected' "$T/out2/table.txt")" -eq 3 ]
check "no torch: the Trainer rows left out, saying why" grep -q 'skipped: no torch .*as expected' "$T/out2/table.txt"
check "bad argument: usage, exit 2" bash -c "bash '$(dirname "$0")/../gpu/run.sh' --bogus 2> /dev/null; [ \$? -eq 2 ]"
finish
