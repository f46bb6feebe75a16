# blitz: make (tests + examples), make test, make run, make bench,
# make bench-compare, make bench-peers, make bench-ceiling, make bench-shapes, make amalgamate,
# make check-amalgamation, make api-programs, make model-check, make model-check-mutants, make fault-inject.

CC      ?= cc
PYTHON  ?= python3
BUILD   := build
WARN    := -std=c11 -Wall -Wextra -Wpedantic -Werror -Wshadow -Wimplicit-fallthrough
# gcc's -Wjump-misses-init catches a local variable initialised before a
# resume point of the coroutine macros (see COMMON MISTAKES in the manual);
# clang has no such option. GCC_WARN for gcc, CC_WARN for $(CC).
CC_JUMP  := $(if $(shell $(CC) -Werror -Wjump-misses-init -fsyntax-only -x c /dev/null \
              2>/dev/null && echo y),-Wjump-misses-init)
GCC_WARN := $(WARN) -Wjump-misses-init
CC_WARN  := $(WARN) $(CC_JUMP)
CFLAGS_TEST := $(WARN) -g -O2 -pthread -D_GNU_SOURCE
LDLIBS  := -pthread

SRC_FILES := $(wildcard src/*.txt src/*/*.c src/*/*.h) tools/manifest.txt tools/amalgamate.py
TEST_FILES := blitz_tests.c $(wildcard tests/*.c tests/*.h)
EXAMPLES := $(patsubst examples/%.c,%,$(wildcard examples/*.c))
# bench/echo_load.c is a tool (the tcp group's own load client), not a benchmark.
# bench/fs_uv.c is the fs group's libuv peer, built by bench/compare.sh.
BENCHES  := $(patsubst bench/%.c,%,$(filter-out bench/bench_common.c bench/echo_load.c bench/fs_uv.c,$(wildcard bench/*.c)))
# The sibling checkout with the anchors (optional: make bench runs without it).
SHARED_DIR ?= ../shared
export SHARED_DIR

# The development header carries #line directives so diagnostics point into src/.
DEV_HEADER := $(BUILD)/blitz_dev.h
TEST_DEFS  := -DBLITZ_TEST_HEADER='"$(DEV_HEADER)"'

.PHONY: all amalgamate check-amalgamation check-layout test test-quick test-gcc test-clang test-tsan \
        test-asan test-small-queue test-cxx test-misuse test-stress test-kqueue test-macos test-windows \
        model-check model-check-quick model-check-mutants fuzz fuzz-quick examples api-programs run bench \
        bench-compare bench-peers bench-ceiling bench-shapes format clean soak fault-inject test-chaos \
        test-fault-quick

all: $(BUILD)/blitz_tests $(addprefix $(BUILD)/examples/,$(EXAMPLES))

blitz.h: $(SRC_FILES)
	$(PYTHON) tools/amalgamate.py -o blitz.h

amalgamate:
	$(PYTHON) tools/amalgamate.py -o blitz.h

check-amalgamation:
	@mkdir -p $(BUILD)
	@$(PYTHON) tools/amalgamate.py -o $(BUILD)/blitz_check.h
	@cmp -s $(BUILD)/blitz_check.h blitz.h || \
	  { echo "blitz.h is stale: run 'make amalgamate' and commit it"; exit 1; }
	@echo "blitz.h is up to date"

$(DEV_HEADER): $(SRC_FILES)
	@mkdir -p $(BUILD)
	$(PYTHON) tools/amalgamate.py --line -o $@

# --- test builds: one binary per compiler / sanitizer -----------------------

$(BUILD)/blitz_tests: $(TEST_FILES) $(DEV_HEADER)
	$(CC) $(CFLAGS_TEST) $(CC_JUMP) $(TEST_DEFS) blitz_tests.c -o $@ $(LDLIBS)

$(BUILD)/blitz_tests_gcc: $(TEST_FILES) $(DEV_HEADER)
	gcc $(CFLAGS_TEST) -Wjump-misses-init $(TEST_DEFS) blitz_tests.c -o $@ $(LDLIBS)

$(BUILD)/blitz_tests_clang: $(TEST_FILES) $(DEV_HEADER)
	clang $(CFLAGS_TEST) $(TEST_DEFS) blitz_tests.c -o $@ $(LDLIBS)

# The shipped header (no #line) must build the suite too.
$(BUILD)/blitz_tests_shipped: $(TEST_FILES) blitz.h
	clang $(CFLAGS_TEST) blitz_tests.c -o $@ $(LDLIBS)

$(BUILD)/blitz_tests_tsan: $(TEST_FILES) $(DEV_HEADER)
	clang $(CFLAGS_TEST) -O1 -fsanitize=thread $(TEST_DEFS) blitz_tests.c -o $@ $(LDLIBS)

$(BUILD)/blitz_tests_asan: $(TEST_FILES) $(DEV_HEADER)
	clang $(CFLAGS_TEST) -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
	  -fno-sanitize-recover=undefined $(TEST_DEFS) blitz_tests.c -o $@ $(LDLIBS)

$(BUILD)/blitz_tests_gcc_asan: $(TEST_FILES) $(DEV_HEADER)
	gcc $(CFLAGS_TEST) -Wjump-misses-init -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
	  -fno-sanitize-recover=undefined $(TEST_DEFS) blitz_tests.c -o $@ $(LDLIBS)

# A 4-slot local queue makes overflow, steal and LIFO eviction happen all the time;
# an 8-buffer io_uring receive pool makes multishot receives run dry all the time;
# 2-entry rings (16 CQ entries) make the kernel hold completions back (CQ overflow).
SMALL_DEFS := -DBLITZ_LOCAL_QUEUE_CAPACITY=4 -DBLITZ_URING_RECV_BUFS=8 -DBLITZ_URING_ENTRIES=2
$(BUILD)/blitz_tests_small_queue: $(TEST_FILES) $(DEV_HEADER)
	clang $(CFLAGS_TEST) $(SMALL_DEFS) $(TEST_DEFS) blitz_tests.c -o $@ $(LDLIBS)

$(BUILD)/blitz_tests_small_queue_tsan: $(TEST_FILES) $(DEV_HEADER)
	clang $(CFLAGS_TEST) -O1 -fsanitize=thread $(SMALL_DEFS) $(TEST_DEFS) \
	  blitz_tests.c -o $@ $(LDLIBS)

# The kqueue backend's own code over the test-only kqueue emulation
# (tests/kqueue_emulation.h): the suite's name_kqueue variants run it on Linux.
KQ_DEFS := -I. -DBLITZ__KQUEUE_EMULATION='"tests/kqueue_emulation.h"'
$(BUILD)/blitz_tests_kqueue: $(TEST_FILES) $(DEV_HEADER)
	$(CC) $(CFLAGS_TEST) $(CC_JUMP) $(KQ_DEFS) $(TEST_DEFS) blitz_tests.c -o $@ $(LDLIBS)

$(BUILD)/blitz_tests_kqueue_asan: $(TEST_FILES) $(DEV_HEADER)
	clang $(CFLAGS_TEST) -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
	  -fno-sanitize-recover=undefined $(KQ_DEFS) $(TEST_DEFS) blitz_tests.c -o $@ $(LDLIBS)

$(BUILD)/blitz_tests_kqueue_tsan: $(TEST_FILES) $(DEV_HEADER)
	clang $(CFLAGS_TEST) -O1 -fsanitize=thread $(KQ_DEFS) $(TEST_DEFS) blitz_tests.c -o $@ $(LDLIBS)

# --- fault injection (src/platform/fault.c) ------------------------------------

# The suite and the examples with BLITZ_FAULT_INJECT under ASan+UBSan (LSan
# included) for the sweeps; the examples see the development header, so
# their sites name src/ files as the suite's do.
FAULT_FLAGS := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
               -fno-sanitize-recover=undefined -DBLITZ_FAULT_INJECT
FAULT_EXAMPLES := hello fanout file_copy udp_echo process_pipeline
$(BUILD)/blitz_tests_fault: $(TEST_FILES) $(DEV_HEADER)
	clang $(CFLAGS_TEST) $(FAULT_FLAGS) $(TEST_DEFS) blitz_tests.c -o $@ $(LDLIBS)

$(BUILD)/fault/examples/%: examples/%.c $(DEV_HEADER)
	@mkdir -p $(BUILD)/fault/examples $(BUILD)/fault/include
	@ln -sf ../../blitz_dev.h $(BUILD)/fault/include/blitz.h
	clang $(WARN) -g -pthread $(FAULT_FLAGS) -I$(BUILD)/fault/include $< -o $@ $(LDLIBS)

# Chaos scheduling: the stress, race and multi-worker tests, each seed a
# different schedule, under TSan (not the white-box test of the LIFO slot,
# which chaos turns off).
$(BUILD)/blitz_tests_chaos: $(TEST_FILES) $(DEV_HEADER)
	clang $(CFLAGS_TEST) -O1 -fsanitize=thread -DBLITZ_FAULT_INJECT $(TEST_DEFS) blitz_tests.c \
	  -o $@ $(LDLIBS)

CHAOS_SEEDS   ?= 1 2 3
CHAOS_FILTERS ?= stress race steal yield mt2 mt4
FAULT_PROGRAMS := $(BUILD)/blitz_tests_fault $(addprefix $(BUILD)/fault/examples/,$(FAULT_EXAMPLES))

test-chaos: $(BUILD)/blitz_tests_chaos
	@rc=0; for seed in $(CHAOS_SEEDS); do for f in $(CHAOS_FILTERS); do \
	  BLITZ_FAULT_CHAOS=$$seed BLITZ_TEST_FILTER=$$f BLITZ_TEST_SCALE=8 BLITZ_TEST_TIMEOUT_MULT=6 \
	    TSAN_OPTIONS=halt_on_error=1 $(BUILD)/blitz_tests_chaos > $(BUILD)/chaos.log 2>&1 || rc=1; \
	  echo "chaos seed $$seed, tests matching $$f: $$(grep -c '^ok' $(BUILD)/chaos.log) ok," \
	    "$$(grep -c '^not ok' $(BUILD)/chaos.log) failed"; \
	  grep -E '^not ok|^# [a-z0-9_]+: (killed|timed out)|WARNING: ThreadSanitizer' $(BUILD)/chaos.log; \
	done; done; exit $$rc

# The allocation and system-call sweeps over whole programs, then chaos.
fault-inject: $(FAULT_PROGRAMS) $(BUILD)/blitz_tests_chaos
	$(PYTHON) tools/fault_sweep.py --tests $(BUILD)/blitz_tests_fault --examples $(BUILD)/fault/examples
	$(MAKE) --no-print-directory test-chaos

# A slice of the allocation sweep for make test.
test-fault-quick: $(BUILD)/blitz_tests_fault $(BUILD)/fault/examples/hello \
                  $(BUILD)/fault/examples/udp_echo
	$(PYTHON) tools/fault_sweep.py --quick --tests $(BUILD)/blitz_tests_fault \
	  --examples $(BUILD)/fault/examples

# --- fuzzing -------------------------------------------------------------------

# libFuzzer targets (tests/fuzz/fuzz_*.c, clang only): the timer wheel,
# the channel and its waiting ops, the semaphore and its queued acquires
# against models, the address parsers and formatter, and the buffered
# reader's line splitting.
# fuzz-quick, a stage of make test, gives each a few seconds after its
# regression corpus; fuzz runs each for FUZZ_SECONDS.
FUZZ_CC ?= clang
FUZZ_FLAGS := -std=c11 -Wall -Wextra -Wpedantic -Werror -g -O1 -D_GNU_SOURCE -pthread \
              -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SECONDS ?= 60

$(BUILD)/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz_input.h blitz.h
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) $< -o $@ $(LDLIBS)

fuzz: $(FUZZ_BINS)
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash tools/fuzz_run.sh $(FUZZ_BINS)

# The quick stage builds without optimization: a sixth of the compile time,
# and its few seconds of fuzzing need no speed.
FUZZ_QUICK_BINS := $(patsubst $(BUILD)/fuzz/%,$(BUILD)/fuzz-quick/%,$(FUZZ_BINS))

$(BUILD)/fuzz-quick/%: tests/fuzz/%.c tests/fuzz/fuzz_input.h blitz.h
	@mkdir -p $(BUILD)/fuzz-quick
	$(FUZZ_CC) $(FUZZ_FLAGS) -O0 $< -o $@ $(LDLIBS)

# Two compilers at once (the stage itself runs under a plain make).
fuzz-quick:
	@$(MAKE) --no-print-directory -j2 $(FUZZ_QUICK_BINS)
	FUZZ_SECONDS=3 bash tools/fuzz_run.sh $(FUZZ_QUICK_BINS)

# --- model checking ------------------------------------------------------------

# Each tests/model/check_*.cpp runs a protocol's real source file under the
# Relacy model checker (Debian relacy-dev): tests/model/README.md. make test
# runs them at their default preemption bounds; model-check one deeper;
# model-check-mutants shows each catches its planted bugs.
MODEL_CXX    ?= g++
MODEL_FLAGS  := -std=c++17 -O1 -w
MODEL_CHECKS := $(patsubst tests/model/%.cpp,%,$(wildcard tests/model/check_*.cpp))
MODEL_BINS   := $(addprefix $(BUILD)/model/,$(MODEL_CHECKS))

$(BUILD)/model/%: tests/model/%.cpp $(wildcard tests/model/*.h) $(SRC_FILES)
	@mkdir -p $(BUILD)/model
	nice $(MODEL_CXX) $(MODEL_FLAGS) -Itests/model -Isrc $< -o $@

model-check-quick: $(MODEL_BINS)
	@rc=0; for c in $(MODEL_BINS); do $$c || rc=1; done; exit $$rc

model-check: $(MODEL_BINS)
	@rc=0; for c in $(MODEL_BINS); do MODEL_DEEP=1 $$c || rc=1; done; exit $$rc

model-check-mutants:
	BUILD=$(BUILD) MODEL_CXX=$(MODEL_CXX) MODEL_FLAGS="$(MODEL_FLAGS)" $(PYTHON) tools/model_mutants.py

# --- examples ---------------------------------------------------------------

$(BUILD)/examples/%: examples/%.c blitz.h
	@mkdir -p $(BUILD)/examples
	$(CC) $(CC_WARN) -O2 -pthread -I. $< -o $@ $(LDLIBS)

examples: $(addprefix $(BUILD)/examples/,$(EXAMPLES))

# The current-API programs of tools/api_programs (the old_ ones need the
# header of commit 9529cb2; see tools/api_programs/README.md); the echo
# server among them is examples/echo_graceful.c.
API_PROGRAMS := new_conn_client new_pipeline

$(BUILD)/api_programs/%: tools/api_programs/%.c blitz.h
	@mkdir -p $(BUILD)/api_programs
	$(CC) $(CC_WARN) -O2 -pthread -I. $< -o $@ $(LDLIBS)

api-programs: $(addprefix $(BUILD)/api_programs/,$(API_PROGRAMS)) \
	$(BUILD)/examples/echo_graceful

# --- the suite ---------------------------------------------------------------

test-gcc: $(BUILD)/blitz_tests_gcc
	$(BUILD)/blitz_tests_gcc

test-clang: $(BUILD)/blitz_tests_clang $(BUILD)/blitz_tests_shipped
	$(BUILD)/blitz_tests_clang
	$(BUILD)/blitz_tests_shipped

# The small queue changes only where tasks queue: the per-backend I/O tests
# (io_*, half the suite's time) add nothing to what the rest covers there.
test-small-queue: $(BUILD)/blitz_tests_small_queue $(BUILD)/blitz_tests_small_queue_tsan
	BLITZ_TEST_EXCLUDE=io_ $(BUILD)/blitz_tests_small_queue
	BLITZ_TEST_EXCLUDE=io_ BLITZ_TEST_SCALE=8 BLITZ_TEST_TIMEOUT_MULT=6 TSAN_OPTIONS=halt_on_error=1 \
	  $(BUILD)/blitz_tests_small_queue_tsan

test-tsan: $(BUILD)/blitz_tests_tsan
	BLITZ_TEST_SCALE=8 BLITZ_TEST_TIMEOUT_MULT=6 TSAN_OPTIONS=halt_on_error=1 \
	  $(BUILD)/blitz_tests_tsan

test-asan: $(BUILD)/blitz_tests_asan $(BUILD)/blitz_tests_gcc_asan
	BLITZ_TEST_SCALE=4 BLITZ_TEST_TIMEOUT_MULT=4 ASAN_OPTIONS=detect_leaks=1 \
	  $(BUILD)/blitz_tests_asan
	BLITZ_TEST_SCALE=4 BLITZ_TEST_TIMEOUT_MULT=4 ASAN_OPTIONS=detect_leaks=1 \
	  $(BUILD)/blitz_tests_gcc_asan

# The declarations must compile as C++ (extern "C"), and the header as C11
# with both compilers in a TU that does not define the implementation; the
# implementation must build and run after other system headers. The two
# C++ lines cover the debug and the NDEBUG form of the coroutine macros.
test-cxx: blitz.h
	@mkdir -p $(BUILD)
	g++ -x c++ -std=c++11 -Wall -Wextra -Wpedantic -Wshadow -Werror -fsyntax-only -I. tools/cxx_check.cc
	clang++ -x c++ -std=c++17 -Wall -Wextra -Wpedantic -Wshadow -Werror -DNDEBUG -fsyntax-only -I. tools/cxx_check.cc
	gcc $(GCC_WARN) -fsyntax-only -I. tools/c_decl_check.c
	clang $(WARN) -fsyntax-only -I. tools/c_decl_check.c
	gcc $(GCC_WARN) -std=gnu11 -O1 -pthread -I. tools/include_order_check.c -o $(BUILD)/include_order_gnu
	clang $(WARN) -D_POSIX_C_SOURCE=200809L -O1 -pthread -I. tools/include_order_check.c \
	  -o $(BUILD)/include_order_posix
	$(BUILD)/include_order_gnu
	$(BUILD)/include_order_posix
	# gcc's ThreadSanitizer warns about fences (-Wtsan) unless told not to
	gcc $(GCC_WARN) -std=gnu11 -O1 -fsanitize=thread -pthread -I. -c tools/include_order_check.c \
	  -o $(BUILD)/include_order_tsan.o
	# configuration macros that remove code leave nothing unused behind
	gcc $(GCC_WARN) -std=gnu11 -Wtype-limits -DBLITZ_NO_STATS -DBLITZ_URING_RECV_BUFS=0 -DBLITZ_STATIC -c \
	  -I. tools/include_order_check.c -o $(BUILD)/include_order_cfg.o
	clang $(WARN) -std=gnu11 -DBLITZ_NO_STATS -DBLITZ_URING_RECV_BUFS=0 -DBLITZ_STATIC -c \
	  -I. tools/include_order_check.c -o $(BUILD)/include_order_cfg.o

# Each misuse COMMON MISTAKES lists (a coroutine macro outside BLITZ_BEGIN,
# no or two implementations, a state not zero-filled, a local across an
# await) gives the message the manual quotes; with a correct control.
test-misuse: blitz.h
	@BUILD=$(BUILD) bash tools/misuse_check.sh

# The I/O tests each run on every backend (name_uring, name_epoll,
# name_poll); the >= 10,000-connection stress runs here, not in make test.
test-stress: $(BUILD)/blitz_tests
	BLITZ_TEST_STRESS=1 $(BUILD)/blitz_tests io_stress_10k_uring io_stress_10k_epoll io_stress_10k_poll

# The conformance suite on kqueue through the emulation: plain, ASan+UBSan
# (LSan included), TSan.
test-kqueue: $(BUILD)/blitz_tests_kqueue $(BUILD)/blitz_tests_kqueue_asan $(BUILD)/blitz_tests_kqueue_tsan
	BLITZ_TEST_FILTER=_kqueue $(BUILD)/blitz_tests_kqueue
	BLITZ_TEST_FILTER=_kqueue BLITZ_TEST_SCALE=4 BLITZ_TEST_TIMEOUT_MULT=4 ASAN_OPTIONS=detect_leaks=1 \
	  $(BUILD)/blitz_tests_kqueue_asan
	BLITZ_TEST_FILTER=_kqueue BLITZ_TEST_SCALE=8 BLITZ_TEST_TIMEOUT_MULT=6 TSAN_OPTIONS=halt_on_error=1 \
	  $(BUILD)/blitz_tests_kqueue_tsan

# blitz.h, the suite and every example compiled and linked for
# x86_64-macos and aarch64-macos against the Zig 0.11 toolchain's macOS
# headers and libSystem stubs (fetched once with npm; see the script).
test-macos: blitz.h
	@BUILD=$(BUILD) bash tools/macos_check.sh

# blitz.h, the suite and the examples that apply cross-compiled for
# Windows with mingw-w64 gcc and clang, then run under wine in a prefix of
# their own (see the script; tests/windows_skip.txt says what is left out).
test-windows: blitz.h
	@BUILD=$(BUILD) bash tools/windows_check.sh

test-quick: check-amalgamation $(BUILD)/blitz_tests
	$(BUILD)/blitz_tests

# The shape of src/: names, layers, Linux-only symbols outside the Linux
# files, and (with a planted violation each) that the checks catch what
# they are for. One script per line.
check-layout:
	$(PYTHON) tools/check_layers.py
	$(PYTHON) tools/check_linux_symbols.py
	bash tools/check_layout_selftest.sh

TEST_STAGES := check-amalgamation check-layout examples test-cxx test-misuse model-check-quick \
               test-gcc test-clang test-small-queue test-tsan test-asan test-kqueue test-macos \
               test-fault-quick fuzz-quick \
               test-windows

# Every stage runs even when one fails; one line per stage, then the total.
# VERBOSE=1 shows everything the stages print.
test:
	@BUILD=$(BUILD) MAKE="$(MAKE)" bash tools/test_all.sh $(TEST_STAGES)

# A mixed load for SOAK_SECONDS (default 600), memory and progress sampled
# every SOAK_INTERVAL seconds; not part of `make test`.
SOAK_SECONDS ?= 600
SOAK_INTERVAL ?= 10
$(BUILD)/soak: tools/soak.c blitz.h
	@mkdir -p $(BUILD)
	$(CC) $(CC_WARN) -O2 -pthread -I. $< -o $@ $(LDLIBS)

soak: $(BUILD)/soak
	SOAK_SECONDS=$(SOAK_SECONDS) SOAK_INTERVAL=$(SOAK_INTERVAL) $(BUILD)/soak

# --- showcase and benchmarks ---------------------------------------------------

run: $(BUILD)/examples/showcase
	$(BUILD)/examples/showcase

# Benchmarks measure the release build (NDEBUG: no debug handle checks or
# assertions), as the anchors measure theirs.
$(BUILD)/bench/%: bench/%.c bench/bench_common.c bench/bench_common.h $(wildcard bench/*.inc) blitz.h
	@mkdir -p $(BUILD)/bench
	$(CC) -std=c11 -Wall -Wextra -Wpedantic -Werror -O2 -g -DNDEBUG -pthread -D_GNU_SOURCE -I. \
	  $< bench/bench_common.c -o $@ $(LDLIBS)

# The tcp group's own load client: plain POSIX, no blitz, so it loads only
# the server. bench/tcp.c uses it when no anchor client is present.
$(BUILD)/bench/echo_load: bench/echo_load.c
	@mkdir -p $(BUILD)/bench
	$(CC) -std=c11 -Wall -Wextra -Wpedantic -Werror -O2 -pthread $< -o $@ $(LDLIBS)

# The anchors' TCP load client (Go and libuv anchors), preferred over ours
# for bench/tcp.c when the Tokio anchor's client is not built.
UV_ECHO_CLIENT := $(wildcard $(SHARED_DIR)/anchors/libuv/echo_client.c)
$(BUILD)/bench/echo_client: $(UV_ECHO_CLIENT)
	@mkdir -p $(BUILD)/bench
	$(if $(UV_ECHO_CLIENT),gcc -O2 -Wall -o $@ $(UV_ECHO_CLIENT) -lpthread,@echo "no libuv echo_client.c")

# Runs every group, then prints one table row per benchmark (with the
# anchors' recorded figures when $(SHARED_DIR) has them); the bench= lines
# go to $(BUILD)/bench/results.txt. BENCH_FILTER="a b" runs only benchmarks
# whose names contain a or b.
bench: $(addprefix $(BUILD)/bench/,$(BENCHES)) $(BUILD)/bench/echo_load \
       $(if $(UV_ECHO_CLIENT),$(BUILD)/bench/echo_client)
	@bash bench/run.sh $(BUILD)/bench $(BENCH_FILTER)

bench-compare: $(addprefix $(BUILD)/bench/,$(BENCHES))
	@bash bench/compare.sh $(BUILD)/bench

bench-peers: $(BUILD)/bench/tcp
	@bash bench/peers.sh $(BUILD)/bench

bench-ceiling: $(BUILD)/bench/tcp
	@bash bench/ceiling.sh $(BUILD)/bench

bench-shapes: blitz.h
	@bash bench/shapes.sh

format:
	clang-format -i src/*/*.c src/*/*.h tests/*.c tests/*.h tests/misuse/*.c blitz_tests.c examples/*.c bench/*.c bench/*.h \
	  tests/model/*.cpp tests/model/*.h

clean:
	rm -rf $(BUILD)
