# SPDX-License-Identifier: MIT
"""schema_check.py SCHEMA JSON... - validate JSON files against a JSON Schema.

The subset ranktrace's schemas use (type, enum, required, properties, items,
pattern, anyOf, local $ref) is checked here, so tests need no package; when
the jsonschema package is importable it validates too (and checks the schema
itself). Exit 0, or 1 with the first error and where it is."""
import json
import re
import sys


def check(inst, sch, root, where):
    if "$ref" in sch:
        node = root
        for part in sch["$ref"].lstrip("#/").split("/"):
            node = node[part]
        return check(inst, node, root, where)
    if "anyOf" in sch:
        errs = [check(inst, s, root, where) for s in sch["anyOf"]]
        return None if None in errs else errs[0]
    types = sch.get("type")
    if types is not None:
        types = types if isinstance(types, list) else [types]
        py = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
        ok = any((t == "integer" and isinstance(inst, int) and not isinstance(inst, bool)) or
                 (t in py and isinstance(inst, py[t])) for t in types)
        if not ok:
            return f"{where}: {inst!r} is not {types}"
    if inst is None:
        return None
    if "enum" in sch and inst not in sch["enum"]:
        return f"{where}: {inst!r} not in {sch['enum']}"
    if "pattern" in sch and not re.search(sch["pattern"], inst):
        return f"{where}: {inst!r} does not match {sch['pattern']}"
    for k in sch.get("required", []):
        if k not in inst:
            return f"{where}: missing {k!r}"
    for k, s in sch.get("properties", {}).items():
        if isinstance(inst, dict) and k in inst:
            e = check(inst[k], s, root, f"{where}.{k}")
            if e:
                return e
    if "items" in sch:
        for i, v in enumerate(inst):
            e = check(v, sch["items"], root, f"{where}[{i}]")
            if e:
                return e
    return None


def main():
    schema = json.load(open(sys.argv[1]))
    for path in sys.argv[2:]:
        doc = json.load(open(path))
        err = check(doc, schema, schema, "$")
        if err:
            print(f"{path}: {err}")
            return 1
        try:
            import jsonschema
        except ImportError:
            continue
        try:
            jsonschema.validate(doc, schema)
        except jsonschema.ValidationError as e:
            print(f"{path}: jsonschema: {e.message} at {list(e.absolute_path)}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
