# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PACKAGES := models wire workflows activities sandbox raypilot worker.py

.PHONY: install test test-fast lint typecheck unit reliability bench dev demo lock clean kube node-tools s3-server \
	s3-server-lock temporal-server

install: $(STAMP)

# Every dependency comes pinned from requirements.lock; the project itself is installed editable.
$(STAMP): requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy $(PACKAGES)

# The suite runs on TEST_WORKERS pytest-xdist workers (0: one process), each test file whole on one worker
# (its module fixtures start once; tests/conftest.py keeps the reliability package whole too). Most of the
# suite waits on real time (Ray heads, dev servers, load runs), so two workers share 2 cores well. Three do
# not, now that the real Kubernetes stacks run too: a fresh clone's run took 32 minutes against two workers'
# 29, at a mean load of 17 (max 34), and a real-Ray upgrade starved past its 8-minute wait.
TEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

# pytest exits 5 when it collected no test: that is a failure here, not a pass. The slowest 20 tests are
# listed at the end of every run.
unit: $(STAMP)
	$(BIN)/pytest $(XDIST) --durations=20 $(PYTEST_ARGS); code=$$?; \
	if [ $$code -eq 5 ]; then echo "pytest ran no test" >&2; exit 1; fi; exit $$code

# The real Kubernetes components first: a cold build shows its progress before any test starts.
test: kube node-tools s3-server lint typecheck unit

# The S3-compatible server (moto) of the log store's test, pinned in tests/s3-server.lock, in .venv-s3: its
# botocore and the kubernetes client want python-dateutil versions that exclude each other. Without it that
# test skips, saying so.
S3_VENV := .venv-s3
$(S3_VENV)/.installed: tests/s3-server.lock
	$(PYTHON) -m venv $(S3_VENV)
	$(S3_VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/s3-server.lock
	touch $@
s3-server: $(S3_VENV)/.installed

s3-server-lock:
	rm -rf .lock-s3 && $(PYTHON) -m venv .lock-s3
	.lock-s3/bin/pip install --quiet 'moto[s3]==5.2.5' flask flask-cors
	{ sed -n '1,3p' tests/s3-server.lock; .lock-s3/bin/pip freeze; } > tests/s3-server.lock.new
	mv tests/s3-server.lock.new tests/s3-server.lock && rm -rf .lock-s3

# The inner loop: decisions, workflows on the time-skipping server, replay, the activities that need no
# cluster, the docs' blocks and the CLI's views: about 2.5 minutes on 2 cores. Left out by marker: tests on
# the real stack (realkube) and those that start a sandbox stack or a worker process of their own (slow: the
# CLI's commands, the worker process). `make test` stays the whole suite.
FAST_TESTS := tests/models tests/wire tests/workflows tests/raypilot tests/architecture tests/replay \
	tests/harness tests/activities tests/docs
test-fast: $(STAMP) s3-server
	$(BIN)/pytest $(XDIST) -m "not realkube and not slow" $(FAST_TESTS) $(PYTEST_ARGS)

# The reliability suite (tests/reliability) at the issue's sizes: worker kills, API faults, dashboard outages,
# bad input, secrets. Seeded (the seed is printed; RAYPILOT_RELIABILITY_SEED=N repeats a run); the figures
# are appended to bench/RESULTS.md. Its small versions run inside `make test`.
reliability: $(STAMP)
	RAYPILOT_RELIABILITY=full RAYPILOT_RELIABILITY_RESULTS=bench/RESULTS.md $(BIN)/pytest tests/reliability

# A dev server with the Web UI on http://127.0.0.1:8233 and a worker against it (Ctrl-C stops both).
dev: $(STAMP)
	@trap 'kill 0' INT TERM EXIT; \
	$(BIN)/temporal server start-dev --ip 127.0.0.1 --ui-port 8233 --log-level warn \
	  --search-attribute RayKind=Keyword --search-attribute RayNamespace=Keyword \
	  --search-attribute RayName=Keyword --search-attribute RayPhase=Keyword \
	  --search-attribute RayCronJob=Keyword & \
	$(BIN)/python worker.py

demo: $(STAMP) kube node-tools
	$(BIN)/raypilot demo

# Refresh requirements.lock from pyproject.toml (needs the package registry).
lock:
	rm -rf .lockenv && $(PYTHON) -m venv .lockenv
	.lockenv/bin/pip install --quiet -e '.[dev]'
	.lockenv/bin/pip freeze --exclude-editable | grep -v '^-e' > requirements.lock
	rm -rf .lockenv

clean:
	rm -rf $(VENV) $(S3_VENV) build *.egg-info .mypy_cache .ruff_cache

# The performance suite (bench/README.md): every figure beside its reference, measured in the same run.
# BENCH_ARGS e.g. "--record", "--only P3,P7", "--scale 100,1000,10000".
bench: $(STAMP)
	$(BIN)/python -m bench $(BENCH_ARGS)

# The real Kubernetes components (etcd, kube-apiserver, kube-controller-manager, kube-proxy, kubectl, KubeRay's
# operator) and the KubeRay and Gateway API CRDs, built from the Go modules pinned in kube/ into a cache outside
# the clone (kube/README.md); prints the cache dir last. Cold: many minutes on 2 cores; warm: instant.
kube:
	@bash kube/build.sh

# The Temporal server as production runs one (temporal-server and temporal-sql-tool, with the PostgreSQL schemas)
# from the Go module pinned in temporal/ into a cache outside the clone (temporal/README.md); prints the cache dir
# last. It runs on PostgreSQL from Debian's packages (apt-get install postgresql). Not part of `make test`: a
# cold build takes many minutes on 2 cores; its tests skip, saying so, until it is built.
temporal-server:
	@bash temporal/build.sh

# The node's tools from Debian's packages (nftables: kube-proxy's nft), installed when missing.
node-tools:
	@bash kube/node-tools.sh
