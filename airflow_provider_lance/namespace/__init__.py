"""The Lance Directory Namespace engine (no Airflow imports).

Its implementation name, for ``lance_namespace.connect`` and for any process it is handed to, is the full class
path ``airflow_provider_lance.namespace.DirectoryNamespace``.
"""

from __future__ import annotations

from airflow_provider_lance.namespace.namespace import DirectoryNamespace

IMPL = f"{DirectoryNamespace.__module__.rpartition('.')[0]}.{DirectoryNamespace.__qualname__}"

__all__ = ["IMPL", "DirectoryNamespace"]
