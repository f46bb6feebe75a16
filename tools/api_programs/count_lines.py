#!/usr/bin/env python3
"""Prints each C file's total lines (as wc -l) and its code lines: lines
with something left once comments and blanks are taken out."""
import sys


def code_lines(text):
    out, i, n = [], 0, len(text)
    state = None  # None, 'block', 'line', or the quote of a literal
    while i < n:
        c, two = text[i], text[i:i + 2]
        if state is None:
            if two == '/*':
                state, i = 'block', i + 2
                continue
            if two == '//':
                state, i = 'line', i + 2
                continue
            if c in '"\'':
                state = c
        elif state == 'block':
            if two == '*/':
                state, i = None, i + 2
            else:
                out.append('\n' if c == '\n' else ' ')
                i += 1
            continue
        elif state == 'line':
            if c == '\n':
                state = None
            else:
                i += 1
                continue
        elif c == '\\':
            out.append(two)
            i += 2
            continue
        elif c == state:
            state = None
        out.append(c)
        i += 1
    return sum(1 for line in ''.join(out).split('\n') if line.strip())


for path in sys.argv[1:]:
    with open(path) as f:
        text = f.read()
    print(f'{text.count(chr(10)):5d} {code_lines(text):5d}  {path}')
