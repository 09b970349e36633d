#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# check_comms.py CHECK TRACE [ARG...] - what a trace says of its
# communicators, point-to-point calls, groups and hosts (issue 27), read
# from the trace itself: babeltrace2's text of every rank directory, each
# event's fields parsed. One check per run; prints what it found, exits 1
# with the reason on the first thing that is not so. The checks:
#   split                   world and the {0,2},{1,3} split, one identity each
#   subsets                 two ncclCommInitRank communicators {0,2}, {1,3}
#   nonblocking N           being made then made on every rank; N collectives
#                           numbered 1..N on it, none with comm_id 0
#   shrink X                the others' communicator without rank X
#   scalable                made by ncclCommInitRankScalable
#   hsdp                    shard {0,1},{2,3} and replicate {0,2},{1,3} splits
#   p2p                     Send/Recv numbered per peer, matched across ranks,
#                           every one started and completed on the device
#   hang_recv R S N         rank R's N-th Recv from S started on the device and
#                           never completed (or only when the simulated device
#                           gave up, seconds on); S made N-1 Sends to R
#   groups G STEPS          STEPS groups of G on every rank (rt_group), every
#                           collective's device records bound and complete
#   hosts H RANKS SHIFT_MS  RANKS recorded on host H, their clock SHIFT_MS
#                           ahead: device completions of one collective
#   fork                    fork-* files apart; the ranks hold no child event
#   comm_skip R SPLIT N     the fault fired on rank R's N-th all-reduce of its
#                           SPLIT-th split, and only there
#   view JSON [N]           view --json's communicators (in file JSON) are the
#                           trace's, every field as its records say (and N
#                           of them); the call counts from the calls recorded
import glob
import json
import os
import re
import statistics
import subprocess
import sys

FIELD = re.compile(r'(\w+) = ("(?:[^"\\]|\\.)*"|[^,}]+)')


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def parse(line):
    m = re.match(r"\[[^\]]*\] \([^)]*\) \S+ (\w+): \{ (.*?) \}, \{ (.*) \}$", line)
    if not m:
        return None
    ev = {"name": m.group(1)}
    for k, v in FIELD.findall(m.group(2) + ", " + m.group(3)):
        v = v.strip()
        ev[k] = v[1:-1] if v.startswith('"') else (int(v, 0) if re.fullmatch(r"-?(0x)?[0-9a-fA-F]+", v) and
                                                   (v.startswith("0x") or v.lstrip("-").isdigit()) else v)
    ts = re.match(r"\[(\d+)\.(\d+)\]", line)  # --clock-seconds: real time, s.ns
    ev["ts"] = int(ts.group(1)) + int(ts.group(2)) * 1e-9 if ts else 0
    return ev


def rank_events(trace):
    """{rank: [events in time order]} of the rank directories' stream files."""
    out = {}
    for d in sorted(glob.glob(os.path.join(trace, "rank-*"))):
        r = int(os.path.basename(d)[5:])
        text = subprocess.run(["babeltrace2", "--clock-seconds", d], capture_output=True, text=True,
                              timeout=120).stdout
        out[r] = [e for e in map(parse, text.splitlines()) if e]
    return out


def comms(evs):
    """{comm_id: last rt_comm record} of one rank."""
    return {e["comm_id"]: e for e in evs if e["name"] == "rt_comm"}


def members(ranks, comm_id):
    return sorted(r for r, evs in ranks.items() if comm_id in comms(evs))


def by_how(ranks, how):
    return {r: [c for c in comms(evs).values() if c["how"] == how] for r, evs in ranks.items()}


def check_split(ranks):
    world = {r: by_how(ranks, 1)[r][0]["comm_id"] for r in ranks}
    if len(set(world.values())) != 1:
        fail(f"the world's identity differs across ranks: {world}")
    splits = by_how(ranks, 5)
    for r in ranks:
        (s,) = splits[r]
        want = dict(nranks=2, rank=r // 2, global_rank=r, parent_id=world[0], color=r % 2, state=1)
        got = {k: s[k] for k in want}
        if got != want:
            fail(f"rank {r}'s split: {got}, not {want}")
    for group in ([0, 2], [1, 3]):
        if members(ranks, splits[group[0]][0]["comm_id"]) != group:
            fail(f"the split of rank {group[0]} is held by {members(ranks, splits[group[0]][0]['comm_id'])}")
    for r, evs in ranks.items():
        ids = {e["comm_id"] for e in evs if e["name"] == "ncclAllReduce"}
        if ids != {splits[r][0]["comm_id"]}:
            fail(f"rank {r}'s all-reduces are on {ids}, not its split")
    print("split: world", hex(world[0]), "halves", [hex(splits[r][0]["comm_id"]) for r in (0, 1)])


def check_subsets(ranks):
    inits = by_how(ranks, 1)
    for r in ranks:
        (c,) = inits[r]
        if (c["nranks"], c["rank"], c["global_rank"]) != (2, r // 2, r):
            fail(f"rank {r}: {c}")
    if members(ranks, inits[0][0]["comm_id"]) != [0, 2] or members(ranks, inits[1][0]["comm_id"]) != [1, 3]:
        fail("the two communicators' members are not {0,2} and {1,3}")
    print("subsets: {0,2} and {1,3}, comm ranks r/2")


def check_nonblocking(ranks, n):
    for r, evs in ranks.items():
        states = [e["state"] for e in evs if e["name"] == "rt_comm"]
        if states != [0, 1]:
            fail(f"rank {r}'s communicator records say {states}, not being made then made")
        cid = comms(evs)
        (cid,) = cid
        seqs = [(e["comm_id"], e["seq"]) for e in evs if e["name"] == "ncclAllReduce"]
        if seqs != [(cid, k) for k in range(1, n + 1)]:
            fail(f"rank {r}'s collectives: {seqs[:3]}..., not {n} numbered on {hex(cid)}")
    print(f"nonblocking: {len(ranks)} ranks, state 0 then 1, {n} collectives numbered")


def check_shrink(ranks, x):
    for r, evs in ranks.items():
        got = [c for c in comms(evs).values() if c["how"] == 6]
        if r == x:
            if got:
                fail(f"rank {x} left and holds {got}")
            continue
        (c,) = got
        if (c["nranks"], c["rank"], c["excluded"]) != (3, r - (r > x), str(x)):
            fail(f"rank {r}'s shrink: {c}")
    print(f"shrink: ranks without {x}, excluded '{x}'")


def check_scalable(ranks):
    ids = {by_how(ranks, 3)[r][0]["comm_id"] for r in ranks}
    if len(ids) != 1:
        fail(f"scalable: {ids}")
    print("scalable: one identity", hex(ids.pop()))


def check_hsdp(ranks):
    shard = {r: [c for c in by_how(ranks, 5)[r] if c["ordinal"] == 1][0] for r in ranks}
    repl = {r: [c for c in by_how(ranks, 5)[r] if c["ordinal"] == 2][0] for r in ranks}
    for name, comm, groups in (("shard", shard, ([0, 1], [2, 3])), ("replicate", repl, ([0, 2], [1, 3]))):
        for g in groups:
            if members(ranks, comm[g[0]]["comm_id"]) != g:
                fail(f"{name} group of rank {g[0]}: {members(ranks, comm[g[0]]['comm_id'])}, not {g}")
    print("hsdp: shard {0,1},{2,3} (split 1), replicate {0,2},{1,3} (split 2)")


def p2ps(evs, name, peer=None):
    return [e for e in evs if e["name"] == name and (peer is None or e["peer"] == peer)]


def check_p2p(ranks):
    total = 0
    for r, evs in ranks.items():
        dev = {(e["peer"], e["seq"], e["p2p_send"], e["dev_phase"]) for e in evs if e["name"] == "rt_dev_p2p"}
        for name, send in (("ncclSend", 1), ("ncclRecv", 0)):
            for peer in {e["peer"] for e in p2ps(evs, name)}:
                seqs = [e["seq"] for e in p2ps(evs, name, peer)]
                if seqs != list(range(1, len(seqs) + 1)):
                    fail(f"rank {r}'s {name} with {peer}: numbered {seqs[:5]}...")
                other = p2ps(ranks[peer], "ncclRecv" if send else "ncclSend", r)
                if len(other) != len(seqs):
                    fail(f"rank {r} made {len(seqs)} {name} with {peer}, which made {len(other)} in return")
                for s in seqs:
                    if (peer, s, send, 1) not in dev or (peer, s, send, 2) not in dev:
                        fail(f"rank {r}'s {name} #{s} with {peer}: not started and completed on the device")
                total += len(seqs)
        if any(e["comm_id"] == 0 for e in evs if e["name"] == "rt_dev_p2p"):
            fail(f"rank {r}: a device record tied to no call")
    print(f"p2p: {total} Send/Recv numbered per peer, matched, started and completed on the device")


def check_hang_recv(ranks, r, s, n):
    recv = [e for e in p2ps(ranks[r], "ncclRecv", s) if e["seq"] == n]
    if not recv:
        fail(f"rank {r} never made its Recv #{n} from {s}")
    dev = {(e["seq"], e["dev_phase"]): e["ts"] for e in ranks[r] if e["name"] == "rt_dev_p2p" and
           e["peer"] == s and e["p2p_send"] == 0}
    # The simulated device gives up after SIMGPU_TIMEOUT and runs the stream on
    # (as an aborted communicator's kernel does): the events source then sees
    # the end event fire, seconds after the start, never at once.
    if (n, 1) not in dev or ((n, 2) in dev and dev[(n, 2)] - dev[(n, 1)] < 2.0):
        fail(f"rank {r}'s Recv #{n} from {s} on the device: {sorted(k for k in dev if k[0] == n)}")
    late = f" (its end only when the device gave up, {dev[(n, 2)] - dev[(n, 1)]:.1f} s later)" \
        if (n, 2) in dev else ""
    sends = [e["seq"] for e in p2ps(ranks[s], "ncclSend", r)]
    if sends != list(range(1, n)):
        fail(f"rank {s} sent {sends[-3:]}... to {r}, not 1..{n - 1}")
    print(f"hang_recv: rank {r}'s Recv #{n} from {s} started on the device, never completed{late}; "
          f"rank {s} sent {n - 1}")


def check_groups(ranks, g, steps):
    for r, evs in ranks.items():
        groups = [(e["group"], e["colls"]) for e in evs if e["name"] == "rt_group"]
        if groups != [(k, g) for k in range(1, steps + 1)]:
            fail(f"rank {r}'s groups: {groups}")
        calls = {(e["comm_id"], e["seq"]) for e in evs if e["name"] == "ncclAllReduce"}
        dev = [e for e in evs if e["name"] == "rt_dev_coll"]
        if any(e["comm_id"] == 0 for e in dev):
            fail(f"rank {r}: {sum(e['comm_id'] == 0 for e in dev)} device records tied to no call")
        for phase in (1, 2):
            got = {(e["comm_id"], e["seq"]) for e in dev if e["dev_phase"] == phase}
            if got != calls:
                fail(f"rank {r}: phase {phase} device records for {len(got)} of {len(calls)} calls")
    print(f"groups: {steps} of {g} per rank, every device record bound ({g * steps} calls, both phases)")


def check_hosts(trace, ranks, host, shifted, shift_ms):
    for r in ranks:
        meta = open(os.path.join(trace, f"rank-{r:05d}", "metadata")).read()
        want = host if r in shifted else None
        got = re.search(r'\thostname = "([^"]*)"', meta).group(1)
        if (want and got != want) or (not want and got == host):
            fail(f"rank {r} says host {got}")
    done = {r: {(e["comm_id"], e["seq"]): e["ts"] for e in evs if e["name"] == "rt_dev_coll" and
                e["dev_phase"] == 2} for r, evs in ranks.items()}
    base = [r for r in ranks if r not in shifted][0]
    for r in shifted:
        d = [(done[r][k] - done[base][k]) * 1e3 for k in done[r] if k in done[base]]
        med = statistics.median(d)
        if abs(med - shift_ms) > 10:
            fail(f"rank {r}'s completions read {med:.1f} ms after rank {base}'s, not {shift_ms}")
        print(f"hosts: rank {r} on {host}, its completions {med:.1f} ms after rank {base}'s ({len(d)})")


def check_fork(trace, ranks):
    for r, evs in ranks.items():
        d = os.path.join(trace, f"rank-{r:05d}")
        forks = glob.glob(os.path.join(d, "fork-*"))
        if not forks:
            fail(f"rank {r}: no fork-* file")
        child = {int(os.path.basename(f).split("-")[1]) for f in forks}
        mine = {int(os.path.basename(f).split("-")[1]) for f in glob.glob(os.path.join(d, "stream-*"))}
        if child & mine:
            fail(f"rank {r}: the child's pid {child & mine} has stream-* files too")
    print("fork: the children's records are fork-* files, apart from their ranks'")


def check_comm_skip(ranks, r, split, n):
    faults = [e for e in ranks[r] if e["name"] == "rt_fault"]
    if len(faults) != 1 or faults[0]["call"] != n:
        fail(f"rank {r}'s faults: {faults}")
    others = [x for x in ranks if x != r]
    if any(e["name"] == "rt_fault" for x in others for e in ranks[x]):
        fail("a fault fired on another rank")
    target = [c for c in by_how(ranks, 5)[r] if c["ordinal"] == split][0]["comm_id"]
    made = sum(e["name"] == "ncclAllReduce" and e["comm_id"] == target for e in ranks[r])
    peer = [x for x in members(ranks, target) if x != r][0]
    peer_made = sum(e["name"] == "ncclAllReduce" and e["comm_id"] == target for e in ranks[peer])
    skipped = [e for e in ranks[r] if e["name"] == "ncclAllReduce" and e["comm_id"] == target and e["seq"] == n]
    if not skipped:
        fail(f"rank {r}'s all-reduce #{n} on its split {split} is not recorded")
    print(f"comm_skip: rank {r} skipped all-reduce #{n} of split {split} ({hex(target)}); "
          f"calls there {made}, its peer {peer}'s {peer_made}")


HOW = ["?", "ncclCommInitRank", "ncclCommInitRankConfig", "ncclCommInitRankScalable",
       "ncclCommInitAll", "ncclCommSplit", "ncclCommShrink"]  # format/schema.h RT_COMM_HOWS
STATE = {0: "being made", 1: "made", 2: "failed"}


def expected_comms(ranks):
    """{comm_id: what view should say of it}, from the rt_comm records and the calls."""
    want = {}
    for r, evs in ranks.items():
        for cid, c in comms(evs).items():
            colls = sum(1 for e in evs if e.get("comm_id") == cid and e.get("seq", 0) > 0 and
                        e["name"].startswith("nccl") and e["name"] not in ("ncclSend", "ncclRecv"))
            p2p = {k: sum(1 for e in evs if e["name"] == k and e.get("comm_id") == cid and e["seq"] > 0)
                   for k in ("ncclSend", "ncclRecv")}
            w = want.setdefault(cid, {"places": [], "colls": [], "sends": 0, "recvs": 0, "states": set()})
            w["places"].append((c["rank"], c["global_rank"], c["key"]))
            w["colls"].append(colls)
            w["sends"] += p2p["ncclSend"]
            w["recvs"] += p2p["ncclRecv"]
            w["states"].add(STATE[c["state"]])
            if c["rank"] == min(p for p, _, _ in w["places"]):
                w["rec"] = c
    return want


def check_view(ranks, path, n=None):
    got = {int(c["id"], 16): c for c in json.load(open(path))["communicators"]}
    want = expected_comms(ranks)
    if set(got) != set(want) or (n is not None and len(got) != n):
        fail(f"view lists {sorted(map(hex, got))}, the trace records {sorted(map(hex, want))}")
    for cid, w in want.items():
        c, rec = got[cid], w["rec"]
        places = sorted(w["places"])
        split = rec["how"] == 5
        exp = {"made_by": HOW[rec["how"]], "size": rec["nranks"], "members": [g for _, g, _ in places],
               "parent": "%016x" % rec["parent_id"] if rec["parent_id"] else None,
               "color": rec["color"] if split else None,
               "keys": [k for _, _, k in places] if split else None,
               "state": "failed" if "failed" in w["states"] else
                        "being made" if "being made" in w["states"] else "made",
               "collectives": max(w["colls"]), "collectives_fewest": min(w["colls"]),
               "sends": w["sends"], "recvs": w["recvs"]}
        for k, v in exp.items():
            if c[k] != v:
                fail(f"communicator {cid:016x}: {k} {c[k]!r} in view, {v!r} in the trace")
        print(f"view: {cid:016x} {c['made_by']} members {c['members']} {c['collectives']} collectives, "
              f"{c['sends']}/{c['recvs']} send/recv: as recorded")


def main():
    check, trace, args = sys.argv[1], sys.argv[2], [int(a) if a.lstrip("-").isdigit() else a for a in sys.argv[3:]]
    ranks = rank_events(trace)
    if not ranks:
        fail(f"no rank directories in {trace}")
    if check == "hosts":
        check_hosts(trace, ranks, args[0], [int(x) for x in str(args[1]).split(",")], args[2])
    elif check == "fork":
        check_fork(trace, ranks)
    elif check == "view":
        check_view(ranks, *sys.argv[3:4], *args[1:])
    else:
        globals()["check_" + check](ranks, *args)


if __name__ == "__main__":
    main()
