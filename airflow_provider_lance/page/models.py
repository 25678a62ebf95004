"""What the catalog page shows: the values the templates render, as the catalog reader (catalog.py) and the
change feed (feed.py) fill them, and the Airflow run a version's metadata records. No reads here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from airflow_provider_lance.namespace.changes import Run as CommittingRun


@dataclass(frozen=True)
class Run:
    """The Airflow DAG run (and task) that committed a version, parsed from the version's metadata."""

    run: str
    dag_id: str
    run_id: str
    task_id: str | None

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, str] | None) -> Run | None:
        """Return the run recorded in version metadata, None when the version records none.

        :param metadata: the version's metadata.
        """
        found = CommittingRun.of(metadata)
        if found is None:
            return None
        return cls(f"{found.dag_id}/{found.run_id}", found.dag_id, found.run_id, found.task_id)


@dataclass
class ChangeLine:
    """One commit of the catalog's change feed, as one line (a multi-table batch is one line).

    :param timestamp: when it was committed.
    :param versions: each table whose versions it created, with those versions.
    :param others: its other events: (kind in words, object id, former id of a renamed table).
    :param run: the Airflow run that committed it.
    """

    timestamp: datetime
    versions: list[tuple[list[str], list[int]]]
    others: list[tuple[str, list[str], list[str] | None]]
    run: Run | None


@dataclass
class TableLine:
    """A table in its namespace's list: its latest version and what committed it (None: not known)."""

    name: str
    version: VersionRow | None = None


@dataclass
class VersionRow:
    """One line of a version history."""

    version: int
    timestamp: datetime | None
    tags: list[str] = field(default_factory=list)
    rows: int | None = None
    size: int | None = None
    operation: str | None = None
    run: Run | None = None
    state: str = "committed"


@dataclass
class TableSummary:
    """The table page: what the namespace and the latest version say about a table."""

    table_id: list[str]
    location: str | None
    version: int | None
    managed_versioning: bool | None
    schema: list[tuple[str, str, bool]] = field(default_factory=list)
    rows: int | None = None
    size: int | None = None
    tags: dict[str, int | None] | None = None
    branches: list[str] | None = None
    indices: list[str] | None = None
    declared_only: bool = False


@dataclass
class SchemaDiff:
    """Two versions side by side."""

    left: VersionRow
    right: VersionRow
    added: list[tuple[str, str]]
    removed: list[tuple[str, str]]
    changed: list[tuple[str, str, str]]
    unchanged: list[tuple[str, str]]


@dataclass
class RunCommit:
    """What one task of a run committed: one line per batch (all tables of one commit task)."""

    task_id: str | None
    timestamp: datetime | None
    versions: list[tuple[list[str], int]]
