#!/usr/bin/env bash
# Runs every blitz benchmark program in DIR (`make bench`).
#
#   bench/run.sh DIR [FILTER...]
#
# DIR holds the programs built by `make build/bench/<name>` (sched, timers,
# mem, ...).
# The `bench=NAME value=N unit=U impl=blitz` lines go to DIR/results.txt
# (BENCH_RESULTS overrides) for tools; after the run stdout gets a table of
# them, beside the anchors' recorded figures when SHARED_DIR (default
# ../shared beside the repository) has anchors/*/results.txt. Everything
# else (progress, raw samples, `# group=...` CPU reports, starvation notes)
# goes to stderr. FILTER arguments are passed to each program (run only
# benchmarks whose name contains one of them).
# Each program runs under `timeout` (BENCH_TIMEOUT_S, default 300 s) besides
# its own watchdog. Exit status: 0 when every program succeeded.
set -uo pipefail

if [ "$#" -lt 1 ]; then
    echo "usage: $0 DIR [FILTER...]" >&2
    exit 2
fi
DIR=$1
shift
LIMIT=${BENCH_TIMEOUT_S:-300}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SHARED_DIR:-$ROOT/../shared}
RESULTS=${BENCH_RESULTS:-$DIR/results.txt}

# Known programs first, in the anchor's group order, then any other.
progs=()
for p in sched timers mem sync tcp; do
    [ -x "$DIR/$p" ] && progs+=("$DIR/$p")
done
for p in "$DIR"/*; do
    [ -f "$p" ] && [ -x "$p" ] || continue
    case "$(basename "$p")" in echo_client | echo_load) continue ;; esac # tools
    case " ${progs[*]} " in *" $p "*) continue ;; esac
    progs+=("$p")
done
if [ "${#progs[@]}" -eq 0 ]; then
    echo "run.sh: no benchmark programs in $DIR" >&2
    exit 1
fi

: >"$RESULTS" || exit 1
status=0
failed=()
for p in "${progs[@]}"; do
    name=$(basename "$p")
    echo "== $name" >&2
    start=$(date +%s)
    # bench= lines to the results file, every other stdout line to stderr.
    timeout -k 10 "$LIMIT" "$p" "$@" | while IFS= read -r line; do
        case "$line" in
        bench=*) printf '%s\n' "$line" >>"$RESULTS" ;;
        *) printf '%s\n' "$line" >&2 ;;
        esac
    done
    rc=${PIPESTATUS[0]}
    echo "== $name rc=$rc seconds=$(($(date +%s) - start))" >&2
    [ "$rc" -eq 0 ] || { status=1; failed+=("$name"); }
done

echo
if command -v python3 >/dev/null 2>&1; then
    python3 "$ROOT/bench/table.py" "$RESULTS" "$SHARED"
else
    cat "$RESULTS"
fi
echo "bench= lines: $RESULTS"
[ "$status" -eq 0 ] || echo "failed: ${failed[*]} (their output is above, on stderr)"
exit $status
