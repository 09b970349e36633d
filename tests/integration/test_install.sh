#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_install.sh - ranktrace installed as users install it: `make install
# PREFIX=...` (cmake --install) and `pip install .` into a fresh venv (the
# wheel, scikit-build-core from PyPI). With `ranktrace` found on PATH, each
# traces a 2-rank fsdp_mini on the simulated cluster and the PyTorch probe is
# loaded from the installed tree; the bash completion works.
source "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
FSDP=("$B/bin/rt-launch" -n 2 "$B/bin/fsdp_mini" --trainer-version 4.52.4 --steps 2)

# An installed ranktrace ($1: its bin dir, $2: a label) reports its version,
# traces fsdp_mini and hands the probe to Python from its own tree ($3).
installed_works() {
  local bin=$1 what=$2 tree=$3
  PATH="$bin:$PATH" ranktrace --version > "$T/$what.version" 2>&1
  check "$what: ranktrace --version names version, git revision, CUDA and NCCL headers" \
    grep -Eq '^ranktrace [0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]{7,}(-dirty)?|unknown)\)$' "$T/$what.version"
  check "$what: ... built against CUDA x.y and NCCL x.y.z headers" \
    grep -Eq '^built against CUDA runtime headers [0-9]+\.[0-9]+, NCCL headers [0-9]+\.[0-9]+\.[0-9]+' "$T/$what.version"
  PATH="$bin:$PATH" sim timeout -k 5 120 ranktrace run -o "$T/$what.trace" -- "${FSDP[@]}" > "$T/$what.run" 2>&1
  check "$what: a traced 2-rank fsdp_mini exits 0" [ $? -eq 0 ]
  PATH="$bin:$PATH" ranktrace view --json "$T/$what.trace" > "$T/$what.json"
  check "$what: both ranks traced, healthy, on devices 0 and 1" python3 -c "
import json
d = json.load(open('$T/$what.json'))
assert d['verdict'] == 'healthy', d['verdict']
assert [(r['rank'], r['devices'], r['end']) for r in d['ranks']] == [(0, [0], 'exit 0'), (1, [1], 'exit 0')], d['ranks']
"
  PATH="$bin:$PATH" ranktrace run -o "$T/$what.py" -- python3 -c 'import ranktrace_probe; print(ranktrace_probe.__file__)' > "$T/$what.probe" 2>&1
  check "$what: the probe comes from the installed tree" grep -q "^$tree/.*ranktrace_probe/__init__.py\$" "$T/$what.probe"
  rm -rf "$T/$what.trace" "$T/$what.py"
}

P="$T/prefix"
make -s -C "$SRC" install BUILD="$B" PREFIX="$P" > "$T/install.log" 2>&1 ||
  cmake --install "$B" --prefix "$P" > "$T/install.log" 2>&1
check "make install: bin/ranktrace, lib/libranktrace.so, the probe (no sitecustomize: the tracer loads it), ranktrace.h, docs, completion" bash -c "
  [ -x '$P/bin/ranktrace' ] && [ -f '$P/lib/libranktrace.so' ] &&
  [ -f '$P/share/ranktrace/python/ranktrace_probe/__init__.py' ] &&
  [ ! -e '$P/share/ranktrace/python/site' ] && [ -f '$P/include/ranktrace.h' ] &&
  [ -f '$P/share/doc/ranktrace/README.md' ] && [ -f '$P/share/doc/ranktrace/docs/json.md' ] &&
  [ -f '$P/share/bash-completion/completions/ranktrace' ]"
installed_works "$P/bin" prefix "$P"

# bash completion: commands from --help, options from CMD --help, presets from inject --list
complete_words() { # WORD... : what completing the last word offers
  PATH="$P/bin:$PATH" bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));
    _ranktrace; [ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}"' _ "$P/share/bash-completion/completions/ranktrace" "$@"
}
words() { complete_words "$@" | sort | tr '\n' ' '; }
check "completion: 'ranktrace v' offers view, verdict" [ "$(words ranktrace v)" = 'verdict view ' ]
check "completion: 'ranktrace --v' offers --version" [ "$(words ranktrace --v)" = '--version ' ]
check "completion: 'ranktrace run --inj' offers --inject and --inject-file" [ "$(words ranktrace run --inj)" = '--inject --inject-file ' ]
skips=$(sed -n 's/^RT_PRESET("\(sk[^"]*\)".*/\1/p' "$(dirname "$0")/../../format/presets.def" | sort | tr '\n' ' ')
check "completion: 'ranktrace run --inject sk' offers the presets of format/presets.def starting sk ($skips)" \
  [ -n "$skips" -a "$(words ranktrace run --inject sk)" = "$skips" ]
check "completion: 'ranktrace run --inject skip-f' offers the preset skip-fsdp-root" [ "$(words ranktrace run --inject skip-f)" = 'skip-fsdp-root ' ]
check "completion: after -- ranktrace offers nothing (bash's default takes over)" [ "$(words ranktrace run -- fsd)" = '' ]

# The wheel, into a fresh venv (needs PyPI for scikit-build-core; pip caches it).
python3 -m venv "$T/venv"
PIP_DISABLE_PIP_VERSION_CHECK=1 timeout -k 5 400 "$T/venv/bin/pip" install -q "$SRC" > "$T/pip.log" 2>&1
rc=$?
check "pip install . into a fresh venv (exit $rc)" [ $rc -eq 0 ] || tail -20 "$T/pip.log"
site=$("$T/venv/bin/python" -c 'import ranktrace, os; print(os.path.dirname(ranktrace.__file__))' 2>/dev/null)
check "wheel: the binaries and the probe inside the package" bash -c "
  [ -x '$site/bin/ranktrace' ] && [ -f '$site/lib/libranktrace.so' ] &&
  [ -f '$site/share/ranktrace/python/ranktrace_probe/__init__.py' ]"
check "wheel: ranktrace is a console entry point (a Python script in the venv's bin)" \
  bash -c "head -1 '$T/venv/bin/ranktrace' | grep -q python"
check "wheel: no CUDA runtime needed to install or load it" bash -c "
  ! '$T/venv/bin/pip' list 2>/dev/null | grep -qi '^nvidia-' &&
  ! ldd '$site/lib/libranktrace.so' '$site/bin/ranktrace' | grep -q 'libcudart\|libnccl\|libcuda\.'"
installed_works "$T/venv/bin" wheel "$site"
finish
