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
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace.manifest_rows import SCHEMA

__all__ = ["SCHEMA", "build", "build_s3", "copy", "install_data", "make_template", "s3_options", "stage", "table_rows"]

NAMESPACE = "bench"
U64_MAX = 2**64 - 1
MARKER = b"reserved"


def manifest_name(version: int) -> str:
    return f"{U64_MAX - version:020d}.manifest"


def make_template(path: Path, versions: int, mode: str = "append") -> Path:
    """A tiny Lance dataset (V2 manifest names) with ``versions`` versions, one row written per version
    (``mode``: ``append``, or ``overwrite`` for thousands of versions, whose manifests then stay one fragment
    each instead of growing with the version number)."""
    if path.exists():
        return path
    lance.write_dataset(pa.table({"x": [0]}), str(path), mode="create", enable_v2_manifest_paths=True)
    for version in range(2, versions + 1):
        lance.write_dataset(pa.table({"x": [version]}), str(path), mode=mode)
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
    the ``data_tables`` tables (``bench$data<i>``) that hold real Lance data (version 1).

    :param root: the catalog's root directory.
    :param size: declared tables in the root and in ``bench`` each.
    :param data_tables: tables with real data (``bench$data<i>``).
    :param template: the dataset whose files the data tables get.
    """
    root.mkdir(parents=True, exist_ok=True)
    namespace = DirectoryNamespace(root=str(root))
    namespace.create_namespace(ln.CreateNamespaceRequest(id=[NAMESPACE]))  # creates __manifest (engine format)
    ids: list[str] = []
    locations: list[str] = []
    for i in range(size):
        ids += [f"t{i}", f"{NAMESPACE}$t{i}"]
        locations += [f"t{i}.lance", f"{i:08x}_{NAMESPACE}$t{i}"]
    for location in locations:
        (root / location).mkdir()
        (root / location / ".lance-reserved").write_bytes(MARKER)
    data: dict[str, Path] = {}
    for i in range(data_tables):
        location = f"d{i:07x}_{NAMESPACE}$data{i}"
        ids.append(f"{NAMESPACE}$data{i}")
        locations.append(location)
        (root / location).mkdir()
        (root / location / ".lance-reserved").write_bytes(MARKER)
        if template is not None:
            install_data(template, root / location, 1)
        data[f"data{i}"] = root / location
    lance.dataset(str(root / "__manifest")).insert(table_rows(ids, locations))
    return data


def table_rows(ids: list[str], locations: list[str]) -> pa.Table:
    """``__manifest`` rows of declared tables (no metadata, no base objects), built column by column: a
    million rows in seconds, where a list of row dicts takes minutes.

    :param ids: the tables' object ids.
    :param locations: their locations, in the same order.
    """
    count = len(ids)
    columns = [
        pa.array(ids, pa.string()),
        pa.array(["table"] * count, pa.string()),
        pa.array(locations, pa.string()),
        pa.nulls(count, pa.string()),
        pa.nulls(count, SCHEMA.field("base_objects").type),
    ]
    return pa.Table.from_arrays(columns, schema=SCHEMA)


def build_s3(properties: dict[str, str], namespace: Any, size: int) -> None:
    """A catalog on S3: the namespace ``bench`` (created by ``namespace``, the engine under test, so the
    ``__manifest`` is its own) and ``size`` declared table rows in it, appended in bulk.

    :param properties: the constructor properties of the catalog (``root`` and ``storage.*``).
    :param namespace: the engine's namespace object on that catalog.
    :param size: declared tables in ``bench``.
    """
    namespace.create_namespace(ln.CreateNamespaceRequest(id=[NAMESPACE]))
    rows = table_rows([f"{NAMESPACE}$t{i}" for i in range(size)], [f"x{i}" for i in range(size)])
    lance.dataset(properties["root"] + "/__manifest", storage_options=s3_options(properties)).insert(rows)


def s3_options(properties: dict[str, str]) -> dict[str, str]:
    """Lance storage options of a namespace's ``storage.*`` properties.

    :param properties: constructor properties.
    """
    return {k.removeprefix("storage."): v for k, v in properties.items() if k.startswith("storage.")}


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
