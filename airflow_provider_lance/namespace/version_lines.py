"""A table's version lines and what records their versions, read as they are: which line a request names (the
main line, or a branch: pylance's ``tree/<branch>/``), the final manifests in its ``_versions/`` and (with table
version management) its ``table_version`` rows in ``__manifest``, each described as a ``TableVersion``.

Nothing here finishes a commit or decides which versions exist: external_reader.py finishes the commits that
stopped after their row, versions.py answers which versions a table has. ``__manifest`` records the main line
only (seed 003), so a branch's ``_versions/`` is its truth, committed with put-if-not-exists as without
management.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from lance_namespace import TableBranchNotFoundError, TableVersion

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.catalog import Catalog, Table
from airflow_provider_lance.namespace.manifest_rows import (
    NO_VERSIONS,
    TABLE_VERSION,
    ManifestRow,
    VersionLine,
)
from airflow_provider_lance.namespace.storage import FileInfo

MAIN_BRANCH = "main"


# -- which version line ---------------------------------------------------------------------------------------
def is_main(branch: str | None) -> bool:
    """Whether ``branch`` names the main line (unset, ``""`` or ``"main"``)."""
    return branch is None or branch in ("", MAIN_BRANCH)


def locate_line(catalog: Catalog, identifier: object, branch: str | None) -> tuple[Table, bool]:
    """The table whose versions a request names, and whether they are managed (rows in ``__manifest``):
    the main line with table version management; a branch's versions never are (see the module docstring)."""
    return branch_line(catalog, catalog.find_table(ids.validate_identifier(identifier, "table")), branch)


def branch_line(catalog: Catalog, table: Table, branch: str | None) -> tuple[Table, bool]:
    """:func:`locate_line` for a table already located. A branch exists when pylance's reference to it
    (``_refs/branches/<name>.json``) does or, while pylance creates it (it commits the branch's first version
    before writing the reference), its ``_versions/`` holds a file; else TableBranchNotFound."""
    if is_main(branch):
        return table, catalog.managed()
    ids.validate_identifier([branch], "branch")
    line = Table(table.parts, f"{table.location}/tree/{branch}")
    if catalog.storage.file_info(f"{table.location}/_refs/branches/{branch}.json") is None and not version_names(
        catalog, line
    ):
        raise TableBranchNotFoundError(f"Table branch not found: '{branch}' of '{table.object_id}'")
    return line, False


# -- the final manifests in _versions/ ------------------------------------------------------------------------
def version_names(catalog: Catalog, table: Table) -> list[str]:
    """The names in the table's ``_versions/`` (one names-only listing)."""
    return catalog.storage.list_names(ids.versions_dir(table.location))


def version_files(catalog: Catalog, table: Table) -> dict[int, TableVersion]:
    """Final manifests in ``_versions/`` (one listing)."""
    return detailed_listing(catalog, table)[1]


def detailed_listing(catalog: Catalog, table: Table) -> tuple[dict[int, str], dict[int, TableVersion]]:
    """The final manifests in ``_versions/`` by version: their names, and described (one detailed listing)."""
    directory = ids.versions_dir(table.location)
    names: dict[int, str] = {}
    found: dict[int, TableVersion] = {}
    for name, info in catalog.storage.list_dir(directory).items():
        parsed = ids.parse_manifest_name(name)
        if parsed is not None and info is not None:
            names[parsed[0]] = name
            found[parsed[0]] = file_version(catalog, parsed[0], f"{directory}/{name}", info)
    return names, found


def file_version(catalog: Catalog, version: int, key: str, info: FileInfo) -> TableVersion:
    """The ``TableVersion`` the final manifest ``key`` describes (its listing or head request: ``info``)."""
    return TableVersion(
        version=version,
        manifest_path=catalog.storage.object_path(key),
        manifest_size=info.size,
        e_tag=info.e_tag,
        timestamp_millis=info.timestamp_millis,
    )


def naming_scheme(names: Collection[str]) -> str | None:
    """The table's naming scheme, from its existing manifests (a table never mixes schemes)."""
    return next((parsed[1] for name in names if (parsed := ids.parse_manifest_name(name))), None)


def has_manifests(catalog: Catalog, table: Table) -> bool:
    """Whether ``_versions/`` holds a final manifest (one listing): a table without is only declared."""
    return naming_scheme(version_names(catalog, table)) is not None


# -- the table_version rows in __manifest ---------------------------------------------------------------------
def version_line(catalog: Catalog, table: Table) -> VersionLine:
    """The table's ``table_version`` rows in the operation's snapshot (``RowIndex.version_line``)."""
    if not catalog.config.manifest_enabled:
        return NO_VERSIONS
    return catalog.manifest.table_index(table.object_id).version_line(table.object_id)


def version_rows(catalog: Catalog, tables: Sequence[Table]) -> list[dict[int, ManifestRow]]:
    """Each table's ``table_version`` rows by version."""
    return [
        {version: version_row(line, version) for version in line.rows}
        for line in (version_line(catalog, table) for table in tables)
    ]


def version_row(line: VersionLine, version: int) -> ManifestRow:
    """The ``table_version`` row of ``version`` in ``line`` (a version the line has a row of)."""
    oid, meta = line.rows[version]
    return ManifestRow(oid, TABLE_VERSION, None, json.loads(meta) if meta else None)


def table_version_from(version: int, meta: dict[str, Any]) -> TableVersion:
    """The ``TableVersion`` a ``table_version`` row's metadata describes."""
    return TableVersion(
        version=version,
        manifest_path=meta["manifest_path"],
        manifest_size=meta.get("manifest_size"),
        e_tag=meta.get("e_tag"),
        timestamp_millis=meta.get("timestamp_millis"),
        metadata=meta.get("metadata"),
    )
