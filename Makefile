# provebench: the two commands a newcomer needs are `make demo` and `make test`.
#
#   make demo   build everything, then run the main job on the embedded default
#   make test   every test there is: Rust (unit, integration, CLI; the committed fuzz corpora
#               and every kept crash replayed; export/'s polars tables), the wasm module in
#               Node, the site in Chromium,
#               the independent verifiers in Python (securesystemslib, OpenSSL,
#               pyca/cryptography, jsonschema), and the module rebuilt elsewhere to the same bytes
#               (in its build step)
#   make fuzz   libFuzzer on every target for a few seconds each (FUZZ_SECONDS, default 5)
#
# Both build the same thing once: `cargo build --workspace` in the dev profile, whose
# measuring crates and dependencies are optimised (Cargo.toml says which and why), and the
# wasm module, the two side by side. `make test` after `make demo` builds only the test
# harnesses, runner-export (export/, polars), and (once per machine for the same inputs) the
# module's second build that shows it reproducible. What outlives a checkout is cached
# outside it (PROVEBENCH_CACHE, below).

SHELL := /bin/bash
CARGO ?= cargo

# A build cache outside the checkout, per user (scripts/cache.sh says what it holds): a clean
# clone reuses the compiled registry crates, the wasm toolchain's std and the proof that the
# module builds reproducibly instead of building them again. PROVEBENCH_CACHE=off keeps every
# build inside the checkout; a missing or damaged cache is rebuilt, never an error.
PROVEBENCH_CACHE ?= $(if $(HOME),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/provebench,off)
export PROVEBENCH_CACHE
ifneq ($(PROVEBENCH_CACHE),off)
export CARGO_BUILD_BUILD_DIR ?= $(PROVEBENCH_CACHE)/cargo-build
endif
# A cargo build that survives a damaged cache: rebuilt once, never an error of its own.
CACHED := scripts/cache.sh build
# export/ (polars) is a workspace of its own; its program lands beside the runner.
EXPORT_CARGO := env CARGO_TARGET_DIR=$(CURDIR)/target $(CARGO)
EXPORT_MANIFEST := --manifest-path export/Cargo.toml
EXPORT_BUILD := $(CACHED) $(EXPORT_CARGO) build $(EXPORT_MANIFEST) --bins
VENV ?= .venv
RUNNER := $(CURDIR)/target/debug/runner
DEMO ?= demo
FUZZ_SECONDS ?= 5

.PHONY: all demo test test-rust test-export test-node test-browser test-python test-wasm-repro rust-suite export-suite node-suite browser-suite python-suite python-timing-suite gpu-proof-suite wasm-repro-suite test-suites fuzz build build-tests build-release export wasm deps llama-server slurm lint clean

all: build

# The workspace and the wasm module at once: each build ends on a long stretch that keeps one
# core (the runner's link; the module's single LTO unit), which the other fills. build-tests
# adds every test harness and example to the same cargo invocation and, once the module is
# built, checks that it builds reproducibly (a second, niced build from a copy of the source
# elsewhere: here, where only compilers compete for the cores, not beside the suites whose
# tests measure time).
BUILD_ARGS := --workspace
AFTER_WASM :=
build-tests: BUILD_ARGS += --lib --bins --tests --examples
build-tests: AFTER_WASM := && scripts/check-wasm-reproducible.sh
build-tests: AFTER_CARGO := && $(EXPORT_BUILD) --tests
build build-tests: deps
	@(scripts/build-wasm.sh $(AFTER_WASM)) & wasm=$$!; $(CACHED) $(CARGO) build $(BUILD_ARGS) $(AFTER_CARGO); rc=$$?; wait $$wasm && exit $$rc

# `runner export`'s program, runner-export (polars), beside target/debug/runner.
export: deps
	$(EXPORT_BUILD)

# The runner to copy to a GPU host (README.md, "Benchmarking a real server").
build-release:
	@scripts/cache.sh claim
	$(CARGO) build --release -p runner

wasm:
	scripts/build-wasm.sh

deps:
	@scripts/cache.sh prune
	@scripts/cache.sh claim
	scripts/install-deps.sh

llama-server: deps
	scripts/install-llama-server.sh

# A single-node Slurm on 127.0.0.1 (Debian's slurm-wlm and munge; config and state in
# build/slurm) for the campaign tests' job arrays.
slurm:
	scripts/install-slurm.sh >/dev/null

demo: build
	scripts/demo.sh $(RUNNER) $(DEMO)

test: deps llama-server build-tests
	scripts/with-slurm.sh $(MAKE) --no-print-directory test-suites

# What `make test` runs once everything is built, with a Slurm it stops again afterwards
# (scripts/with-slurm.sh), whether the suites pass, fail or are interrupted.
test-suites:
	$(MAKE) --no-print-directory rust-suite
	$(MAKE) --no-print-directory export-suite
	$(MAKE) --no-print-directory python-timing-suite
	$(MAKE) --no-print-directory -j4 -O node-suite browser-suite python-suite gpu-proof-suite

# Each suite on its own builds what it needs first. `make test` builds once, runs the Rust
# tests, the Python tests whose verdicts rest on intervals a busy neighbour widens alone (the
# gate: beside Chromium it missed a 25 % slower decode now and then; the run until precise and
# the capacity search, beside Chromium and a second pytest worker: the one did not reach ±3 % in
# 4,000 requests, the other passed no step with a CPU hog beside them), then the
# Node, Chromium, the GPU proof kit's CPU run and the other Python tests side by side (they
# mostly wait on the runner, the browser and llama-server; -O keeps each one's output together).
test-rust: build-tests
	scripts/with-slurm.sh $(MAKE) --no-print-directory rust-suite
test-export: deps
	$(EXPORT_BUILD) --tests
	$(MAKE) --no-print-directory export-suite
test-node: build
	$(MAKE) --no-print-directory node-suite
test-browser: build
	$(MAKE) --no-print-directory browser-suite
test-python: llama-server build export
	$(MAKE) --no-print-directory python-timing-suite python-suite gpu-proof-suite
test-wasm-repro: wasm
	$(MAKE) --no-print-directory wasm-repro-suite

# cargo-nextest, a process per test, four at a time; the tests that measure time run alone
# (.config/nextest.toml says which and why). It prints how many ran, and the slow ones.
rust-suite:
	@scripts/cache.sh claim
	$(CARGO) nextest run --workspace

# export/'s tests: its tables against the documents they come from, and its program.
export-suite:
	@scripts/cache.sh claim
	$(EXPORT_CARGO) nextest run $(EXPORT_MANIFEST)

node-suite:
	RUNNER_BIN=$(RUNNER) node --test tests/node/

# The published site in Debian's chromium (playwright-core drives it; no browser download).
# Screenshots and the time-to-first-render figure land in tests/browser/artifacts/.
browser-suite:
	RUNNER_BIN=$(RUNNER) node --test tests/browser/

# test_telemetry.py too: it bounds the client's overhead over the engine's own TTFT (5 ms),
# which beside Chromium read 6.2 ms once.
PYTHON_TIMING_TESTS := tests/python/test_gate.py tests/python/test_uncertainty.py tests/python/test_capacity.py tests/python/test_telemetry.py
# The GPU proof kit's whole --run on the CPU (a fake NVML, llama-server): a minute and a half
# that mostly waits on llama-server, so a suite of its own beside the others.
PYTHON_GPU_PROOF_TESTS := tests/python/test_gpu_proof.py

python-suite:
	RUNNER_BIN=$(RUNNER) $(VENV)/bin/python -m pytest -q tests/python $(PYTHON_TIMING_TESTS:%=--ignore=%) $(PYTHON_GPU_PROOF_TESTS:%=--ignore=%)

gpu-proof-suite:
	RUNNER_BIN=$(RUNNER) $(VENV)/bin/python -m pytest -q $(PYTHON_GPU_PROOF_TESTS)

python-timing-suite:
	RUNNER_BIN=$(RUNNER) $(VENV)/bin/python -m pytest -q $(PYTHON_TIMING_TESTS)

# The module is reproducible: another toolchain is refused, and a clean build from a copy of
# the source in a temporary directory gives build/wasm's bytes and report-wasm/expected.sha256
# (`make test` runs it in its build, build-tests above).
wasm-repro-suite:
	scripts/check-wasm-reproducible.sh

# libFuzzer on every target for FUZZ_SECONDS each, in an instrumented build of its own
# (target/fuzz). `make test` replays the committed corpora and every kept crash
# (`cargo test -p fuzz`) but does not fuzz; long campaigns: scripts/fuzz.sh TARGET SECONDS.
fuzz: deps
	scripts/fuzz.sh --all $(FUZZ_SECONDS)

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps

# The checkout's own builds; the cache outside it (PROVEBENCH_CACHE) stays.
clean:
	rm -rf build $(DEMO)
	env -u CARGO_BUILD_BUILD_DIR $(CARGO) clean
