"""What the catalog page shows: a version's run, a history line, a table's summary, a diff, a run's commits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from airflow_provider_lance.staging.runs import RUN_ID_METADATA, RUN_KEY_METADATA


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
        run = (metadata or {}).get(RUN_ID_METADATA)
        if not run:
            return None
        dag_id, _, run_id = run.partition("/")
        key = (metadata or {}).get(RUN_KEY_METADATA, "")
        task = key[len(run) + 1 :].rsplit("/", 1)[0] if key.startswith(run + "/") else None
        return cls(run=run, dag_id=dag_id, run_id=run_id, task_id=task or None)


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
