# Makefile - the two commands: `make demo` and `make test` (thin layer over CMake).
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
ifdef CI
CMAKE_FLAGS += -DRT_WERROR=ON
endif

.PHONY: all setup build test test-asan fuzz demo bench clean coverage install
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 30

all: build

setup:
	@scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

test: build
	@scripts/setup-torch.sh $(BUILD)
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# Unit and integration tests under AddressSanitizer + UndefinedBehaviorSanitizer.
# Integration: the CLI, viewer and workloads are the instrumented ones; the
# preloaded tracer and the simulated libraries come from the plain build,
# since they also load into uninstrumented processes (python, bash).
# The real-trainer tests (label trainers: minutes of pip and PyTorch, the
# same C code paths as the rest) run in `make test` only.
test-asan: build
	@cmake -S . -B $(ASAN_BUILD) -DRT_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j$(JOBS) -L unit
	@if [ -e $(BUILD)/venv-torch ]; then ln -sfn $(abspath $(BUILD))/venv-torch $(ASAN_BUILD)/venv-torch; fi
	cd $(ASAN_BUILD) && RT_PLAIN_BUILD=$(abspath $(BUILD)) \
	  ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:abort_on_error=0:handle_segv=0:handle_sigbus=0 \
	  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ctest --output-on-failure -j$(JOBS) -L integration -LE trainers

# libFuzzer targets, a short run each (corpus seeded from real traces).
fuzz: setup
	@cmake -S . -B $(FUZZ_BUILD) -DRT_FUZZ=ON -DCMAKE_C_COMPILER=clang >/dev/null
	@cmake --build $(FUZZ_BUILD) -j$(JOBS)
	@scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# bin/ranktrace, lib/libranktrace.so, the probe, docs, bash completion under PREFIX.
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# Line coverage (gcov) of viewer/, bisect/ and inject/ from the unit tests;
# fails under 85 % (viewer), 80 % (bisect), 80 % (inject): scripts/coverage.sh.
COV_BUILD ?= build-cov
coverage: setup
	@scripts/coverage.sh $(COV_BUILD)

demo: build
	@scripts/demo.sh $(BUILD)

bench: build
	@bench/run.sh $(BUILD)
	@bench/viewer.sh $(BUILD) 64 100000
	@bench/probe.sh $(BUILD)
	@if [ -e $(BUILD)/lib/libranktrace-lttng.so ]; then bench/backends.sh $(BUILD); \
	else echo "bench: this build has no LTTng backend (LTTng-UST not found): bench/backends.sh skipped"; fi

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(COV_BUILD)
