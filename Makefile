# provebench: the two commands a newcomer needs are `make demo` and `make test`.
#
#   make demo   build everything, then run the main job on the embedded default
#   make test   every test there is: Rust (unit, integration, CLI), the wasm module in
#               Node, and the independent verifiers in Python (securesystemslib,
#               OpenSSL, pyca/cryptography, jsonschema)

SHELL := /bin/bash
CARGO ?= cargo
VENV ?= .venv
RUNNER_DEBUG := $(CURDIR)/target/debug/runner
RUNNER_RELEASE := $(CURDIR)/target/release/runner
DEMO ?= demo

.PHONY: all demo test test-rust test-node test-python build build-release wasm deps lint clean

all: build wasm

build:
	$(CARGO) build --workspace

build-release:
	$(CARGO) build --release -p runner

wasm:
	scripts/build-wasm.sh

deps:
	scripts/install-deps.sh

demo: build-release wasm
	scripts/demo.sh $(RUNNER_RELEASE) $(DEMO)

test: deps build wasm test-rust test-node test-python

test-rust:
	$(CARGO) test --workspace --all-features

test-node: build wasm
	RUNNER_BIN=$(RUNNER_DEBUG) node --test tests/node/

test-python: deps build
	RUNNER_BIN=$(RUNNER_DEBUG) $(VENV)/bin/python -m pytest -q tests/python

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --all-features -- -D warnings

clean:
	rm -rf build $(DEMO)
	$(CARGO) clean
