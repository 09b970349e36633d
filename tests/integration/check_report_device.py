# SPDX-License-Identifier: MIT
"""check_report_device.py DOM.html (--straggler RANK --late-ms MS [--view-json J] | --none) - the report's
device section as Chromium rendered it (--dump-dom):
- a row per rank in table#device, each with a share bar and a lateness bar
  inside their viewBox (0..100), no NaN or Infinity in any SVG attribute;
- --straggler: p#straggler names "rank RANK is the straggler" as view's
  finding does, RANK's row is marked, its share bar the longest; svg#lateness
  has a bar per collective inside the chart, the late ones (over MS/2) late
  by MS within 20 % (median), as many as the faults view --json J counts on
  RANK, and every rank's share and mean lateness bars carry view's figures;
- --none: p#straggler says "No straggler", no row marked, no lateness chart.
Prints the figures; exit 1 with the first failure."""
import argparse
import json
import math
import sys
from html.parser import HTMLParser


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self.row = {}, None
        self.in_device = False
        self.straggler_text, self.in_p = "", False
        self.lateness = None
        self.svg_attrs = []
        self.svg = None

    def handle_starttag(self, tag, a):
        a = dict(a)
        if tag == "table" and a.get("id") == "device":
            self.in_device = True
        elif tag == "tr" and self.in_device and "data-rank" in a:
            self.row = int(a["data-rank"])
            self.rows[self.row] = {"straggler": "straggler" in (a.get("class") or ""), "bars": {}}
        elif tag == "svg":
            self.svg = a
            if a.get("id") == "lateness":
                self.lateness = {"viewbox": [float(v) for v in a["viewbox"].split()], "bars": []}
        elif tag == "rect" and self.row is not None and self.svg is not None:
            kind = [c for c in self.svg.get("class", "").split() if c != "bar"][0]
            self.rows[self.row]["bars"][kind] = (float(a["width"]), float(a["data-value"]))
        elif tag == "rect" and self.svg is not None and self.svg.get("id") == "lateness":
            self.lateness["bars"].append({k: float(a[k]) for k in
                                          ("x", "y", "width", "height", "data-late-ms")})
        elif tag == "p" and a.get("id") == "straggler":
            self.in_p = True
        if tag in ("svg", "rect", "line", "polyline"):
            self.svg_attrs += [v for v in a.values() if v]

    def handle_endtag(self, tag):
        if tag == "table":
            self.in_device = False
        elif tag == "tr":
            self.row = None
        elif tag == "svg":
            self.svg = None
        elif tag == "p":
            self.in_p = False

    def handle_data(self, data):
        if self.in_p:
            self.straggler_text += data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dom")
    ap.add_argument("--straggler", type=int)
    ap.add_argument("--late-ms", type=float)
    ap.add_argument("--view-json")
    ap.add_argument("--none", action="store_true")
    args = ap.parse_args()
    p = Page()
    p.feed(open(args.dom).read())
    print(f"device section: {p.straggler_text.strip()}")
    assert p.rows, "no table#device rows"
    for a in p.svg_attrs:
        assert not any(w in a.lower() for w in ("nan", "inf")), f"non-finite SVG attribute {a!r}"
    for r, row in sorted(p.rows.items()):
        assert set(row["bars"]) == {"share", "late"}, f"rank {r}: bars {row['bars']}"
        for kind, (w, v) in row["bars"].items():
            assert 0 <= w <= 100 and math.isfinite(v), f"rank {r}: {kind} bar {w} ({v})"
        print(f"  rank {r}: share {row['bars']['share'][1]:.3f}, mean lateness "
              f"{row['bars']['late'][1]:.3f} ms{' (straggler)' if row['straggler'] else ''}")
    marked = [r for r, row in p.rows.items() if row["straggler"]]
    if args.none:
        assert "No straggler" in p.straggler_text, p.straggler_text
        assert not marked, f"rows marked as straggler: {marked}"
        assert p.lateness is None, "a lateness chart without a straggler"
        return
    s = args.straggler
    assert f"rank {s} is the straggler" in p.straggler_text, p.straggler_text
    assert marked == [s], f"rows marked: {marked}"
    share = {r: row["bars"]["share"][0] for r, row in p.rows.items()}
    assert share[s] == max(share.values()), f"share bars {share}"
    assert p.lateness and p.lateness["bars"], "no lateness chart"
    _, _, w, h = p.lateness["viewbox"]
    bars = p.lateness["bars"]
    for b in bars:
        assert 0 <= b["x"] and b["x"] + b["width"] <= w and 0 <= b["y"] and b["y"] + b["height"] <= h, \
            f"a bar off the chart: {b}"
    late = sorted(b["data-late-ms"] for b in bars if b["data-late-ms"] > args.late_ms / 2)
    assert late, "no late collective"
    median = late[len(late) // 2]
    print(f"  lateness chart: {len(bars)} bars inside {w:.0f}x{h:.0f}, {len(late)} late, "
          f"median {median:.2f} ms (from {late[0]:.2f} to {late[-1]:.2f})")
    assert abs(median - args.late_ms) <= 0.2 * args.late_ms, f"median lateness {median} ms, not {args.late_ms} +- 20 %"
    if args.view_json:
        v = json.load(open(args.view_json))
        faults = [r["faults"] for r in v["ranks"] if r["rank"] == s][0]
        assert len(late) == faults, f"{len(late)} late collectives, {faults} faults fired"
        for r in v["device"]["stragglers"]["ranks"]:
            share, late_ms = p.rows[r["rank"]]["bars"]["share"][1], p.rows[r["rank"]]["bars"]["late"][1]
            assert abs(share - r["share"]) < 1e-3 and abs(late_ms - r["mean_late_ms"]) < 1e-2, \
                f"rank {r['rank']}: report {share}, {late_ms} ms; view {r['share']}, {r['mean_late_ms']} ms"
        print(f"  as view --json: {faults} faults fired on rank {s}, shares and mean lateness the same")

if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAIL: {e}")
        sys.exit(1)
