#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# check_safe.py FILE... - is every file fit to reach a terminal, a browser or
# a JSON parser raw? Valid UTF-8, and none of what util/escape.h escapes: C0
# controls (but newline and tab), DEL, C1 controls, bidi controls (U+061C,
# U+200E/U+200F, U+202A-U+202E, U+2066-U+2069), U+2028/U+2029. Prints each
# file's first offence (file, byte offset, what) and exits 1 on any.
import sys

UNSAFE = {0x061C, 0x200E, 0x200F, 0x2028, 0x2029} | set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A))


def first_offence(data):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start, f"invalid UTF-8 {data[e.start:e.start + 4]!r}"
    pos = 0
    for ch in text:
        cp = ord(ch)
        if (cp < 0x20 and ch not in "\n\t") or 0x7F <= cp <= 0x9F or cp in UNSAFE:
            return pos, f"raw U+{cp:04X}"
        pos += len(ch.encode("utf-8"))
    return None


bad = 0
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        found = first_offence(f.read())
    if found:
        bad += 1
        print(f"{path}: byte {found[0]}: {found[1]}")
sys.exit(1 if bad else 0)
