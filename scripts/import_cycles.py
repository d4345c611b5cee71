#!/usr/bin/env python3
"""Lists import loops between source files of each crate: file A `use`s something from file
B while B (directly or through other files) uses something from A.

A parent using its own descendants (`mod child`, `pub use child::X`) is the module tree and
not counted; everything else is, including a child using its parent's items. Test files (`tests.rs`, `*_tests.rs`
and `#[cfg(test)] mod tests` blocks) are left out: tests may look at anything.

Usage: scripts/import_cycles.py [CRATE_SRC_DIR ...]   (default: src crates/*/src)
Exit status 1 when a loop is found.
"""
import glob
import os
import re
import sys

USE_RE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)
PATH_RE = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def module_files(src):
    """Maps a module path (tuple of names) to its file, for one crate's src folder."""
    files = {}
    for path in glob.glob(os.path.join(src, "**", "*.rs"), recursive=True):
        rel = os.path.relpath(path, src)[:-3].split(os.sep)
        if rel[-1] in ("lib", "main") and len(rel) == 1:
            mod = ()
        elif rel[-1] == "mod":
            mod = tuple(rel[:-1])
        else:
            mod = tuple(rel)
        files[mod] = path
    return files


def strip_tests(text):
    """Drops `#[cfg(test)] mod x { ... }` blocks (brace matching on the raw text)."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def expand(use_tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (good enough for paths)."""
    use_tree = re.sub(r"\s+", "", use_tree)
    m = re.match(r"^(.*?)::\{(.*)\}$", use_tree)
    if not m:
        return [use_tree.split(" as ")[0]]
    prefix, inner = m.groups()
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    if cur:
        parts.append(cur)
    out = []
    for p in parts:
        for e in expand(p):
            out.append(prefix if e == "self" else f"{prefix}::{e}")
    return out


def resolve(mod, path, files):
    """The file a `crate::`/`super::` path lands in: the longest module prefix that is a file."""
    segs = path.split("::")
    if segs[0] == "crate":
        base, rest = (), segs[1:]
    else:
        base = mod
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
        rest = segs
    best = None
    for k in range(len(rest) + 1):
        cand = base + tuple(rest[:k])
        if cand in files:
            best = cand
    return best


def edges_of(src):
    files = module_files(src)
    edges = {}
    for mod, path in files.items():
        name = os.path.basename(path)
        if name == "tests.rs" or name.endswith("_tests.rs") or "tests" in mod:
            continue
        text = strip_tests(open(path, encoding="utf-8").read())
        targets = set()
        for m in USE_RE.finditer(text):
            for p in expand(m.group(1)):
                if p.split("::")[0] in ("crate", "super", "self"):
                    t = resolve(mod, p, files)
                    if t is not None and t != mod:
                        targets.add(t)
        # Inline paths such as `crate::output::json::write_str(...)`.
        for m in PATH_RE.finditer(re.sub(r"//.*", "", text)):
            t = resolve(mod, m.group(1), files)
            if t is not None and t != mod:
                targets.add(t)
        # A parent naming its own descendants (`mod child`, `pub use child::X`) is the
        # module tree, not a dependency.
        edges[mod] = {t for t in targets if not (len(t) > len(mod) and t[: len(mod)] == mod)}
    return files, edges


def cycles(edges):
    """Strongly connected components with more than one file (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def main():
    roots = sys.argv[1:] or ["src"] + sorted(glob.glob("crates/*/src"))
    found = False
    for src in roots:
        files, edges = edges_of(src)
        for comp in cycles(edges):
            found = True
            names = [os.path.relpath(files[m]) for m in comp]
            print(f"import loop in {src}: " + " <-> ".join(names))
    if not found:
        print("no import loops between files")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
