#!/usr/bin/env python3
"""Fail when a Linux-only symbol appears in src/ outside the platform layer
and the Linux I/O backends, so that code for other systems has one place to
grow. Comments and string literals are ignored (prose about epoll, or a
backend's name, is fine); preprocessor conditionals are not, because a
`#if defined(__linux__)` block in a portable file is what this check is for.

Usage: check_linux_symbols.py [ROOT]   (ROOT defaults to the repository)
Prints file:line: symbol for each hit and exits 1 when there is any.
"""
import fnmatch
import os
import re
import sys

# Files that may name Linux-only symbols, relative to the root.
ALLOWED = [
    "src/platform/*linux*",
    "src/platform/platform.h",
    "src/io/uring.c",
    "src/io/uring_recv_ms.c",
    "src/io/uring_file.c",
    "src/io/epoll.c",
]

SYMBOLS = [
    r"\beventfd\w*",
    r"\bEFD_[A-Z]+",
    r"\baccept4\b",
    r"\bSOCK_NONBLOCK\b",
    r"\bSOCK_CLOEXEC\b",
    r"\bpipe2\b",
    r"\bdup3\b",
    r"\bSYS_\w+",
    r"\bsyscall\s*\(",
    r"\bsplice\b",
    r"\bSPLICE_F_\w*",
    r"\bsendfile\b",
    r"\bcopy_file_range\b",
    r"\bpidfd\w*",
    r"\bMSG_NOSIGNAL\b",
    r"\b__kernel_timespec\b",
    r"\bepoll\w*",
    r"\bEPOLL\w+",
    r"\bio_uring\w*",
    r"\bIORING_\w+",
    r"\bsignalfd\w*",
    r"\bfutex\b",
    r"\bFUTEX_\w+",
    r"\bstatx\b",
    r"\bPOLLRDHUP\b",
    r"\bprctl\b",
    r"#\s*include\s*<linux/[^>]*>",
]
PATTERN = re.compile("|".join("(?:%s)" % s for s in SYMBOLS))

# Comments, string literals and character literals, in one pass so that a
# "/*" inside a string or a quote inside a comment is read correctly.
TOKENS = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def strip_comments(text):
    """Blank out comments and the insides of literals, keeping newlines so
    line numbers stay right."""

    def blank(m):
        s = m.group(0)
        if s.startswith("/"):
            return re.sub(r"[^\n]", " ", s)
        return s[0] + " " * (len(s) - 2) + s[-1]

    return TOKENS.sub(blank, text)


def allowed(rel):
    return any(fnmatch.fnmatch(rel, pat) for pat in ALLOWED)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    src = os.path.join(root, "src")
    hits = []
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if allowed(rel):
                continue
            with open(path, encoding="utf-8") as f:
                code = strip_comments(f.read())
            for lineno, line in enumerate(code.split("\n"), 1):
                for m in PATTERN.finditer(line):
                    hits.append("%s:%d: %s" % (rel, lineno, m.group(0)))
    hits.sort(key=lambda h: (h.split(":")[0], int(h.split(":")[1])))
    for h in hits:
        print(h)
    if hits:
        print("check_linux_symbols: %d Linux-only symbol(s) outside src/platform/*linux* "
              "and the Linux I/O backends" % len(hits), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
