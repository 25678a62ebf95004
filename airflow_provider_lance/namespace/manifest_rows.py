"""The rows of ``__manifest`` (seed 000, V2): its Arrow schema, object types, and one row as Python sees it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
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
    rows only when asked: one version is found by its object id (``locate``: a binary search of the index), and
    a dict of every number is built only when the rows are walked (a line of 10,000 versions costs no Python
    object per row until then; issue 29: reading a line 4 ms -> ~0.2 ms at 10,000 versions).

    :param prefix: the table's object id and the delimiter.
    :param numbers: the rows' version numbers (int64), aligned with ``rows``.
    :param rows: each row's position in ``table``.
    :param table: every row of ``__manifest``.
    :param extra: version numbers too long for int64 → position in ``table``.
    :param locate: the position in ``table`` of an object id (None when it has no row).
    """

    def __init__(
        self,
        prefix: str,
        numbers: pa.Array,
        rows: pa.Array,
        table: pa.Table,
        extra: dict[int, int],
        locate: Callable[[str], int | None],
    ) -> None:
        self._prefix, self._numbers, self._rows, self._table = prefix, numbers, rows, table
        self._extra, self._locate = extra, locate
        self._positions: dict[int, int] | None = None

    def _find(self, version: object) -> int | None:
        if not isinstance(version, int) or version < 0:
            return None
        if self._positions is not None:
            return self._positions.get(version)
        if version in self._extra:
            return self._extra[version]
        at = self._locate(f"{self._prefix}{version}")
        return at if at is not None and self._table["object_type"][at].as_py() == TABLE_VERSION else None

    def __getitem__(self, version: int) -> tuple[str, str | None]:
        at = self._find(version)
        if at is None:
            raise KeyError(version)
        return self._table["object_id"][at].as_py(), self._table["metadata"][at].as_py()

    def __contains__(self, version: object) -> bool:
        return self._find(version) is not None

    def __iter__(self) -> Iterator[int]:
        if self._positions is None:  # threads may race here: at worst the dict is built twice
            numbers = zip(self._numbers.to_pylist(), self._rows.to_pylist(), strict=True)
            self._positions = {**dict(numbers), **self._extra}
        return iter(self._positions)

    def __len__(self) -> int:
        return len(self._numbers) + len(self._extra)


@dataclass(frozen=True)
class VersionLine:
    """The ``table_version`` rows of one table in one index: by version number; the versions whose row may
    still point at a staged manifest (``staged``, a superset the caller checks, ascending); ``latest`` and ``first``
    (0: none).
    """

    rows: Mapping[int, tuple[str, str | None]]
    staged: tuple[int, ...] = ()
    latest: int = 0
    first: int = 0  # the lowest version number (0: none)


NO_VERSIONS = VersionLine({})


def version_metadata(
    manifest_path: str,
    manifest_size: int | None,
    e_tag: str | None,
    naming_scheme: str,
    timestamp_millis: int,
    metadata: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The metadata of a ``table_version`` row (seed 003): where its manifest is (staged until the commit is
    finished, then final), what it was when committed, and the version's own metadata."""
    row: dict[str, Any] = {
        "manifest_path": manifest_path,
        "manifest_size": manifest_size,
        "e_tag": e_tag,
        "naming_scheme": naming_scheme,
        "timestamp_millis": timestamp_millis,
    }
    if metadata:
        row["metadata"] = dict(metadata)
    return row


def sql_string(value: str) -> str:
    """A SQL string literal for a Lance filter."""
    return "'" + value.replace("'", "''") + "'"


def rows_without(table: pa.Table, positions: list[int]) -> pa.Table:
    """``table`` without the rows at ``positions`` (ascending), as slices of it: a commit takes a row or two out
    of a table of many chunks, which a filter pays per chunk and column (~5 µs each; issue 42)."""
    bounds = zip([0, *(at + 1 for at in positions)], [*positions, table.num_rows], strict=True)
    return pa.concat_tables([table.slice(start, stop - start) for start, stop in bounds])


def rows_table(rows: list[ManifestRow]) -> pa.Table:
    """Rows as an Arrow table in :data:`SCHEMA`."""
    return pa.Table.from_pylist([row.to_arrow() for row in rows], schema=SCHEMA)


@dataclass(frozen=True)
class RowSelection:
    """Rows of ``__manifest`` described once: :meth:`sql`, the Lance filter a delete commits, and :meth:`mask`,
    the same rows in memory (tests/namespace/test_manifest_rows.py checks they agree). A row is selected when
    its id is one of ``ids``, starts with ``prefix`` and has type ``object_type`` (each if given); ``any_of``:
    the union of other selections instead. Strings compare literally (a name's ``%`` or ``_`` is no pattern)."""

    ids: tuple[str, ...] = ()
    prefix: str | None = None
    object_type: str | None = None
    any_of: tuple[RowSelection, ...] = ()

    @classmethod
    def table_and_versions(cls, table_oid: str) -> RowSelection:
        """The row of a table and every ``table_version`` row of it."""
        return cls(any_of=(cls((table_oid,), object_type=TABLE), cls.versions(table_oid)))

    @classmethod
    def versions(cls, table_oid: str, versions: tuple[int, ...] | None = None) -> RowSelection:
        """``table_version`` rows of a table: all of them, or those of ``versions``."""
        if versions is None:
            return cls(prefix=table_oid + DELIMITER, object_type=TABLE_VERSION)
        return cls.versions_of({table_oid: versions})

    @classmethod
    def versions_of(cls, versions: Mapping[str, Iterable[int]]) -> RowSelection:
        """``table_version`` rows of several tables: table object id -> version numbers."""
        return cls(
            tuple(f"{table_oid}{DELIMITER}{version}" for table_oid, numbers in versions.items() for version in numbers),
            object_type=TABLE_VERSION,
        )

    def sql(self) -> str:
        if self.any_of:
            return " OR ".join(f"({part.sql()})" for part in self.any_of)
        terms = []
        if len(self.ids) == 1:
            terms.append(f"object_id = {sql_string(self.ids[0])}")
        elif self.ids:
            terms.append(f"object_id IN ({', '.join(sql_string(oid) for oid in self.ids)})")
        if self.prefix is not None:
            terms.append(f"starts_with(object_id, {sql_string(self.prefix)})")
        if self.object_type is not None:
            terms.append(f"object_type = {sql_string(self.object_type)}")
        return " AND ".join(terms) or "true"

    def mask(self, table: pa.Table) -> Any:
        """A boolean mask over ``table`` (with ``object_id`` and ``object_type`` columns)."""
        if self.any_of:
            masks = [part.mask(table) for part in self.any_of]
            mask = masks[0]
            for other in masks[1:]:
                mask = pc.or_(mask, other)
            return mask
        ids = table["object_id"]
        mask = pc.is_valid(ids)
        if len(self.ids) == 1:
            mask = pc.equal(ids, self.ids[0])
        elif self.ids:
            mask = pc.is_in(ids, value_set=pa.array(self.ids, pa.string()))
        if self.prefix is not None:
            mask = pc.and_(mask, pc.starts_with(ids, self.prefix))
        if self.object_type is not None:
            mask = pc.and_(mask, pc.equal(table["object_type"], self.object_type))
        return mask
