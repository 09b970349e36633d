#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_comm_view.sh - `view` lists the communicators (issue 27 item 2): each
# one's id, members in global ranks, how it was made (parent, color, keys,
# excluded ranks), state, and the collectives and Send/Recv made on it, as
# text and as view --json's "communicators", checked field by field against
# the trace itself (check_comms.py view: babeltrace2's text of the rt_comm
# records and of the calls). fsdp_mini on 4 ranks of the asynchronous
# simulator: --mesh hsdp:2 (the world, shard {0,1},{2,3}, replicate
# {0,2},{1,3}), --mesh tp:2, hsdp:2 --nonblocking-init (non-blocking init and
# splits), --mesh pp (Send/Recv; the embedding split {0,3}, the others
# NOCOLOR), and hsdp:2 with rank 1 skipping a replicate all-reduce (members
# that called different numbers); the text's lines; --rank.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
CHECK="$(dirname "$0")/check_comms.py"
export SIMGPU_TIMEOUT=10
unset SIMGPU_SYNC

# traced NAME [run options --] fsdp_mini args: the job on 4 ranks, bounded
traced() { local name=$1; shift
  local opts=()
  if [ "${1:-}" = --inject ]; then opts=("$1" "$2"); shift 3; fi
  sim timeout -k 5 120 "$RT" run -o "$T/$name" "${opts[@]}" -- "$B/bin/rt-launch" -n 4 \
    "$B/bin/fsdp_mini" --steps 2 "$@" > "$T/$name.log" 2>&1
}
# listed NAME N: view --json's communicators of $T/NAME are the trace's, N of them
listed() { timeout -k 2 60 "$RT" view --json "$T/$1" > "$T/$1.json" 2> /dev/null &&
  python3 "$CHECK" view "$T/$1" "$T/$1.json" "$2" > "$T/check.out" 2>&1
  local rc=$?; sed 's/^/    /' "$T/check.out"; return $rc; }
view_text() { timeout -k 2 60 "$RT" view "$@" 2> /dev/null | sed -n '/^communicators/,/^$/p'; }

traced hsdp --mesh hsdp:2
check "HSDP: view --json's 5 communicators as the trace records them" listed hsdp 5
traced tp --mesh tp:2
check "tensor parallel: view --json's 5 communicators as the trace records them" listed tp 5
traced nb --mesh hsdp:2 --nonblocking-init
check "HSDP, non-blocking init and splits: the 5 communicators as recorded" listed nb 5
check "HSDP, non-blocking: the world made by ncclCommInitRankConfig, made" \
  bash -c "'$RT' view '$T/nb' | grep -Eq '^  [0-9a-f]{16} \{0-3\}: made by ncclCommInitRankConfig; made, ended'"
traced pp --mesh pp
check "pipeline: the world and the embedding split {0,3}, Send/Recv counted, as recorded" listed pp 2
check "pipeline: view --json counts the world's Send/Recv (not 0)" \
  python3 -c "import json,sys; c=json.load(open('$T/pp.json'))['communicators'][0]; sys.exit(not (c['sends'] > 0 and c['sends'] == c['recvs']))"
traced skip --inject 'ncclAllReduce:skip:rank=1:when=2:comm=split2' -- --mesh hsdp:2
check "HSDP, rank 1 skips a replicate all-reduce: the communicators as recorded" listed skip 5
check "HSDP skip: members of a communicator called different numbers of collectives" \
  python3 -c "import json,sys; cs=json.load(open('$T/skip.json'))['communicators']
sys.exit(not any(c['collectives_fewest'] < c['collectives'] for c in cs))"
view_text "$T/hsdp" > "$T/hsdp.txt"
sed 's/^/    /' "$T/hsdp.txt"
check "HSDP, text: the world, then the shard and replicate splits, each as made, with its collectives" \
  python3 - "$T/hsdp.txt" <<'PY'
import re, sys
got = [re.sub(r"^  [0-9a-f]{16} ", "", l) for l in open(sys.argv[1]).read().splitlines()[1:] if l]
ended = "made, ended (destroyed or aborted)"
want = ["{0-3}: made by ncclCommInitRank; %s; 5 collectives" % ended,
        "{0,1}: split from the world with color 0, keys 0,1; %s; 16 collectives" % ended,
        "{2,3}: split from the world with color 1, keys 2,3; %s; 16 collectives" % ended,
        "{0,2}: split from the world with color 0, keys 0,2; %s; 6 collectives" % ended,
        "{1,3}: split from the world with color 1, keys 1,3; %s; 6 collectives" % ended]
sys.exit(0 if got == want else "got %s" % got)
PY
view_text "$T/hsdp" --rank 2 > "$T/rank2.txt"
check "--rank 2: the world, {2,3} and {0,2}, not {0,1} or {1,3}" \
  bash -c "[ \$(grep -c '^  [0-9a-f]' '$T/rank2.txt') -eq 3 ] && grep -q '{2,3}' '$T/rank2.txt' &&
    grep -q '{0,2}' '$T/rank2.txt' && ! grep -q '{1,3}\|{0,1}' '$T/rank2.txt'"
check "--rank 2 --json: the same three" \
  python3 -c "import json,subprocess,sys
d=json.loads(subprocess.run(['$RT','view','--json','--rank','2','$T/hsdp'],capture_output=True,text=True,timeout=60).stdout)
sys.exit(sorted(c['members'] for c in d['communicators']) != [[0,1,2,3],[0,2],[2,3]])"
finish
