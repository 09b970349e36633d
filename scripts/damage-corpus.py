#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""damage-corpus.py BASE OUT - a corpus of damaged traces made from BASE.

BASE is a healthy trace directory of at least 4 ranks (rank-00000..3, one
stream file each at least); OUT receives one directory per variant, named
NN-what, each a copy of BASE with one kind of damage: truncated stream files
and metadata, flipped bytes in packet headers, event headers and metadata,
zeroed headers, empty or non-regular metadata, missing ranks, duplicate ranks,
ranks without events. Every variant is damage a reader can detect (a byte
flipped inside an event's payload is not: traces carry no checksums), so for
each one `ranktrace verdict` must answer 125 with the reason and `ranktrace
view` exit 3 (tests/integration/test_damage.sh). Prints the variant names.
"""
import os
import shutil
import sys

PACKET_HEADER = 80          # format/schema.h RT_PACKET_HEADER_BYTES
OFF_CONTENT, OFF_SIZE = 48, 56


def stream(d, rank):
    rd = os.path.join(d, "rank-%05d" % rank)
    return os.path.join(rd, sorted(f for f in os.listdir(rd) if f.startswith("stream-"))[0])


def meta(d, rank):
    return os.path.join(d, "rank-%05d" % rank, "metadata")


def truncate(n):
    return lambda d, r=1: os.truncate(stream(d, r), n)


def truncate_frac(f):
    def do(d):
        p = stream(d, 1)
        os.truncate(p, int(os.path.getsize(p) * f) + 13)
    return do


def flip(off, mask=0xFF, rank=2):
    def do(d):
        with open(stream(d, rank), "r+b") as f:
            f.seek(off)
            b = f.read(1)[0]
            f.seek(off)
            f.write(bytes([b ^ mask]))
    return do


def zero(path_of, start, end):
    def do(d):
        p = path_of(d)
        with open(p, "r+b") as f:
            size = os.path.getsize(p)
            f.seek(start)
            f.write(bytes(min(end, size) - start))
    return do


def edit_meta(rank, old, new):
    def do(d):
        p = meta(d, rank)
        b = open(p, "rb").read()
        assert old in b, (p, old)
        open(p, "wb").write(b.replace(old, new, 1))
    return do


def replace_meta(rank, how):
    def do(d):
        p = meta(d, rank)
        os.unlink(p)
        if how == "empty":
            open(p, "wb").close()
        elif how == "dir":
            os.mkdir(p)
        elif how == "fifo":
            os.mkfifo(p)
        elif how == "devzero":
            os.symlink("/dev/zero", p)
    return do


def remove(*ranks):
    return lambda d: [shutil.rmtree(os.path.join(d, "rank-%05d" % r)) for r in ranks]


def copy_rank(rank, name):
    return lambda d: shutil.copytree(os.path.join(d, "rank-%05d" % rank), os.path.join(d, name))


def no_streams(rank):
    def do(d):
        rd = os.path.join(d, "rank-%05d" % rank)
        for f in os.listdir(rd):
            if f.startswith("stream-"):
                os.unlink(os.path.join(rd, f))
    return do


def stream_symlink(rank):
    def do(d):
        p = stream(d, rank)
        os.unlink(p)
        os.symlink("/dev/zero", p)
    return do


VARIANTS = [
    # truncations: inside the header, inside events, one byte short
    *[("truncate-rank1-at-%d" % n, truncate(n)) for n in (1, 16, 40, 79, 100, 1000, 5000)],
    # inside later packets: never on a packet boundary (a file cut there ends
    # cleanly, which no reader can tell from a shorter run)
    *[("truncate-rank1-at-%d%%" % int(f * 100), truncate_frac(f)) for f in (0.3, 0.6, 0.9)],
    ("truncate-rank3-at-3000", lambda d: truncate(3000)(d, 3)),
    ("truncate-rank1-one-byte-short", lambda d: os.truncate(stream(d, 1), os.path.getsize(stream(d, 1)) - 1)),
    ("truncate-metadata-rank1", lambda d: os.truncate(meta(d, 1), 100)),
    # flipped bytes: magic, sizes, an event id, the schema version
    *[("flip-magic-byte%d" % i, flip(i)) for i in range(4)],
    ("flip-packet-size", flip(OFF_SIZE + 6)),
    ("flip-content-size", flip(OFF_CONTENT + 6)),
    ("flip-first-event-id", flip(PACKET_HEADER + 1, 0x80)),
    ("flip-metadata-schema", edit_meta(2, b"ranktrace_schema = 1;", b"ranktrace_schema = 9;")),
    # zeroed headers
    ("zero-packet-header-rank0", zero(lambda d: stream(d, 0), 4, PACKET_HEADER)),
    ("zero-packet-sizes-rank3", zero(lambda d: stream(d, 3), OFF_CONTENT, OFF_SIZE + 8)),
    ("zero-metadata-head-rank2", zero(lambda d: meta(d, 2), 0, 4096)),
    # empty or non-regular metadata
    ("empty-metadata-rank1", replace_meta(1, "empty")),
    ("empty-metadata-rank0", replace_meta(0, "empty")),
    ("metadata-is-a-directory", replace_meta(3, "dir")),
    ("metadata-is-a-fifo", replace_meta(2, "fifo")),
    ("metadata-is-dev-zero", replace_meta(1, "devzero")),
    # missing ranks (the world size in the others' metadata says they exist)
    ("missing-rank2", remove(2)),
    ("missing-rank0", remove(0)),
    ("missing-ranks-1-and-3", remove(1, 3)),
    # duplicates: two directories claim one rank
    ("duplicate-rank1-copied", copy_rank(1, "rank-00004")),
    ("duplicate-rank2-pid-named", copy_rank(2, "rank-p424242")),
    ("duplicate-rank0-by-metadata", edit_meta(3, b"\trank = 3;", b"\trank = 0;")),
    # ranks with nothing to read
    ("no-stream-files-rank3", no_streams(3)),
    ("stream-is-dev-zero-rank1", stream_symlink(1)),
]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    base, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for i, (name, damage) in enumerate(VARIANTS):
        d = os.path.join(out, "%02d-%s" % (i, name))
        shutil.copytree(base, d, symlinks=True)
        damage(d)
        print(os.path.basename(d))


if __name__ == "__main__":
    main()
