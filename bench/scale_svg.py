# SPDX-License-Identifier: MIT
"""bench/scale_svg.py - draw bench/scale.sh's table as an SVG: verdict time and
peak RSS against events in the trace (log scales), one line per events-per-
rank series (ranks growing along it) and one for 8 ranks (events per rank
growing). Plain python3, no dependencies.
    python3 bench/scale_svg.py scale.tsv scale.svg"""
import csv
import math
import sys

W, H, PAD, GAP = 440, 300, 58, 40
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def series(rows):
    """8-rank shapes as one line, the others by events per rank."""
    out = {}
    for r in rows:
        key = "8 ranks, 0.25-4.1 M events each" if r["ranks"] == 8 else \
            f"{r['events_per_rank']:,} events per rank, 1k-16k ranks"
        out.setdefault(key, []).append(r)
    for v in out.values():
        v.sort(key=lambda r: r["events"])
    return out


def axis(lo, hi):
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    return (a, b if b > a else a + 1)


def panel(x0, rows, lines, field, label, fmt):
    ex = axis(min(r["events"] for r in rows), max(r["events"] for r in rows))
    ey = axis(min(r[field] for r in rows), max(r[field] for r in rows))

    def px(v):
        return x0 + PAD + (math.log10(v) - ex[0]) / (ex[1] - ex[0]) * (W - PAD - 10)

    def py(v):
        return H - PAD + 10 - (math.log10(v) - ey[0]) / (ey[1] - ey[0]) * (H - PAD - 20)

    s = [f'<text x="{x0 + W / 2}" y="16" text-anchor="middle" font-weight="bold">{label}</text>']
    for e in range(ex[0], ex[1] + 1):
        s.append(f'<line x1="{px(10 ** e):.1f}" y1="{py(10 ** ey[0]):.1f}" x2="{px(10 ** e):.1f}" '
                 f'y2="{py(10 ** ey[1]):.1f}" stroke="#ddd"/>')
        s.append(f'<text x="{px(10 ** e):.1f}" y="{H - PAD + 26}" text-anchor="middle">1e{e}</text>')
    for e in range(ey[0], ey[1] + 1):
        s.append(f'<line x1="{px(10 ** ex[0]):.1f}" y1="{py(10 ** e):.1f}" x2="{px(10 ** ex[1]):.1f}" '
                 f'y2="{py(10 ** e):.1f}" stroke="#ddd"/>')
        s.append(f'<text x="{x0 + PAD - 6}" y="{py(10 ** e) + 4:.1f}" text-anchor="end">{fmt(10 ** e)}</text>')
    s.append(f'<text x="{x0 + W / 2 + PAD / 2}" y="{H - 8}" text-anchor="middle">events in the trace</text>')
    for k, (name, pts) in enumerate(lines.items()):
        c = COLORS[k % len(COLORS)]
        xy = " ".join(f"{px(r['events']):.1f},{py(r[field]):.1f}" for r in pts)
        s.append(f'<polyline points="{xy}" fill="none" stroke="{c}" stroke-width="2"/>')
        for r in pts:
            s.append(f'<circle cx="{px(r["events"]):.1f}" cy="{py(r[field]):.1f}" r="3.5" fill="{c}">'
                     f'<title>{r["ranks"]} ranks x {r["events_per_rank"]} events: '
                     f'{r["seconds"]:.2f} s, {r["rss_mib"]:.0f} MiB</title></circle>')
            s.append(f'<text x="{px(r["events"]) + 5:.1f}" y="{py(r[field]) - 5:.1f}" font-size="9" '
                     f'fill="{c}">{r["ranks"]}</text>')
    return s


def main():
    with open(sys.argv[1]) as f:
        rows = [{k: float(v) if k in ("seconds", "cpu_seconds") else int(v) for k, v in r.items()}
                for r in csv.DictReader(f, delimiter="\t")]
    if not rows:
        sys.exit("scale_svg: no rows in " + sys.argv[1])
    for r in rows:
        r["rss_mib"] = r["peak_rss_kib"] / 1024
        r["seconds"] = max(r["seconds"], 0.01)
    lines = series(rows)
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * W + GAP}" height="{H + 20 * len(lines) + 10}" '
         'font-family="sans-serif" font-size="11">', '<rect width="100%" height="100%" fill="white"/>']
    s += panel(0, rows, lines, "seconds", "ranktrace verdict: seconds (median)", lambda v: f"{v:g} s")
    s += panel(W + GAP, rows, lines, "rss_mib", "peak RSS (ulimit -n 1024)", lambda v: f"{v:g} MiB")
    for k, name in enumerate(lines):
        y = H + 14 + 20 * k
        s.append(f'<rect x="{PAD}" y="{y - 9}" width="14" height="4" fill="{COLORS[k % len(COLORS)]}"/>')
        s.append(f'<text x="{PAD + 20}" y="{y - 3}">{name} (dots labelled by ranks)</text>')
    s.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(s) + "\n")


if __name__ == "__main__":
    main()
