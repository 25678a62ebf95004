"""Building benchmark catalogs: the same ``__manifest`` for both engines, built in bulk.

A catalog of size N holds N declared tables in the root (``t<i>.lance`` directories with a
``.lance-reserved`` marker, plus their manifest rows, as the reference writes them in compatibility mode)
and N declared tables in the child namespace ``bench`` (``<8 hex>_bench$t<i>`` directories). Rows are
written with one Lance append (not N declares), then the whole root is copied, so both engines start from
byte-identical storage. A few tables get real data: a template Lance dataset's files are copied in, with
its later manifests kept aside so that a benchmark can stage them for CreateTableVersion.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace.manifest_rows import SCHEMA

__all__ = ["SCHEMA", "build", "copy", "install_data", "make_template", "stage"]

NAMESPACE = "bench"
U64_MAX = 2**64 - 1
MARKER = b"reserved"


def manifest_name(version: int) -> str:
    return f"{U64_MAX - version:020d}.manifest"


def make_template(path: Path, versions: int) -> Path:
    """A tiny Lance dataset (V2 manifest names) with ``versions`` versions, one row appended per version."""
    if path.exists():
        return path
    lance.write_dataset(pa.table({"x": [0]}), str(path), mode="create", enable_v2_manifest_paths=True)
    for version in range(2, versions + 1):
        lance.write_dataset(pa.table({"x": [version]}), str(path), mode="append")
    return path


def install_data(template: Path, location: Path, versions: int) -> None:
    """Give a declared table the template's data files and its manifests of versions 1..``versions``."""
    shutil.copytree(template / "data", location / "data", dirs_exist_ok=True)
    (location / "_versions").mkdir(parents=True, exist_ok=True)
    for version in range(1, versions + 1):
        shutil.copyfile(
            template / "_versions" / manifest_name(version), location / "_versions" / manifest_name(version)
        )


def stage(template: Path, location: Path, version: int) -> str:
    """Stage the template's manifest of ``version`` in the table (``<final name>-<uuid>``); returns the
    object-store path (no scheme, no leading slash) as pylance passes it."""
    staged = location / "_versions" / f"{manifest_name(version)}-{uuid.uuid4()}"
    shutil.copyfile(template / "_versions" / manifest_name(version), staged)
    return str(staged).lstrip("/")


def build(root: Path, size: int, data_tables: int = 0, template: Path | None = None) -> dict[str, Path]:
    """Build a catalog of ``size`` root tables and ``size`` tables in ``bench``; returns the locations of
    the ``data_tables`` tables (``bench$data<i>``) that hold real Lance data (version 1)."""
    root.mkdir(parents=True, exist_ok=True)
    namespace = DirectoryNamespace(root=str(root))
    namespace.create_namespace(ln.CreateNamespaceRequest(id=[NAMESPACE]))  # creates __manifest (engine format)
    rows = []
    for i in range(size):
        for oid, location in ((f"t{i}", f"t{i}.lance"), (f"{NAMESPACE}$t{i}", f"{i:08x}_{NAMESPACE}$t{i}")):
            directory = root / location
            directory.mkdir()
            (directory / ".lance-reserved").write_bytes(MARKER)
            rows.append({"object_id": oid, "object_type": "table", "location": location})
    data: dict[str, Path] = {}
    for i in range(data_tables):
        location = f"d{i:07x}_{NAMESPACE}$data{i}"
        rows.append({"object_id": f"{NAMESPACE}$data{i}", "object_type": "table", "location": location})
        (root / location).mkdir()
        (root / location / ".lance-reserved").write_bytes(MARKER)
        if template is not None:
            install_data(template, root / location, 1)
        data[f"data{i}"] = root / location
    for row in rows:
        row.setdefault("metadata", None)
        row.setdefault("base_objects", None)
    lance.dataset(str(root / "__manifest")).insert(pa.Table.from_pylist(rows, schema=SCHEMA))
    return data


def copy(source: Path, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, symlinks=True)


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def fragment_count(root: Path) -> int:
    return len(lance.dataset(str(root / "__manifest")).get_fragments())


def version_count(root: Path) -> int:
    return len(os.listdir(root / "__manifest" / "_versions"))


def tempfile_dir(prefix: str) -> str:
    """A new temporary directory for one benchmark section (removed by the section)."""
    import tempfile

    return tempfile.mkdtemp(prefix=f"lance-bench-{prefix}-")
