#!/usr/bin/env bash
# blitz against the Tokio anchor, in one run (`make bench-compare`).
#
#   bench/compare.sh DIR
#
# DIR holds the blitz benchmark programs (build/bench: sched, timers, mem).
# For each of REPEAT repetitions this builds (once) and runs the Tokio
# anchor's `sched`, `timers` and `mem` groups with
# ../shared/anchors/tokio/run.sh (240 s limit per group there), then blitz's
# programs of the same names, each group in a fresh process; the value of a
# benchmark is the median over the repetitions of the per-process medians
# (as the anchor's own run.sh does). Then it prints compare.py's table and
# one line per benchmark with the blitz/tokio ratio.
#
# Environment:
#   BENCH_GROUPS  the groups to run, space-separated (default "sched timers
#                 mem"; e.g. BENCH_GROUPS=timers; not GROUPS, a
#                 read-only bash variable)
#   REPEAT        repetitions (default 1; use 3 or more before trusting a
#                 ratio under ~2x: this machine is a shared 2-vCPU VM)
#   QUIET_MAX_S   seconds to wait for an idle machine before each group
#                 (default 120, as the anchor), FOREIGN_MAX (5) and
#                 RETRIES (2): re-run a group that saw more than FOREIGN_MAX %
#                 of foreign CPU. The anchor's run.sh reads the same three.
# fs: file workloads (bench/files.c, the blitz program `files`) beside the
# same workloads with tokio::fs (bench/fs_tokio, built offline here like the
# anchor, into build/fs-tokio-target) and with libuv's uv_fs_* (bench/fs_uv.c,
# built here against libuv1-dev); the files go in a mktemp folder under
# build/, removed at the end. Its ratio lines add blitz/libuv.
# tcp: blitz's echo server is driven by the Tokio anchor's own client
# (tokio-anchor echo-client, built here into build/tokio-target), the same
# client as the anchor's tcp group. The server is blitz as a user gets it:
# blitz_runtime_new(NULL), no BLITZ_* variable in its environment
# (bench/tcp.c; BENCH_TCP_TUNED=1 runs the tuned 2-worker server instead,
# whose backend BLITZ_BACKEND picks).
#   SHARED_DIR    the shared checkout (default: ../shared beside the repo)
#   COMPARE_OUT   output folder (default build/bench-compare)
# Nothing is written outside the repository's build/ folder: the anchor's
# OUT_DIR and CARGO_TARGET_DIR point there. The anchor's run.sh installs
# librust-tokio-dev with apt-get when it is missing (needs root).
set -uo pipefail

if [ "$#" -lt 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
DIR=$(cd "$1" && pwd) || exit 2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# SHARED_DIR may be relative to the repository (the Makefile's ../shared).
SHARED=$(cd "$ROOT" && cd "${SHARED_DIR:-../shared}" && pwd) || exit 1
ANCHOR=$SHARED/anchors/tokio
OUT=${COMPARE_OUT:-$ROOT/build/bench-compare}
REPEAT=${REPEAT:-1}
# BENCH_GROUPS="timers" (or "sched mem", ...) runs only those groups.
read -r -a GROUPS_RUN <<<"${BENCH_GROUPS:-sync sched timers mem tcp}"
declare -A LIMIT=([sync]=240 [sched]=240 [timers]=300 [mem]=240 [tcp]=300 [fs]=900)
# The blitz program of each group (the group's name unless listed).
declare -A PROG=([fs]=files)
for g in "${GROUPS_RUN[@]}"; do
    [ -n "${LIMIT[$g]:-}" ] || { echo "compare.sh: unknown group '$g' (sync sched timers mem tcp fs)" >&2; exit 2; }
done
# The groups the Tokio anchor's run.sh runs (fs is ours, below).
ANCHOR_GROUPS=()
RUN_FS=0
for g in "${GROUPS_RUN[@]}"; do
    if [ "$g" = fs ]; then RUN_FS=1; else ANCHOR_GROUPS+=("$g"); fi
done

[ -f "$ANCHOR/run.sh" ] || { echo "compare.sh: no Tokio anchor at $ANCHOR" >&2; exit 1; }
for g in "${GROUPS_RUN[@]}"; do
    p=${PROG[$g]:-$g}
    [ -x "$DIR/$p" ] || { echo "compare.sh: $DIR/$p not built" >&2; exit 1; }
done
if ! command -v "${CARGO:-cargo}" >/dev/null 2>&1; then
    for d in "${HOME:-/root}/.cargo/bin" /root/.cargo/bin; do
        if [ -x "$d/cargo" ]; then
            PATH="$PATH:$d"
            break
        fi
    done
fi
export PATH
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/build/tokio-target}

rm -rf "$OUT"
mkdir -p "$OUT"
# Absolute: the anchor's run.sh works in its own directory.
OUT=$(cd "$OUT" && pwd)

# The fs group's peers: tokio::fs (offline, from Debian's crates, as the
# anchor) and libuv (Debian's libuv1-dev).
FS_TOKIO=$ROOT/build/fs-tokio-target/release/fs-tokio
FS_UV=$ROOT/build/fs-compare/fs_uv
if [ "$RUN_FS" = 1 ]; then
    echo "== building bench/fs_tokio (offline, --release)" >&2
    (cd "$ROOT/bench/fs_tokio" && CARGO_TARGET_DIR="$ROOT/build/fs-tokio-target" \
        "${CARGO:-cargo}" build --release --offline) >&2 ||
        { echo "compare.sh: bench/fs_tokio did not build" >&2; exit 1; }
    mkdir -p "$ROOT/build/fs-compare"
    "${CC:-cc}" -std=c11 -Wall -Wextra -O2 -o "$FS_UV" "$ROOT/bench/fs_uv.c" -luv ||
        { echo "compare.sh: bench/fs_uv.c did not build (apt-get install libuv1-dev)" >&2; exit 1; }
fi
FS_TMP=
cleanup_fs() { [ -n "$FS_TMP" ] && rm -rf "$FS_TMP"; }
trap cleanup_fs EXIT

# The same idle-machine wait as the anchor's run.sh: 3 consecutive one-second
# /proc/stat samples with under 10% of all CPUs busy, at most QUIET_MAX_S s.
busy_pct() {
    local u n s i w q sq st b0 i0 b1 i1
    read -r _ u n s i w q sq st _ </proc/stat
    b0=$((u + n + s + q + sq + st))
    i0=$((i + w))
    sleep 1
    read -r _ u n s i w q sq st _ </proc/stat
    b1=$((u + n + s + q + sq + st))
    i1=$((i + w))
    echo $((100 * (b1 - b0) / ((b1 - b0) + (i1 - i0) + 1)))
}
wait_quiet() {
    local max=${QUIET_MAX_S:-120} t=0 ok=0 b=100
    while [ "$t" -lt "$max" ]; do
        b=$(busy_pct)
        t=$((t + 1))
        if [ "$b" -lt 10 ]; then ok=$((ok + 1)); else ok=0; fi
        if [ "$ok" -ge 3 ]; then
            echo "quiet_after_s=$t"
            return 0
        fi
    done
    echo "NOT_QUIET_after_s=$t last_busy_pct=$b"
}

# One blitz group in a fresh process, with the anchor's retry rule.
run_blitz_group() {
    local g=$1 res=$2 lim=${LIMIT[$1]} attempt=0 q rc foreign start
    local tmp="$OUT/blitz-$g.tmp"
    while :; do
        attempt=$((attempt + 1))
        q=$(wait_quiet)
        echo "== blitz rep $rep/$REPEAT: $g attempt $attempt ($q)" >&2
        echo "# ==== rep=$rep group=$g attempt=$attempt $q" >>"$OUT/blitz-samples.log"
        start=$(date +%s)
        timeout -k 10 "$lim" "$DIR/${PROG[$g]:-$g}" >"$tmp" 2>>"$OUT/blitz-samples.log"
        rc=$?
        cat "$tmp" >&2
        foreign=$(sed -n 's/.*foreign_cpu_pct=\([0-9.]*\).*/\1/p' "$tmp" | tail -1)
        foreign=${foreign:-100}
        if [ "$rc" -eq 0 ] && [ "${foreign%.*}" -ge "${FOREIGN_MAX:-5}" ] &&
            [ "$attempt" -le "${RETRIES:-2}" ]; then
            echo "== blitz $g: other processes used ${foreign}% of the CPUs, discarding attempt $attempt" >&2
            sed 's/^/# discarded: /' "$tmp" >>"$OUT/blitz-samples.log"
            continue
        fi
        cat "$tmp" >>"$res"
        echo "# rep=$rep group=$g rc=$rc attempt=$attempt seconds=$(($(date +%s) - start)) before:$q" >>"$res"
        rm -f "$tmp"
        [ "$rc" -eq 0 ] || {
            echo "compare.sh: blitz $g failed (rc=$rc); see $OUT/blitz-samples.log" >&2
            return 1
        }
        return 0
    done
}

# One peer's fs program in a fresh process: its bench= lines to $2.
run_fs_peer() {
    local name=$1 res=$2 q rc
    shift 2
    q=$(wait_quiet)
    echo "== $name rep $rep/$REPEAT: fs ($q)" >&2
    echo "# ==== rep=$rep group=fs $q" >>"$OUT/$name-samples.log"
    timeout -k 10 "${LIMIT[fs]}" "$@" "$FS_TMP" >"$OUT/$name-fs.tmp" 2>>"$OUT/$name-samples.log"
    rc=$?
    cat "$OUT/$name-fs.tmp" >&2
    cat "$OUT/$name-fs.tmp" >>"$res"
    echo "# rep=$rep group=fs impl=$name rc=$rc before:$q" >>"$res"
    rm -f "$OUT/$name-fs.tmp"
    [ "$rc" -eq 0 ] || { echo "compare.sh: $name fs failed (rc=$rc)" >&2; return 1; }
}

status=0
tokio_reps=()
blitz_reps=()
libuv_reps=()
for rep in $(seq 1 "$REPEAT"); do
    : >"$OUT/tokio-rep$rep.txt"
    if [ "${#ANCHOR_GROUPS[@]}" -gt 0 ]; then
        echo "== rep $rep/$REPEAT: tokio anchor (${ANCHOR_GROUPS[*]})" >&2
        OUT_DIR="$OUT/tokio/rep$rep" REPEAT=1 bash "$ANCHOR/run.sh" "${ANCHOR_GROUPS[@]}" >&2 || {
            echo "compare.sh: the Tokio anchor failed (see $OUT/tokio/rep$rep)" >&2
            status=1
        }
        [ -f "$OUT/tokio/rep$rep/rep1.txt" ] && cat "$OUT/tokio/rep$rep/rep1.txt" >>"$OUT/tokio-rep$rep.txt"
    fi
    if [ "$RUN_FS" = 1 ]; then
        FS_TMP=$(mktemp -d "$ROOT/build/fs-bench.XXXXXX")
        export FS_BENCH_DIR=$FS_TMP
        run_fs_peer tokio "$OUT/tokio-rep$rep.txt" "$FS_TOKIO" || status=1
        : >"$OUT/libuv-rep$rep.txt"
        run_fs_peer libuv "$OUT/libuv-rep$rep.txt" "$FS_UV" || status=1
        libuv_reps+=("$OUT/libuv-rep$rep.txt")
    fi
    grep -q '^bench=' "$OUT/tokio-rep$rep.txt" && tokio_reps+=("$OUT/tokio-rep$rep.txt")
    : >"$OUT/blitz-rep$rep.txt"
    for g in "${GROUPS_RUN[@]}"; do
        run_blitz_group "$g" "$OUT/blitz-rep$rep.txt" || status=1
    done
    blitz_reps+=("$OUT/blitz-rep$rep.txt")
    if [ -n "$FS_TMP" ]; then
        rm -rf "$FS_TMP"
        FS_TMP=
    fi
done

# Per-benchmark median across repetitions; `# bench=... status=...` lines
# (benchmarks that could not finish) are kept once.
merge() {
    python3 - "$@" <<'EOF'
import sys
vals, units, impls, order, status = {}, {}, {}, [], {}
for path in sys.argv[1:]:
    for line in open(path):
        line = line.strip()
        if line.startswith("# bench=") and " status=" in line:
            kv = dict(p.split("=", 1) for p in line[2:].split() if "=" in p)
            status.setdefault(kv["bench"], line)
            continue
        if not line.startswith("bench="):
            continue
        kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
        n = kv["bench"]
        if n not in vals:
            vals[n] = []
            order.append(n)
        vals[n].append(float(kv["value"]))
        units[n], impls[n] = kv["unit"], kv["impl"]
for n in order:
    v = sorted(vals[n])
    k = len(v)
    med = v[k // 2] if k % 2 else (v[k // 2 - 1] + v[k // 2]) / 2
    print("bench=%s value=%.4f unit=%s impl=%s" % (n, med, units[n], impls[n]))
for line in status.values():
    print(line)
EOF
}

if [ "${#tokio_reps[@]}" -eq 0 ]; then
    echo "compare.sh: no Tokio results" >&2
    exit 1
fi
merge "${tokio_reps[@]}" >"$OUT/tokio.txt"
merge "${blitz_reps[@]}" >"$OUT/blitz.txt"
[ "${#libuv_reps[@]}" -gt 0 ] && merge "${libuv_reps[@]}" >"$OUT/libuv.txt"

echo
echo "## blitz vs Tokio 1.24 anchor: groups ${GROUPS_RUN[*]}, median of $REPEAT repetition(s) ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
echo
(cd "$OUT" && python3 "$ANCHOR/compare.py" tokio.txt blitz.txt)
echo
echo "blitz/tokio ratio (time or memory per op; < 1 means blitz is better):"
LIBUV_TXT=
[ -f "$OUT/libuv.txt" ] && LIBUV_TXT=$OUT/libuv.txt
python3 - "$OUT/tokio.txt" "$OUT/blitz.txt" $LIBUV_TXT <<'EOF'
import sys
LOWER = {"ns/op", "ms", "bytes/task"}
def load(path):
    rows, order, status = {}, [], {}
    for line in open(path):
        line = line.strip()
        if line.startswith("# bench=") and " status=" in line:
            kv = dict(p.split("=", 1) for p in line[2:].split() if "=" in p)
            status[kv["bench"]] = kv.get("status", "?")
        elif line.startswith("bench="):
            kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
            rows[kv["bench"]] = (float(kv["value"]), kv["unit"])
            order.append(kv["bench"])
    return rows, order, status
def ratio(b, p):
    return b[0] / p[0] if p[1] in LOWER else p[0] / b[0]
t, torder, tst = load(sys.argv[1])
b, border, bst = load(sys.argv[2])
u = load(sys.argv[3])[0] if len(sys.argv) > 3 else {}
names = []
for n in torder + list(tst) + border + list(bst):
    if n not in names:
        names.append(n)
for n in names:
    # fs rows *_pool and *_floor (blitz's other path, the plain system
    # calls) are set against the peers' row of the same work.
    peer = n
    for suffix in ("_pool", "_floor"):
        if n.startswith("fs_") and n.endswith(suffix):
            peer = n[: -len(suffix)]
    if peer in t and n in b and t[peer][0] > 0 and b[n][0] > 0:
        r = ratio(b[n], t[peer])
        how = "%.2fx %s" % (r if r >= 1 else 1 / r, "worse" if r > 1 else "better")
        extra = ""
        if peer in u and u[peer][0] > 0:
            extra = " blitz/libuv=%.3f" % ratio(b[n], u[peer])
        print("ratio bench=%s blitz/tokio=%.3f%s (blitz %s)" % (n, r, extra, how))
    else:
        tv = ("tokio %s" % tst[n]) if n in tst else ("tokio %.4g %s" % t[n] if n in t else "tokio -")
        bv = ("blitz %s" % bst[n]) if n in bst else ("blitz %.4g %s" % b[n] if n in b else "blitz -")
        print("ratio bench=%s blitz/tokio=- (%s, %s)" % (n, tv, bv))
EOF
for f in "$OUT/tokio.txt" "$OUT/blitz.txt"; do
    grep -h '^# bench=.*status=' "$f" || true
done
grep -h '^# group=\|^# rep=' "${tokio_reps[@]}" "${blitz_reps[@]}" "${libuv_reps[@]}" | sed 's/^/  /' >&2
echo
[ -n "$LIBUV_TXT" ] && { echo; echo "libuv (fs group):"; grep '^bench=' "$LIBUV_TXT"; }
echo "results: $OUT/tokio.txt $OUT/blitz.txt $LIBUV_TXT (raw samples: $OUT/blitz-samples.log, $OUT/tokio/rep*/samples.log)"
exit $status
