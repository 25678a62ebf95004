# One-command set-up: every target creates .venv from uv.lock first.
PYTHON ?= python3
VENV := .venv
export UV_COMPILE_BYTECODE := 1
export SPARK_LOCAL_IP := 127.0.0.1

.PHONY: venv test test-fast test-e2e test-install demo bench bench-issue42 lint clean node-clients

$(VENV)/.installed: pyproject.toml uv.lock
	$(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	$(PYTHON) -m uv sync --frozen --all-extras
	touch $@

venv: $(VENV)/.installed

test: venv node-clients
	$(VENV)/bin/pytest -n 2 -m "not install and not e2e"  # both cores: most tests wait on servers and processes

# Whole pipelines (the example DAGs through Airflow and spark-submit) and the fault workloads: CI runs them after
# make test (.ci/run); tests/conftest.py's TIER_PATHS says which.
test-e2e: venv node-clients
	$(VENV)/bin/pytest -n 2 -m e2e

# What users install: the built wheel (not this checkout) in a clean venv per documented user path, each used
# for real (tests/packaging/test_install.py). The venvs are cached in ~/.cache/airflow-provider-lance while the
# lock is unchanged; a run then only reinstalls the wheel.
test-install: venv
	$(VENV)/bin/pytest -p no:xdist -m install tests/packaging -s --durations=0  # -s: the versions each path ran

# The inner loop: the unit tier (no moto, Spark, Airflow processes, browser or other clients; tests/conftest.py),
# with the spec fuzz test's smaller budget (every operation, 5 generated requests instead of 25: the fuzzer's
# request generation was 45 s of CPU, the largest item of the tier). Python may cache the bytecode of the test
# modules (pytest's assertion rewriting) even where the environment says not to: each of the two workers
# compiled them again on every run, 5 s of CPU each.
test-fast: venv
	env -u PYTHONDONTWRITEBYTECODE LANCE_FUZZ_EXAMPLES=5 $(VENV)/bin/pytest -n 2 -m unit

# The Node client tests (tests/clients/test_node.py): Debian's nodejs and npm, then the locked packages (again
# only when the lock file changes: npm ci writes node_modules/.package-lock.json).
NODE_CLIENTS := tests/clients/node/node_modules/.package-lock.json

node-clients: $(NODE_CLIENTS)

$(NODE_CLIENTS): tests/clients/node/package-lock.json
	command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { \
		SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO="sudo"; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nodejs npm >/dev/null; }
	cd tests/clients/node && npm ci --no-audit --no-fund

demo: venv
	$(VENV)/bin/python scripts/demo.py

bench: venv
	$(VENV)/bin/python -m benchmarks

# Issue 42's rows measured again, with the engine and server of the commit before its changes alongside, merged
# into latest.json and the page (scripts/bench_issue42.py; ISSUE42_ARGS=--quick: the smoke versions).
bench-issue42: venv
	$(VENV)/bin/python -m scripts.bench_issue42 $(ISSUE42_ARGS)

lint: venv
	$(VENV)/bin/ruff check airflow_provider_lance tests benchmarks example_dags scripts

clean:
	rm -rf $(VENV) .demo demo_data
