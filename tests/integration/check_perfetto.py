#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_perfetto.py PERFETTO NRANKS [FULL] - structural check of Chrome
trace-event JSON as Perfetto and chrome://tracing read it: the JSON object
format, no key twice in one object, known phases, required fields per
phase, flows that start before they step or finish; FULL: at least that
many collectives linked across all ranks."""
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


if __name__ == "__main__":
    path, nranks = sys.argv[1], int(sys.argv[2])
    slices, counters, flows = check(path, nranks)
    full = sum(1 for v in flows.values() if len(v) == nranks)
    want_full = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    assert full >= want_full, f"only {full} collectives linked across all {nranks} ranks"
    print(f"ok: {slices} slices, {counters} counter samples, {len(flows)} flows "
          f"({full} across all ranks)")
