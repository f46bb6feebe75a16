#!/usr/bin/env bash
# Runs the stages of `make test` one after another, each as its own make
# target, and keeps going when one fails, so a run ends with the whole
# picture: one line per stage and a final "N passed, N failed".
#
#   tools/test_all.sh STAGE...
#
# A stage builds its programs in parallel (TEST_JOBS, default the CPU
# count) and runs its tests one program after another, as before.
# A stage's output goes to build/test-logs/STAGE.log. Tests print TAP
# ("ok N - name" / "not ok N - name"); a stage without TAP lines counts as
# one check. Only what failed is shown, unless VERBOSE=1.
set -u
cd "$(dirname "$0")/.."
logs=${BUILD:-build}/test-logs
rm -rf "$logs"
mkdir -p "$logs"
make_cmd=${MAKE:-make}
jobs=${TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
total_pass=0
total_fail=0
failed_stages=()
for stage in "$@"; do
    log=$logs/$stage.log
    start=$(date +%s)
    if [ "${VERBOSE:-0}" = 1 ]; then
        $make_cmd --no-print-directory -j"$jobs" "$stage" 2>&1 | tee "$log"
        rc=${PIPESTATUS[0]}
    else
        $make_cmd --no-print-directory -j"$jobs" "$stage" >"$log" 2>&1
        rc=$?
    fi
    pass=$(grep -c '^ok ' "$log")
    fail=$(grep -c '^not ok ' "$log")
    if [ "$pass" -eq 0 ] && [ "$fail" -eq 0 ]; then
        if [ "$rc" -eq 0 ]; then pass=1; else fail=1; fi
    elif [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
        fail=1 # a crash, a sanitizer report or a build error after the tests
    fi
    if [ "$rc" -ne 0 ] && [ "${VERBOSE:-0}" != 1 ]; then
        # Everything but the passing lines: the failures and what they said.
        grep -v -E '^ok |^1\.\.[0-9]+$' "$log" | tail -n 200
    fi
    total_pass=$((total_pass + pass))
    total_fail=$((total_fail + fail))
    [ "$rc" -eq 0 ] || failed_stages+=("$stage")
    printf '%-18s %6d passed, %d failed (%ds)%s\n' "$stage" "$pass" "$fail" \
        $(($(date +%s) - start)) "$([ "$rc" -eq 0 ] || echo "  log: $log")"
done
if [ "${#failed_stages[@]}" -ne 0 ]; then
    echo "make test: $total_pass passed, $total_fail failed (stages: ${failed_stages[*]})"
    exit 1
fi
echo "make test: $total_pass passed, $total_fail failed"
