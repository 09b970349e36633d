#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""damage-corpus3.py BASE EVENTS OUT - the third corpus of damaged traces
(issue 28): records lost, told from records never written. Each variant is a
copy of one base trace with one change.

BASE    a healthy trace of 4 ranks, fsdp_mini --steps 400: each rank's main
        stream in several files (stream-PID-TID, .1, .2) and a device thread's
        stream (the NCCL profiler plugin's rt_dev_coll records), also in
        several files;
EVENTS  a healthy trace whose device records come from CUDA events
        (RANKTRACE_DEVICE_SOURCE=events): a poller thread's stream per rank.

Its writer promised whole files, each begun by rt_stream_file (metadata env
file_records): so zeros where it wrote packet headers or records (a lost page
cache after a node crash, a sparse copy, a filesystem that zero-fills) are
records lost, wherever they are: a whole file (each of them, the first, a
middle one, the last), packets of a first file with a later file after it,
the stretch across a file boundary, a page inside a packet's records,
records cut from a packet that is still whole (an older copy of its header),
a device thread's or a poller's stream. Zeros past the last record of a
stream's last packet were never written: no loss.

Prints one line per variant: its directory name under OUT and what it must
read as (tests/integration/test_damage3.sh checks it):
  damaged  verdict inconclusive (125) naming the rank, the file and the
           offset; view exit 3; view --json completeness damaged;
  healthy  verdict healthy (0), view exit 0: nothing written was lost.
"""
import glob
import os
import shutil
import struct
import sys

HDR = 80                                # format/schema.h RT_PACKET_HEADER_BYTES
OFF_TS_BEGIN, OFF_CONTENT, OFF_SIZE = 32, 48, 56
TS_UNUSED = 1 << 62
PAGE = 4096


def streams(rank_dir):
    """{(pid, tid): [file paths in file-number order]}"""
    out = {}
    for p in glob.glob(os.path.join(rank_dir, "stream-*")):
        base = os.path.basename(p)
        name, _, num = base.partition(".")
        pid, tid = (int(x) for x in name.split("-")[1:3])
        out.setdefault((pid, tid), []).append((int(num or 0), p))
    return {k: [p for _, p in sorted(v)] for k, v in out.items()}


def packets(path):
    """[(offset, content bytes, packet bytes, used)] of a stream file"""
    data = open(path, "rb").read()
    out, off = [], 0
    while off + HDR <= len(data):
        ts_begin, = struct.unpack_from("<Q", data, off + OFF_TS_BEGIN)
        content, size = (v // 8 for v in struct.unpack_from("<QQ", data, off + OFF_CONTENT))
        if size < HDR:
            break
        out.append((off, content, size, ts_begin != TS_UNUSED))
        off += size
    return out


def main_stream(rank_dir):
    return [f for (pid, tid), f in streams(rank_dir).items() if pid == tid][0]


def device_stream(rank_dir):
    """The other thread's stream with the most files (the device records')."""
    others = [f for (pid, tid), f in streams(rank_dir).items() if pid != tid]
    return max(others, key=len)


def zero(path, start, end):
    with open(path, "r+b") as f:
        f.seek(start)
        f.write(b"\0" * (end - start))


def zero_file(which, n):
    """Zero file number n of rank 1's main (or device) stream, whole."""
    def apply(d):
        f = which(os.path.join(d, "rank-00001"))[n]
        zero(f, 0, os.path.getsize(f))
    return apply


def zero_packets(rank, first, last):
    """Zero packets first..last of rank's main stream's first file."""
    def apply(d):
        f = main_stream(os.path.join(d, "rank-%05d" % rank))[0]
        pk = packets(f)
        zero(f, pk[first][0], pk[last][0] + pk[last][2])
    return apply


def zero_boundary(rank, n):
    """The last packet of file n and the first of file n + 1."""
    def apply(d):
        files = main_stream(os.path.join(d, "rank-%05d" % rank))
        a, b = files[n], files[n + 1]
        pa = packets(a)[-1]
        zero(a, pa[0], pa[0] + pa[2])
        zero(b, 0, packets(b)[0][2])
    return apply


def zero_page(which, rank, n):
    """A page inside the records of the middle used packet of file n."""
    def apply(d):
        f = which(os.path.join(d, "rank-%05d" % rank))[n]
        used = [p for p in packets(f) if p[3] and p[1] >= 2 * PAGE + 512]
        off, content, _, _ = used[len(used) // 2]
        zero(f, off + PAGE, off + 2 * PAGE)
    return apply


def cut_records(rank, n):
    """File n's second packet says it holds no record: an older copy of its
    header (its records' pages lost, the header's not)."""
    def apply(d):
        f = main_stream(os.path.join(d, "rank-%05d" % rank))[n]
        off = packets(f)[1][0]
        with open(f, "r+b") as o:
            o.seek(off + OFF_CONTENT)
            o.write(struct.pack("<Q", HDR * 8))
    return apply


def zero_unwritten(rank):
    """Past the last record of the device stream's last used packet: the
    writer had written nothing there yet."""
    def apply(d):
        f = device_stream(os.path.join(d, "rank-%05d" % rank))[-1]
        off, content, size, _ = [p for p in packets(f) if p[3]][-1]
        start = (off + content + PAGE - 1) // PAGE * PAGE
        assert start < off + size, "the last packet is full: nothing unwritten to zero"
        zero(f, start, off + size)
    return apply


def zero_poller(rank):
    """The poller thread's stream (CUDA-event source), every file."""
    def apply(d):
        for f in device_stream(os.path.join(d, "rank-%05d" % rank)):
            zero(f, 0, os.path.getsize(f))
    return apply


VARIANTS = [
    ("base", "untouched", lambda d: None, "healthy"),
    ("base", "zero-rank1-main-file0", zero_file(main_stream, 0), "damaged"),
    ("base", "zero-rank1-main-file1", zero_file(main_stream, 1), "damaged"),
    ("base", "zero-rank1-main-file2-the-last", zero_file(main_stream, 2), "damaged"),
    ("base", "zero-rank2-first-file-packets-2-4", zero_packets(2, 1, 3), "damaged"),
    ("base", "zero-rank3-boundary-file0-file1", zero_boundary(3, 0), "damaged"),
    ("base", "zero-rank0-boundary-file1-file2", zero_boundary(0, 1), "damaged"),
    ("base", "zero-rank2-page-in-file1", zero_page(main_stream, 2, 1), "damaged"),
    ("base", "zero-rank1-page-in-the-last-file", zero_page(main_stream, 1, 2), "damaged"),
    ("base", "cut-rank3-records-of-file1", cut_records(3, 1), "damaged"),
    ("base", "zero-rank1-device-stream-file1", zero_file(device_stream, 1), "damaged"),
    ("base", "zero-rank2-page-in-device-stream", zero_page(device_stream, 2, 1), "damaged"),
    ("base", "zero-rank0-never-written-tail", zero_unwritten(0), "healthy"),
    ("events", "events-untouched", lambda d: None, "healthy"),
    ("events", "events-zero-rank2-poller-stream", zero_poller(2), "damaged"),
]


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    bases = {"base": sys.argv[1], "events": sys.argv[2]}
    out = sys.argv[3]
    os.makedirs(out, exist_ok=True)
    for base, name, apply, cls in VARIANTS:
        d = os.path.join(out, name)
        shutil.copytree(bases[base], d, symlinks=True)
        apply(d)
        print(name, cls)


if __name__ == "__main__":
    main()
