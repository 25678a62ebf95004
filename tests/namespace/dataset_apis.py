"""What the differential tests of Lance's own dataset APIs share (issue 37): a table written through a namespace,
each engine's view of it (the namespace's answers and what pylance opens), and a scenario run on our engine
with table version management and on the reference with version tracking, from the same start."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.namespace.conftest import request_for

NAMESPACE = "s"
MANAGED = {"ours": {"table_version_management": "true"}, "reference": {"table_version_tracking_enabled": "true"}}


@dataclass
class Side:
    """One engine on its own root: ``ns`` is what pylance and the checks talk to; ``options``: the storage
    options pylance needs (S3: the reference vends none)."""

    kind: str
    root: str
    ns: ln.LanceNamespace
    properties: dict[str, str]
    options: dict[str, str] | None = None

    def table_id(self, name: str) -> list[str]:
        return [NAMESPACE, name]

    def open(self, name: str, version: int | None = None) -> lance.LanceDataset:
        return lance.dataset(
            namespace_client=self.ns, table_id=self.table_id(name), version=version, storage_options=self.options
        )

    def write(self, name: str, data: pa.Table, mode: str) -> lance.LanceDataset:
        """``lance.write_dataset`` through the namespace by table id."""
        return lance.write_dataset(
            data, namespace_client=self.ns, table_id=self.table_id(name), mode=mode, storage_options=self.options
        )


def make_side(kind: str, root: str, options: dict[str, str] | None = None, **extra: str) -> Side:
    """Our engine (managed) or the reference (tracking) on ``root`` with ``extra`` properties and the storage
    ``options`` (also as ``storage.*`` properties), with the child namespace created."""
    properties = {**MANAGED[kind], **extra, **{f"storage.{key}": value for key, value in (options or {}).items()}}
    implementation = DirectoryNamespace if kind == "ours" else ReferenceNamespace
    ns = implementation(root=root, **properties)
    ns.create_namespace(ln.CreateNamespaceRequest(id=[NAMESPACE]))
    return Side(kind, root, ns, properties, options)


def rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([f"r{i}" for i in ids])})


def start(side: Side, name: str, appends: int = 2) -> lance.LanceDataset:
    """The common start: version 1 with ids 0-2, then ``appends`` appends of one row each."""
    side.write(name, rows([0, 1, 2]), "create")
    for i in range(appends):
        lance.write_dataset(rows([10 + i]), side.open(name), mode="append")
    return side.open(name)


def _plain(response: Any) -> Any:
    """A response as plain data (the reference answers dicts, ours models)."""
    return response.model_dump(exclude_none=True) if hasattr(response, "model_dump") else response


def ask(ns: ln.LanceNamespace, method: str, **fields: Any) -> Any:
    """One namespace operation as plain data: pylance's reference takes a request model for some operations and
    a dict for others (``describe_table_version``); ours takes both."""
    try:
        response = getattr(ns, method)(request_for(method, **fields))
    except (TypeError, AttributeError):
        response = getattr(ns, method)({k: v for k, v in fields.items() if v is not None})
    return _plain(response)


def outcome(action: Callable[[], Any]) -> tuple[str, Any]:
    """('ok', what the action returns) or ('error', the exception's class name)."""
    try:
        return "ok", action()
    except Exception as error:
        return "error", type(error).__name__


def table_rows(dataset: lance.LanceDataset) -> list[dict[str, Any]]:
    return sorted(dataset.to_table().to_pylist(), key=lambda row: (row.get("id") is None, row.get("id"), str(row)))


def view(side: Side, name: str, branch: str | None = None) -> dict[str, Any]:
    """What the engine answers about a table (or its branch): the versions listed, the latest described, each
    listed version described and opened (its rows counted), DescribeTable's version of the main line (the
    reference ignores DescribeTable's ``branch``), and the latest rows."""
    request: dict[str, Any] = {"id": side.table_id(name), "branch": branch}
    listed = [entry["version"] for entry in ask(side.ns, "list_table_versions", **request)["versions"]]
    described_latest = outcome(lambda: ask(side.ns, "describe_table_version", **request)["version"]["version"])
    described = [
        outcome(lambda v=v: ask(side.ns, "describe_table_version", **request, version=v)["version"]["version"])
        for v in listed
    ]
    head = side.open(name)
    opened = [outcome(lambda v=v: head.checkout_version((branch, v)).count_rows()) for v in listed]
    table = ask(side.ns, "describe_table", id=side.table_id(name), load_detailed_metadata=True)  # the main line
    latest = head.checkout_version((branch, None)) if branch else head
    return {
        "listed": listed,
        "latest": described_latest,
        "described": described,
        "opened": opened,
        "describe_table": table.get("version"),
        "rows": table_rows(latest),
    }


def run_on(sides: dict[str, Side], name: str, scenario: Callable[[Side, str], Any]) -> dict[str, Any]:
    """The scenario on both engines from the same start; per engine its outcome and the view after it."""
    results = {}
    for kind, side in sides.items():
        start(side, name)
        result = outcome(lambda side=side: scenario(side, name))
        results[kind] = {"outcome": result, "view": view(side, name)}
    return results


def root_of(base: Path, kind: str) -> str:
    path = base / kind
    path.mkdir(parents=True, exist_ok=True)
    return str(path)
