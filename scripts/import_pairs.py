#!/usr/bin/env python3
"""Lists pairs of .rs files that import each other, in src/ and cli/src/.

Usage: python3 scripts/import_pairs.py [--all] [-v]   (from anywhere)

  --all  also pairs of a module's file and a file of its own submodules
         (a `mod.rs` whose children use its shared types while it calls
         into them): listed, but they fail the run only with --all.
  -v     lists every import found.

A file imports another when one of its paths lands on an item (or a
module) that the other file defines: a `use` (not a `pub use`, which
only passes a name on), or a path written in the code (`super::any::X`,
`crate::task::handle::Task`, `sql::decode` after `mod sql;`,
`handle::Task` after `use super::handle;`). Paths are resolved as the
compiler would, roughly: `crate::`, `super::`, `self::`, child modules
(`mod x;`, `#[path]`, inline `mod x { .. }`), names brought in by `use`
(renames and globs included) and re-exports (`pub use`), to the file
that defines the name. Methods are not followed (`state.id()` names no
file). Exit status 1 when a pair is found.
"""

import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATES = [("src", "lib.rs"), ("cli/src", "main.rs")]
ITEM = re.compile(r"^(struct|enum|fn|trait|type|const|static|union)$")
TOKEN = re.compile(
    r"""(?P<ws>\s+)
    |(?P<comment>//[^\n]*|/\*.*?\*/)
    |(?P<string>b?r(?P<hashes>\#*)".*?"(?P=hashes)|b?"(?:\\.|[^"\\])*")
    |(?P<char>b?'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])')
    |(?P<lifetime>'[A-Za-z_][A-Za-z0-9_]*)
    |(?P<ident>r\#[A-Za-z_][A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_]*)
    |(?P<path>::)
    |(?P<number>[0-9][0-9A-Za-z_.]*)
    |(?P<punct>.)""",
    re.S | re.X,
)


def tokens(text):
    """(kind, text, line) for each token, comments and literals dropped
    (a literal keeps its place as a 'lit' token)."""
    out, line = [], 1
    for m in TOKEN.finditer(text):
        kind = m.lastgroup if m.lastgroup != "hashes" else "string"
        s = m.group(0)
        if kind in ("string", "char"):
            out.append(("lit", s, line))
        elif kind in ("ident", "path", "punct", "lifetime", "number"):
            out.append((kind, s, line))
        elif kind == "comment" and s.startswith("//"):
            # `#[path = "..."]` lives in attributes, not comments: nothing to keep.
            pass
        line += s.count("\n")
    return out


class Module:
    def __init__(self, path, file, directory):
        self.path = path  # tuple of names from the crate root
        self.file = file  # the file that holds its items
        self.dir = directory  # where its `mod x;` children live
        self.children = {}  # name -> Module
        self.defs = {}  # name -> line
        self.uses = {}  # name -> (segments, public, line)
        self.globs = []  # (segments, public, line)


class Crate:
    def __init__(self, src, root_file):
        self.src = src
        self.modules = {}
        self.refs = []  # (module, segments, line, from_use)
        self.root = self.load((), os.path.join(src, root_file), src)

    def load(self, path, file, directory):
        module = Module(path, file, directory)
        self.modules[path] = module
        with open(os.path.join(ROOT, file), encoding="utf-8") as f:
            toks = tokens(f.read())
        self.scan(module, toks, 0, len(toks))
        return module

    def scan(self, module, toks, i, end):
        """Reads the items of `module` from toks[i:end]."""
        depth, path_attr = 0, None
        while i < end:
            kind, s, line = toks[i]
            if s == "{":
                depth += 1
            elif s == "}":
                depth -= 1
            elif s == "#" and i + 1 < end and toks[i + 1][1] == "[":
                # `#[path = "x.rs"]` before a `mod`.
                j, attr = i + 2, []
                while j < end and toks[j][1] != "]":
                    attr.append(toks[j])
                    j += 1
                if len(attr) == 3 and attr[0][1] == "path" and attr[2][0] == "lit":
                    path_attr = attr[2][1].strip('"')
                i = j
            elif kind == "ident" and s == "mod" and i + 2 < end and toks[i + 1][0] == "ident":
                name, nxt = toks[i + 1][1], toks[i + 2][1]
                if nxt == ";":
                    self.child_file(module, name, path_attr)
                    i += 2
                elif nxt == "{":
                    close = matching(toks, i + 2)
                    inner = Module(module.path + (name,), module.file, os.path.join(module.dir, name))
                    self.modules[inner.path] = inner
                    module.children[name] = inner
                    self.scan(inner, toks, i + 3, close)
                    i = close
                path_attr = None
            elif kind == "ident" and s == "use" and not (i > 0 and toks[i - 1][1] == "::"):
                public = i > 0 and (toks[i - 1][1] == "pub" or toks[i - 1][1] == ")" and is_vis(toks, i - 1))
                j = i + 1
                while j < end and toks[j][1] != ";":
                    j += 1
                for segments, alias in use_tree(toks[i + 1 : j]):
                    if segments[-1] == "*":
                        module.globs.append((segments[:-1], public, line))
                    else:
                        if segments[-1] == "self":
                            segments = segments[:-1]
                        name = alias or segments[-1]
                        if name != "_":
                            module.uses[name] = (segments, public, line)
                    if not public:
                        self.refs.append((module, segments if segments[-1] != "*" else segments[:-1], line, True))
                i = j
            elif kind == "ident" and ITEM.match(s) and i + 1 < end and toks[i + 1][0] == "ident":
                if not (s == "fn" and depth > 0 and module.defs.get(toks[i + 1][1])):
                    module.defs.setdefault(toks[i + 1][1], line)
            elif kind == "ident" and s == "macro_rules" and i + 2 < end:
                module.defs.setdefault(toks[i + 2][1] + "!", line)
            elif kind == "ident" and i + 1 < end and toks[i + 1][0] == "path" and (
                i == 0 or toks[i - 1][0] != "path"
            ):
                # A path written in the code: its segments up to the last name.
                segments, j = [s], i + 1
                while j + 1 < end and toks[j][0] == "path" and toks[j + 1][0] == "ident":
                    segments.append(toks[j + 1][1])
                    j += 2
                if len(segments) > 1:
                    self.refs.append((module, segments, line, False))
                i = j - 1
            i += 1

    def child_file(self, module, name, path_attr):
        if path_attr:
            base = os.path.dirname(module.file) if module.path == () or os.path.basename(module.file) == "mod.rs" else module.dir
            file = os.path.normpath(os.path.join(base, path_attr))
            directory = os.path.splitext(file)[0]
        else:
            file = os.path.join(module.dir, name + ".rs")
            directory = os.path.join(module.dir, name)
            if not os.path.exists(os.path.join(ROOT, file)):
                file = os.path.join(module.dir, name, "mod.rs")
        if os.path.exists(os.path.join(ROOT, file)):
            module.children[name] = self.load(module.path + (name,), file, directory)

    def resolve(self, module, segments, seen=None):
        """The file that defines what `segments` names, seen from `module`:
        ('mod', Module) or ('file', file), or None (outside the crate)."""
        seen = seen or set()
        key = (module.path, tuple(segments))
        if key in seen or len(seen) > 50:
            return None
        seen.add(key)
        first, rest = segments[0], segments[1:]
        if first == "crate":
            current = ("mod", self.root)
        elif first in ("super", "self"):
            path = module.path
            while segments and segments[0] in ("super", "self"):
                if segments[0] == "super":
                    path = path[:-1]
                segments = segments[1:]
            current, rest = ("mod", self.modules[path]), segments
        else:
            current = self.lookup(module, first, seen)
            if current is None:
                return None
        for name in rest:
            if current[0] != "mod":
                break  # `Type::method`, `Enum::Variant`: the type's file.
            current = self.lookup(current[1], name, seen)
            if current is None:
                return None
        return current

    def lookup(self, module, name, seen):
        if name in module.children:
            return ("mod", module.children[name])
        if name in module.defs:
            return ("file", module.file)
        if name in module.uses:
            segments = module.uses[name][0]
            return self.resolve(module, segments, seen) if segments else None
        for segments, _, _ in module.globs:
            target = self.resolve(module, segments, seen) if segments else None
            if target and target[0] == "mod":
                found = self.lookup(target[1], name, seen)
                if found:
                    return found
        return None


def matching(toks, i):
    depth = 0
    for j in range(i, len(toks)):
        if toks[j][1] == "{":
            depth += 1
        elif toks[j][1] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(toks)


def is_vis(toks, j):
    """Whether the `)` at j closes a `pub(...)`."""
    while j > 0 and toks[j][1] != "(":
        j -= 1
    return j > 0 and toks[j - 1][1] == "pub"


def use_tree(toks):
    """The leaves of a `use` tree: (segments, alias)."""
    out = []

    def walk(i, prefix):
        segments = list(prefix)
        while i < len(toks):
            kind, s, _ = toks[i]
            if s == "{":
                i += 1
                while i < len(toks) and toks[i][1] != "}":
                    i = walk(i, segments)
                    if i < len(toks) and toks[i][1] == ",":
                        i += 1
                return i + 1
            if s == "*":
                out.append((segments + ["*"], None))
                return i + 1
            if kind == "ident" and s != "as":
                segments.append(s)
            elif kind == "path":
                pass
            elif s == "as":
                out.append((segments, toks[i + 1][1]))
                return i + 2
            elif s in (",", "}"):
                break
            i += 1
        if segments and len(segments) > len(prefix):
            out.append((segments, None))
        return i

    walk(0, [])
    return [(s, a) for s, a in out if s and s[0] != "::"]


def main():
    verbose = "-v" in sys.argv[1:]
    strict = "--all" in sys.argv[1:]
    edges = defaultdict(dict)  # file -> {file: line}
    module_of = {}  # file -> its module's path
    files = 0
    for src, root_file in CRATES:
        if not os.path.exists(os.path.join(ROOT, src, root_file)):
            continue
        crate = Crate(src, root_file)
        files += len({m.file for m in crate.modules.values()})
        for m in crate.modules.values():
            module_of.setdefault(m.file, m.path)
        for module, segments, line, from_use in crate.refs:
            if not segments:
                continue
            if not from_use and segments[0] not in ("crate", "super", "self"):
                # A path in the code counts when its first name is the
                # module's own (a child module, or a name it imports).
                if segments[0] not in module.children and segments[0] not in module.uses:
                    continue
            target = crate.resolve(module, segments)
            if target is None:
                continue
            file = target[1].file if target[0] == "mod" else target[1]
            if file != module.file and os.path.basename(file) not in ("lib.rs", "main.rs"):
                edges[module.file].setdefault(file, (line, "::".join(segments)))
    if verbose:
        for a in sorted(edges):
            for b, (line, path) in sorted(edges[a].items()):
                print("%s:%d -> %s (%s)" % (a, line, b, path))
    pairs = sorted({tuple(sorted((a, b))) for a in edges for b in edges[a] if a in edges.get(b, {})})

    def nested(a, b):
        """Whether one file's module holds the other's."""
        ma, mb = module_of[a], module_of[b]
        short, long = sorted((ma, mb), key=len)
        return long[: len(short)] == short

    failing = [p for p in pairs if strict or not nested(*p)]
    for a, b in pairs:
        if not strict and nested(a, b):
            if verbose:
                print("module and submodule: %s and %s" % (a, b))
            continue
        la, pa = edges[a][b]
        lb, pb = edges[b][a]
        print("pair: %s and %s import each other (%s:%d %s; %s:%d %s)" % (a, b, a, la, pa, b, lb, pb))
    skipped = len(pairs) - len(failing)
    if failing:
        sys.exit(1)
    print(
        "no two of %d files import each other" % files
        + (" (%d module and submodule pairs left aside; --all lists them)" % skipped if skipped else "")
    )


if __name__ == "__main__":
    main()
