# SPDX-License-Identifier: MIT
"""check_report.py DOM.html [--no-device-memory] - what a reader sees in a rendered ranktrace report
(Chromium's --dump-dom), checked from the SVG coordinates and the DOM:
- the timeline's active part (first span start to last span end) covers at
  least 60 % of its viewBox width (the axis starts at the first event drawn);
- the memory chart has a legend entry for every (rank, device) line plotted;
- every placement cell has text, not colour only;
- one bytes format (B, KiB, MiB, GiB) in the ranks table.
Prints the figures; exit 1 with the first failure."""
import re
import sys
from html.parser import HTMLParser


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.svg = None
        self.viewbox = {}
        self.rects, self.lines = [], []
        self.legend = None
        self.legend_text = {"timeline-legend": [], "memory-legend": []}
        self.cells, self.in_cell = [], False
        self.ranks_cells, self.in_ranks = [], False

    def handle_starttag(self, tag, a):
        a = dict(a)
        if tag == "svg":
            self.svg = a.get("id")
            self.viewbox[self.svg] = [float(v) for v in a.get("viewbox", "0 0 0 0").split()]
        elif tag == "rect" and self.svg == "timeline":
            self.rects.append((float(a["x"]), float(a["width"])))
        elif tag == "polyline" and self.svg == "memory":
            self.lines.append(a)
        elif tag == "div" and a.get("id") in self.legend_text:
            self.legend = a["id"]
        elif tag == "td" and "p" in a.get("class", "").split():
            self.in_cell = True
            self.cells.append("")
        elif tag == "table" and a.get("id") == "ranks":
            self.in_ranks = True

    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg = None
        elif tag == "div":
            self.legend = None
        elif tag == "td":
            self.in_cell = False
        elif tag == "table":
            self.in_ranks = False

    def handle_data(self, data):
        if self.legend:
            self.legend_text[self.legend].append(data)
        if self.in_cell:
            self.cells[-1] += data
        if self.in_ranks:
            self.ranks_cells.append(data)


def main(path, no_memory=False):
    p = Page()
    p.feed(open(path).read())
    width = p.viewbox["timeline"][2]
    assert p.rects, "no span on the timeline"
    start = min(x for x, w in p.rects)
    end = max(x + w for x, w in p.rects)
    active = (end - start) / width
    print(f"timeline: {len(p.rects)} spans, active {start:.1f}..{end:.1f} of {width:.0f} "
          f"({100 * active:.1f} %)")
    assert active >= 0.60, f"active part {100 * active:.1f} % < 60 %"
    legend = " ".join(p.legend_text["memory-legend"])
    if no_memory:  # a CPU-only run: no line, and the legend says so
        assert not p.lines and "no device allocation traced" in legend, legend
        print("memory: no device allocation traced (CPU run)")
    else:
        for line in p.lines:
            dev = line["data-device"]
            assert f"cuda:{dev}" in legend, f"device {dev} plotted, not in the legend: {legend}"
        print(f"memory: {len(p.lines)} lines, legend: {legend}")
        assert p.lines, "no memory line"
    assert all(c.strip() for c in p.cells), "a placement cell without text"
    print(f"placement: {len(p.cells)} cells, all with text")
    sizes = [c for c in p.ranks_cells if re.fullmatch(r"\d+(\.\d)? (B|KiB|MiB|GiB|TiB)", c.strip())]
    assert sizes, "no byte size in the ranks table"
    assert not [c for c in p.ranks_cells if re.fullmatch(r"\d+ B", c.strip()) and int(c.split()[0]) >= 1024], \
        "raw byte counts over 1 KiB in the ranks table"


if __name__ == "__main__":
    try:
        main(sys.argv[1], "--no-device-memory" in sys.argv[2:])
    except AssertionError as e:
        print(f"FAIL: {e}")
        sys.exit(1)
