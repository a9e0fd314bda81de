# pyscheduler: the README's commands. Every target sets up what it needs on a fresh machine.
#   make test    venv + pinned deps, release build of the Rust extension, wheel, cargo test, pytest
#   make bench   the benchmarks (docs/benchmarks.md records their figures)
#   make wheels  the pyscheduler wheel into dist/
#   make clean   remove build output and the virtual environment

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
STAMP := $(VENV)/.requirements-installed
NATIVE_SOURCES := $(shell find rust -name '*.rs' -o -name Cargo.toml) Cargo.toml pyproject.toml
NATIVE_STAMP := $(VENV)/.native-built
# Pytest options can be added on the command line: make test PYTEST_ARGS="-k ring -x"
PYTEST_ARGS ?=
BENCH_ARGS ?=

.PHONY: venv build test cargo-test pytest bench wheels clean

venv: $(STAMP)

$(STAMP): requirements/dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements/dev.txt
	touch $@

# Builds the extension in release mode and installs the package into .venv in editable
# mode (Python sources are used from the work tree, the native module is put beside them).
build: $(NATIVE_STAMP)

$(NATIVE_STAMP): $(STAMP) $(NATIVE_SOURCES)
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(BIN)):$$PATH $(BIN)/maturin develop --release --quiet
	touch $@

wheels: $(STAMP)
	$(BIN)/maturin build --release --quiet --out dist

cargo-test:
	cargo test --quiet

pytest: build wheels
	$(PY) -m pytest $(PYTEST_ARGS)

test: build wheels cargo-test pytest

bench: build
	$(PY) -m pyscheduler.bench $(BENCH_ARGS)

clean:
	rm -rf target dist $(VENV) pyscheduler/_native*.so
