#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fuzz.sh - run each libFuzzer target for a few seconds, seeded with a real
# stream file and metadata from fsdp_mini traces. Fails on any crash.
set -euo pipefail
FB=$(cd "$1" && pwd); SECONDS_EACH=${2:-30}
B=$(cd "${BUILD:-build}" && pwd)
corpus=$(mktemp -d "${TMPDIR:-/tmp}/rt-corpus.XXXXXX")
trap 'rm -rf "$corpus"' EXIT
# the targets' scratch files (rt-fuzz-*) go under the corpus dir, removed with it
mkdir -p "$corpus/tmp"; export TMPDIR="$corpus/tmp"
if [ -x "$B/bin/ranktrace" ]; then
  LD_LIBRARY_PATH="$B/sim" "$B/bin/ranktrace" run -o "$corpus/t" -- "$B/bin/rt-launch" -n 2 \
    "$B/bin/fsdp_mini" --steps 1 > /dev/null 2>&1 || true
  # one seed per file: the main threads' calls, the device workers' rt_dev_coll
  # records, the metadata (i counts in this shell: an $((i++)) in head's
  # redirection ran in head's child, and every file overwrote seed0)
  i=0
  for f in "$corpus"/t/rank-*/stream-* "$corpus"/t/rank-00000/metadata; do
    [ -f "$f" ] || continue
    head -c 65536 "$f" > "$corpus/seed$i"
    i=$((i + 1))
  done
  # the first file of rank 0's main stream zeroed as a lost page cache leaves
  # it: its second packet, a page inside its first packet's records
  f=$(ls "$corpus"/t/rank-00000/stream-* | head -1)
  if [ -f "$f" ]; then
    head -c 65536 "$f" > "$corpus/seed$i"; dd if=/dev/zero of="$corpus/seed$i" bs=8192 seek=1 count=1 conv=notrunc status=none
    i=$((i + 1))
    head -c 65536 "$f" > "$corpus/seed$i"; dd if=/dev/zero of="$corpus/seed$i" bs=4096 seek=1 count=1 conv=notrunc status=none
    i=$((i + 1))
  fi
  echo "fuzz_reader: $i seeds"
  rm -rf "$corpus/t"
fi
echo "fuzz_reader: ${SECONDS_EACH}s"
"$FB/bin/fuzz_reader" -max_total_time="$SECONDS_EACH" -max_len=65536 -print_final_stats=1 "$corpus" 2>&1 | tail -4
# the parallel pass on hostile times: seeded with a few jobs (rank count,
# streams, then 3 bytes an event: who, what, when); -timeout: a hang fails
mkdir -p "$corpus/par"
printf '\003\001\001\001\000\000\011\010\000\011\020\001\011\011\001\012\020\005\002' > "$corpus/par/s0"
printf '\002\002\002\000\000\001\001\000\001\000\001\002\001\001\002\000\005\003\001\005\003' > "$corpus/par/s1"
LC_ALL=C awk 'BEGIN { for (i = 0; i < 1200; i++) printf "%c", (i * 37 + 11) % 256 }' > "$corpus/par/s2"
# device records (event 7): two ranks start an AllReduce on their devices (s3); ten of
# them, rank 1 2^40 ns late every time (s4: a straggler, the report's lateness chart)
printf '\001\000\000\000\000\011\001\000\011\000\001\011\001\001\011\000\007\011\001\007\011' > "$corpus/par/s3"
{ printf '\001\000\000\000\000\011\001\000\011'
  for i in 1 2 3 4 5 6 7 8 9 10; do printf '\000\001\011\001\001\011\000\007\011\001\007\012'; done; } > "$corpus/par/s4"
echo "fuzz_parallel: ${SECONDS_EACH}s"
"$FB/bin/fuzz_parallel" -max_total_time="$SECONDS_EACH" -timeout=20 -max_len=1600 -print_final_stats=1 "$corpus/par" 2>&1 | tail -4
mkdir -p "$corpus/plans"
i=0
for p in 'skip-fsdp-root' 'ncclAllReduce:error=ncclSystemError:when=5:rank=2' \
         'cudaMalloc:error=cudaErrorMemoryAllocation:when=3+2' 'nccl*:delay=5ms:prob=0.5:seed=3' \
         'rank-dies=1@4;oom-at=2' 'my.point:error=7:when=2..9:rank=0,2-3' \
         'ncclAllReduce:skip:rank=1:when=2:comm=split2;ncclSend:delay=1ms:comm=0x1f'; do
  printf '%s' "$p" > "$corpus/plans/p$((i++))"
done
echo "fuzz_plan: ${SECONDS_EACH}s"
"$FB/bin/fuzz_plan" -max_total_time="$SECONDS_EACH" -max_len=512 -print_final_stats=1 "$corpus/plans" 2>&1 | tail -4
# the RANKTRACE_* values: seeded with good and bad values of each kind
mkdir -p "$corpus/env"
i=0
for v in 2-3=b:+50ms 0,2-3=host.x:-2.5us 4G auto 3:28 /abs/path 'ncclSend:skip:comm=split2'; do
  printf '%s' "$v" > "$corpus/env/v$((i++))"
done
echo "fuzz_env: ${SECONDS_EACH}s"
"$FB/bin/fuzz_env" -max_total_time="$SECONDS_EACH" -max_len=256 -print_final_stats=1 "$corpus/env" 2>&1 | tail -4
# escaping: seeded with the hostile names of test_hostile.sh's kind (ESC, OSC,
# C1 CSI, bidi override, invalid and cut UTF-8, HTML's characters)
mkdir -p "$corpus/esc"
printf 'host\033]0;pwned\007x' > "$corpus/esc/e0"
printf 'csi\302\233' > "$corpus/esc/e1"; printf 'rlo\342\200\256cba' > "$corpus/esc/e2"
printf 'bad\377\376cut\346\227' > "$corpus/esc/e3"; printf '<a href="x">&amp;\x27</a>' > "$corpus/esc/e4"
echo "fuzz_escape: ${SECONDS_EACH}s"
"$FB/bin/fuzz_escape" -max_total_time="$SECONDS_EACH" -max_len=512 -print_final_stats=1 "$corpus/esc" 2>&1 | tail -4
# bisect's state file: seeded with the state of a short (failing) bisect
mkdir -p "$corpus/state"
if [ -x "$B/bin/ranktrace" ]; then
  "$B/bin/ranktrace" bisect -o "$corpus/b" --versions 1.0,1.1,2.0 --setup 'echo {version}' \
    --env 'RT_SEED=a b' --keep -- true > /dev/null 2>&1 || true
  [ -f "$corpus/b/.bisect/state" ] && cp "$corpus/b/.bisect/state" "$corpus/state/s0"
  rm -rf "$corpus/b"
fi
echo "fuzz_bisect_state: ${SECONDS_EACH}s"
"$FB/bin/fuzz_bisect_state" -max_total_time="$SECONDS_EACH" -max_len=4096 -print_final_stats=1 "$corpus/state" 2>&1 | grep -v '^ranktrace bisect' | tail -4
# the JSON writer: seeded with call sequences (a byte a call: 0 object, 1 array,
# 2 end, 3 string, 7 lines, 8 break; bit 7 a key): view's layout, hostile strings
# (bidi override, ESC, an invalid byte), a NaN, breaks, nesting to the limit
mkdir -p "$corpus/json"
printf '\000\000\203\006schema\020ranktrace.view/1\201\005ranks\007\002\000\204\004rank\000\000\001\002\002\002' > "$corpus/json/s0"
printf '\001\001\007\100\000\003\011h\342\200\256ost\033\377\005\000\000\000\000\000\000\370\177\003\002' > "$corpus/json/s1"
printf '\000\000\010\001\206\005found\002\211\004name\003x\302\233\002' > "$corpus/json/s2"
{ printf '\000'; for i in $(seq 20); do printf '\001'; done; for i in $(seq 20); do printf '\002'; done; } > "$corpus/json/s3"
echo "fuzz_json: ${SECONDS_EACH}s"
"$FB/bin/fuzz_json" -max_total_time="$SECONDS_EACH" -max_len=2048 -print_final_stats=1 "$corpus/json" 2>&1 | tail -4
