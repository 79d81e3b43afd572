#!/usr/bin/env python3
"""The crate's public API as sorted text, one item per line, from rustdoc's
JSON output, so that a change to the surface shows as a diff in review.

    RUSTC_BOOTSTRAP=1 cargo rustdoc --lib --features F -- \\
        -Z unstable-options --output-format json
    python3 scripts/public_api.py target/doc/mcp_tasks.json > api/public.txt

Items hidden from the documentation (`#[doc(hidden)]`) are left out, as
are the implementations of auto traits and blanket implementations, which
follow from the types themselves. Counts go to stderr.
"""

import json
import sys


def main(path):
    doc = json.load(open(path))
    index = doc["index"]
    lines = set()
    seen = set()

    def inner(item):
        (kind, body), = item["inner"].items() if isinstance(item["inner"], dict) else [(item["inner"], None)]
        return kind, body

    def hidden(item):
        return "hidden" in json.dumps(item.get("attrs", []))

    def public(item):
        return item.get("visibility") == "public"

    def walk(module_id, prefix):
        module = index.get(str(module_id)) or index.get(module_id)
        if module is None:
            return
        _, body = inner(module)
        for child in body["items"]:
            item = index.get(str(child))
            if item is None or hidden(item):
                continue
            kind, b = inner(item)
            if kind == "use":
                if not public(item):
                    continue
                target = index.get(str(b.get("id"))) if b.get("id") is not None else None
                if b.get("is_glob"):
                    if target is not None:
                        walk(target["id"], prefix)
                    continue
                if target is None:
                    lines.add(f"pub use {prefix}{b['name']} = {b['source']}")
                    continue
                emit(target, prefix + b["name"])
                continue
            if not public(item) or item.get("name") is None:
                continue
            emit(item, prefix + item["name"])

    def emit(item, path):
        key = (item["id"], path)
        if key in seen:
            return
        seen.add(key)
        kind, b = inner(item)
        if kind == "module":
            lines.add(f"pub mod {path}")
            walk(item["id"], path + "::")
        elif kind == "struct":
            lines.add(f"pub struct {path}{generics(b.get('generics'))}")
            k = b.get("kind", {})
            fields = []
            if isinstance(k, dict):
                if "plain" in k:
                    fields = k["plain"].get("fields", [])
                elif "tuple" in k:
                    fields = [f for f in k["tuple"] if f is not None]
            for f in fields:
                fi = index.get(str(f))
                if fi and public(fi) and not hidden(fi):
                    lines.add(f"pub field {path}::{fi['name']}: {ty(inner(fi)[1])}")
            impls(b.get("impls", []), path)
        elif kind == "enum":
            lines.add(f"pub enum {path}{generics(b.get('generics'))}")
            for v in b.get("variants", []):
                vi = index.get(str(v))
                if vi and not hidden(vi):
                    lines.add(f"pub variant {path}::{vi['name']}")
            impls(b.get("impls", []), path)
        elif kind == "union":
            lines.add(f"pub union {path}")
            impls(b.get("impls", []), path)
        elif kind == "trait":
            lines.add(f"pub trait {path}{generics(b.get('generics'))}")
            for t in b.get("items", []):
                ti = index.get(str(t))
                if ti:
                    member(ti, path)
        elif kind == "function":
            lines.add(f"pub {asyncness(b)}fn {path}{signature(b)}")
        elif kind == "type_alias":
            lines.add(f"pub type {path} = {ty(b.get('type'))}")
        elif kind == "constant":
            lines.add(f"pub const {path}: {ty(b.get('type'))}")
        elif kind == "static":
            lines.add(f"pub static {path}: {ty(b.get('type'))}")
        elif kind in ("macro", "proc_macro"):
            lines.add(f"pub macro {path}!")
        else:
            lines.add(f"pub {kind} {path}")

    def impls(ids, path):
        for i in ids:
            im = index.get(str(i))
            if im is None or hidden(im):
                continue
            _, b = inner(im)
            if b.get("is_synthetic") or b.get("blanket_impl") is not None:
                continue
            trait = b.get("trait")
            if trait is None:
                for m in b.get("items", []):
                    mi = index.get(str(m))
                    if mi and public(mi) and not hidden(mi):
                        member(mi, path)
            else:
                neg = "!" if b.get("is_negative") else ""
                lines.add(f"impl {neg}{resolved(trait)} for {path}")

    def member(item, path):
        kind, b = inner(item)
        if kind == "function":
            lines.add(f"pub {asyncness(b)}fn {path}::{item['name']}{signature(b)}")
        elif kind in ("assoc_type",):
            lines.add(f"pub type {path}::{item['name']}")
        elif kind in ("assoc_const",):
            lines.add(f"pub const {path}::{item['name']}: {ty(b.get('type'))}")

    def signature(b):
        sig = b.get("sig") or b.get("decl") or {}
        args = []
        for name, t in sig.get("inputs", []):
            if name == "self":
                args.append(self_arg(t))
            else:
                args.append(f"{name}: {ty(t)}")
        out = sig.get("output")
        ret = f" -> {ty(out)}" if out is not None else ""
        return f"{generics(b.get('generics'))}({', '.join(args)}){ret}"

    def asyncness(b):
        header = b.get("header", {})
        return "async " if header.get("is_async") or header.get("async_") else ""

    def self_arg(t):
        if isinstance(t, dict) and "borrowed_ref" in t:
            r = t["borrowed_ref"]
            return "&mut self" if r.get("is_mutable") or r.get("mutable") else "&self"
        return "self"

    def generics(g):
        if not g:
            return ""
        names = []
        for p in g.get("params", []):
            k = p.get("kind", {})
            if isinstance(k, dict) and "lifetime" in k:
                continue
            if isinstance(k, dict) and "type" in k and k["type"].get("is_synthetic"):
                continue
            names.append(p["name"])
        return f"<{', '.join(names)}>" if names else ""

    def resolved(p):
        name = p.get("path") or p.get("name") or "?"
        args = p.get("args")
        return name + generic_args(args)

    def generic_args(args):
        if not args:
            return ""
        if "angle_bracketed" in args:
            parts = []
            for a in args["angle_bracketed"].get("args", []):
                if "type" in a:
                    parts.append(ty(a["type"]))
                elif "const" in a:
                    parts.append("_")
            for c in args["angle_bracketed"].get("constraints", args["angle_bracketed"].get("bindings", [])):
                binding = c.get("binding", {})
                if isinstance(binding, dict) and "equality" in binding:
                    eq = binding["equality"]
                    parts.append(f"{c['name']} = {ty(eq.get('type', eq))}")
            return f"<{', '.join(parts)}>" if parts else ""
        if "parenthesized" in args:
            p = args["parenthesized"]
            out = f" -> {ty(p['output'])}" if p.get("output") else ""
            return f"({', '.join(ty(t) for t in p.get('inputs', []))}){out}"
        return ""

    def bounds(bs):
        out = []
        for b in bs or []:
            if "trait_bound" in b:
                out.append(resolved(b["trait_bound"]["trait"]))
            elif "outlives" in b:
                out.append(b["outlives"])
        return " + ".join(out)

    def ty(t):
        if t is None:
            return "()"
        if not isinstance(t, dict):
            return str(t)
        (k, v), = t.items()
        if k == "resolved_path":
            return resolved(v)
        if k == "generic":
            return v
        if k == "primitive":
            return v
        if k == "borrowed_ref":
            m = "mut " if v.get("is_mutable") or v.get("mutable") else ""
            lt = f"{v['lifetime']} " if v.get("lifetime") else ""
            return f"&{lt}{m}{ty(v['type'])}"
        if k == "raw_pointer":
            return f"*{'mut' if v.get('is_mutable') or v.get('mutable') else 'const'} {ty(v['type'])}"
        if k == "tuple":
            return f"({', '.join(ty(x) for x in v)})"
        if k == "slice":
            return f"[{ty(v)}]"
        if k == "array":
            return f"[{ty(v['type'])}; {v['len']}]"
        if k == "impl_trait":
            return f"impl {bounds(v)}"
        if k == "dyn_trait":
            return "dyn " + " + ".join(resolved(x["trait"]) for x in v.get("traits", []))
        if k == "qualified_path":
            return f"<{ty(v['self_type'])}>::{v['name']}"
        if k == "function_pointer":
            return "fn(..)"
        return k

    root = doc["root"]
    walk(root, index[str(root)]["name"] + "::")
    out = sorted(lines)
    for line in out:
        print(line)
    kinds = {}
    for line in out:
        words = line.split(" ")
        head = "impl" if words[0] == "impl" else words[2] if words[1] == "async" else words[1]
        kinds[head] = kinds.get(head, 0) + 1
    named = sum(n for k, n in kinds.items() if k in ("struct", "enum", "trait", "type", "const", "static", "macro", "union"))
    print(f"{len(out)} lines: {named} named items; "
          + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
