#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""damage-corpus2.py BASE DEV STORM OUT - the second corpus of damaged traces
(issue 19), beside damage-corpus.py: what a reader may meet on a real disk or
from a hostile user, each a copy of one base trace with one change.

BASE  a healthy trace of 4 ranks, one stream file each (fsdp_mini);
DEV   a trace of 4 ranks whose verdict is device-misplacement, several
      packets a stream (fsdp_mini --steps 6, --inject
      'cudaSetDevice:device=5:rank=1'): its evidence, rank 1's events, rests
      on what they are, not on their times;
STORM a healthy one-process trace with a stream of several files (.1, .2:
      callstorm --calls 30000).

Classes of variants: stream files empty (0 bytes), a directory, a FIFO or a
symlink, in place of a rank's stream or beside it; a stream's middle or first
file missing; extreme times (2^64-1, 2^63, 2^62 on one event or all, 0,
going back within a stream and across ranks, equal across all ranks); sparse
and zero tails; metadata cut anywhere (after each block, inside events, at
fractions) or holding a NUL byte; metadata swapped between ranks or copied
from another run.

Prints one line per variant: its directory name under OUT and what the trace
must read as (tests/integration/test_damage2.sh checks it):
  damaged    verdict inconclusive (125) with the reason, view exit 3,
             view --json completeness damaged or missing;
  damaged1   (DEV) verdict device-misplacement (1, complete evidence
             elsewhere) or inconclusive (125), never healthy; view exit 3;
  keeps1     (DEV, times that can still be ordered: 0, going back, equal
             across ranks) verdict device-misplacement (1), as DEV reads:
             a time that can be ordered is no damage a reader can tell (as a
             flipped payload byte, damage-corpus.py), and must not change it.
"""
import os
import re
import shutil
import struct
import sys

HDR = 80                        # format/schema.h RT_PACKET_HEADER_BYTES
OFF_TS, OFF_CONTENT, OFF_SIZE, OFF_TID = 32, 48, 56, 76
TS_UNUSED = 1 << 62
EXT = 0xFFFF
MASK = 0xFFFFFFFF


# ---- the trace's own layout, from its metadata (TSDL) ----

def event_layout(meta):
    """{event id: (name, payload bytes with the common part, {field: offset})}"""
    text = open(meta, encoding="utf-8", errors="replace").read()
    bits = {m.group(2): int(m.group(1)) for m in
            re.finditer(r"typealias integer \{ size = (\d+);[^}]*\} := (\w+);", text)}
    out = {}
    for m in re.finditer(r'\nevent \{\n\tname = "(\w+)";\n\tid = (\d+);.*?fields := struct \{\n(.*?)\n\t\}',
                         text, re.S):
        off, fields = 0, {}
        for f in re.finditer(r"\t\t(\w+) (\w+)(?:\[(\d+)\])?;", m.group(3)):
            fields[f.group(2)] = off
            off += bits[f.group(1)] // 8 * int(f.group(3) or 1)
        out[int(m.group(2))] = (m.group(1), off, fields)
    return out


def streams(rank_dir):
    return sorted(os.path.join(rank_dir, f) for f in os.listdir(rank_dir) if f.startswith("stream-"))


def packets(data):
    """(offset, packet bytes, content bytes, ts_begin) of each packet (CTF
    sizes are in bits)."""
    off = 0
    while off + HDR <= len(data):
        ts, = struct.unpack_from("<Q", data, off + OFF_TS)
        content, size = (v // 8 for v in struct.unpack_from("<QQ", data, off + OFF_CONTENT))  # bits
        if size < HDR or off + size > len(data):
            return
        yield off, size, content, ts
        off += size


def events(data, layout):
    """Each event of each used packet: [packet offset, event offset, extended, id, time]."""
    for pkt, _size, content, ts in packets(data):
        if ts == TS_UNUSED:
            continue
        clock, off = ts, pkt + HDR
        while off < pkt + content:
            eid, = struct.unpack_from("<H", data, off)
            if eid == EXT:
                eid, clock = struct.unpack_from("<IQ", data, off + 2)
                ext, hdr = True, 14
            else:
                low, = struct.unpack_from("<I", data, off + 2)
                if low < clock & MASK:
                    clock += 1 << 32
                clock = (clock & ~MASK) | low
                ext, hdr = False, 6
            yield [pkt, off, ext, eid, clock, hdr]
            off += hdr + layout[eid][1]


def retime(path, layout, f_begin, f_event):
    """Give each used packet the time f_begin(i, ts) and each event
    f_event(i, ts) (i: the packet's index), re-encoding compact times; an
    event whose new time a compact header cannot say raises. Each packet's
    end time becomes its newest event's, as a writer commits it (a record
    after its packet's end is damage a reader can tell)."""
    data = bytearray(open(path, "rb").read())
    evs = list(events(bytes(data), layout))
    pkts = [p for p in packets(bytes(data)) if p[3] != TS_UNUSED]
    index = {p[0]: i for i, p in enumerate(pkts)}
    clock = {}
    for p in pkts:
        clock[p[0]] = f_begin(index[p[0]], p[3])
        struct.pack_into("<Q", data, p[0] + OFF_TS, clock[p[0]])
    for pkt, off, ext, _eid, ts, _hdr in evs:
        want = f_event(index[pkt], ts)
        if ext:
            struct.pack_into("<Q", data, off + 6, want)
        else:
            c = clock[pkt]
            c = c + (1 << 32) if (want & MASK) < (c & MASK) else c
            c = ((c & ~MASK) | (want & MASK)) & ((1 << 64) - 1)
            assert c == want, "%s: time %d not encodable after %d" % (path, want, clock[pkt])
            struct.pack_into("<I", data, off + 2, want & MASK)
        clock[pkt] = want
    for p in pkts:
        struct.pack_into("<Q", data, p[0] + OFF_TS + 8, clock[p[0]])
    open(path, "wb").write(bytes(data))


# ---- the changes ----

def rank_dir(d, r):
    return os.path.join(d, "rank-%05d" % r)


def meta(d, r):
    return os.path.join(rank_dir(d, r), "metadata")


def layout_of(d):
    rd = sorted(e.path for e in os.scandir(d) if e.name.startswith("rank-"))[0]
    return event_layout(os.path.join(rd, "metadata"))


def one_time(rank, t, all_events=False):
    """Rank's first event (or all of them) at time t, by its packet time."""
    def do(d):
        lay = layout_of(d)
        first = [True]

        def ev(_i, ts):
            if all_events or first[0]:
                first[0] = False
                return t
            return ts
        for s in streams(rank_dir(d, rank)):
            data = open(s, "rb").read()
            evs = list(events(data, lay))
            if not evs:
                continue
            if all_events:
                retime(s, lay, lambda _i, _ts: t & ~MASK, lambda _i, _ts: t)
            else:  # the first event only: its packet begins where t's high bits are
                buf = bytearray(data)
                pkt, off, ext, _eid, _ts, _hdr = evs[0]
                struct.pack_into("<Q", buf, pkt + OFF_TS, t & ~MASK)
                if ext:
                    struct.pack_into("<Q", buf, off + 6, t)
                else:
                    struct.pack_into("<I", buf, off + 2, t & MASK)
                open(s, "wb").write(bytes(buf))
            return
    return do


def all_times(ranks, f_begin, f_event):
    def do(d):
        lay = layout_of(d)
        for r in ranks:
            for s in streams(rank_dir(d, r)):
                retime(s, lay, f_begin, f_event)
    return do


def stream_op(rank, how, which=0):
    def do(d):
        s = streams(rank_dir(d, rank))[which]
        if how == "empty":
            os.truncate(s, 0)
            return
        copy = os.path.join(d, ".kept-" + os.path.basename(s))
        shutil.move(s, copy)
        if how == "dir":
            os.mkdir(s)
        elif how == "fifo":
            os.mkfifo(s)
        elif how == "symlink":  # to a good copy of itself: still not ours to follow
            os.symlink(copy, s)
        elif how == "remove":
            os.unlink(copy)
    return do


def extra_stream(rank, how):
    """A second stream file beside the rank's good one (another thread)."""
    def do(d):
        s = streams(rank_dir(d, rank))[0]
        x = re.sub(r"-(\d+)$", "-99999", s)
        if how == "empty":
            open(x, "wb").close()
        elif how == "dir":
            os.mkdir(x)
        elif how == "fifo":
            os.mkfifo(x)
        elif how == "symlink":
            os.symlink(s, x)
    return do


def storm_file(suffix, how):
    def do(d):
        rd = [e.path for e in os.scandir(d) if e.name.startswith("rank-")][0]
        chain = [s for s in streams(rd) if re.search(r"\.\d+$", s)]
        base = re.sub(r"\.\d+$", "", chain[0])
        p = base + suffix
        if how == "remove":
            os.unlink(p)
        elif how == "empty":
            os.truncate(p, 0)
        elif how == "dir":
            os.unlink(p)
            os.mkdir(p)
        elif how == "sparse":
            os.truncate(p, os.path.getsize(p) + (8 << 30))
    return do


def tail(rank, nbytes, sparse):
    def do(d):
        s = streams(rank_dir(d, rank))[0]
        if sparse:
            os.truncate(s, os.path.getsize(s) + nbytes)
        else:
            with open(s, "ab") as f:
                f.write(bytes(nbytes))
    return do


def cut_meta(rank, where):
    """where(text) -> the byte offset to cut the metadata at."""
    def do(d):
        p = meta(d, rank)
        b = open(p, "rb").read()
        os.truncate(p, where(b))
    return do


def nul_meta(rank, frac):
    def do(d):
        p = meta(d, rank)
        b = bytearray(open(p, "rb").read())
        b[int(len(b) * frac)] = 0
        open(p, "wb").write(bytes(b))
    return do


def swap_meta(a, b):
    def do(d):
        pa, pb = meta(d, a), meta(d, b)
        tmp = pa + ".swap"
        os.rename(pa, tmp)
        os.rename(pb, pa)
        os.rename(tmp, pb)
    return do


def foreign_meta(rank, other):
    return lambda d: shutil.copy(meta(other, rank), meta(d, rank))


def after(marker, skip=0):
    """Just after the first "};" that follows marker (skip more blocks)."""
    def at(b):
        i = b.index(marker)
        for _ in range(skip + 1):
            i = b.index(b"};\n", i) + 3
        return i
    return at


def variants(base, dev, storm):
    huge = (1 << 64) - 1
    v = [
        # empty or non-regular stream files, in place of the rank's or beside it
        ("base", "stream-empty-rank1", stream_op(1, "empty"), "damaged"),
        ("base", "stream-is-a-directory-rank2", stream_op(2, "dir"), "damaged"),
        ("base", "stream-is-a-fifo-rank3", stream_op(3, "fifo"), "damaged"),
        ("base", "stream-is-a-symlink-rank0", stream_op(0, "symlink"), "damaged"),
        ("base", "extra-empty-stream-rank1", extra_stream(1, "empty"), "damaged"),
        ("base", "extra-directory-stream-rank2", extra_stream(2, "dir"), "damaged"),
        ("base", "extra-fifo-stream-rank3", extra_stream(3, "fifo"), "damaged"),
        ("base", "extra-symlink-stream-rank0", extra_stream(0, "symlink"), "damaged"),
        ("dev", "dev-stream-empty-rank1", stream_op(1, "empty"), "damaged1"),
        ("dev", "dev-extra-empty-stream-rank2", extra_stream(2, "empty"), "damaged1"),
        # a stream of several files with one missing, empty or not a file
        ("storm", "storm-middle-file-missing", storm_file(".1", "remove"), "damaged"),
        ("storm", "storm-middle-file-empty", storm_file(".1", "empty"), "damaged"),
        ("storm", "storm-middle-file-a-directory", storm_file(".1", "dir"), "damaged"),
        ("storm", "storm-first-file-missing", storm_file("", "remove"), "damaged"),
        ("storm", "storm-middle-file-sparse-8GiB-tail", storm_file(".1", "sparse"), "damaged"),
        # times no clock reaches: damage
        ("base", "time-2^64-1-first-event-rank1", one_time(1, huge), "damaged"),
        ("base", "time-2^64-1-every-event-rank3", one_time(3, huge, True), "damaged"),
        ("base", "time-2^63-first-event-rank2", one_time(2, 1 << 63), "damaged"),
        ("base", "time-2^62-first-event-rank0", one_time(0, 1 << 62), "damaged"),
        ("dev", "dev-time-2^64-1-first-event-rank1", one_time(1, huge), "damaged1"),
        # times that can still be ordered: no change to what DEV says
        ("dev", "dev-time-zero-everywhere", all_times(range(4), lambda i, t: 0, lambda i, t: 0), "keeps1"),
        ("dev", "dev-time-equal-across-ranks", all_times(range(4), lambda i, t: 10 ** 15 & ~MASK,
                                                       lambda i, t: 10 ** 15), "keeps1"),
        ("dev", "dev-time-rank2-1000s-back", all_times([2], lambda i, t: max(t - 10 ** 12, 0), lambda i, t: max(t - 10 ** 12, 0)),
         "keeps1"),
        ("dev", "dev-time-rank1-at-zero", all_times([1], lambda i, t: 0, lambda i, t: 0), "keeps1"),
        ("dev", "dev-time-going-back-each-packet", all_times(range(4), lambda i, t: max(t - i * 10 ** 11, 0),
                                                             lambda i, t: max(t - i * 10 ** 11, 0)), "keeps1"),
        # zero tails: a sparse 8 GiB one (was > 20 s, 6 GiB RSS) and 2 MiB of zeros
        ("base", "sparse-8GiB-tail-rank1", tail(1, 8 << 30, True), "damaged"),
        ("base", "zero-2MiB-tail-rank2", tail(2, 2 << 20, False), "damaged"),
        ("dev", "dev-sparse-8GiB-tail-rank3", tail(3, 8 << 30, True), "damaged1"),
        # metadata cut after each block, inside events, at fractions; NUL bytes
        ("base", "metadata-cut-after-env-rank1", cut_meta(1, after(b"\nenv {")), "damaged"),
        ("base", "metadata-cut-after-clock-rank1", cut_meta(1, after(b"\nclock {")), "damaged"),
        ("base", "metadata-cut-after-stream-rank1", cut_meta(1, after(b"\nstream {")), "damaged"),
        ("base", "metadata-cut-after-first-event-rank1", cut_meta(1, after(b"\nevent {")), "damaged"),
        ("base", "metadata-cut-after-ten-events-rank2", cut_meta(2, after(b"\nevent {", 9)), "damaged"),
        *[("base", "metadata-cut-at-%d%%-rank%d" % (f, f % 4), cut_meta(f % 4, lambda b, f=f: len(b) * f // 100),
           "damaged") for f in (5, 30, 50, 75, 90, 99)],
        ("base", "metadata-cut-before-last-brace-rank3", cut_meta(3, lambda b: b.rindex(b"};")), "damaged"),
        ("base", "metadata-nul-at-40%-rank1", nul_meta(1, 0.4), "damaged"),
        ("base", "metadata-nul-at-98%-rank2", nul_meta(2, 0.98), "damaged"),
        ("dev", "dev-metadata-cut-after-env-rank2", cut_meta(2, after(b"\nenv {")), "damaged1"),
        # metadata of another rank or run
        ("base", "metadata-swapped-rank1-rank2", swap_meta(1, 2), "damaged"),
        ("base", "metadata-of-another-run-rank0", foreign_meta(0, dev), "damaged"),
        ("dev", "dev-metadata-swapped-rank0-rank3", swap_meta(0, 3), "damaged1"),
    ]
    src = {"base": base, "dev": dev, "storm": storm}
    return [(src[b], name, how, cls) for b, name, how, cls in v]


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    base, dev, storm, out = sys.argv[1:]
    os.makedirs(out, exist_ok=True)
    for i, (src, name, damage, cls) in enumerate(variants(base, dev, storm)):
        d = os.path.join(out, "%02d-%s" % (i, name))
        shutil.copytree(src, d, symlinks=True)
        damage(d)
        print(os.path.basename(d), cls)


if __name__ == "__main__":
    main()
