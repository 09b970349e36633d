# SPDX-License-Identifier: MIT
# make_wheels.py OUT - wheels of a toy package for test_bisect_pip.sh, built
# by hand (a wheel is a zip with METADATA, WHEEL and RECORD): toypkg 1.0 ...
# 1.16 with PEP 440 oddities (1.10 after 1.9, 1.8.post1, 1.11rc1), the
# 4.53.0 behaviour from 1.7 to 1.14 (fixed in 1.15: 4.53.1's behaviour), and
# a 1.8.post1 whose wheel is corrupt (its install fails); toydep 1.0 and 2.0
# for --with.
import base64, hashlib, os, re, sys, zipfile


def record(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def wheel(out, name, version, files):
    info = f"{name}-{version}.dist-info"
    files = dict(files)
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    files[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: make_wheels\n"
                              b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    lines = [f"{p},{record(d)},{len(d)}" for p, d in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(lines) + "\n").encode()
    path = os.path.join(out, f"{name}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as z:
        for p, d in files.items():
            z.writestr(p, d)
    return path


def main(out):
    os.makedirs(out, exist_ok=True)
    versions = [f"1.{k}" for k in range(17)] + ["1.8.post1", "1.11rc1"]
    for v in versions:
        minor = int(re.match(r"1\.(\d+)", v).group(1))
        behaviour = "4.53.1" if minor >= 15 else "4.53.0" if minor >= 7 else "4.52.4"
        src = f"VERSION = {v!r}\nBEHAVIOUR = {behaviour!r}\n".encode()
        path = wheel(out, "toypkg", v, {"toypkg/__init__.py": src})
        if v == "1.8.post1":
            with open(path, "wb") as f:
                f.write(b"not a zip file: this upload is broken\n")
    for v in ("1.0", "2.0"):
        wheel(out, "toydep", v, {"toydep/__init__.py": f"VERSION = {v!r}\n".encode()})


if __name__ == "__main__":
    main(sys.argv[1])
