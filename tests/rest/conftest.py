"""Fixtures of the REST server tests: our server over our engine on a fresh root, and its clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.rest.servers import serve_namespace


@pytest.fixture
def engine(root: Path) -> DirectoryNamespace:
    """Our engine on an empty root, with table version management."""
    return DirectoryNamespace(root=str(root), table_version_management="true")


@pytest.fixture
def server(engine: DirectoryNamespace) -> Iterator[str]:
    """Our REST server over ``engine``; its base URL."""
    with serve_namespace(engine, shared=True) as url:
        yield url


@pytest.fixture
def http(server: str) -> Iterator[httpx.Client]:
    """A plain HTTP client of ``server``."""
    with httpx.Client(base_url=server, timeout=30) as client:
        yield client
