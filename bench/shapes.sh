#!/usr/bin/env bash
# Load shapes beyond the 50-connection ping-pong, blitz side by side with
# Tokio, libuv and Go, in one run (`make bench-shapes`).
#
#   bench/shapes.sh
#
# Shapes (bench/shapes/):
#   idle_busy  10,000 idle connections (each echoed one byte first) plus 50
#              busy ones: the server's memory per idle connection (VmRSS),
#              and requests/s, p50 and p99 of the busy ones (64-byte
#              ping-pong, one client thread, 1 s warm-up + ECHO_SECS).
#   churn      connect, one 64-byte request and its echo, close, from 4
#              client threads: connections per second.
#   http       a minimal HTTP/1.1 keep-alive responder (fixed response, no
#              framework) driven by wrk (Debian's package): WRK_THREADS x
#              WRK_CONNS connections (2 x 256) for WRK_SECS (5): requests/s,
#              latency p50 / p90 / p99 and server CPU per request.
# Servers, each a fresh process, the runtime as a user gets it:
#   blitz  bench/shapes/blitz_server.c (blitz_runtime_new(NULL), no BLITZ_*
#          variable in its environment, receives into lent buffers);
#   tokio  echo: the Tokio anchor's echo-server (2 workers, this machine's
#          CPU count); http: bench/shapes/tokio_http (Tokio's default
#          multi-thread runtime), both built offline from Debian's crates;
#   libuv  echo: the libuv anchor's uv_echo_server.c; http:
#          bench/shapes/uv_http.c (one loop thread);
#   go     echo only: the Go anchor's server (GOMAXPROCS=2; Debian's
#          golang-go, installed with apt-get when missing and root).
# Each of REPEAT rounds (default 1) runs every server on every shape, in an
# order that rotates each round; the table holds the medians, then each
# blitz figure's ratio to the best peer.
#
# Environment: REPEAT, ECHO_SECS (5), CHURN_SECS (5), WRK_THREADS,
# WRK_CONNS, WRK_SECS, SHARED_DIR (default ../shared beside the
# repository), SHAPES_OUT (default build/bench-shapes).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SHARED_DIR:-$ROOT/../shared}
OUT=${SHAPES_OUT:-$ROOT/build/bench-shapes}
REPEAT=${REPEAT:-1}
ECHO_SECS=${ECHO_SECS:-5}
CHURN_SECS=${CHURN_SECS:-5}
WRK_THREADS=${WRK_THREADS:-2}
WRK_CONNS=${WRK_CONNS:-256}
WRK_SECS=${WRK_SECS:-5}
SCRIPT=shapes.sh
# shellcheck source=bench/server_lib.sh
. "$ROOT/bench/server_lib.sh"
server_out_open

apt_get() {
    [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}
for d in "${HOME:-/root}/.cargo/bin" /root/.cargo/bin; do
    [ -x "$d/cargo" ] && PATH="$PATH:$d"
done
command -v wrk >/dev/null || apt_get wrk
command -v wrk >/dev/null || { echo "shapes.sh: needs wrk (apt-get install wrk)" >&2; exit 1; }
S=$ROOT/bench/shapes
gcc -O2 -Wall -Wextra -o "$OUT/shape_client" "$S/shape_client.c" -lpthread || exit 1
gcc -std=c11 -O2 -Wall -Wextra -D_GNU_SOURCE -o "$OUT/blitz_server" "$S/blitz_server.c" -pthread ||
    exit 1
SERVERS=(blitz)
TARGET=${CARGO_TARGET_DIR:-$ROOT/build/tokio-target}
if [ -f "$SHARED/anchors/tokio/Cargo.toml" ] &&
    (cd "$SHARED/anchors/tokio" && CARGO_TARGET_DIR=$TARGET cargo build --release --offline -q) >&2 &&
    (cd "$S/tokio_http" && CARGO_TARGET_DIR=$TARGET cargo build --release --offline -q) >&2; then
    SERVERS+=(tokio)
else
    echo "shapes.sh: Tokio left out (cannot build the anchor or tokio_http)" >&2
fi
pkg-config --exists libuv 2>/dev/null || apt_get libuv1-dev pkg-config
# shellcheck disable=SC2046
if pkg-config --exists libuv 2>/dev/null &&
    gcc -O2 -Wall -o "$OUT/uv_echo_server" "$SHARED/anchors/libuv/uv_echo_server.c" \
        $(pkg-config --cflags --libs libuv) &&
    gcc -O2 -Wall -Wextra -o "$OUT/uv_http" "$S/uv_http.c" $(pkg-config --cflags --libs libuv); then
    SERVERS+=(libuv)
else
    echo "shapes.sh: libuv left out (no libuv1-dev)" >&2
fi
command -v go >/dev/null || apt_get golang-go
if command -v go >/dev/null &&
    (cd "$SHARED/anchors/go" && GOFLAGS=-mod=mod GOCACHE="$OUT/gocache" go build -o "$OUT/gobench" .) >&2; then
    SERVERS+=(go)
else
    echo "shapes.sh: Go left out of the echo shapes (no go toolchain)" >&2
fi
server_stdin_open

# Starts server $1 for shape $2 (echo or http) in the background; sets SPID
# and PORT; fails when that server has no such shape.
start_server() {
    local portfile="$OUT/server.port"
    : >"$portfile"
    case "$1/$2" in
    blitz/* | tokio/* | libuv/* | go/echo) ;;
    *) return 1 ;;
    esac
    # exec: SPID is the server itself (its memory and CPU are measured).
    # shellcheck disable=SC2046
    case "$1/$2" in
    blitz/*) exec env $(blitz_env_unset) "$OUT/blitz_server" "$2" ;;
    tokio/echo) exec "$TARGET/release/tokio-anchor" echo-server --port 0 --workers 2 --max-secs 300 ;;
    tokio/http) exec "$TARGET/release/tokio-http" ;;
    libuv/echo) exec "$OUT/uv_echo_server" 0 300 ;;
    libuv/http) exec "$OUT/uv_http" ;;
    go/echo) GOMAXPROCS=2 exec "$OUT/gobench" server -addr 127.0.0.1:0 -life 300s ;;
    esac >"$portfile" 2>/dev/null <"$OUT/stdin.fifo" &
    SPID=$!
    server_wait_port "$1" "$portfile"
}

stop_server() {
    kill -TERM "$SPID" 2>/dev/null
    wait "$SPID" 2>/dev/null
}

# wrk's latency ("123.45us", "1.23ms", "1.02s") in ms.
to_ms() {
    awk -v v="$1" 'BEGIN {
        n = v + 0
        if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n = n; else if (v ~ /s$/) n *= 1000
        printf "%.3f", n }'
}

# One round of server $1 over every shape.
run_server() {
    local name=$1 s0 s1 out rps req
    if start_server "$name" echo; then
        "$OUT/shape_client" idle-busy -p "$PORT" -P "$SPID" -d "$ECHO_SECS" -i "$name" \
            >>"$OUT/samples.txt" 2>>"$OUT/client.err"
        stop_server
    fi
    if start_server "$name" echo; then
        "$OUT/shape_client" churn -p "$PORT" -d "$CHURN_SECS" -i "$name" \
            >>"$OUT/samples.txt" 2>>"$OUT/client.err"
        stop_server
    fi
    if start_server "$name" http; then
        s0=$(server_cpu_ticks "$SPID")
        out=$(wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d"${WRK_SECS}s" --latency \
            "http://127.0.0.1:$PORT/" 2>&1)
        s1=$(server_cpu_ticks "$SPID")
        stop_server
        echo "$out" >>"$OUT/wrk.log"
        rps=$(echo "$out" | sed -n 's/^Requests\/sec: *\([0-9.]*\)/\1/p')
        req=$(echo "$out" | sed -n 's/^ *\([0-9]*\) requests in .*/\1/p')
        if [ -n "$rps" ] && [ -n "$req" ] && [ "$req" -gt 0 ]; then
            {
                echo "bench=shape_http_rps value=$rps unit=req/s impl=$name"
                for p in 50 90 99; do
                    echo "bench=shape_http_p$p value=$(to_ms "$(echo "$out" |
                        sed -n "s/^ *$p% *\([0-9.]*[mu]*s\).*/\1/p")") unit=ms impl=$name"
                done
                awk -v a="$s0" -v b="$s1" -v n="$req" -v i="$name" \
                    'BEGIN { printf "bench=shape_http_server_cpu value=%.2f unit=us/req impl=%s\n", (b - a) / 100 * 1e6 / n, i }'
            } >>"$OUT/samples.txt"
        else
            echo "shapes.sh: no wrk result for $name" >&2
        fi
    fi
    echo "  $name done" >&2
}

server_rounds

echo
echo "## Load shapes, median of $REPEAT round(s) ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
echo
python3 - "$OUT/samples.txt" "${SERVERS[@]}" <<'PY'
import sys
path, servers = sys.argv[1], sys.argv[2:]
vals, units = {}, {}
for line in open(path):
    line = line.strip()
    if line.startswith("bench="):
        kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
        vals.setdefault((kv["bench"], kv["impl"]), []).append(float(kv["value"]))
        units[kv["bench"]] = kv["unit"]
def med(v):
    v = sorted(v)
    k = len(v)
    return v[k // 2] if k % 2 else (v[k // 2 - 1] + v[k // 2]) / 2
benches = [b for b in ["shape_idle_mem_per_conn", "shape_busy_rps", "shape_busy_p50",
                       "shape_busy_p99", "shape_churn_conn_per_s", "shape_http_rps",
                       "shape_http_p50", "shape_http_p90", "shape_http_p99",
                       "shape_http_server_cpu"] if b in units]
print("| shape | unit | " + " | ".join(servers) + " |")
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
for b in benches:
    up = units[b] in ("req/s", "conn/s")
    have = [(table[(b, p)], p) for p in servers if p != "blitz" and table[(b, p)]]
    if not have or not table.get((b, "blitz")):
        continue
    best, who = (max if up else min)(have)
    r = table[(b, "blitz")] / best if up else best / table[(b, "blitz")]
    print("ratio %s blitz/best_peer(%s)=%.3f (%s)" %
          (b, who, r, "blitz better" if r > 1 else "peer better" if r < 1 else "even"))
PY
echo
echo "samples: $OUT/samples.txt"
