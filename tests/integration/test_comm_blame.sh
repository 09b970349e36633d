#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_comm_blame.sh - blame within a communicator's members (issue 27): the
# matcher, the hang and the NCCL watchdog's ending name only the members of
# the communicator the collective ran on, in global ranks, and say that
# communicator ("... of communicator 000... {1,3}, split from the world with
# color 1 was never called by rank 1"). On the asynchronous simulator, 4
# ranks, each case with device records from both sources (ranktrace's NCCL
# profiler plugin, CUDA events):
#  - comm_shapes split {0,2},{1,3} (ncclCommSplit), rank 1 skips its 3rd
#    all-reduce on its half: collective-mismatch naming rank 1 alone, on the
#    split {1,3} (before: ranks 0,1,2);
#  - two communicators of 2 by ncclCommInitRank, rank 2 skips one: rank 2
#    alone, on {0,2} (before: ranks 1,2,3);
#  - non-blocking init, rank 1 skips collective 3 of 5: collective-mismatch,
#    its communicator's id not 0;
#  - fsdp_mini --mesh hsdp:2: healthy; rank 1 skipping a replicate
#    all-reduce (an injected skip): mismatch naming rank 1 alone, on {1,3};
#  - fsdp_mini --mesh tp:2, rank 1 skipping an all-gather on its tensor
#    parallel group: mismatch naming rank 1 alone, on {0,1};
#    rank 2's device holding up a shard
#    group's all-gather (devdelay, comm=split1), live: hung, the all-gather
#    on {2,3} never started on rank 2's device (the subject chosen across
#    communicators by enqueue time, not by sequence numbers that count apart);
#  - fsdp_mini --mesh pp (point to point, issue 27 item 3): healthy; stage 2
#    stalled before its 17th microbatch (--stall-send 2:17), live and after
#    the job is stopped: hung, rank 2 the only rank blamed, rank 3 waiting
#    in its ncclRecv #17 from rank 2, which made 16 Sends to it, ranks 0,1
#    said as waiting (in view --json's evidence, not only the sentence);
#    stage 1's 3rd Send one element short (--short-send 1:3): a p2p-mismatch
#    naming ranks 1 (sender) and 2 (receiver), Send #3.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
export SIMGPU_TIMEOUT=10
unset SIMGPU_SYNC

# traced NAME [env...] -- [run options --] launcher args: the job on 4 ranks, bounded
traced() { local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout -k 5 120 "$RT" run -o "$T/$name" "$@" > "$T/$name.log" 2>&1
}
# blamed NAME VERDICT KIND RANKS MEMBERS WORDS: view --json of $T/NAME says
# VERDICT, has one finding KIND naming exactly RANKS (global), on a
# communicator (id not 0) whose members are MEMBERS; its text holds WORDS
blamed() { timeout -k 2 60 "$RT" view --json "$T/$1" > "$T/$1.json" 2> /dev/null
  python3 - "$T/$1.json" "$2" "$3" "$4" "$5" "$6" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
verdict, kind, ranks, members, words = sys.argv[2:7]
ranks = [int(x) for x in ranks.split(",")]
members = [int(x) for x in members.split(",")]
fs = [f for f in d["findings"] if f["id"] == kind]
if d["verdict"] != verdict:
    sys.exit("verdict %s, not %s" % (d["verdict"], verdict))
if len(fs) != 1:
    sys.exit("%d %s findings: %s" % (len(fs), kind, [f["text"] for f in d["findings"]]))
f = fs[0]
if f["ranks"] != ranks or not f["comm"] or int(f["comm"], 16) == 0 or f["members"] != members:
    sys.exit("ranks %s on %s members %s: %s" % (f["ranks"], f["comm"], f["members"], f["text"]))
if words not in f["text"]:
    sys.exit("no '%s' in: %s" % (words, f["text"]))
print(f["text"])
PY
}
say() { "$@" > "$T/say" 2>&1; local rc=$?; sed 's/^/    /' "$T/say"; return $rc; }
verdict_is() { [ "$(timeout -k 2 60 "$RT" verdict "$T/$1" "${@:3}" 2> /dev/null)" = "$2" ]; }

# hung_on NAME: view --json --stall 2s of the live $T/NAME: hung, its hang on
# the shard group {2,3} (split 1), never started on rank 2's device alone
hung_on() { timeout -k 2 60 "$RT" view --json --stall 2s "$T/$1" > "$T/$1.json" 2> /dev/null
  python3 - "$T/$1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
fs = [f for f in d["findings"] if f["id"] == "hang"]
if d["verdict"] != "hung" or len(fs) != 1:
    sys.exit("verdict %s, %d hang findings" % (d["verdict"], len(fs)))
f, comm = fs[0], fs[0]["comm"]
if f["members"] != [2, 3] or "(comm %s, " % comm[-4:] not in f["text"] or \
        "on {2,3}, split from the world with color" not in f["text"] or "never on rank 2's" not in f["text"]:
    sys.exit("members %s: %s" % (f["members"], f["text"]))
print(f["text"])
PY
}
# rank 2's device holds its 3rd collective on its shard group for 600 s: the
# job hangs there, live; then stopped
hang_in_shard_group() { local d=hsdp_hang_$1 i
  RANKTRACE_DEVICE_SOURCE=$1 SIMGPU_TIMEOUT=120 FSDP_MINI_NCCL_TIMEOUT_S=600 \
    LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" setsid timeout -k 5 120 "$RT" run \
    -o "$T/$d" --inject '@collective:devdelay=600s:rank=2:when=3:comm=split1' -- "$B/bin/rt-launch" \
    -n 4 "$B/bin/fsdp_mini" --mesh hsdp:2 --steps 2 > "$T/$d.log" 2>&1 &
  JOBS+=("$!"); LAST=$!
  for i in $(seq 40); do verdict_is "$d" hung --stall 2s && break; sleep 1; done
  # a live job moves on: the others may enqueue a moment after it first reads hung
  for i in $(seq 10); do hung_on "$d" > /dev/null 2>&1 && break; sleep 1; done
  check "HSDP ($1): rank 2's device holds a shard all-gather: hung on {2,3}, rank 2's device" \
    say hung_on "$d"
  stop "$LAST"
}

# p2p_hung NAME [interrupted]: view --json --stall 2s of $T/NAME: hung; the
# hang names rank 2 alone, on the world {0,1,2,3}; its evidence: rank 3 waits
# in its ncclRecv #17 from rank 2, rank 2 never made its ncclSend #17 to rank
# 3 (it made 16), ranks 0 and 1 wait too (in a Send or Recv, not blamed);
# the finding says whether the job was interrupted
p2p_hung() { timeout -k 2 60 "$RT" view --json --stall 2s "$T/$1" > "$T/$1.json" 2> /dev/null
  python3 - "$T/$1.json" "${2:-live}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
fs = [f for f in d["findings"] if f["id"] == "hang"]
if d["verdict"] != "hung" or len(fs) != 1:
    sys.exit("verdict %s, %d hang findings" % (d["verdict"], len(fs)))
f = fs[0]
ev = f["evidence"]
def has(rank, role, op, peer, last=None):
    return any(e["rank"] == rank and e["role"] == role and e["op"] == op and e["peer"] == peer
               and (last is None or e["last_seq"] == last) for e in ev)
why = []
if f["ranks"] != [2] or f["members"] != [0, 1, 2, 3] or int(f["comm"], 16) == 0:
    why.append("ranks %s on %s members %s" % (f["ranks"], f["comm"], f["members"]))
if f["values"].get("interrupted", False) != (sys.argv[2] == "interrupted"):
    why.append("interrupted: %s" % f["values"])
if not has(3, "waits_p2p", "ncclRecv #17", 2):
    why.append("rank 3 does not wait in its ncclRecv #17 from rank 2")
if not has(2, "never_made", "ncclSend #17", 3, 16):
    why.append("rank 2 is not said to have never made its ncclSend #17 to rank 3 (made 16)")
for r in (0, 1):
    if not any(e["rank"] == r and e["role"].startswith("waits_p2p") for e in ev):
        why.append("rank %d not said as waiting" % r)
if "rank 3 waits in its ncclRecv #17 from rank 2" not in f["text"]:
    why.append("the sentence does not say it")
if why:
    sys.exit("; ".join(why) + ": " + json.dumps(ev) + " " + f["text"])
print(f["text"])
PY
}
# stage 2 stalls before its 17th microbatch: hung, live; then stopped
# (SIGTERM to run: the job interrupted), read again post-mortem. The job's
# bound (300 s) leaves a loaded machine's polls time to read it live first
pp_stall() { local d=pp_stall_$1 i
  RANKTRACE_DEVICE_SOURCE=$1 SIMGPU_TIMEOUT=300 LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    setsid timeout -k 5 300 "$RT" run -o "$T/$d" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" \
    --mesh pp --microbatches 8 --steps 3 --stall-send 2:17 > "$T/$d.log" 2>&1 &
  JOBS+=("$!"); LAST=$!
  for i in $(seq 60); do verdict_is "$d" hung --stall 2s && break; sleep 1; done
  for i in $(seq 10); do p2p_hung "$d" > /dev/null 2>&1 && break; sleep 1; done
  check "pipeline ($1): stage 2 never sends microbatch 17, live: hung, rank 3 waits in Recv from rank 2, rank 2 blamed" \
    say p2p_hung "$d"
  check "pipeline ($1): the job stopped" stop "$LAST"
  check "pipeline ($1): interrupted, read post-mortem: the same" say p2p_hung "$d" interrupted
}
# p2p_mismatch NAME: verdict collective-mismatch, one p2p-mismatch: rank 1's
# Send #3 to rank 2 (count 767) against rank 2's Recv #3 (count 768)
p2p_mismatch() { timeout -k 2 60 "$RT" view --json "$T/$1" > "$T/$1.json" 2> /dev/null
  python3 - "$T/$1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
fs = [f for f in d["findings"] if f["id"] == "p2p-mismatch"]
if d["verdict"] != "collective-mismatch" or len(fs) != 1:
    sys.exit("verdict %s, %d p2p-mismatch findings" % (d["verdict"], len(fs)))
f = fs[0]
v = f["values"]
if f["ranks"] != [1, 2] or v.get("sender") != 1 or v.get("receiver") != 2 or f["seq"] != 3 or \
        "counts differ" not in f["text"] or "ncclSend #3 (count 767" not in f["text"]:
    sys.exit("ranks %s values %s seq %s: %s" % (f["ranks"], v, f["seq"], f["text"]))
print(f["text"])
PY
}

for src in plugin events; do
  S=RANKTRACE_DEVICE_SOURCE=$src
  traced split_$src $S -- -- "$B/bin/rt-launch" -n 4 "$B/bin/comm_shapes" split --skip 1:3
  check "split ($src): rank 1 skips on {1,3}: mismatch naming rank 1 alone, on its split" \
    say blamed split_$src collective-mismatch never-called 1 1,3 \
    "{1,3}, split from the world with color 1 was never called by rank 1"
  traced subsets_$src $S -- -- "$B/bin/rt-launch" -n 4 "$B/bin/comm_shapes" subsets --skip 2:3
  check "subsets ($src): rank 2 skips on {0,2}: rank 2 alone" \
    say blamed subsets_$src collective-mismatch never-called 2 0,2 \
    "{0,2}, made by ncclCommInitRank was never called by rank 2"
  traced nb_$src $S -- -- "$B/bin/rt-launch" -n 4 "$B/bin/comm_shapes" nonblocking --skip 1:3
  check "non-blocking init ($src): rank 1 skips 3 of 5: mismatch, rank 1, comm id not 0" \
    say blamed nb_$src collective-mismatch never-called 1 0,1,2,3 "never called by rank 1"
  traced hsdp_$src $S -- -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --mesh hsdp:2 --steps 2
  check "HSDP ($src): healthy" verdict_is hsdp_$src healthy
  # an injected skip takes no sequence number (NCCL never sees it): rank 1's
  # next all-reduce is #2 on its replicate group {1,3}, against rank 3's #2;
  # the tie (1 against 1) goes against the rank the skip left short (before:
  # the skipped call numbered #2 and matched, "never called by rank 3")
  traced hsdp_skip_$src $S -- --inject 'ncclAllReduce:skip:rank=1:when=2:comm=split2' -- \
    "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --mesh hsdp:2 --steps 2
  check "HSDP ($src): rank 1 skips a replicate all-reduce: mismatch naming rank 1 alone, on {1,3}" \
    say blamed hsdp_skip_$src collective-mismatch collective-mismatch 1 1,3 \
    "{1,3}, split from the world with color 1: rank 1 called AllReduce"
  # tensor parallel: rank 1 skips its 2nd all-gather on its tp group {0,1}
  # (an injected skip: no sequence number); its next call there, the
  # input gradient's all-reduce, meets rank 0's all-gather #2: the mismatch
  # names rank 1 and the tp group only (ranks 2,3, whose own group then
  # fails, are not in it)
  traced tp_skip_$src $S -- --inject 'ncclAllGather:skip:rank=1:when=2:comm=split1' -- \
    "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --mesh tp:2 --steps 2
  check "tensor parallel ($src): rank 1 skips an all-gather on its tp group: mismatch naming rank 1 alone, on {0,1}" \
    say blamed tp_skip_$src collective-mismatch collective-mismatch 1 0,1 \
    "{0,1}, split from the world with color 0: rank 1 called AllReduce"
  hang_in_shard_group $src
  traced pp_$src $S -- -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --mesh pp --steps 2
  check "pipeline ($src): healthy, exit 0" bash -c "'$RT' verdict '$T/pp_$src' > /dev/null 2>&1"
  pp_stall $src
  traced pp_short_$src $S -- -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --mesh pp --steps 2 \
    --short-send 1:3
  check "pipeline ($src): stage 1's Send #3 one short of its Recv: p2p-mismatch naming ranks 1,2" \
    say p2p_mismatch pp_short_$src
done
finish
