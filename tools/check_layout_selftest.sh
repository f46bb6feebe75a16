#!/usr/bin/env bash
# Shows that each layout check catches what it is for: plants one violation
# at a time in a copy of src/ and expects the check to fail on it.
set -u
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect_caught NAME CHECK SETUP: copy src/, run SETUP in the copy, and
# expect CHECK to exit non-zero on the copy (check_layers.py takes the src/
# folder, check_linux_symbols.py the folder that holds it).
expect_caught() {
    local name=$1 check=$2 setup=$3
    rm -rf "$tmp/src" && cp -r src "$tmp/src"
    (cd "$tmp/src" && eval "$setup")
    local arg=$tmp/src
    [ "$(basename "$check")" = check_linux_symbols.py ] && arg=$tmp
    if python3 "$check" "$arg" >/dev/null 2>&1; then
        echo "check_layout_selftest: $name was NOT caught by $check"
        failures=$((failures + 1))
    fi
}

expect_caught "a call up the layers" tools/check_layers.py \
    "echo 'static void blitz__planted(void) { (void)blitz_op_make(NULL, NULL, NULL); }' >> core/task.c"
expect_caught "an include of a higher layer" tools/check_layers.py \
    "sed -i '0,/#include \"core.h\"/s||#include \"core.h\"\n#include \"../sched/sched.h\"|' core/join.c"
expect_caught "a private function without blitz__" tools/check_layers.py \
    "echo 'static void planted(void) { }' >> sync/mutex.c"
expect_caught "a public function named blitz__" tools/check_layers.py \
    "echo 'BLITZ_API void blitz__planted(void) { }' >> sync/mutex.c"
expect_caught "a Linux-only call outside the Linux files" tools/check_linux_symbols.py \
    "echo 'static int blitz__planted(int *fds) { return pipe2(fds, O_CLOEXEC); }' >> os/fs.c"
expect_caught "a Linux header outside the Linux files" tools/check_linux_symbols.py \
    "sed -i '1i #include <linux/fs.h>' net/sock.c"

if [ "$failures" -ne 0 ]; then
    exit 1
fi
echo "check_layout_selftest: every planted violation was caught"
