# provebench: the two commands a newcomer needs are `make demo` and `make test`.
#
#   make demo   build everything, then run the main job on the embedded default
#   make test   every test there is: Rust (unit, integration, CLI), the wasm module in
#               Node, the site in Chromium, the independent verifiers in Python
#               (securesystemslib, OpenSSL, pyca/cryptography, jsonschema), and a short
#               run of every fuzz target

SHELL := /bin/bash
CARGO ?= cargo
VENV ?= .venv
RUNNER_DEBUG := $(CURDIR)/target/debug/runner
RUNNER_RELEASE := $(CURDIR)/target/release/runner
DEMO ?= demo

.PHONY: all demo test test-rust test-node test-browser test-python test-fuzz build build-release wasm deps llama-server slurm lint clean

all: build wasm

build:
	$(CARGO) build --workspace

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

demo: deps build-release wasm
	scripts/demo.sh $(RUNNER_RELEASE) $(DEMO)

test: deps llama-server slurm build wasm test-rust test-node test-browser test-python test-fuzz

# One test at a time: the known-answer tests compare latencies to the simulator's truth
# to within 1 %, and on 2 cores a neighbouring test's CPU burst would read as latency.
test-rust:
	$(CARGO) test --workspace -- --test-threads 1

test-node: build wasm
	RUNNER_BIN=$(RUNNER_DEBUG) node --test tests/node/

# The published site in Debian's chromium (playwright-core drives it; no browser download).
# Screenshots and the time-to-first-render figure land in tests/browser/artifacts/.
test-browser: deps build wasm
	RUNNER_BIN=$(RUNNER_DEBUG) node --test tests/browser/

# libFuzzer on every target for a few seconds each (test-rust already replays the committed
# corpora and every kept crash); long campaigns: scripts/fuzz.sh TARGET SECONDS.
test-fuzz: deps
	scripts/fuzz.sh --all 5

test-python: deps build
	RUNNER_BIN=$(RUNNER_DEBUG) $(VENV)/bin/python -m pytest -q tests/python

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

clean:
	rm -rf build $(DEMO)
	$(CARGO) clean
