# SPDX-License-Identifier: MIT
"""sitecustomize for `ranktrace run`: install the PyTorch probe, then run the
sitecustomize this one shadows (the next one on sys.path), if any."""
import importlib.machinery
import importlib.util
import os
import sys


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    import ranktrace_probe
    ranktrace_probe.install()
except Exception as e:  # never break the program
    sys.stderr.write(f"ranktrace probe: warning: not installed ({e!r})\n")
_chain()
