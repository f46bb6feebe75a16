#!/usr/bin/env python3
"""Checks the shape of src/: names and layers.

usage: check_layers.py [SRC_DIR]

Fails (exit 1, one line per finding) when
  - a BLITZ_API function does not start with blitz_ (or starts with blitz__);
  - a private function (static, BLITZ_PRIVATE) does not start with blitz__;
  - a module includes a header of a layer above its own;
  - a module calls a function defined in a layer above its own, unless a
    header of its own layer or one below declares that function in a
    "hooks" section (a comment line starting "/* ---- hooks"), which is how
    the few calls up the layers are documented.

The layers and their order come from tools/manifest.txt; src/api/ holds the
public declarations and may be included anywhere.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DEF_START = re.compile(
    r"^(BLITZ_API|BLITZ_PRIVATE|static inline|static)\b([^;{}()=]*?)\b(\w+)\s*\(", re.M
)
CALL = re.compile(r"\b(blitz_\w+)\s*\(")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
HOOKS_HEADING = re.compile(r"^/\* ---- hooks", re.M)


def strip_comments_and_strings(text):
    """Blanks comments and string literals, keeping line numbers."""

    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))

    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', blank, text,
                  flags=re.S)


def layers_of(src):
    order = []
    with open(os.path.join(ROOT, "tools", "manifest.txt")) as f:
        for line in f:
            m = re.match(r"^\[(\w+)\]", line.split("#", 1)[0].strip())
            if m:
                order.append(m.group(1))
    return order


def after_parens(text, start):
    """Index just past the parenthesised list that opens at text[start]."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "src")
    order = layers_of(src)
    rank = {layer: i for i, layer in enumerate(order)}
    files = {}
    for layer in order + ["api"]:
        d = os.path.join(src, layer)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith((".c", ".h")):
                path = "%s/%s" % (layer, name)
                with open(os.path.join(src, path)) as f:
                    files[path] = f.read()
    problems = []
    defined = {}  # function -> layer of its definition
    hooks = set()  # functions declared in a hooks section
    declared_in = {}  # function -> layers whose headers declare it as a hook
    for path, raw in files.items():
        layer = path.split("/")[0]
        text = strip_comments_and_strings(raw)
        heading = HOOKS_HEADING.search(raw)
        for m in DEF_START.finditer(text):
            kind, name = m.group(1), m.group(3)
            end = after_parens(text, m.end() - 1)
            tail = text[end:].lstrip()
            is_body = tail.startswith("{")
            line = text.count("\n", 0, m.start()) + 1
            where = "src/%s:%d" % (path, line)
            if kind == "BLITZ_API":
                if not name.startswith("blitz_") or name.startswith("blitz__"):
                    problems.append("%s: public function %s must start with blitz_" % (where, name))
            elif not name.startswith("blitz__"):
                problems.append("%s: private function %s must start with blitz__" % (where, name))
            if is_body and layer != "api":
                defined.setdefault(name, layer)
            elif not is_body and heading and m.start() > heading.start():
                hooks.add(name)
                declared_in.setdefault(name, set()).add(layer)
        for m in INCLUDE.finditer(raw):
            target = os.path.normpath(os.path.join(layer, m.group(1))).split(os.sep)[0]
            if target in rank and layer in rank and rank[target] > rank[layer]:
                line = raw.count("\n", 0, m.start()) + 1
                problems.append("src/%s:%d: includes %s, a layer above %s" % (path, line,
                                                                               m.group(1), layer))
    for path, raw in files.items():
        layer = path.split("/")[0]
        if layer not in rank:
            continue
        text = strip_comments_and_strings(raw)
        for m in CALL.finditer(text):
            name = m.group(1)
            target = defined.get(name)
            if target is None or rank[target] <= rank[layer]:
                continue
            if name in hooks and any(rank[l] <= rank[layer] for l in declared_in[name]):
                continue
            line = text.count("\n", 0, m.start()) + 1
            problems.append("src/%s:%d: calls %s of layer %s, above %s" % (path, line, name, target,
                                                                          layer))
    for p in sorted(set(problems)):
        print(p)
    if problems:
        print("check_layers: %d problem(s)" % len(set(problems)))
        return 1
    print("check_layers: %d layers, %d functions, %d hooks up the layers: ok" % (
        len(order), len(defined), len(hooks)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
