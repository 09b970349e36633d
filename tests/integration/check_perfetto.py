#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_perfetto.py PERFETTO NRANKS [FULL] [--findings VIEW_JSON] - structural
check of Chrome trace-event JSON as Perfetto and chrome://tracing read it:
the JSON object format, no key twice in one object, known phases, required
fields per phase, flows that start before they step or finish; FULL: at
least that many collectives linked across all ranks.

--findings: every finding of `view --json` (VIEW_JSON, the same trace) is
an instant event (cat "finding") on the track of each rank it names, with
its index there, kind, level, verdict, sentence and ranks; one about a
collective sits on the rank's call of that collective (same track, same
time) and names it as its flow arrows do (args.collective "COMM-SEQ",
args.comm, args.seq); elsewhere it is within the rank's trace. No finding
instant is left over."""
import json
import sys

PHASES = {"X", "M", "C", "s", "t", "f", "i", "B", "E"}


def no_twice(pairs):
    keys = [k for k, _ in pairs]
    twice = {k for k in keys if keys.count(k) > 1}
    assert not twice, f"keys {sorted(twice)} twice in one object: {pairs}"
    return dict(pairs)


def check(path, nranks):
    d = json.load(open(path), object_pairs_hook=no_twice)
    assert isinstance(d, dict) and isinstance(d.get("traceEvents"), list), "traceEvents list"
    procs, flows, slices, counters = {}, {}, 0, 0
    for i, e in enumerate(d["traceEvents"]):
        where = f"event {i}: {e}"
        assert e.get("ph") in PHASES, where
        assert isinstance(e.get("pid"), int), where
        ph = e["ph"]
        if ph == "M":
            assert e["name"] in ("process_name", "process_sort_index", "process_labels", "thread_name"), where
            if e["name"] == "process_name":
                procs[e["pid"]] = e["args"]["name"]
            continue
        assert isinstance(e.get("ts"), (int, float)) and e["ts"] >= 0, where
        if ph == "X":
            slices += 1
            assert isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, where
            assert isinstance(e.get("tid"), int) and isinstance(e.get("name"), str), where
            assert e["pid"] in procs, "slice of a process with no name: " + where
        elif ph == "C":
            counters += 1
            assert all(isinstance(v, (int, float)) for v in e["args"].values()), where
        elif ph in "stf":
            fid = e["id"]
            if ph == "s":
                assert fid not in flows, "flow started twice: " + where
                flows[fid] = [e["ts"]]
            else:
                assert fid in flows, "flow step before its start: " + where
                assert e["ts"] >= flows[fid][0] - 1e-3, "flow goes back in time: " + where
                flows[fid].append(e["ts"])
    assert len(procs) == nranks, f"{len(procs)} processes, expected {nranks}"
    assert slices > 0, "no slices"
    return slices, counters, flows


def check_findings(path, view_path):
    d = json.load(open(path))
    view = json.load(open(view_path))
    events = d["traceEvents"]
    inst = [e for e in events if e.get("ph") == "i" and e.get("cat") == "finding"]
    colls = {}  # (rank, comm, seq) -> the collective's slice
    for e in events:
        a = e.get("args", {})
        if e.get("ph") == "X" and e.get("cat", "").startswith("nccl") and "comm_id" in a and "seq" in a:
            colls.setdefault((e["pid"], int(a["comm_id"]), a["seq"]), e)
    last = {}
    for e in events:
        if e.get("ph") == "X":
            last[e["pid"]] = max(last.get(e["pid"], 0), e["ts"] + e["dur"])
    used, linked = set(), 0
    for n, f in enumerate(view["findings"]):
        ranks = f["ranks"] or ([f["rank"]] if f["rank"] >= 0 else [])
        for r in ranks:
            mine = [i for i, e in enumerate(inst) if i not in used and e["pid"] == r and
                    e["args"].get("finding") == n]
            assert len(mine) == 1, f"finding {n} ({f['text']!r}) on rank {r}: {len(mine)} instants"
            e = inst[mine[0]]
            used.add(mine[0])
            a = e["args"]
            assert e.get("s") == "t" and isinstance(e.get("tid"), int), f"not on a thread track: {e}"
            assert (a["kind"], a["level"], a["signature"], a["text"], a["ranks"]) == \
                (f["id"], f["level"], f["signature"], f["text"], f["ranks"]), \
                f"finding {n} on rank {r}: {a} is not {f}"
            c = colls.get((r, int(f["comm"], 16), f["seq"])) if f["comm"] else None
            if c:
                assert (e["tid"], e["ts"]) == (c["tid"], c["ts"]), f"finding {n} not on rank {r}'s collective {c}: {e}"
                assert a["collective"] == f"{f['comm']}-{f['seq']}" and (a["comm"], a["seq"]) == (f["comm"], f["seq"]), \
                    f"finding {n}: its collective not named as the flows name it: {a}"
                linked += 1
            elif r in last:
                assert e["ts"] <= last[r] + 1e-3, f"finding {n} past rank {r}'s trace: {e}"
    left = [inst[i] for i in range(len(inst)) if i not in used]
    assert not left, f"{len(left)} finding instants no finding of view --json accounts for: {left[:2]}"
    return len(inst), linked


if __name__ == "__main__":
    if "--findings" in sys.argv:
        k = sys.argv.index("--findings")
        view_path = sys.argv[k + 1]
        del sys.argv[k:k + 2]
        n, linked = check_findings(sys.argv[1], view_path)
        print(f"ok: {n} finding instants, {linked} on their collective")
    path, nranks = sys.argv[1], int(sys.argv[2])
    slices, counters, flows = check(path, nranks)
    full = sum(1 for v in flows.values() if len(v) == nranks)
    want_full = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    assert full >= want_full, f"only {full} collectives linked across all {nranks} ranks"
    print(f"ok: {slices} slices, {counters} counter samples, {len(flows)} flows "
          f"({full} across all ranks)")
