# pyscheduler: the README's commands. Every target sets up what it needs on a fresh machine.
#   make serve   the REST service (YuniKorn's /ws/v1 API) on 127.0.0.1:9080 with the demo cluster
#   make test    venv + pinned deps, release build of the Rust extension, wheels, cargo test,
#                type checks (mypy strict, stubtest), import layers (import-linter), the
#                Kubernetes test binaries (built once per machine, see k8s-tools), the container
#                image (make image), pytest
#   make bench   the benchmarks (docs/benchmarks.md records their figures)
#   make loadtest  locust against a served demo scheduler on 127.0.0.1, bounded (30 s by default)
#   make wheels  the pyscheduler, pyscheduler-web and pyscheduler-k8s wheels into dist/
#   make k8s-tools  etcd, kube-apiserver and kwok for the Kubernetes tests, into ~/.cache/pyscheduler/ (once:
#                about 11 min on 2 cores; see shared/spec/kubernetes.md)
#   make k8s-smoke  a real control plane on loopback: a fake node, a pod bound and Running
#   make k8s-demo   that control plane with 50 fake nodes and pyscheduler scheduling its pods
#   make image   the container image localhost/pyscheduler:<version> with podman (docs/image.md; cold
#                about 2.5 min on 2 cores, warm 10-20 s)
#   make clean   remove build output and the virtual environment

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
STAMP := $(VENV)/.requirements-installed
NATIVE_SOURCES := $(shell find rust -name '*.rs' -o -name Cargo.toml) Cargo.toml pyproject.toml
NATIVE_STAMP := $(VENV)/.native-built
WEB_STAMP := $(VENV)/.web-installed
WEB_SOURCES := web/pyproject.toml k8s/pyproject.toml
# Pytest options can be added on the command line: make test PYTEST_ARGS="-k ring -x"
PYTEST_ARGS ?=
# pytest-xdist workers (tests/conftest.py groups the tests: a module on one worker, every test
# that starts a control plane or a container in one group); 0: one process, no xdist.
PYTEST_WORKERS ?= 2
BENCH_ARGS ?=
# Options for loadtests/run.py: make loadtest LOADTEST_ARGS="--scenario stream -u 4 -t 20s"
LOADTEST_ARGS ?=
# Options for `pyscheduler serve` (see `pyscheduler serve --help`): make serve SERVE_ARGS="--bind 0.0.0.0:9080"
SERVE_ARGS ?=

.PHONY: venv build web serve test cargo-test typecheck lint-imports pytest bench wheels clean proto k8s-tools k8s-smoke chromium \
	k8s-demo image

venv: $(STAMP)

$(STAMP): requirements/dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements/dev.txt
	touch $@

# Builds the extension in release mode and installs the package into .venv in editable
# mode (Python sources are used from the work tree, the native module is put beside them), with
# the reporter-grpc extra (socket reporter plugins; pinned in requirements/dev.txt).
build: $(NATIVE_STAMP)

$(NATIVE_STAMP): $(STAMP) $(NATIVE_SOURCES)
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(BIN)):$$PATH $(BIN)/maturin develop --release --quiet \
		--extras reporter-grpc
	touch $@

# The REST service and Kubernetes shim packages, installed editable into .venv (their
# dependencies are pinned in requirements/dev.txt, hence --no-deps; the core is the editable
# build above).
web: $(WEB_STAMP)

$(WEB_STAMP): $(NATIVE_STAMP) $(WEB_SOURCES)
	$(BIN)/pip install --quiet --no-deps -e web -e k8s
	touch $@

# The demo: the default configuration and the built-in simulated RM keeping a small cluster
# busy. Ctrl-C stops it.
serve: build web
	$(BIN)/pyscheduler serve --demo $(SERVE_ARGS)

# The wheels, and the core's dependencies and its reporter-grpc extra's (as pinned) as wheels
# beside them, so a test can install the core, with and without the extra, into an empty virtual
# environment without any index.
wheels: $(STAMP)
	$(BIN)/maturin build --release --quiet --out dist
	$(BIN)/pip wheel --quiet --no-deps --wheel-dir dist ./web ./k8s
	$(BIN)/pip download --quiet --no-deps --only-binary=:all: --dest dist/deps $$(grep -i -e '^PyYAML==' -e '^fsspec==' -e '^grpcio==' -e '^protobuf==' -e '^typing_extensions==' requirements/dev.txt)

cargo-test:
	cargo test --quiet

# mypy strict over pyscheduler/, web/ and k8s/ ([tool.mypy] in pyproject.toml), then stubtest: the
# native module's stub (pyscheduler/_native.pyi) against the built module.
typecheck: build web
	$(BIN)/mypy
	$(PY) -m mypy.stubtest pyscheduler._native

# The import layers ([tool.importlinter] in pyproject.toml): the core imports downward only, the
# SI is a leaf, the product never imports the test kit or the benchmarks, the core not the web.
lint-imports: build web
	$(BIN)/lint-imports

# The Kubernetes tests need the control plane's binaries: built here once per machine (with
# their progress), then found in the cache by the tests.
pytest: build web wheels k8s-tools chromium image
	$(PY) -m pytest $(if $(filter-out 0,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist loadgroup) $(PYTEST_ARGS)

# The web console's browser tests (tests/web/test_console_browser.py) drive Debian's Chromium
# through playwright, which never downloads a browser of its own: installed here once per machine
# (about 15 s with a warm apt cache, a minute or so with apt-get update on a fresh one), a no-op
# when /usr/bin/chromium is there. The DejaVu fonts make the screenshots the same everywhere.
chromium:
	@if [ ! -x /usr/bin/chromium ] || [ ! -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			chromium fonts-dejavu-core; \
	fi

test: build wheels cargo-test typecheck lint-imports pytest

bench: build web
	$(PY) -m benchmarks $(BENCH_ARGS)

clean:
	rm -rf target dist $(VENV) pyscheduler/_native*.so

# The Kubernetes control plane the Kubernetes tests run (tools/k8s/build.sh keeps what it built).
k8s-tools:
	tools/k8s/build.sh

k8s-smoke: venv k8s-tools
	$(PY) tests/kube_cluster.py

# The container image (Containerfile) with podman, from Debian-made bases and the host's Rust
# toolchain: no registry needed (tools/image/build.sh; docs/image.md). tests/test_image.py runs it.
image:
	tools/image/build.sh

# A control plane with 50 fake nodes and pyscheduler serving it (REST API and the shim); prints
# how to point kubectl at it. Ctrl-C stops everything.
k8s-demo: build web k8s-tools
	$(PY) tools/k8s/demo.py $(DEMO_ARGS)

# Regenerates the committed gRPC code of the socket reporter plugins from protos/ (grpcio-tools,
# pinned in requirements/dev.txt); tests/test_reporter_protos.py checks it is up to date.
proto: $(STAMP)
	$(PY) -m grpc_tools.protoc -I protos --python_out=. --grpc_python_out=. protos/pyscheduler/reporter/grpc_api/*.proto

# Load test (benchmarks.md section 4): starts `pyscheduler serve --demo` on a free 127.0.0.1
# port, runs locust headless (loadtests/locustfile.py; 6 users, 30 s by default), prints
# requests/s, latency percentiles and failures, and stops the server.
.PHONY: loadtest
loadtest: build web
	$(PY) loadtests/run.py $(LOADTEST_ARGS)
