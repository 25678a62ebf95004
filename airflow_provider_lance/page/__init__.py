"""The catalog page: a read-only HTML view of any ``lance_namespace.LanceNamespace`` (no Airflow import).

:func:`create_page_app` returns a Starlette application; ``lance-namespace-server`` serves it at ``/``, the
Airflow plugin ``lance`` mounts it in the API server, ``python -m airflow_provider_lance.page`` serves it alone.
"""

from __future__ import annotations

from airflow_provider_lance.page.app import UnknownSourceError, create_page_app

__all__ = ["UnknownSourceError", "create_page_app"]
