#!/usr/bin/env python3
"""Resident memory per idle connection of a running server.

  conn_mem.py PID HOST:PORT [N]

Opens N connections (default 10000), has each echo one byte (so every
connection's task has run a receive and a send), then leaves them idle
and reports (VmRSS after - VmRSS before) / N of process PID."""
import socket, sys, time, resource

def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit("no VmRSS")

def main():
    pid = int(sys.argv[1])
    host, port = sys.argv[2].rsplit(":", 1)
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 100), hard))
    time.sleep(0.2)
    before = rss_kb(pid)
    socks = []
    for i in range(n):
        s = socket.create_connection((host, int(port)))
        s.sendall(b"x")
        socks.append(s)
        if len(socks) % 500 == 0:
            for t in socks[-500:]:
                if t.recv(1) != b"x":
                    raise SystemExit("bad echo")
    for t in socks[len(socks) - len(socks) % 500:]:
        if t.recv(1) != b"x":
            raise SystemExit("bad echo")
    time.sleep(0.5)
    after = rss_kb(pid)
    print(f"connections={n} rss_before_kb={before} rss_after_kb={after} "
          f"kb_per_conn={(after - before) / n:.2f}")
    for s in socks:
        s.close()

main()
