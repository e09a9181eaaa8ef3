# provebench: the two commands a newcomer needs are `make demo` and `make test`.
#
#   make demo   build everything, then run the main job on the embedded default
#   make test   every test there is: Rust (unit, integration, CLI; the committed fuzz corpora
#               and every kept crash replayed), the wasm module in Node, the site in Chromium,
#               the independent verifiers in Python (securesystemslib, OpenSSL,
#               pyca/cryptography, jsonschema)
#   make fuzz   libFuzzer on every target for a few seconds each (FUZZ_SECONDS, default 5)
#
# Both build the same thing once: `cargo build --workspace` in the dev profile, whose
# measuring crates and dependencies are optimised (Cargo.toml says which and why), and the
# wasm module. `make test` after `make demo` builds only the test harnesses.

SHELL := /bin/bash
CARGO ?= cargo
VENV ?= .venv
RUNNER := $(CURDIR)/target/debug/runner
DEMO ?= demo
FUZZ_SECONDS ?= 5

.PHONY: all demo test test-rust test-node test-browser test-python fuzz build build-release wasm deps llama-server slurm lint clean

all: build wasm

build:
	$(CARGO) build --workspace

# The runner to copy to a GPU host (README: "Benchmarking a real server").
build-release:
	$(CARGO) build --release -p runner

wasm:
	scripts/build-wasm.sh

deps:
	scripts/install-deps.sh

llama-server: deps
	scripts/install-llama-server.sh

# A single-node Slurm on 127.0.0.1 (Debian's slurm-wlm and munge; config and state in
# build/slurm) for the campaign tests' job arrays.
slurm:
	scripts/install-slurm.sh >/dev/null

demo: deps build wasm
	scripts/demo.sh $(RUNNER) $(DEMO)

test: deps llama-server slurm build wasm test-rust test-node test-browser test-python

# cargo-nextest, a process per test, two at a time; the tests that measure time run alone
# (.config/nextest.toml says which and why). It prints how many ran, and the slow ones.
test-rust: build wasm
	$(CARGO) nextest run --workspace

test-node: build wasm
	RUNNER_BIN=$(RUNNER) node --test tests/node/

# The published site in Debian's chromium (playwright-core drives it; no browser download).
# Screenshots and the time-to-first-render figure land in tests/browser/artifacts/.
test-browser: deps build wasm
	RUNNER_BIN=$(RUNNER) node --test tests/browser/

test-python: deps llama-server build
	RUNNER_BIN=$(RUNNER) $(VENV)/bin/python -m pytest -q tests/python

# libFuzzer on every target for FUZZ_SECONDS each, in an instrumented build of its own
# (target/fuzz). `make test` replays the committed corpora and every kept crash
# (`cargo test -p fuzz`) but does not fuzz; long campaigns: scripts/fuzz.sh TARGET SECONDS.
fuzz: deps
	scripts/fuzz.sh --all $(FUZZ_SECONDS)

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

clean:
	rm -rf build $(DEMO)
	$(CARGO) clean
