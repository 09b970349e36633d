#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# check_agree.py SUMMARY VIEW JSON PERFETTO REPORT - the five outputs of one
# trace agree, for every rank, on the devices it used, its peak bytes per
# device, its allocation count and how it ended. The JSON (view --json) is
# the reference; each other output is parsed for what it shows:
#   run's summary  devices, ending, allocations, peak per device (exact bytes)
#   view (text)    devices, the largest peak (as printed), allocations, ending
#   Perfetto       the largest value of each "device D memory" counter, the
#                  number of successful calls in category "alloc", devices of
#                  the counters, the rank's process label (its ending)
#   report (HTML)  devices, allocations, the largest peak (as printed), ending
# Also, when no rank is missing: every Perfetto flow that starts finishes
# (collectives link up on every communicator, split ones included). Prints one line per disagreement.
import html
import json
import re
import sys


def human(b):
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    v, i = float(b), 0
    while v >= 1024 and i < 4:
        v /= 1024
        i += 1
    return f"{v:.1f} {units[i]}" if i else f"{v:.0f} {units[i]}"


def reference(path):
    ranks = {}
    for r in json.load(open(path))["ranks"]:
        if r.get("events") is None:
            continue
        ranks[r["rank"]] = {
            "devices": set(r["devices"]),
            "peaks": {int(d): b for d, b in r["peak_device_bytes"].items()},
            "allocs": r["allocations"],
            "end": r["end"],
        }
    return ranks


def summary(path):
    out = {}
    pat = re.compile(r"^\s+rank (\d+)\s+\S+\s+\d+ events\s+devices?\s+(\S+)\s+(.*?)\s+(\d+) allocations?, peak (\S.*?)(\s+\(.*)?$")
    for line in open(path, errors="replace"):
        m = pat.match(line)
        if not m:
            continue
        devs = set() if m.group(2) == "-" else {int(d) for d in m.group(2).split(",")}
        peaks = {}
        if m.group(5) != "-":
            for item in m.group(5).split(","):
                d, b = item.split(":")
                peaks[int(d)] = int(b.split()[0])
        out[int(m.group(1))] = {"devices": devs, "end": m.group(3).strip(), "allocs": int(m.group(4)), "peaks": peaks}
    return out


def view_text(path):
    out = {}
    lines = open(path).read().splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("rank "))
    has_trace = " trace " in lines[head]
    for line in lines[head + 1:]:
        if not line.strip():
            break
        f = line.split()
        if not f[0].isdigit() or f[1] == "-" and f[2] == "-":
            continue
        # rank host devices exp peak(2 tokens) allocs colls fwd [trace] end...
        devs = set() if f[2] == "-" else {int(d) for d in f[2].split(",")}
        end = " ".join(f[10:] if has_trace else f[9:])
        out[int(f[0])] = {"devices": devs, "peak": f"{f[4]} {f[5]}", "allocs": int(f[6]), "end": end}
    return out


def perfetto(path):
    d = json.load(open(path))
    ev = d["traceEvents"] if isinstance(d, dict) else d
    out, flows = {}, {}
    for e in ev:
        pid = e.get("pid")
        r = out.setdefault(pid, {"peaks": {}, "allocs": 0, "end": None})
        if e.get("ph") == "C" and e["name"].startswith("device "):
            dev = int(e["name"].split()[1])
            r["peaks"][dev] = max(r["peaks"].get(dev, 0), e["args"]["bytes"])
        elif e.get("ph") == "X" and e.get("cat", "").split(",")[-1] == "alloc" and e["args"].get("ret") == 0 \
                and not e["args"].get("never_returned"):
            r["allocs"] += 1
        elif e.get("ph") == "M" and e.get("name") == "process_labels":
            r["end"] = e["args"]["labels"]
        elif e.get("ph") in ("s", "t", "f") and e.get("cat") == "collective":
            flows.setdefault(e["id"], []).append(e["ph"])
    open_flows = [i for i, p in flows.items() if "s" in p and "f" not in p]
    return {k: v for k, v in out.items() if k is not None}, open_flows, len(flows)


def report(path):
    """The Ranks table, columns found by their headers."""
    text = open(path).read()
    table = text[text.index("<h2>Ranks</h2>"):]
    table = table[:table.index("</table>")]
    head = [html.unescape(h) for h in re.findall(r"<th[^>]*>(.*?)</th>", table)]
    col = {name: head.index(name) for name in ("rank", "devices used", "allocations", "peak device memory", "end")}
    out = {}
    for row in re.findall(r"<tr>(<td.*?)</tr>", table):
        c = [html.unescape(x) for x in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        if not c[col["rank"]].lstrip("-").isdigit():
            continue
        dv = c[col["devices used"]]
        devs = set() if not dv or dv == "-" else {int(d) for d in dv.split(",")}
        out[int(c[col["rank"]])] = {"devices": devs, "allocs": int(c[col["allocations"]]),
                                    "peak": c[col["peak device memory"]], "end": c[col["end"]]}
    return out


def main():
    s_path, v_path, j_path, p_path, r_path = sys.argv[1:6]
    ref = reference(j_path)
    sm, vt, (pf, open_flows, nflows), rp = summary(s_path), view_text(v_path), perfetto(p_path), report(r_path)
    bad = []

    def cmp(what, rank, got, want):
        if got != want:
            bad.append(f"rank {rank}: {what}: {got!r}, view --json says {want!r}")

    for rank, w in sorted(ref.items()):
        maxpeak = max(w["peaks"].values(), default=0)
        s = sm.get(rank)
        if s is None:
            bad.append(f"rank {rank}: not in run's summary")
        else:
            for k in ("devices", "peaks", "allocs", "end"):
                cmp(f"summary {k}", rank, s[k], w[k])
        v = vt.get(rank)
        if v is None:
            bad.append(f"rank {rank}: not in view")
        else:
            cmp("view devices", rank, v["devices"], w["devices"])
            cmp("view peak", rank, v["peak"], human(maxpeak))
            cmp("view allocations", rank, v["allocs"], w["allocs"])
            cmp("view end", rank, v["end"], w["end"])
        p = pf.get(rank, {"peaks": {}, "allocs": 0, "end": None})
        cmp("Perfetto peak per device", rank, p["peaks"], {d: b for d, b in w["peaks"].items()})
        cmp("Perfetto allocations", rank, p["allocs"], w["allocs"])
        cmp("Perfetto end", rank, p["end"], w["end"])
        if not set(p["peaks"]) <= w["devices"]:
            bad.append(f"rank {rank}: Perfetto counters on devices {sorted(p['peaks'])} not all used")
        h = rp.get(rank)
        if h is None:
            bad.append(f"rank {rank}: not in the report")
        else:
            cmp("report devices", rank, h["devices"], w["devices"])
            cmp("report allocations", rank, h["allocs"], w["allocs"])
            cmp("report peak", rank, h["peak"], human(maxpeak))
            cmp("report end", rank, h["end"], w["end"])
    # a flow waits for every rank of its communicator: only when all are here
    if json.load(open(j_path)).get("completeness") == "complete":
        for i in open_flows:
            bad.append(f"Perfetto flow {i} starts and never finishes")
    for b in bad:
        print(b)
    print(f"{len(ref)} ranks, {nflows} flows: {'agree' if not bad else f'{len(bad)} disagreements'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
