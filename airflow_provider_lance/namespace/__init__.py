"""The Lance Directory Namespace engine (no Airflow imports)."""

from __future__ import annotations

from lance_namespace import register_namespace_impl

from airflow_provider_lance.namespace.namespace import DirectoryNamespace

IMPL_ALIAS = "pydir"
register_namespace_impl(IMPL_ALIAS, f"{DirectoryNamespace.__module__}.{DirectoryNamespace.__qualname__}")

__all__ = ["IMPL_ALIAS", "DirectoryNamespace"]
