"""
Every Lance operator under its historical import path.

Kept for backward compatibility: existing DAGs import ``from airflow_provider_lance.operators.lance import ...``.
The operators live in modules named after what they act on: :mod:`.namespace`, :mod:`.table`,
:mod:`.version`, :mod:`.maintenance` (shared base in :mod:`.base`); the helpers that used to be defined
here live in :mod:`airflow_provider_lance.utils` (``compute_retention_ranges``, ``catalog_uri``,
``openlineage_location``). New code may import from either place.
"""

from __future__ import annotations

from airflow_provider_lance.operators.base import LanceBaseOperator
from airflow_provider_lance.operators.base import LanceBaseOperator as _LanceBaseOperator
from airflow_provider_lance.operators.commit import run_identity, run_key_from_context
from airflow_provider_lance.operators.maintenance import (
    LanceFinalizePendingVersionsOperator,
    LanceMaintainManifestOperator,
)
from airflow_provider_lance.operators.namespace import LanceCreateNamespaceOperator, LanceDropNamespaceOperator
from airflow_provider_lance.operators.table import (
    LanceDeclareTableOperator,
    LanceDeregisterTableOperator,
    LanceDropTableOperator,
    LanceRegisterTableOperator,
)
from airflow_provider_lance.operators.version import (
    LanceBatchCreateTableVersionsOperator,
    LanceBatchDeleteTableVersionsOperator,
    LanceCreateTableVersionOperator,
)
from airflow_provider_lance.utils.openlineage import catalog_uri, openlineage_location
from airflow_provider_lance.utils.retention import compute_retention_ranges

__all__ = [
    "LanceBaseOperator",
    "LanceBatchCreateTableVersionsOperator",
    "LanceBatchDeleteTableVersionsOperator",
    "LanceCreateNamespaceOperator",
    "LanceCreateTableVersionOperator",
    "LanceDeclareTableOperator",
    "LanceDeregisterTableOperator",
    "LanceDropNamespaceOperator",
    "LanceDropTableOperator",
    "LanceFinalizePendingVersionsOperator",
    "LanceMaintainManifestOperator",
    "LanceRegisterTableOperator",
    "_LanceBaseOperator",
    "catalog_uri",
    "compute_retention_ranges",
    "openlineage_location",
    "run_identity",
    "run_key_from_context",
]
