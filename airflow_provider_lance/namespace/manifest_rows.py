"""The rows of ``__manifest`` (seed 000, V2): its Arrow schema, object types, and one row as Python sees it."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_lance.namespace.identifiers import DELIMITER

NAMESPACE = "namespace"
TABLE = "table"
TABLE_VERSION = "table_version"

PRIMARY_KEY_METADATA = {b"lance-schema:unenforced-primary-key:position": b"0"}
SCHEMA = pa.schema(
    [
        pa.field("object_id", pa.string(), nullable=False, metadata=PRIMARY_KEY_METADATA),
        pa.field("object_type", pa.string(), nullable=False),
        pa.field("location", pa.string()),
        pa.field("metadata", pa.string()),
        pa.field("base_objects", pa.list_(pa.field("object_id", pa.string()))),
    ]
)

# Table metadata key by which the spec turns table version management on for a catalog.
TABLE_VERSION_MANAGEMENT_KEY = "table_version_management"


@dataclass(frozen=True)
class ManifestRow:
    object_id: str
    object_type: str
    location: str | None = None
    metadata: dict[str, Any] | None = None

    def to_arrow(self) -> dict[str, Any]:
        return {
            "object_id": self.object_id,
            "object_type": self.object_type,
            "location": self.location,
            # compact JSON like the reference; null when there is nothing
            "metadata": json.dumps(self.metadata, separators=(",", ":")) if self.metadata else None,
            "base_objects": None,
        }

    @classmethod
    def from_arrow(cls, row: Mapping[str, Any]) -> ManifestRow:
        raw = row.get("metadata")
        return cls(row["object_id"], row["object_type"], row.get("location"), json.loads(raw) if raw else None)


class VersionRows(Mapping[int, tuple[str, "str | None"]]):
    """A table's ``table_version`` rows by version number, (object id, metadata JSON) each, read from the Arrow
    arrays only when asked (a line of 10,000 versions is a dict of numbers, not 20,000 Python strings).

    :param positions: version number → position in ``ids`` and ``metadata``.
    :param ids: the rows' object ids.
    :param metadata: the rows' metadata.
    """

    def __init__(self, positions: dict[int, int], ids: pa.Array, metadata: pa.Array) -> None:
        self._positions, self._ids, self._metadata = positions, ids, metadata

    def __getitem__(self, version: int) -> tuple[str, str | None]:
        at = self._positions[version]
        return self._ids[at].as_py(), self._metadata[at].as_py()

    def __contains__(self, version: object) -> bool:
        return version in self._positions

    def __iter__(self) -> Iterator[int]:
        return iter(self._positions)

    def __len__(self) -> int:
        return len(self._positions)


@dataclass(frozen=True)
class VersionLine:
    """The ``table_version`` rows of one table in one index.

    :param rows: the rows by version number.
    :param staged: the versions whose row may still point at a staged manifest (a superset: exact check by
        the caller), ascending.
    :param latest: the highest version with a row (0 when none).
    """

    rows: Mapping[int, tuple[str, str | None]]
    staged: tuple[int, ...] = ()
    latest: int = 0


NO_VERSIONS = VersionLine({})


def sql_string(value: str) -> str:
    """A SQL string literal for a Lance filter."""
    return "'" + value.replace("'", "''") + "'"


def rows_table(rows: list[ManifestRow]) -> pa.Table:
    """Rows as an Arrow table in :data:`SCHEMA`."""
    return pa.Table.from_pylist([row.to_arrow() for row in rows], schema=SCHEMA)


def table_and_versions_filter(table_oid: str) -> str:
    """The row of a table and every ``table_version`` row of it."""
    return (
        f"(object_id = {sql_string(table_oid)} AND object_type = '{TABLE}') OR "
        f"(starts_with(object_id, {sql_string(table_oid + DELIMITER)}) AND object_type = '{TABLE_VERSION}')"
    )


def descendants(table: pa.Table, prefix: str, object_type: str | None) -> Any:
    """A mask of the rows whose object id starts with ``prefix`` (and whose type is ``object_type``)."""
    mask = pc.starts_with(table["object_id"], prefix) if prefix else pc.is_valid(table["object_id"])
    if object_type:
        mask = pc.and_(mask, pc.equal(table["object_type"], object_type))
    return mask
