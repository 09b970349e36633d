# SPDX-License-Identifier: MIT
"""schema_check.py SCHEMA JSON... - validate JSON files against a JSON Schema.
schema_check.py --doc DOC [--complete] JSON... - check JSON files against the
object tables of docs/json.md, both ways.

The subset ranktrace's schemas use (type, enum, required, properties, items,
pattern, anyOf, local $ref) is checked here, so tests need no package; when
the jsonschema package is importable it validates too (and checks the schema
itself).

--doc: each object of docs/json.md is a table preceded by a marker
`<!-- object SCHEMA PATH... -->` (PATH: `.` the document, `.ranks[]` each
item of ranks, `.points.*` each value of the map points). Every object a
file holds must have its table, every key it prints must be a row of that
table, of a type the row names, and no key may appear twice in one object.
With --complete, every row of the tables of the schemas the files carry must
have been printed by at least one of them (a key documented but never
printed fails). Exit 0, or 1 with every error."""
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


TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool,
         "null": type(None), "array": list, "object": dict, "map": dict}


def doc_tables(path):
    """{schema: {path pattern: {key: (types, is_map)}}} from the markers of path."""
    tables, lines = {}, open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"<!-- object (\S+) (.+?) -->$", line.strip())
        if not m:
            continue
        rows = {}
        for row in lines[i + 1:]:
            if not row.startswith("|"):
                break
            cells = [c.strip() for c in row.strip("|").split("|")]
            if len(cells) < 3 or cells[0] in ("field", "---"):
                continue
            types = {t for t in TYPES if re.search(r"\b%s" % t, cells[1])}
            for key in re.findall(r"`([^`]+)`", cells[0]):
                rows[key] = (types, cells[1].startswith("map"))
        for pattern in m.group(2).split():
            tables.setdefault(m.group(1), {})[pattern] = rows
    return tables


def child(path, key):
    return ("." if path == "." else path + ".") + key


class Walk:
    def __init__(self, tables, name):
        self.tables, self.name, self.errors, self.seen = tables, name, [], set()

    def pairs(self, pairs):
        """object_pairs_hook: a key twice in one object is an error."""
        keys = [k for k, _ in pairs]
        for k in {k for k in keys if keys.count(k) > 1}:
            self.errors.append(f"{self.name}: key {k!r} twice in one object")
        return dict(pairs)

    def value(self, schema, path, v, in_map=False):
        if isinstance(v, list):
            for item in v:
                self.value(schema, path + "[]", item)
        elif isinstance(v, dict):
            self.obj(schema, path, v, in_map)

    def obj(self, schema, path, v, in_map):
        rows = self.tables.get(schema, {}).get(path)
        if rows is None:
            if not in_map:
                self.errors.append(f"{self.name}: {schema} {path}: an object docs/json.md has no table for")
            return
        for k, x in v.items():
            if k not in rows:
                self.errors.append(f"{self.name}: {schema} {path}: key {k!r} printed but not documented")
                continue
            self.seen.add((schema, path, k))
            types, is_map = rows[k]
            if types and not any(isinstance(x, TYPES[t]) and not (t in ("integer", "number") and
                                 isinstance(x, bool)) for t in types):
                self.errors.append(f"{self.name}: {schema} {child(path, k)}: {x!r} is not {sorted(types)}")
            if is_map and isinstance(x, dict):
                for mk, mv in x.items():
                    self.value(schema, child(child(path, k), "*"), mv, in_map=True)
            else:
                self.value(schema, child(path, k), x)


def doc_main(args):
    complete = "--complete" in args
    args = [a for a in args if a != "--complete"]
    tables, errors, seen, schemas = doc_tables(args[0]), [], set(), set()
    for path in args[1:]:
        w = Walk(tables, path)
        doc = json.load(open(path, encoding="utf-8"), object_pairs_hook=w.pairs)
        schema = doc.get("schema") if isinstance(doc, dict) else None
        if schema not in tables:
            errors.append(f"{path}: schema {schema!r} has no tables in {args[0]}")
            continue
        schemas.add(schema)
        w.obj(schema, ".", doc, False)
        errors += w.errors
        seen |= w.seen
    if complete:
        for schema in sorted(schemas):
            for pattern, rows in sorted(tables[schema].items()):
                errors += [f"{schema} {pattern}: key {k!r} documented but never printed"
                           for k in rows if (schema, pattern, k) not in seen]
    for e in errors:
        print(e)
    if not errors:
        print(f"ok: {len(args) - 1} files, {len(seen)} documented keys printed, "
              f"{sum(len(r) for s in schemas for r in tables[s].values())} documented")
    return 1 if errors else 0


def main():
    if sys.argv[1] == "--doc":
        return doc_main(sys.argv[2:])
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
