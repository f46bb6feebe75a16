#!/usr/bin/env python3
"""Prints `make bench`'s table: one row per blitz benchmark of RESULTS
(bench= lines), with the anchors' recorded figures beside it when
SHARED/anchors/*/results.txt exist.

    bench/table.py RESULTS SHARED

The Go and libuv anchors name the TCP echo rows tcp_echo_50conn_64B_* in
req/s and us and the bulk row tcp_bulk_1GiB; they are converted to the
names and units blitz prints (the Tokio anchor's)."""
import os
import sys

ANCHORS = [("tokio", "Tokio 1.24"), ("libuv", "libuv 1.44"), ("go", "Go 1.19")]
LOWER_BETTER = {"ns/op", "ms", "bytes/task", "us"}
# Go/libuv name -> (blitz name, factor to blitz's unit)
RENAME = {
    "tcp_echo_50conn_64B_rps": ("tcp_echo_c50_m64_rps", 1.0),
    "tcp_echo_50conn_64B_p50": ("tcp_echo_c50_m64_p50", 1e-3),
    "tcp_echo_50conn_64B_p99": ("tcp_echo_c50_m64_p99", 1e-3),
    "tcp_bulk_1GiB": ("tcp_bulk_1024mib", 1.0),
}


def fields(line):
    return dict(p.split("=", 1) for p in line.split() if "=" in p)


def load(path):
    """{name: (value, unit)} and {name: status} of a results file."""
    rows, status = {}, {}
    for line in open(path):
        line = line.strip()
        if line.startswith("# bench=") and " status=" in line:
            kv = fields(line[2:])
            status[kv["bench"]] = kv["status"]
        elif line.startswith("bench="):
            kv = fields(line)
            try:
                value = float(kv["value"])
            except (KeyError, ValueError):
                continue
            name, factor = RENAME.get(kv["bench"], (kv["bench"], 1.0))
            rows[name] = (value * factor, kv.get("unit", ""))
    return rows, status


def num(v):
    if v >= 1e5:
        return "%.0f" % v
    if v >= 100:
        return "%.1f" % v
    if v >= 1:
        return "%.2f" % v
    return "%.4f" % v


def main():
    results, shared = sys.argv[1], sys.argv[2]
    blitz, _ = load(results)
    order = [fields(l)["bench"] for l in open(results) if l.startswith("bench=")]
    refs = []
    for key, label in ANCHORS:
        path = os.path.join(shared, "anchors", key, "results.txt")
        if os.path.isfile(path):
            rows, status = load(path)
            if any(n in rows or n in status for n in order):
                refs.append((label, rows, status, path))
    if not order:
        print("no benchmark results")
        return
    head = ["benchmark", "blitz", "unit"]
    for label, _, _, _ in refs:
        head += [label, "blitz/" + label.split()[0]]
    table = [head]
    for n in order:
        value, unit = blitz[n]
        row = [n, num(value), unit]
        for _, rows, status, _ in refs:
            if n in rows and rows[n][0] > 0:
                ref = rows[n][0]
                r = value / ref
                row += [num(ref), "%.2f" % r if r >= 0.1 else "%.2g" % r]
            elif n in status:
                row += [status[n], ""]
            else:
                row += ["-", ""]
        table.append(row)
    width = [max(len(r[i]) for r in table) for i in range(len(head))]
    for i, r in enumerate(table):
        cells = [r[0].ljust(width[0])] + [c.rjust(w) if j != 2 else c.ljust(w)
                                          for j, (c, w) in enumerate(zip(r[1:], width[1:]), 1)]
        print("  ".join(cells).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in width))
    print()
    if refs:
        print("The anchor columns are recorded figures from the anchors' own runs on this")
        print("machine kind (2 vCPUs, shared and virtual), not from this run:")
        for _, _, _, p in refs:
            print("  " + p)
        print("Absolute figures here move 2-3x between runs; `make bench-compare` runs blitz")
        print("and Tokio side by side. The libuv and Go TCP rows come from their own load")
        print("client (libuv/echo_client.c) and longer windows.")
        print("blitz/anchor: below 1 is better for ns/op, ms and bytes/task; above 1 for")
        print("ops/s and MB/s.")
    else:
        print("No anchor results in %s/anchors/*/results.txt: blitz's figures only." % shared)

main()
