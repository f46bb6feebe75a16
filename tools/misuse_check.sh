#!/usr/bin/env bash
# Misuses of blitz.h give the messages that COMMON MISTAKES in the manual
# quotes (make test-misuse). Each check builds or runs a program of
# tests/misuse/ against the shipped blitz.h and looks for the exact text in
# the first error, so it fails when the message changes or goes away; a
# correct program is the control. Prints TAP.
set -u
cd "$(dirname "$0")/.."
out=${BUILD:-build}/misuse
rm -rf "$out"
mkdir -p "$out"
warn="-std=c11 -Wall -Wextra -Wpedantic -Wshadow -Werror"
dir=tests/misuse
n=0
failed=0

report() { # ok? name log
    n=$((n + 1))
    if [ "$1" = 1 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        sed 's/^/#   /' "$3" | head -n 20
        failed=$((failed + 1))
    fi
}

# expect_error NAME FIRST TEXT CMD...: CMD fails, and the first line of its
# output that matches the extended regex FIRST contains TEXT.
expect_error() {
    local name=$1 first=$2 text=$3 log="$out/$n.log" ok=0
    shift 3
    if ! "$@" >"$log" 2>&1 && grep -E -m1 -- "$first" "$log" | grep -q -F -- "$text"; then
        ok=1
    fi
    report $ok "$name" "$log"
}

# expect_ok NAME CMD...: CMD succeeds.
expect_ok() {
    local name=$1 log="$out/$n.log" ok=0
    shift
    "$@" >"$log" 2>&1 && ok=1
    report $ok "$name" "$log"
}

# A coroutine macro outside BLITZ_BEGIN ... BLITZ_END, in C and C++.
for m in AWAIT YIELD RETURN END; do
    for cc in gcc clang; do
        expect_error "$cc: BLITZ_$m without BLITZ_BEGIN" "error" \
            "blitz_${m}_needs_BLITZ_BEGIN" \
            $cc $warn -DMISUSE=$m -I. -fsyntax-only $dir/no_begin.c
    done
done
for cxx in g++ clang++; do
    expect_error "$cxx: BLITZ_AWAIT without BLITZ_BEGIN" "error" \
        "blitz_AWAIT_needs_BLITZ_BEGIN" \
        $cxx -x c++ -std=c++11 -Wall -Wextra -Wpedantic -Wshadow -Werror -DMISUSE=AWAIT -I. \
        -fsyntax-only $dir/no_begin.c
done

# A local variable initialised before an await and used after it.
expect_error "gcc -Wjump-misses-init: a local across an await" "error" \
    "switch jumps over variable initialization [-Werror=jump-misses-init]" \
    gcc $warn -Wjump-misses-init -I. -fsyntax-only $dir/local_across_await.c

# The control: the correct program builds without a warning and runs; its
# object is one of the two implementations below.
expect_ok "gcc -Wjump-misses-init: the correct program builds" \
    gcc $warn -Wjump-misses-init -O0 -pthread -I. -c $dir/correct.c -o "$out/correct.o"
expect_ok "gcc: the correct program links and runs" \
    sh -c "gcc -pthread $out/correct.o -o $out/correct && $out/correct"
expect_ok "clang: the correct program builds and runs" \
    sh -c "clang $warn -O0 -pthread -I. $dir/correct.c -o $out/correct_clang && $out/correct_clang"

# No implementation, and two: with the default linker, then gold and lld
# when they are installed.
gcc $warn -O0 -pthread -I. -c $dir/impl_again.c -o "$out/impl_again.o" >"$out/impl_again.log" 2>&1
echo 'int main(void) { return 0; }' >"$out/empty.c"
for ld in default gold lld; do
    flag=
    if [ $ld != default ]; then
        flag=-fuse-ld=$ld
        if ! gcc $flag "$out/empty.c" -o "$out/empty" 2>/dev/null; then
            echo "# ld.$ld not installed: skipped"
            continue
        fi
    fi
    expect_error "ld ($ld): no BLITZ_IMPLEMENTATION" "undefined" \
        "blitz_define_BLITZ_IMPLEMENTATION_in_one_c_file" \
        gcc $warn -O2 $flag -pthread -I. $dir/no_impl.c -o "$out/no_impl"
    expect_error "ld ($ld): BLITZ_IMPLEMENTATION in two files" \
        "multiple definition|duplicate symbol" "blitz_define_BLITZ_IMPLEMENTATION_in_one_c_file" \
        gcc $flag -pthread "$out/correct.o" "$out/impl_again.o" -o "$out/twice"
done

# A state that is not zero-filled: a debug build stops at BLITZ_END (run
# by sh, whose "Aborted" goes to the log).
gcc $warn -O0 -pthread -I. $dir/not_zeroed.c -o "$out/not_zeroed" >"$out/not_zeroed.log" 2>&1
expect_error "debug build: a state not zero-filled" "^blitz: " \
    "not_zeroed.c:20: garbage_poll: resume point 1515870810 is no BLITZ_AWAIT or BLITZ_YIELD of this poll function: the task state must start zero-filled" \
    sh -c "$out/not_zeroed; exit \$?"
# With NDEBUG the task finishes at once, as it did before the check.
expect_ok "release build: a state not zero-filled finishes unchecked" \
    sh -c "gcc $warn -DNDEBUG -O0 -pthread -I. $dir/not_zeroed.c -o $out/not_zeroed_ndebug &&
           $out/not_zeroed_ndebug | grep -q -F 'blitz_run: 0, body ran: 0'"

# A handle used after its release: a debug build stops at the use, naming
# the function and the kind of handle.
kind=0
for want in "blitz_task_status: join handle used after blitz_task_release" \
    "blitz_chan_close: channel used after its last release" \
    "blitz_broadcast_send: broadcast channel used after its last release" \
    "blitz_watch_send: watch channel used after its last release" \
    "blitz_group_len: task group used after blitz_group_free" \
    "blitz_sock_shutdown: socket used after blitz_sock_close"; do
    kind=$((kind + 1))
    gcc $warn -DKIND=$kind -O0 -pthread -I. $dir/use_after_release.c \
        -o "$out/use_after_release_$kind" >"$out/use_after_release_$kind.log" 2>&1
    expect_error "debug build: ${want%%:*} after release" "^blitz: " "blitz: $want" \
        sh -c "$out/use_after_release_$kind; exit \$?"
done

echo "1..$n"
[ "$failed" -eq 0 ]
