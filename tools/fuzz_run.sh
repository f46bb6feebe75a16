#!/usr/bin/env bash
# Runs each libFuzzer target given for FUZZ_SECONDS: first over its
# regression corpus (tests/fuzz/corpus/NAME, read only), then on new
# inputs, which go to a fresh directory under the build tree. Prints one
# TAP line per target; a crash's input is kept there and named in the log.
set -u
seconds=${FUZZ_SECONDS:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
n=0
rc=0
for bin in "$@"; do
    n=$((n + 1))
    name=$(basename "$bin")
    corpus="$root/tests/fuzz/corpus/$name"
    work=$(mktemp -d "$(dirname "$bin")/$name.XXXXXX")
    mkdir -p "$work/new"
    # A target without a corpus yet starts from nothing.
    seeds=()
    [ -d "$corpus" ] && seeds=("$corpus")
    start=$(date +%s)
    if "$bin" -max_total_time="$seconds" -seed=1 -print_final_stats=1 \
        -artifact_prefix="$work/" "$work/new" ${seeds[@]+"${seeds[@]}"} >"$work/log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
        echo "ok $n - $name: ${runs:-?} inputs in $(($(date +%s) - start)) s"
        rm -rf "$work"
    else
        echo "not ok $n - $name (log and input: $work)"
        grep -E "check failed|ERROR|SUMMARY|Test unit written" "$work/log" | head -n 10 | sed 's/^/# /'
        rc=1
    fi
done
exit $rc
