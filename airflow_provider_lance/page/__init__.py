"""The catalog page: a read-only HTML view of any ``lance_namespace.LanceNamespace`` (no Airflow import).

:func:`create_page_app` returns a Starlette application; ``lance-namespace-server`` serves it at ``/``, the
Airflow plugin ``lance`` mounts it in the API server, ``python -m airflow_provider_lance.page`` serves it alone.
"""

from __future__ import annotations

from airflow_provider_lance.utils.extras import missing_extra

try:
    from airflow_provider_lance.page.app import UnknownSourceError, create_page_app
except ModuleNotFoundError as error:  # installed without the server extra (Airflow brings what it needs)
    raise missing_extra("server", error) from None

__all__ = ["UnknownSourceError", "create_page_app"]
