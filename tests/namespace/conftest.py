"""Engine fixtures: our DirectoryNamespace and the reference side by side."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance_namespace
import pytest
from lance.namespace import DirectoryNamespace as ReferenceNamespace
from lance_namespace import LanceNamespace, LanceNamespaceError

from airflow_provider_lance.namespace import DirectoryNamespace

IMPLEMENTATIONS = {"ours": DirectoryNamespace, "reference": ReferenceNamespace}
_HASHED = re.compile(r"[0-9a-f]{8}_")


def request_for(method: str, **fields: Any) -> Any:
    """The request model of an operation (``list_tables`` → ``ListTablesRequest``), as the reference wants."""
    name = "".join(part.capitalize() for part in method.split("_")) + "Request"
    return getattr(lance_namespace, name)(**fields)


def do(namespace: LanceNamespace, method: str, **fields: Any) -> Any:
    """Run one operation with a request model built from keyword fields."""
    return getattr(namespace, method)(request_for(method, **fields))


def call(namespace: LanceNamespace, method: str, **fields: Any) -> tuple[str, Any]:
    """Run one operation; ('ok', comparable result) or ('error', code)."""
    try:
        response = do(namespace, method, **fields)
    except LanceNamespaceError as error:
        return "error", int(error.code)
    if response is None:
        return "ok", None
    data = response if isinstance(response, dict) else response.model_dump(exclude_none=True)
    return "ok", data


def normalize_location(location: str, root: Path) -> str:
    """Location relative to the root with the random 8-hex prefix masked."""
    relative = location.removeprefix("file://").removeprefix(str(root)).lstrip("/")
    return _HASHED.sub("<hash>_", relative)


@pytest.fixture
def make_namespace(tmp_path: Path) -> Callable[..., LanceNamespace]:
    """Build an implementation ('ours' or 'reference') on a root under tmp_path."""

    def build(kind: str, root: Path | None = None, **properties: str) -> LanceNamespace:
        target = root or tmp_path / kind
        target.mkdir(parents=True, exist_ok=True)
        return IMPLEMENTATIONS[kind](root=str(target), **properties)

    return build
