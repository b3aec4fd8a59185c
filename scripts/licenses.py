#!/usr/bin/env python3
"""Licences of the crates the `lyre` binary is built from, read from `cargo metadata`.

  licenses.py check [--no-default-features] [--no-exceptions]
      Every crate of the build (normal and build dependencies) must have a licence expression
      that the policy in deny.toml (cargo-deny's format) allows. Exits 1 naming each offender.
  licenses.py bundle [--no-default-features] OUT
      Writes the licence texts of every crate linked into the binary (proc macros and build
      scripts are not linked) to OUT, each distinct text once with the crates under it.

Standard library only, so the image build can run it (Dockerfile).
"""

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LICENSE_FILE = re.compile(r"^(licen[cs]e|copying|notice|copyright|unlicense)", re.I)


def metadata(no_default_features):
    host = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    triple = re.search(r"^host: (\S+)", host, re.M).group(1)
    cmd = ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", triple,
           "--manifest-path", str(ROOT / "crates" / "lyre-server" / "Cargo.toml")]
    if no_default_features:
        cmd.append("--no-default-features")
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def crates(meta, linked_only):
    """The packages lyre-server depends on (itself excluded): all of normal and build
    dependencies, or only what is linked (no build dependencies, no proc macros)."""
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    root = next(p["id"] for p in meta["packages"] if p["name"] == "lyre-server")
    kinds = {None} if linked_only else {None, "build"}
    seen, stack = set(), [root]
    while stack:
        pkg = stack.pop()
        if pkg in seen:
            continue
        seen.add(pkg)
        for dep in nodes[pkg]["deps"]:
            target = packages[dep["pkg"]]
            if linked_only and any("proc-macro" in t["kind"] for t in target["targets"]):
                continue
            if any(k["kind"] in kinds for k in dep["dep_kinds"]):
                stack.append(dep["pkg"])
    return sorted((packages[i] for i in seen - {root}), key=lambda p: (p["name"], p["version"]))


def tokens(expr):
    # Old Cargo manifests write "MIT/Apache-2.0" for "MIT OR Apache-2.0".
    return re.findall(r"\(|\)|[A-Za-z0-9.+-]+", expr.replace("/", " OR "))


def allowed(expr, ok):
    """Whether an SPDX expression can be satisfied with the licences `ok` accepts (OR: any side,
    AND: both sides, WITH: the licence with its exception as one name)."""
    toks, pos = tokens(expr), 0

    def peek():
        return toks[pos] if pos < len(toks) else None

    def take():
        nonlocal pos
        pos += 1
        return toks[pos - 1]

    def atom():
        if peek() == "(":
            take()
            value = disjunction()
            if take() != ")":
                raise ValueError(f"unbalanced parentheses in `{expr}`")
            return value
        name = take().removesuffix("+")
        if peek() == "WITH":
            take()
            return ok(f"{name} WITH {take()}") or ok(name)
        return ok(name)

    def conjunction():
        value = atom()
        while peek() == "AND":
            take()
            value = atom() and value
        return value

    def disjunction():
        value = conjunction()
        while peek() == "OR":
            take()
            value = conjunction() or value
        return value

    result = disjunction()
    if pos != len(toks):
        raise ValueError(f"cannot read the licence expression `{expr}`")
    return result


def check(args):
    policy = tomllib.loads((ROOT / "deny.toml").read_text())["licenses"]
    allow = set(policy["allow"])
    exceptions = {} if args.no_exceptions else {e["crate"]: set(e["allow"]) for e in policy.get("exceptions", [])}
    meta = metadata(args.no_default_features)
    bad = []
    for p in crates(meta, linked_only=False):
        expr = p.get("license")
        if not expr:
            bad.append(f"{p['name']} {p['version']}: no licence expression in its manifest")
            continue
        extra = exceptions.get(p["name"], set())
        if not allowed(expr, lambda name: name in allow or name in extra):
            bad.append(f"{p['name']} {p['version']}: `{expr}` is not allowed by deny.toml")
    build = "--no-default-features" if args.no_default_features else "default features"
    if bad:
        print(f"licence check failed ({build}):", *bad, sep="\n  ", file=sys.stderr)
        return 1
    print(f"licences ok: {len(crates(meta, False))} crates ({build}{', no exceptions' if args.no_exceptions else ''})")
    return 0


MIT_TEXT = """Permission is hereby granted, free of charge, to any person obtaining a copy of this software
and associated documentation files (the "Software"), to deal in the Software without restriction,
including without limitation the rights to use, copy, modify, merge, publish, distribute,
sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or
substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT
NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES
OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
"""


def texts_of(p):
    """The licence files a crate ships (a -sys crate's vendored library included), or, for a
    crate that ships none, the standard text of its licence."""
    root = Path(p["manifest_path"]).parent
    files = sorted(f for f in root.iterdir() if f.is_file() and LICENSE_FILE.match(f.name))
    if p["name"].endswith("-sys"):
        files += sorted(f for d in root.iterdir() if d.is_dir() for f in d.iterdir()
                        if f.is_file() and LICENSE_FILE.match(f.name))
    texts = [(str(f.relative_to(root)), f.read_text(errors="replace")) for f in files]
    if texts:
        return texts
    expr = p.get("license") or ""
    authors = ", ".join(p.get("authors") or []) or f"the {p['name']} authors"
    if "MIT" in tokens(expr):
        return [("MIT (the crate ships no licence file)", f"Copyright (c) {authors}\n\n{MIT_TEXT}")]
    apache = ROOT / "LICENSE"
    if "Apache-2.0" in tokens(expr) and apache.exists():
        return [("Apache-2.0 (the crate ships no licence file)", apache.read_text())]
    # The GNU licences' texts, as Debian's base-files installs them (LGPL-2.0 is `LGPL-2`).
    for spdx in tokens(expr):
        gnu = re.fullmatch(r"(L?GPL)-(\d)\.(\d)(-only|-or-later)?", spdx)
        if gnu:
            name = f"{gnu[1]}-{gnu[2]}" + ("" if gnu[3] == "0" else f".{gnu[3]}")
            common = Path("/usr/share/common-licenses") / name
            if common.exists():
                return [(f"{spdx} (the crate ships no licence file; {common})", common.read_text())]
    raise SystemExit(f"{p['name']} {p['version']}: no licence file and no standard text for `{expr}`")


def bundle(args):
    meta = metadata(args.no_default_features)
    groups = {}
    for p in crates(meta, linked_only=True):
        for name, text in texts_of(p):
            key = hashlib.sha256(text.strip().encode()).hexdigest()
            groups.setdefault(key, (text, []))[1].append(f"{p['name']} {p['version']} ({p.get('license')}; {name})")
    build = "without default features (no mp3, no soxr: no LGPL code)" if args.no_default_features else "with default features"
    out = ["Third-party software linked into the `lyre` binary, with the texts of its licences.",
           f"Made by scripts/licenses.py from Cargo.lock, for the build {build}.", ""]
    for text, users in sorted(groups.values(), key=lambda g: g[1][0]):
        out += ["=" * 100, *users, "-" * 100, text.rstrip(), ""]
    Path(args.out).write_text("\n".join(out) + "\n")
    print(f"wrote {args.out}: {sum(len(u) for _, u in groups.values())} licence files of "
          f"{len(crates(meta, True))} crates, {len(groups)} distinct texts")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check")
    c.add_argument("--no-default-features", action="store_true")
    c.add_argument("--no-exceptions", action="store_true", help="ignore deny.toml's per-crate exceptions")
    c.set_defaults(run=check)
    b = sub.add_parser("bundle")
    b.add_argument("--no-default-features", action="store_true")
    b.add_argument("out")
    b.set_defaults(run=bundle)
    args = parser.parse_args()
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
