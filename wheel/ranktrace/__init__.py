# SPDX-License-Identifier: MIT
"""ranktrace, installed with pip: the `ranktrace` command runs the C binary
shipped inside this package (bin/ranktrace), which finds the preload library
(lib/libranktrace.so) and the PyTorch probe (share/ranktrace/python) next to
itself. Nothing here imports torch or CUDA."""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def binary():
    """Path of the ranktrace executable inside the installed package."""
    return os.path.join(_HERE, "bin", "ranktrace")


def library():
    """Path of libranktrace.so (what `ranktrace run` preloads)."""
    return os.path.join(_HERE, "lib", "libranktrace.so")


def main():
    """Console entry point: replace this process with the C command."""
    exe = binary()
    try:
        os.execv(exe, ["ranktrace"] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write(f"ranktrace: cannot run {exe}: {e.strerror}\n")
        return 127
