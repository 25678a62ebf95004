"""Fixtures for the provider's Airflow tests (see tests/airflow_helpers.py)."""

from __future__ import annotations

import tests.airflow_helpers  # noqa: F401  (sets AIRFLOW_HOME before Airflow is imported)
from tests.airflow_helpers import engine_impl, hook, impl, lance_root, set_conn  # noqa: F401
