# SPDX-License-Identifier: MIT
"""check_rooms.py SRC BUILD [DOC] - docs/architecture.md's table of rooms ("may
use") against what the rooms really use (DOC: another copy of the page).

A row of the table names a room (`tracer/`) and what it may use: rooms
(`format/`, `util/`) or one header of a room (`inject/inject.h`); "nothing"
is nothing; a row that may use everything (`tests/`, `cli/`: "every public
header", `bench/`, `fuzz/`) or nothing written in C (`python/`, `docs/`) is
not checked. What a room uses, from the build:
  includes: every header its objects were compiled with (the compiler's .d
            files), whatever room's folder holds it;
  calls:    every symbol of ranktrace's own (rt_*, bs_*) its objects need
            (nm -u) that another room's objects define (tests/, bench/
            and fuzz/ define stand-ins: they count for no room).
A use the row does not list fails; so does a room the row lists that the
room does not use (the table says no more than is true), and, for a row
that names one header of a room, a direct #include of another of its files.
Exit 0, or 1 with every mismatch."""
import glob
import os
import re
import subprocess
import sys

SRC, BUILD = (os.path.realpath(p) for p in sys.argv[1:3])
DOC = sys.argv[3] if len(sys.argv) > 3 else os.path.join(SRC, "docs/architecture.md")
CONSUMERS = ("tests", "bench", "fuzz")
UNCHECKED = ("everything", "every public header", "all public headers", "built libraries",
             "the libraries they fuzz")


def table():
    """{room: (rooms, {room: header}) or None when the row is not checked}"""
    text = open(DOC).read()
    sec = text.split("## The rooms", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in sec.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.fullmatch(r"`([a-z]+)/`", cells[0]) if len(cells) >= 3 else None
        if not m:
            continue
        may = cells[-1]
        if not may or any(u in may for u in UNCHECKED) or not os.path.isdir(os.path.join(SRC, m[1])):
            rows[m[1]] = None
            continue
        rooms, headers = set(), {}
        for room, rest in re.findall(r"`([a-z]+)/([^`]*)`", may):
            rooms.add(room)
            if rest:
                headers[room] = os.path.basename(rest)
        rows[m[1]] = (rooms, headers)
    return rows


def room_of(path):
    """The room of a path in the source tree, or None (outside it, or a build file)."""
    path = os.path.realpath(path)
    if not path.startswith(SRC + os.sep) or path.startswith(BUILD + os.sep):
        return None
    return os.path.relpath(path, SRC).split(os.sep)[0]


def objects():
    """[(room, object, source, [dependencies])] of every object still built"""
    out = []
    for d in glob.glob(os.path.join(BUILD, "**", "*.o.d"), recursive=True):
        obj = d[:-2]
        deps = open(d).read().replace("\\\n", " ").split(":", 1)[-1].split()
        if not deps or not os.path.exists(deps[0]) or not os.path.exists(obj):
            continue  # a stale object: its source moved or was removed
        room = room_of(deps[0])
        if room and room not in CONSUMERS:
            out.append((room, obj, deps[0], deps[1:]))
    return out


def nm(args, obj):
    r = subprocess.run(["nm"] + args + [obj], capture_output=True, text=True)
    return r.stdout.splitlines()


def main():
    rows, objs = table(), objects()
    errors, defined, uses = [], {}, {}
    for room, obj, _, _ in objs:
        for line in nm(["-g", "--defined-only"], obj):
            f = line.split()
            if len(f) >= 3 and f[1] in "TDBRVW" and f[2].startswith(("rt_", "bs_")):
                defined.setdefault(f[2], set()).add(room)
    for room, obj, src, deps in objs:
        got = uses.setdefault(room, {})
        for dep in deps:
            other = room_of(dep)
            if other and other != room:
                got.setdefault(other, set()).add(f"includes {os.path.relpath(dep, SRC)}")
        for line in nm(["-u"], obj):
            sym = line.split()[-1]
            for other in defined.get(sym, ()):
                if other != room and room not in defined.get(sym, ()):
                    got.setdefault(other, set()).add(f"calls {sym}")
    checked = 0
    for room, row in sorted(rows.items()):
        if row is None:
            continue
        checked += 1
        rooms, headers = row
        got = uses.get(room, {})
        for other, how in sorted(got.items()):
            if other not in rooms:
                errors.append(f"{room}/ uses {other}/ (not in its row): " +
                              ", ".join(sorted(how)[:3]))
        for other in sorted(rooms - set(got)):
            if os.path.isdir(os.path.join(SRC, other)) and room in uses:
                errors.append(f"{room}/'s row lists {other}/, which it does not use")
        for other, header in headers.items():
            for f in glob.glob(os.path.join(SRC, room, "**", "*.[ch]"), recursive=True):
                for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', open(f).read(), re.M):
                    if (os.path.exists(os.path.join(SRC, other, inc)) and inc != header and
                            not os.path.exists(os.path.join(os.path.dirname(f), inc))):
                        errors.append(f"{os.path.relpath(f, SRC)} includes {other}/{inc}; "
                                      f"its row allows {other}/{header} only")
    for e in errors:
        print("  " + e)
    print(f"{checked} rows checked against {len(objs)} objects")
    return 1 if errors or not checked or not objs else 0


sys.exit(main())
