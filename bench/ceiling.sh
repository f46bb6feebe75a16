#!/usr/bin/env bash
# What the Tokio anchor's load client allows on this machine
# (`make bench-ceiling`).
#
#   bench/ceiling.sh DIR
#
# DIR holds blitz's `tcp` benchmark program (build/bench). Each of REPEAT
# rounds (default 3) runs, in turn and in a rotating order, each in a fresh
# process: Tokio's echo server (the anchor's `echo-server`: 2 workers, the
# target's comparison; also 1 worker and current-thread),
# bench/floor/echo_floor.c (one thread doing only epoll_wait, recv and
# send: the least work any server can do per request),
# bench/floor/echo_floor_uring.c (the same with only io_uring's own
# operations: a multishot accept, RECV and SEND, one io_uring_enter per
# batch; shown as floor_uring), and blitz's server
# on io_uring with 2 workers, 1 worker and current-thread, and on epoll
# with 2 workers. Each is driven by the Tokio anchor's own client
# (`tokio-anchor echo-client --no-bulk`: 50 connections x 64-byte
# ping-pong, 1 s warm-up, the median of 5 windows of 3 s), the client of
# `make bench-compare`'s tcp group. Prints per server the median req/s,
# p50, p99, server CPU per request and the client's CPU, then each
# server's req/s and p99 against Tokio's: per round and their median.
#
# The floor server's ratio is the most any server can reach over Tokio's
# with this client here: the client (one thread) shares the 2 vCPUs with
# the server.
#
# Environment: REPEAT, SHARED_DIR (default ../shared beside the
# repository), CEILING_OUT (default build/bench-ceiling). Builds the Tokio
# anchor into build/tokio-target (Debian's librust-tokio-dev, which the
# anchor's run.sh installs; installed here too when missing and root).
set -uo pipefail

if [ "$#" -lt 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
DIR=$(cd "$1" && pwd) || exit 2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SHARED_DIR:-$ROOT/../shared}
ANCHOR=$SHARED/anchors/tokio
OUT=${CEILING_OUT:-$ROOT/build/bench-ceiling}
REPEAT=${REPEAT:-3}
SCRIPT=ceiling.sh
# shellcheck source=bench/server_lib.sh
. "$ROOT/bench/server_lib.sh"
server_out_open

[ -x "$DIR/tcp" ] || { echo "ceiling.sh: $DIR/tcp not built" >&2; exit 1; }
[ -f "$ANCHOR/Cargo.toml" ] || { echo "ceiling.sh: no Tokio anchor at $ANCHOR" >&2; exit 1; }

if ! ls -d /usr/share/cargo/registry/tokio-1.* >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq librust-tokio-dev \
        librust-async-channel-dev >&2
fi
for d in "${HOME:-/root}/.cargo/bin" /root/.cargo/bin; do
    [ -x "$d/cargo" ] && PATH="$PATH:$d"
done
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/build/tokio-target}
TOKIO=$CARGO_TARGET_DIR/release/tokio-anchor
(cd "$ANCHOR" && cargo build --release --offline -q) >&2 ||
    { echo "ceiling.sh: cannot build the Tokio anchor" >&2; exit 1; }
[ -x /usr/bin/time ] || [ "$(id -u)" -ne 0 ] ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >&2
[ -x /usr/bin/time ] || { echo "ceiling.sh: needs /usr/bin/time (Debian's time)" >&2; exit 1; }
gcc -O2 -Wall -Wextra -o "$OUT/echo_floor" "$ROOT/bench/floor/echo_floor.c" || exit 1
SERVERS=(tokio tokio_w1 tokio_ct floor)
if gcc -O2 -Wall -Wextra -o "$OUT/echo_floor_uring" "$ROOT/bench/floor/echo_floor_uring.c"; then
    SERVERS+=(floor_uring)
else
    echo "ceiling.sh: floor_uring left out (no <linux/io_uring.h>)" >&2
fi
SERVERS+=(blitz_uring_w2 blitz_uring_w1 blitz_uring_ct blitz_epoll_w2)
server_stdin_open

start_server() {
    local portfile="$OUT/server.port"
    : >"$portfile"
    case "$1" in
    tokio) exec "$TOKIO" echo-server --port 0 --workers 2 ;;
    tokio_w1) exec "$TOKIO" echo-server --port 0 --workers 1 ;;
    tokio_ct) exec "$TOKIO" echo-server --port 0 --workers 0 ;;
    floor) exec "$OUT/echo_floor" 300 ;;
    floor_uring) exec "$OUT/echo_floor_uring" 300 ;;
    blitz_uring_w2) BLITZ_BACKEND=io_uring exec "$DIR/tcp" echo-server --port 0 --workers 2 ;;
    blitz_uring_w1) BLITZ_BACKEND=io_uring exec "$DIR/tcp" echo-server --port 0 --workers 1 ;;
    blitz_uring_ct) BLITZ_BACKEND=io_uring exec "$DIR/tcp" echo-server --port 0 --workers 0 ;;
    blitz_epoll_w2) BLITZ_BACKEND=epoll exec "$DIR/tcp" echo-server --port 0 --workers 2 ;;
    esac >"$portfile" 2>/dev/null <"$OUT/stdin.fifo" &
    SPID=$!
    server_wait_port "$1" "$portfile"
}

# One round of server $1. CPU per request: the server's CPU time over the
# client's run (1 s warm-up + 15 s measured) over 16 s at the median rate.
run_server() {
    local name=$1 s0 s1 out rps cpu
    start_server "$name" || return 1
    s0=$(server_cpu_ticks "$SPID")
    out=$(/usr/bin/time -f "client_cpu_s=%U %S" "$TOKIO" echo-client \
        --addr "127.0.0.1:$PORT" --impl "$name" --no-bulk 2>&1)
    s1=$(server_cpu_ticks "$SPID")
    kill -TERM "$SPID" 2>/dev/null
    wait "$SPID" 2>/dev/null
    echo "$out" | grep '^bench=tcp_echo' >>"$OUT/samples.txt"
    rps=$(echo "$out" | sed -n 's/^bench=tcp_echo_c50_m64_rps value=\([0-9.]*\).*/\1/p')
    cpu=$(echo "$out" | sed -n 's/^client_cpu_s=\([0-9.]*\) \([0-9.]*\)/\1 \2/p')
    [ -n "$rps" ] || { echo "ceiling.sh: no result from $name" >&2; return 1; }
    awk -v a="$s0" -v b="$s1" -v r="$rps" -v i="$name" -v c="$cpu" 'BEGIN {
        split(c, cc, " ")
        printf "bench=tcp_echo_c50_m64_server_cpu value=%.2f unit=us/req impl=%s\n", (b - a) / 100 * 1e6 / (r * 16), i
        printf "bench=tcp_echo_c50_m64_client_cpu value=%.2f unit=us/req impl=%s\n", (cc[1] + cc[2]) * 1e6 / (r * 16), i
    }' >>"$OUT/samples.txt"
    printf '  %-15s %8.0f req/s\n' "$name" "$rps" >&2
}

server_rounds

echo
echo "## Servers driven by the Tokio anchor's client, median of $REPEAT round(s) ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
echo
python3 - "$OUT/samples.txt" "${SERVERS[@]}" <<'PY'
import sys
path, servers = sys.argv[1], sys.argv[2:]
vals, units, rounds = {}, {}, []
for line in open(path):
    line = line.strip()
    if line.startswith("# round="):
        rounds.append({})
    elif line.startswith("bench="):
        kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
        key = (kv["bench"], kv["impl"])
        vals.setdefault(key, []).append(float(kv["value"]))
        units[kv["bench"]] = kv["unit"]
        if rounds:
            rounds[-1][key] = float(kv["value"])
def med(v):
    v = sorted(v)
    k = len(v)
    return v[k // 2] if k % 2 else (v[k // 2 - 1] + v[k // 2]) / 2
benches = ["tcp_echo_c50_m64_rps", "tcp_echo_c50_m64_p50", "tcp_echo_c50_m64_p99",
           "tcp_echo_c50_m64_server_cpu", "tcp_echo_c50_m64_client_cpu"]
print("| bench | unit | " + " | ".join(servers) + " |")
print("|---|---|" + "---:|" * len(servers))
for b in benches:
    if b not in units:
        continue
    row = ["%.4g" % med(vals[(b, s)]) if (b, s) in vals else "-" for s in servers]
    print("| %s | %s | %s |" % (b, units[b], " | ".join(row)))
print()
# Ratios to Tokio's server in the same round (higher is better for req/s,
# Tokio's p99 over the server's for p99), then their median.
for b, up in (("tcp_echo_c50_m64_rps", True), ("tcp_echo_c50_m64_p99", False)):
    for s in servers:
        if s == "tokio":
            continue
        per = []
        for rd in rounds:
            t, v = rd.get((b, "tokio")), rd.get((b, s))
            if t and v:
                per.append(v / t if up else t / v)
        if per:
            print("ratio bench=%s %s/tokio per round %s, median %.3f" %
                  (b, s, "/".join("%.2f" % x for x in per), med(per)))
PY
