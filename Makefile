# mpsched: `make run` and `make test` work on a fresh machine; `make setup` alone leaves
# .venv/bin/mpsched ready. Every step is idempotent (stamps in .stamps/).
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMPS := .stamps
# Debian packages the project needs (the kernel testbed's tools among them).
APT_PACKAGES := iproute2 iptables libnetfilter-queue-dev libmnl-dev pkg-config
RUST_SOURCES := $(shell find crates -name '*.rs' -o -name 'Cargo.toml' 2>/dev/null) Cargo.toml
NATIVE_SOURCES := $(wildcard native/*.c native/Makefile)

.PHONY: help setup run test test-rust test-python bench lint clean

help:
	@echo "make setup   install system packages, .venv and the release build of the core"
	@echo "make run     setup, then the main job (the quick reproduction of every paper: results/report/report.html)"
	@echo "make test    setup, then every Rust and Python test"
	@echo "make lint    rustfmt and clippy over the workspace (warnings are errors)"
	@echo "make bench   setup, then the benchmarks, with progress (written to BENCH_OUT, default"
	@echo "             results/bench-<time>.md; RECORD=1 also appends to benches/RESULTS.md;"
	@echo "             HTSIM_SIM=/path/to/csg-htsim/sim adds htsim side by side)"

$(STAMPS):
	mkdir -p $(STAMPS)

# System packages: installed only when one is missing (needs root, as on CI).
$(STAMPS)/apt: | $(STAMPS)
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
	@command -v cargo >/dev/null || { echo "error: cargo not found; install Rust with rustup (https://rustup.rs) and retry"; exit 1; }
	touch $@

$(STAMPS)/venv: pyproject.toml | $(STAMPS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "maturin>=1.7,<2"
	$(PIP) install -q "pydantic>=2.6" "polars>=1.0" "pyarrow>=15" "duckdb>=1.0" "matplotlib>=3.8" \
	  "rich>=13" "typer>=0.12" "numpy>=1.26" "scipy>=1.15" "jinja2>=3.1" "pytest>=8" "hypothesis>=6.100" "tomli-w>=1.0" \
	  "dask[distributed]>=2024.1" "fsspec>=2023.1" "cloudpickle>=2.2"
	# the DuckDB command-line tool (.venv/bin/duckdb) for the README's query of a study
	$(PIP) install -q "duckdb-cli>=1.1"
	touch $@

# The core with profile-guided optimisation: an instrumented build, a training run of common
# scenarios, then the build laid out by that profile (tools/pgo_build.sh; 7-8 % less CPU a
# packet through the module, records identical: benches/RESULTS.md, Session 15 pgo15).
# `PGO=0 make setup` builds it plainly (quicker while editing the Rust code).
$(STAMPS)/core: $(STAMPS)/venv $(RUST_SOURCES) pyproject.toml tools/pgo_build.sh tools/pgo_train.py | $(STAMPS)
	tools/pgo_build.sh module
	touch $@

$(STAMPS)/native: $(STAMPS)/apt $(NATIVE_SOURCES) | $(STAMPS)
	@if [ -f native/Makefile ]; then $(MAKE) -C native; fi
	touch $@

setup: $(STAMPS)/apt $(STAMPS)/venv $(STAMPS)/core $(STAMPS)/native
	@test -x $(VENV)/bin/mpsched && echo "ready: $(VENV)/bin/mpsched"

# The main job: the quick reproduction of every study of experiments/ (the seed papers), each
# claim judged with a confidence interval; the claims on the terminal, the report (setup,
# figures against the published values, claims) in results/report/report.html and report.md.
MAIN_OUT := results/report
run: setup
	$(VENV)/bin/mpsched reproduce --all --quick -o $(MAIN_OUT)

test: setup test-rust test-python

# Property tests explore new random cases on every developer run; under CI they use one fixed
# seed so a landing never depends on luck (PROPTEST_RNG_SEED; Hypothesis: the "ci" profile).
test-rust:
	$(if $(CI),PROPTEST_RNG_SEED=20261122) cargo test --workspace --exclude mpsched-py --release

test-python:
	$(PY) -m pytest -q

bench: setup
	benches/run.sh

# Not part of `make test`: a newer toolchain may add lints; run it before committing Rust.
lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --release -- -D warnings

clean:
	rm -rf target $(STAMPS) $(VENV) python/mpsched/*.so
