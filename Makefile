# One-command set-up: every target creates .venv from uv.lock first.
PYTHON ?= python3
VENV := .venv
export UV_COMPILE_BYTECODE := 1
export SPARK_LOCAL_IP := 127.0.0.1

.PHONY: venv test demo bench lint clean

$(VENV)/.installed: pyproject.toml uv.lock
	$(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	$(PYTHON) -m uv sync --frozen --all-extras
	touch $@

venv: $(VENV)/.installed

test: venv
	$(VENV)/bin/pytest -n 2  # both cores: most tests wait on servers, Spark and Airflow processes

demo: venv
	$(VENV)/bin/python scripts/demo.py

bench: venv
	$(VENV)/bin/python -m benchmarks

lint: venv
	$(VENV)/bin/ruff check airflow_provider_lance tests benchmarks example_dags scripts

clean:
	rm -rf $(VENV) .demo demo_data
