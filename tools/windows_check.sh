#!/usr/bin/env bash
# Windows: blitz.h's implementation, the test suite and the examples that
# apply, cross-compiled with mingw-w64 gcc and clang (-Wall -Wextra
# -Wpedantic -Werror), then the gcc-built suite and examples run under
# wine, headless, in a WINEPREFIX of their own that is removed at the end
# (its wineserver stopped with `wineserver -k`).
#
# Windows has sockets and pipes (the completion port), streams over
# sockets and files, files, DNS, console signals and processes, but no
# Unix sockets yet: the tests of those are left out by tests/windows_skip.txt
# (each with its reason), and so are the examples below. The echo server
# is run apart, under 1,000 connections of the echo client; the servers
# that run until stopped, and the showcase, are built but not run.
#
# The MSVC atomics stage: MSVC itself is not at hand, so the suite's
# scheduler, timer, sync and channel tests are built a third time with
# gcc and BLITZ_ATOMICS_MSVC (the interlocked-intrinsic atomics and bit
# scans MSVC builds use, from mingw-w64's <intrin.h>) and run under wine.
#
# Needs: gcc-mingw-w64-x86-64-posix, wine64 and wine (Debian 12), clang-14.
# BUILD (default build) holds the outputs.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=$BUILD/windows
GCC=x86_64-w64-mingw32-gcc-posix
CLANG=clang-14
for tool in "$GCC" "$CLANG" wine wineserver; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "windows_check: $tool is missing (apt-get install gcc-mingw-w64-x86-64-posix wine64 wine clang-14)" >&2
        exit 1
    }
done
# The examples that need what Windows does not have yet.
SKIP_EXAMPLES="process_pipeline"
# Built, not run: servers that run until a signal stops them, and the
# showcase, whose I/O part wants 50,000 round trips in 5 s (under wine
# on a loaded two-core machine it managed about 2,300 a second).
BUILD_ONLY_EXAMPLES="echo_graceful metrics_server showcase"
# Run apart below (a server, and its client).
APART_EXAMPLES="echo_client echo_server"

mkdir -p "$OUT"
# The suite's list, less the tests that cannot apply yet.
printf '#include "tests/list.h"\n#define X(n, t) @n t@\nBLITZ_TEST_LIST(X)\n' >"$OUT/list.c"
cpp -P -I. "$OUT/list.c" | tr '@' '\n' | grep -v '^ *$' >"$OUT/list_all.txt"
python3 tools/windows_list.py "$OUT/list_all.txt" "$OUT/list_windows.h"
# The MSVC atomics stage's share: the tests of the lock-free code.
MSVC_PREFIXES='sync|chan|broadcast|watch|oneshot|spawn|waker|park|yield|task|runtime|time|cancel|detach'
{
    echo '#define BLITZ_WINDOWS_TEST_LIST(X) \'
    grep -E "^    X\(($MSVC_PREFIXES)_" "$OUT/list_windows.h" | sed 's/ *\\$//; s/$/ \\/'
    echo '    /* end of list */'
} >"$OUT/list_msvc_atomics.h"

FLAGS=(-std=c11 -Wall -Wextra -Wpedantic -Werror -I. -static)
LIBS=(-lws2_32 -lsynchronization)
# clang uses the mingw-w64 gcc's own libraries (libgcc, the CRT start-up).
CLANG_FLAGS=(--target=x86_64-w64-mingw32 -L"$(dirname "$("$GCC" -print-libgcc-file-name)")")
TEST_DEFS=(-DBLITZ_TEST_LIST_WINDOWS="\"$OUT/list_windows.h\"")
examples=()
for src in examples/*.c; do
    name=$(basename "$src" .c)
    case " $SKIP_EXAMPLES " in *" $name "*) continue ;; esac
    examples+=("$name")
done

# Two compilers at a time (the machine has two cores).
t0=$(date +%s)
"$GCC" "${FLAGS[@]}" -O2 "${TEST_DEFS[@]}" blitz_tests.c -o "$OUT/blitz_tests.exe" "${LIBS[@]}" &
gcc_pid=$!
# -O1: the clang build is a compile-and-link check.
# The tests' own helper threads are POSIX threads (winpthreads, which the
# -posix gcc links by itself); blitz itself uses Win32 only.
"$CLANG" "${CLANG_FLAGS[@]}" "${FLAGS[@]}" -O1 "${TEST_DEFS[@]}" blitz_tests.c \
    -o "$OUT/blitz_tests_clang.exe" "${LIBS[@]}" -lpthread
wait "$gcc_pid"
for name in "${examples[@]}"; do
    "$GCC" "${FLAGS[@]}" -O2 "examples/$name.c" -o "$OUT/$name.exe" "${LIBS[@]}" &
    gcc_pid=$!
    "$CLANG" "${CLANG_FLAGS[@]}" "${FLAGS[@]}" -O2 "examples/$name.c" -o "$OUT/${name}_clang.exe" "${LIBS[@]}"
    wait "$gcc_pid"
done
# The MSVC atomics build, and clang's compile of the same mode.
MSVC_DEFS=(-DBLITZ_ATOMICS_MSVC -DBLITZ_TEST_LIST_WINDOWS="\"$OUT/list_msvc_atomics.h\"")
"$GCC" "${FLAGS[@]}" -O1 "${MSVC_DEFS[@]}" blitz_tests.c \
    -o "$OUT/blitz_tests_msvc_atomics.exe" "${LIBS[@]}" &
gcc_pid=$!
"$CLANG" --target=x86_64-w64-mingw32 "${FLAGS[@]}" "${MSVC_DEFS[@]}" -fsyntax-only blitz_tests.c
wait "$gcc_pid"
echo "windows_check: suite, MSVC atomics suite and ${#examples[@]} examples built with gcc and clang in $(($(date +%s) - t0)) s"

WINEPREFIX=$(mktemp -d "${TMPDIR:-/tmp}/blitz-wine.XXXXXX")
export WINEPREFIX WINEDEBUG=-all
cleanup() {
    wineserver -k >/dev/null 2>&1 || true
    rm -rf "$WINEPREFIX"
}
trap cleanup EXIT

fail=0
# The echo server on a free port, then 1,000 client connections checking
# every byte for 2 s (the gcc build against the clang one's).
for pair in "echo_server echo_client_clang"; do
    set -- $pair
    # Created here: the background shell may open it after the first look.
    : >"$OUT/$1.out"
    wine "$OUT/$1.exe" 127.0.0.1:0 >"$OUT/$1.out" 2>&1 &
    server=$!
    port=""
    for _ in $(seq 1 100); do
        port=$(sed -n 's/.*127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$OUT/$1.out")
        [ -n "$port" ] && break
        sleep 0.2
    done
    if [ -z "$port" ] || ! wine "$OUT/$2.exe" "127.0.0.1:$port" 1000 64 2 >"$OUT/$2.out" 2>&1; then
        echo "windows_check: $2 against $1 failed:" >&2
        cat "$OUT/$1.out" "$OUT/$2.out" >&2
        fail=1
    else
        echo "windows_check: $2 against $1, 1000 connections: $(cat "$OUT/$2.out")"
    fi
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
done
# Runs an example. Wine now and then fails to start a process at all: it
# fails having printed nothing, or only wine's own "wine client error"
# (its connection to the wineserver was reset). Such a start is tried
# again (three times at most); a run that printed anything else counts as
# it ended.
run_example() {
    local rc=0
    for try in 1 2 3; do
        wine "$OUT/$1.exe" >"$OUT/$1.out" 2>&1 && return 0 || rc=$?
        grep -qv '^wine client error' "$OUT/$1.out" && return "$rc"
        echo "windows_check: $1 failed before printing anything of its own (try $try):" \
            "$(cat "$OUT/$1.out")" >&2
    done
    return "$rc"
}
for name in "${examples[@]}"; do
    case " $APART_EXAMPLES $BUILD_ONLY_EXAMPLES " in *" $name "*) continue ;; esac
    for exe in "$name" "${name}_clang"; do
        if ! run_example "$exe"; then
            echo "windows_check: example $exe failed:" >&2
            cat "$OUT/$exe.out" >&2
            fail=1
        fi
    done
done
t0=$(date +%s)
# In two processes at once: most of a test's time under wine is starting
# its process and waiting, not computing.
set +e
BLITZ_TEST_SHARD=0/2 wine "$OUT/blitz_tests.exe" >"$OUT/tests0.log" 2>&1 &
shard0=$!
BLITZ_TEST_SHARD=1/2 wine "$OUT/blitz_tests.exe" >"$OUT/tests1.log" 2>&1
rc=$?
wait "$shard0" || rc=1
set -e
cat "$OUT/tests0.log" "$OUT/tests1.log" >"$OUT/tests.log"
# The TAP lines, for make test's count.
grep -E '^(not )?ok ' "$OUT/tests.log" || true
passed=$(grep -c '^ok ' "$OUT/tests.log" || true)
failed=$(grep -c '^not ok ' "$OUT/tests.log" || true)
echo "windows_check: $passed passed, $failed failed under wine in $(($(date +%s) - t0)) s" \
    "($(grep -vc '^ *\(#\|$\)' tests/windows_skip.txt) skip patterns in tests/windows_skip.txt)"
if [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ]; then
    # Each failure with what its child printed before it.
    grep -B10 '^not ok' "$OUT/tests.log" | grep -v '^ok ' >&2
    fail=1
fi

# The MSVC atomics stage (see the top), also in two processes.
t0=$(date +%s)
set +e
BLITZ_TEST_SHARD=0/2 wine "$OUT/blitz_tests_msvc_atomics.exe" >"$OUT/msvc0.log" 2>&1 &
shard0=$!
BLITZ_TEST_SHARD=1/2 wine "$OUT/blitz_tests_msvc_atomics.exe" >"$OUT/msvc1.log" 2>&1
rc=$?
wait "$shard0" || rc=1
set -e
cat "$OUT/msvc0.log" "$OUT/msvc1.log" >"$OUT/msvc_atomics.log"
passed=$(grep -c '^ok ' "$OUT/msvc_atomics.log" || true)
failed=$(grep -c '^not ok ' "$OUT/msvc_atomics.log" || true)
echo "windows_check: MSVC atomics (BLITZ_ATOMICS_MSVC) under wine: $passed passed," \
    "$failed failed in $(($(date +%s) - t0)) s"
if [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ]; then
    grep -B10 '^not ok' "$OUT/msvc_atomics.log" | grep -v '^ok ' >&2 || true
    fail=1
fi
exit $fail
