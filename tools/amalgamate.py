#!/usr/bin/env python3
"""Writes blitz.h from src/.

usage: amalgamate.py [--line] [-o OUT]

Layout of the output:
  the manual (src/blitz_doc.txt) as the top comment;
  #ifndef BLITZ_H: the public declarations (src/api/blitz_api.h);
  #if defined(BLITZ_IMPLEMENTATION) && !defined(BLITZ__IMPLEMENTATION_INCLUDED):
      the layers of tools/manifest.txt in order, each opened by a LAYER
      banner; every module between fixed BEGIN/END banners with a >>name grep
      anchor; an `#include "x.h"` of a src/ header (a path relative to the
      including file) is spliced in the first time and commented out after,
      and a RESUME marker shows where the including module goes on;
  the licence (src/blitz_license.txt).

--line adds #line directives so compiler diagnostics and debuggers point
into src/ (the development copy used by the tests); the committed blitz.h
has none. The output is deterministic: no timestamps, LF line ends, no
trailing spaces.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
INCLUDE_LOCAL = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
INCLUDE_SYSTEM = re.compile(r"^\s*#\s*include\s+<")


def fail(msg):
    sys.stderr.write("amalgamate: %s\n" % msg)
    sys.exit(1)


def resolve(including, inc):
    """The src/-relative path of `inc` as included from src/`including`."""
    path = os.path.normpath(os.path.join(os.path.dirname(including), inc))
    if path.startswith(".."):
        fail("src/%s includes %s, outside src/" % (including, inc))
    return path.replace(os.sep, "/")


def read(name):
    path = os.path.join(SRC, name)
    if not os.path.exists(path):
        fail("missing src/%s" % name)
    with open(path) as f:
        return f.read().split("\n")


def manifest():
    """[(layer, description, [module, ...]), ...] in manifest order.

    A line `[layer] description` opens a layer; every module after it
    must live in src/layer/."""
    layers = []
    with open(os.path.join(ROOT, "tools", "manifest.txt")) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.match(r"^\[(\w+)\]\s*(.*)$", line)
            if m:
                layers.append((m.group(1), m.group(2), []))
                continue
            if not layers:
                fail("tools/manifest.txt:%d: a module before the first [layer]" % n)
            if not line.startswith(layers[-1][0] + "/"):
                fail("tools/manifest.txt:%d: %s is not in src/%s/" % (n, line, layers[-1][0]))
            layers[-1][2].append(line)
    listed = {m for _, _, mods in layers for m in mods}
    on_disk = set()
    for root, _, files in os.walk(SRC):
        for fn in files:
            if fn.endswith(".c"):
                on_disk.add(os.path.relpath(os.path.join(root, fn), SRC).replace(os.sep, "/"))
    missing = sorted(on_disk - listed)
    if missing:
        fail("src/ modules not in tools/manifest.txt: %s" % " ".join(missing))
    return layers


def banner(kind, name):
    text = "/* ====[ %s src/%s ]" % (kind, name)
    return text + "=" * max(4, 76 - len(text)) + " */"


def layer_banner(layer, description):
    rule = "/* " + "#" * 74 + " */"
    text = "/* LAYER %s: %s" % (layer, description)
    return [rule, text + " " * max(1, 77 - len(text)) + "*/", rule]


class Writer:
    def __init__(self, with_lines):
        self.out = []
        self.with_lines = with_lines
        self.spliced = set()

    def emit(self, line):
        self.out.append(line.rstrip())

    def line_marker(self, n, name):
        if self.with_lines:
            self.emit('#line %d "src/%s"' % (n, name))

    def module(self, name, allow_system):
        self.emit(banner("BEGIN", name))
        self.emit("/* >>%s */" % os.path.splitext(name)[0])
        self.line_marker(1, name)
        lines = read(name)
        if lines and lines[-1] == "":
            lines.pop()
        for i, line in enumerate(lines):
            m = INCLUDE_LOCAL.match(line)
            if m:
                inc = resolve(name, m.group(1))
                if inc in self.spliced:
                    self.emit("/* src/%s already included */" % inc)
                else:
                    self.spliced.add(inc)
                    self.module(inc, allow_system=(inc == "platform/platform.h"))
                    self.emit("/* ----[ RESUME src/%s ] */" % name)
                    self.line_marker(i + 2, name)
                continue
            if INCLUDE_SYSTEM.match(line) and not allow_system:
                fail("src/%s:%d: system include outside platform/platform.h, api/blitz_api.h" % (name, i + 1))
            self.emit(line)
        self.emit(banner("END", name))


def comment_block(lines):
    out = ["/*"]
    for line in lines:
        if "*/" in line:
            fail("'*/' inside a comment text file")
        out.append(line.rstrip())
    out.append("*/")
    return out


def main():
    args = sys.argv[1:]
    with_lines = "--line" in args
    out_path = os.path.join(ROOT, "blitz.h")
    if "-o" in args:
        out_path = args[args.index("-o") + 1]
    w = Writer(with_lines)
    doc = read("blitz_doc.txt")
    while doc and doc[-1] == "":
        doc.pop()
    for line in comment_block(doc):
        w.emit(line)
    w.emit("#ifndef BLITZ_H")
    w.emit("#define BLITZ_H")
    w.spliced.add("api/blitz_api.h")
    w.module("api/blitz_api.h", allow_system=True)
    w.emit("#endif /* BLITZ_H */")
    w.emit("")
    w.emit("#if defined(BLITZ_IMPLEMENTATION) && !defined(BLITZ__IMPLEMENTATION_INCLUDED)")
    w.emit("#define BLITZ__IMPLEMENTATION_INCLUDED 1")
    w.emit("#define BLITZ__AMALGAMATION 1")
    for layer, description, modules in manifest():
        for line in layer_banner(layer, description):
            w.emit(line)
        for name in modules:
            w.module(name, allow_system=False)
    w.emit("#endif /* BLITZ_IMPLEMENTATION */")
    w.emit("")
    lic = read("blitz_license.txt")
    while lic and lic[-1] == "":
        lic.pop()
    for line in comment_block(lic):
        w.emit(line)
    text = "\n".join(w.out) + "\n"
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out_path)


if __name__ == "__main__":
    main()
