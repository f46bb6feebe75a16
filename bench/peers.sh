#!/usr/bin/env bash
# blitz's echo server against the libuv and Go anchors' servers, in one run,
# driven by the anchors' own load client (../shared/anchors/libuv/
# echo_client.c, the one client of both anchors): `make bench-peers`.
#
#   bench/peers.sh DIR
#
# DIR holds blitz's `tcp` benchmark program (build/bench). Each of REPEAT
# rounds (default 3) runs every server once, in turn, each in a fresh
# process: the libuv anchor (uv_echo_server.c, one loop thread), the Go
# anchor (gobench server, GOMAXPROCS=2), and blitz (`tcp echo-server`):
# blitz_default (the runtime as a user gets it: blitz_runtime_new(NULL), no
# BLITZ_* variable in its environment), then the tuned ones: 2 workers on
# io_uring, 1 current-thread driver on io_uring, and 2 workers on epoll. Per server and round: 50 connections x 64-byte ping-pong (1 s
# warm-up, ECHO_SECS=5 s measured, one client thread, as the anchors), the
# server's CPU time per request, then one 1 GiB bulk transfer. Prints the
# median of the rounds per server and the ratios of each blitz server to
# the best peer. The anchors' own numbers came from the same client with
# 10 s windows.
#
# Needs: gcc (echo_client, the libuv server: Debian's libuv1-dev, installed
# with apt-get when missing and root) and go (Debian's golang-go, the same);
# a peer that cannot be built is left out and said so.
#
# The servers take turns in an order that rotates each round; the ratios
# are also given round by round (against that round's best peer) with
# their median, which the VM's drift in speed disturbs less.
#
# Environment: REPEAT, ECHO_SECS, SHARED_DIR (default ../shared beside the
# repository), PEERS_OUT (default build/bench-peers).
set -uo pipefail

if [ "$#" -lt 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
DIR=$(cd "$1" && pwd) || exit 2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SHARED_DIR:-$ROOT/../shared}
UV=$SHARED/anchors/libuv
GO=$SHARED/anchors/go
OUT=${PEERS_OUT:-$ROOT/build/bench-peers}
REPEAT=${REPEAT:-3}
ECHO_SECS=${ECHO_SECS:-5}
SCRIPT=peers.sh
# shellcheck source=bench/server_lib.sh
. "$ROOT/bench/server_lib.sh"
server_out_open

[ -x "$DIR/tcp" ] || { echo "peers.sh: $DIR/tcp not built" >&2; exit 1; }
[ -f "$UV/echo_client.c" ] || { echo "peers.sh: no anchors at $SHARED/anchors" >&2; exit 1; }

apt_get() {
    [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

gcc -O2 -Wall -o "$OUT/echo_client" "$UV/echo_client.c" -lpthread || exit 1
SERVERS=()
pkg-config --exists libuv 2>/dev/null || apt_get libuv1-dev pkg-config
# shellcheck disable=SC2046
if pkg-config --exists libuv 2>/dev/null &&
    gcc -O2 -Wall -o "$OUT/uv_echo_server" "$UV/uv_echo_server.c" $(pkg-config --cflags --libs libuv); then
    SERVERS+=(libuv)
else
    echo "peers.sh: libuv anchor left out (no libuv1-dev)" >&2
fi
command -v go >/dev/null || apt_get golang-go
if command -v go >/dev/null &&
    (cd "$GO" && GOFLAGS=-mod=mod GOCACHE="$OUT/gocache" go build -o "$OUT/gobench" .) >&2; then
    SERVERS+=(go)
else
    echo "peers.sh: Go anchor left out (no go toolchain)" >&2
fi
SERVERS+=(blitz_default blitz_uring_w2 blitz_uring_ct blitz_epoll_w2)
server_stdin_open

# Starts server $1 in the background; sets SPID and PORT.
start_server() {
    local portfile="$OUT/server.port"
    : >"$portfile"
    # shellcheck disable=SC2046
    case "$1" in
    libuv) "$OUT/uv_echo_server" 0 300 >"$portfile" 2>/dev/null & ;;
    go) GOMAXPROCS=2 "$OUT/gobench" server -addr 127.0.0.1:0 -life 300s >"$portfile" 2>/dev/null & ;;
    blitz_default) env $(blitz_env_unset) "$DIR/tcp" echo-server --port 0 --default \
        >"$portfile" 2>/dev/null <"$OUT/stdin.fifo" & ;;
    blitz_uring_w2) BLITZ_BACKEND=io_uring "$DIR/tcp" echo-server --port 0 --workers 2 \
        >"$portfile" 2>/dev/null <"$OUT/stdin.fifo" & ;;
    blitz_uring_ct) BLITZ_BACKEND=io_uring "$DIR/tcp" echo-server --port 0 --workers 0 \
        >"$portfile" 2>/dev/null <"$OUT/stdin.fifo" & ;;
    blitz_epoll_w2) BLITZ_BACKEND=epoll "$DIR/tcp" echo-server --port 0 --workers 2 \
        >"$portfile" 2>/dev/null <"$OUT/stdin.fifo" & ;;
    esac
    SPID=$!
    server_wait_port "$1" "$portfile"
}

# One round of server $1: echo, server CPU per request, bulk.
run_server() {
    local name=$1 s0 s1 out err nreq
    start_server "$name" || return 1
    s0=$(server_cpu_ticks "$SPID")
    out=$("$OUT/echo_client" -H 127.0.0.1 -p "$PORT" -m echo -c 50 -s 64 -w 1 -d "$ECHO_SECS" \
        -r 1 -t 1 -i "$name" 2>"$OUT/client.err")
    s1=$(server_cpu_ticks "$SPID")
    nreq=$(sed -n 's/^# all_requests=//p' "$OUT/client.err")
    echo "$out" >>"$OUT/samples.txt"
    awk -v a="$s0" -v b="$s1" -v n="${nreq:-0}" -v i="$name" \
        'BEGIN{if (n > 0) printf "bench=tcp_echo_50conn_64B_server_cpu value=%.2f unit=us/req impl=%s\n", (b-a)/100*1e6/n, i}' \
        >>"$OUT/samples.txt"
    "$OUT/echo_client" -H 127.0.0.1 -p "$PORT" -m bulk -b 1073741824 -r 1 -i "$name" \
        2>/dev/null >>"$OUT/samples.txt"
    kill -TERM "$SPID" 2>/dev/null
    wait "$SPID" 2>/dev/null
    echo "$out" | sed -n 's/^bench=tcp_echo_50conn_64B_rps value=\([0-9.]*\).*/  '"$name"' \1 req\/s/p' >&2
}

server_rounds

echo
echo "## blitz vs the libuv and Go anchors' servers, the anchors' client, median of $REPEAT round(s) ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
echo
python3 - "$OUT/samples.txt" "${SERVERS[@]}" <<'EOF'
import sys
path, servers = sys.argv[1], sys.argv[2:]
vals, units, rounds, rnd = {}, {}, [], None
for line in open(path):
    line = line.strip()
    if line.startswith("# round="):
        rnd = {}
        rounds.append(rnd)
        continue
    if not line.startswith("bench="):
        continue
    kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
    vals.setdefault((kv["bench"], kv["impl"]), []).append(float(kv["value"]))
    units[kv["bench"]] = kv["unit"]
    if rnd is not None:
        rnd[(kv["bench"], kv["impl"])] = float(kv["value"])
benches = []
for (b, _) in vals:
    if b not in benches:
        benches.append(b)
def med(v):
    v = sorted(v)
    k = len(v)
    return v[k // 2] if k % 2 else (v[k // 2 - 1] + v[k // 2]) / 2
print("| bench | unit | " + " | ".join(servers) + " |")
print("|---|---|" + "---:|" * len(servers))
table = {}
for b in benches:
    row = []
    for s in servers:
        v = vals.get((b, s))
        table[(b, s)] = med(v) if v else None
        row.append("%.4g" % table[(b, s)] if v else "-")
    print("| %s | %s | %s |" % (b, units[b], " | ".join(row)))
print()
higher = {"req/s", "MB/s"}
peers = [s for s in servers if not s.startswith("blitz")]
for b in benches:
    up = units[b] in higher
    have = [(table[(b, p)], p) for p in peers if table[(b, p)]]
    if not have:
        continue
    best, who = (max if up else min)(have)
    for s in servers:
        if s.startswith("blitz") and table[(b, s)]:
            r = table[(b, s)] / best if up else best / table[(b, s)]
            # The same ratio within each round (against that round's best
            # peer), then its median: less exposed to the VM's drift.
            per = []
            for rd in rounds:
                pv = [rd[(b, p)] for p in peers if (b, p) in rd]
                if (b, s) in rd and pv:
                    bp = (max if up else min)(pv)
                    per.append(rd[(b, s)] / bp if up else bp / rd[(b, s)])
            extra = ""
            if per:
                extra = "; per round %s, median %.3f" % (
                    "/".join("%.2f" % x for x in per), med(per))
            print("ratio bench=%s %s/best_peer(%s)=%.3f (%s%s)" %
                  (b, s, who, r, "blitz better" if r > 1 else "peer better" if r < 1 else "even",
                   extra))
EOF
echo
echo "samples: $OUT/samples.txt"
