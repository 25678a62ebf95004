"""What the catalog page shows, read from any ``lance_namespace.LanceNamespace`` (read-only calls only).

Namespaces, tables, versions and their run metadata come from the namespace's read operations (list, describe);
what a version holds (rows, size, operation, schema) and what Lance keeps in the dataset itself (tags, branches,
indices) come from the table's own Lance files, opened with pylance. Committed manifests never change, so what
is read from one is cached by (location, version). Storage options are used to open files and are never part of
anything returned here.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import lance
import lance_namespace as ln
from lance_namespace import LanceNamespace

from airflow_provider_lance.implementations import pages
from airflow_provider_lance.namespace.changes import RUN_KEY_METADATA
from airflow_provider_lance.namespace.changes import Run as CommittingRun
from airflow_provider_lance.namespace.identifiers import VERSIONS_DIR, parse_staged_manifest_name
from airflow_provider_lance.namespace.storage import Storage, normalize_root
from airflow_provider_lance.namespace.vended import VendedCredentials
from airflow_provider_lance.staging.runs import run_versions

log = logging.getLogger(__name__)

#: Tables listed per page of a namespace, versions per page of a history.
TABLES_PER_PAGE = 100
VERSIONS_PER_PAGE = 50
#: A child namespace's tables are counted up to this many (then shown as "10000+").
COUNT_LIMIT = 10_000
#: Search reads at most this many table names of a namespace and shows at most SEARCH_RESULTS matches.
SEARCH_SCAN_LIMIT = 100_000
SEARCH_RESULTS = 100
#: The run page looks at most this many tables when it is not told which tables the run committed.
RUN_SCAN_LIMIT = 500
#: The latest changes are read from this many ``__manifest`` versions back, and at most FEED_LINES shown.
FEED_VERSIONS = 200
FEED_LINES = 50
#: A page waiting for the next change (its refresh) looks this often (over REST the server long-polls instead).
FEED_POLL_SECONDS = 0.5
# Names per list call when the page reads many (counting, searching): one call for a namespace of 10,000 tables.
_LIST_PAGE = 10_001
# Committed manifests never change: what was read from them is kept (oldest entries dropped first).
_CACHE_SIZE = 4096
_SUMMARIES_SIZE = 64
_CACHE_LOCK = threading.Lock()
_OPERATIONS: dict[tuple[str, int], str | None] = {}
_SUMMARIES: dict[tuple[str, int], dict[int, tuple[int | None, int | None]]] = {}


# -- what the page shows ------------------------------------------------------------------------------------


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


_KIND_WORDS = {
    "namespace_created": "namespace created",
    "namespace_dropped": "namespace dropped",
    "table_declared": "table declared",
    "table_registered": "table registered",
    "table_created": "table created",
    "table_renamed": "table renamed",
    "table_deregistered": "table deregistered",
    "table_dropped": "table dropped",
    "version_deleted": "version deleted",
}


def _below(object_id: Sequence[str] | None, namespace_id: Sequence[str]) -> bool:
    return object_id is not None and list(object_id[: len(namespace_id)]) == list(namespace_id)


def _change_line(change: Any, namespace_id: Sequence[str], table_id: Sequence[str] | None) -> ChangeLine | None:
    """A change of the feed as one line, keeping the events at or below the namespace (of the table)."""
    versions: dict[tuple[str, ...], list[int]] = {}
    others: list[tuple[str, list[str], list[str] | None]] = []
    run = None
    for event in change.events:
        if table_id is not None and list(table_id) not in (event.id, event.previous_id):
            continue
        if not (_below(event.id, namespace_id) or _below(event.previous_id, namespace_id)):
            continue
        if event.kind == "version_created":
            versions.setdefault(tuple(event.id), []).append(event.version)
            run = run or Run.from_metadata(event.metadata)
        else:
            word = f"{_KIND_WORDS.get(event.kind, event.kind)} (v{event.version})" if event.version else None
            others.append((word or _KIND_WORDS.get(event.kind, event.kind), event.id, event.previous_id))
    if not versions and not others:
        return None
    stamp = datetime.fromisoformat(change.timestamp)
    return ChangeLine(stamp, [(list(t), v) for t, v in versions.items()], others, run)


def _timestamp(millis: int | None) -> datetime | None:
    return datetime.fromtimestamp(millis / 1000, tz=UTC) if millis else None


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def _schema_fields(schema: Any) -> list[tuple[str, str, bool]]:
    return [(f.name, str(f.type), bool(f.nullable)) for f in schema]


def _operation(dataset: lance.LanceDataset, version: int) -> str | None:
    """Return the operation that made a version (``Append``, ``Overwrite``, ``Restore`` ...), read once."""
    key = (dataset.uri, version)
    if key in _OPERATIONS:
        return _OPERATIONS.get(key)
    transaction = dataset.read_transaction(version)
    operation = type(transaction.operation).__name__ if transaction is not None else None
    _remember(_OPERATIONS, key, operation)
    return operation


def _remember(cache: dict[Any, Any], key: Any, value: Any, size: int = _CACHE_SIZE) -> None:
    """Keep ``value`` under ``key``, dropping the oldest entry of a full cache (requests run on many threads)."""
    with _CACHE_LOCK:
        if key not in cache and len(cache) >= size:
            cache.pop(next(iter(cache)))
        cache[key] = value


class CatalogReader:
    """Read-only questions the page asks a namespace.

    :param namespace: the namespace; only its read operations are called.
    """

    def __init__(self, namespace: LanceNamespace) -> None:
        self.namespace = namespace
        self._described: dict[tuple[str, ...], Any] = {}
        self._held: dict[tuple[str, ...], VendedCredentials] = {}
        self._latest: dict[tuple[str, ...], lance.LanceDataset] = {}

    # ------------------------------------------------------------------ namespaces

    def child_namespaces(self, namespace_id: Sequence[str]) -> list[str]:
        """Return the names of a namespace's child namespaces (every page).

        :param namespace_id: the namespace (``[]`` for the root).
        """
        request = ln.ListNamespacesRequest(id=list(namespace_id), limit=_LIST_PAGE)
        return sorted(name for page in pages(self.namespace.list_namespaces, request) for name in page.namespaces or [])

    def tables_page(
        self, namespace_id: Sequence[str], page_token: str | None, limit: int = TABLES_PER_PAGE
    ) -> tuple[list[str], str | None]:
        """Return one page of a namespace's table names and the token of the next page.

        :param namespace_id: the namespace.
        :param page_token: the token of this page (None for the first).
        :param limit: tables per page.
        """
        response = self.namespace.list_tables(
            ln.ListTablesRequest(id=list(namespace_id), page_token=page_token or None, limit=limit)
        )
        token = response.page_token if response.page_token != page_token else None
        return list(response.tables or []), token or None

    def _table_names(self, namespace_id: Sequence[str], limit: int) -> Iterator[str]:
        token = None
        seen = 0
        while seen < limit:
            names, token = self.tables_page(namespace_id, token, _LIST_PAGE)
            yield from names[: limit - seen]
            seen += len(names)
            if not token:
                return

    def count_tables(self, namespace_id: Sequence[str]) -> tuple[int, bool]:
        """Return ``(count, more)``: the number of tables, counted up to :data:`COUNT_LIMIT`.

        :param namespace_id: the namespace.
        """
        count = sum(1 for _ in self._table_names(namespace_id, COUNT_LIMIT + 1))
        return min(count, COUNT_LIMIT), count > COUNT_LIMIT

    def search(self, namespace_id: Sequence[str], query: str) -> list[str]:
        """Return the names of a namespace's tables containing ``query``, ignoring case (the first
        :data:`SEARCH_RESULTS`).

        :param namespace_id: the namespace.
        :param query: the text to look for.
        """
        needle = query.casefold()
        found = []
        for name in self._table_names(namespace_id, SEARCH_SCAN_LIMIT):
            if needle in name.casefold():
                found.append(name)
                if len(found) >= SEARCH_RESULTS:
                    break
        return found

    # ------------------------------------------------------------------ the change feed

    def latest_changes(
        self, namespace_id: Sequence[str], table_id: Sequence[str] | None = None
    ) -> tuple[list[ChangeLine], str | None]:
        """Return the latest changes at or below a namespace (or of one table), newest first, and the feed's cursor
        (None when the namespace has no change feed: another implementation, or no ``__manifest``).

        :param namespace_id: the namespace (``[]``: the whole catalog).
        :param table_id: only the changes of this table.
        """
        changes = getattr(self.namespace, "changes", None)
        if changes is None:
            return [], None
        try:
            page = changes(back=FEED_VERSIONS, limit=FEED_VERSIONS)
        except (ln.LanceNamespaceError, AttributeError) as error:  # no feed here (another server, no manifest)
            log.debug("No change feed: %s", error)
            return [], None
        lines = []
        for change in reversed(page.changes):
            line = _change_line(change, namespace_id, table_id)
            if line is not None:
                lines.append(line)
        return lines[:FEED_LINES], page.cursor

    def wait_for_change(self, namespace_id: Sequence[str], since: str, seconds: float) -> None:
        """Return once a change at or below the namespace lands after ``since`` (or ``seconds`` pass): the
        page's refresh. Over our REST server the server long-polls; elsewhere the feed is polled.

        :param namespace_id: the namespace.
        :param since: the cursor the page was rendered at.
        :param seconds: the longest wait.
        """
        changes = self.namespace.changes
        deadline = time.monotonic() + seconds
        long_poll = "wait" in inspect.signature(changes).parameters
        while (left := deadline - time.monotonic()) > 0:
            try:
                page = changes(since=since, wait=left) if long_poll else changes(since=since)
            except ln.LanceNamespaceError:  # a cursor too old or not the feed's: render the page anew
                return
            if any(_change_line(change, namespace_id, None) for change in page.changes):
                return
            since = page.cursor
            if not long_poll and not page.more:
                time.sleep(min(FEED_POLL_SECONDS, max(left, 0)))

    def table_lines(self, namespace_id: Sequence[str], names: Sequence[str]) -> list[TableLine]:
        """Return each table of a namespace page with its latest version's line (rows, commit time, run).

        :param namespace_id: the namespace.
        :param names: the tables' names.
        """
        lines = []
        for name in names:
            line = TableLine(name)
            table_id = [*namespace_id, name]
            try:
                number = self._describe(table_id).version
                if number is not None:
                    line.version = self._version_line(table_id, int(number))
            except (ln.LanceNamespaceError, OSError, ValueError):  # not readable now: the name alone
                pass
            lines.append(line)
        return lines

    def _version_line(self, table_id: list[str], number: int) -> VersionRow:
        """A version's commit time, run and rows, without what only its history shows (operation, size): the
        rows from the summary in its manifest (one read)."""
        version = self.namespace.describe_table_version(
            ln.DescribeTableVersionRequest(id=table_id, version=number)
        ).version
        summary = self.dataset(table_id, number).get_version().get("metadata") or {}
        rows = int(summary["total_rows"]) if "total_rows" in summary else None
        return VersionRow(
            number, _timestamp(version.timestamp_millis), rows=rows, run=Run.from_metadata(version.metadata)
        )

    # ------------------------------------------------------------------ tables

    def _describe(self, table_id: Sequence[str]) -> Any:
        """Describe a table once per reader (a reader serves one request, so one page sees one state)."""
        key = tuple(table_id)
        if key not in self._described:
            self._described[key] = self.namespace.describe_table(ln.DescribeTableRequest(id=list(table_id)))
        return self._described[key]

    def _credentials(self, table_id: Sequence[str]) -> VendedCredentials:
        """The storage options to open a table's files with (used, never shown): the engine's own options (its
        credentials) under what the namespace answers for the table (vended credentials, renewed when they
        expire, or only the endpoint and region without vending)."""
        key = tuple(table_id)
        if key not in self._held:
            config = getattr(self.namespace, "config", None)
            answered = _field(self._describe(table_id), "storage_options")
            base = getattr(config, "storage_options", None)
            self._held[key] = VendedCredentials(self.namespace, table_id, answered, base=base)
        return self._held[key]

    def dataset(self, table_id: Sequence[str], version: int | None = None) -> lance.LanceDataset:
        """Open a table's Lance dataset at ``version``; the latest is opened once per reader.

        :param table_id: the table.
        :param version: the version (the latest by default).
        """
        key = tuple(table_id)
        if version is None and key in self._latest:
            return self._latest[key]
        location = self._describe(table_id).location
        held = self._credentials(table_id)
        dataset = lance.LanceDataset(
            location,
            version,
            storage_options=held.options() or None,
            namespace_client=held.namespace(location),
            table_id=list(table_id),
        )
        if version is None:
            self._latest[key] = dataset
        return dataset

    def table(self, table_id: Sequence[str]) -> TableSummary:
        """Describe a table for its page: what the namespace says, then what its latest version holds (schema,
        rows, size; tags, branches and indices, which Lance keeps in the dataset itself).

        :param table_id: the table.
        """
        described = self._describe(table_id)
        summary = TableSummary(
            table_id=list(table_id),
            location=described.location,
            version=described.version,
            managed_versioning=described.managed_versioning,
            declared_only=bool(described.is_only_declared) or described.version is None,
        )
        if described.version is None and not described.is_only_declared and described.managed_versioning is False:
            # a metadata-only catalog (Glue, Hive) never says which version a table is at: its data does
            try:
                summary.version = self.dataset(table_id).version
                summary.declared_only = False
            except (OSError, ValueError):  # no dataset at the location yet: declared only
                pass
        if summary.declared_only:
            return summary
        dataset = self.dataset(table_id)
        summary.schema = _schema_fields(dataset.schema)
        summary.rows, summary.size = _totals(dataset, dataset.version)
        summary.tags = self.tags(table_id)
        summary.branches = sorted(dataset.branches.list())
        summary.indices = [
            f"{index.name} ({', '.join(index.field_names)})" if index.field_names else index.name
            for index in dataset.describe_indices()
        ]
        return summary

    def tags(self, table_id: Sequence[str]) -> dict[str, int | None]:
        """Return a table's tags with the versions they name.

        :param table_id: the table.
        """
        listed = self.dataset(table_id).tags.list()
        return {name: contents.get("version") for name, contents in sorted(listed.items())}

    # ------------------------------------------------------------------ versions

    def history(
        self, table_id: Sequence[str], page_token: str | None, limit: int = VERSIONS_PER_PAGE
    ) -> tuple[list[VersionRow], str | None]:
        """Return one page of a table's versions, newest first (with staged ones on the first page).

        :param table_id: the table.
        :param page_token: the token of this page (None for the first).
        :param limit: versions per page.
        """
        described = self._describe(table_id)
        dataset = self.dataset(table_id)
        try:
            response = self.namespace.list_table_versions(
                ln.ListTableVersionsRequest(
                    id=list(table_id), descending=True, page_token=page_token or None, limit=limit
                )
            )
        except ln.UnsupportedOperationError:  # a metadata-only catalog (Glue, Hive): the table's own versions
            versions, token = _dataset_versions(dataset, limit), None
        else:
            token = response.page_token if response.page_token != page_token else None
            versions = sorted(response.versions or [], key=lambda v: -int(v.version))
        summaries = _summaries(dataset)
        tagged: dict[int | None, list[str]] = {}
        for name, number in self.tags(table_id).items():
            tagged.setdefault(number, []).append(name)
        rows = []
        for version in versions:
            number = int(version.version)
            row = VersionRow(number, _timestamp(version.timestamp_millis), run=Run.from_metadata(version.metadata))
            row.tags = tagged.get(number, [])
            row.rows, row.size = summaries.get(number, (None, None))
            row.operation = _operation(dataset, number) if number <= dataset.version else None
            rows.append(row)
        if not page_token:
            latest = max((r.version for r in rows), default=0)
            staged = self.staged(described.location, self._credentials(table_id).options(), latest)
            rows[:0] = [VersionRow(v, None, state="staged") for v in staged]
        return rows, token or None

    def staged(self, location: str, options: dict[str, str] | None, latest: int) -> list[int]:
        """Return the versions staged in a table (written manifests) above its latest committed version, newest
        first: what a commit has not picked up (yet).

        :param location: the table's location.
        :param options: storage options.
        :param latest: the latest committed version.
        """
        try:
            names = Storage(normalize_root(location), dict(options or {})).list_names(VERSIONS_DIR)
        except (ln.LanceNamespaceError, OSError, ImportError, ValueError) as err:  # a store the engine cannot list
            log.warning("Cannot list the staged versions of %s: %s", location, type(err).__name__)
            return []
        parsed = (parse_staged_manifest_name(name) for name in names)
        staged = {found[0] for found in parsed if found is not None and found[0] > latest}
        return sorted(staged, reverse=True)

    def growth(self, table_id: Sequence[str]) -> list[tuple[int, int | None, int | None]]:
        """Return ``(version, rows, size)`` of every version of a table (for the chart).

        :param table_id: the table.
        """
        summaries = _summaries(self.dataset(table_id))
        return [(version, *summaries[version]) for version in sorted(summaries)]

    def version(self, table_id: Sequence[str], number: int) -> VersionRow:
        """Return one version's line.

        :param table_id: the table.
        :param number: the version.
        """
        response = self.namespace.describe_table_version(
            ln.DescribeTableVersionRequest(id=list(table_id), version=number)
        )
        version = response.version
        dataset = self.dataset(table_id, number)
        row = VersionRow(number, _timestamp(version.timestamp_millis), run=Run.from_metadata(version.metadata))
        row.rows, row.size = _totals(dataset, number)
        row.operation = _operation(dataset, number)
        return row

    def diff(self, table_id: Sequence[str], left: int, right: int) -> SchemaDiff:
        """Compare two versions of a table: schema changes and row counts.

        :param table_id: the table.
        :param left: the older version.
        :param right: the newer version.
        """
        rows = self.version(table_id, left), self.version(table_id, right)  # a missing version: not found
        old, new = (
            {name: kind for name, kind, _ in _schema_fields(self.dataset(table_id, v).schema)} for v in (left, right)
        )
        return SchemaDiff(
            left=rows[0],
            right=rows[1],
            added=[(n, k) for n, k in new.items() if n not in old],
            removed=[(n, k) for n, k in old.items() if n not in new],
            changed=[(n, old[n], k) for n, k in new.items() if n in old and old[n] != k],
            unchanged=[(n, k) for n, k in new.items() if old.get(n) == k],
        )

    # ------------------------------------------------------------------ runs

    def run_commits(
        self,
        run: str,
        tables: Sequence[Sequence[str]] | None = None,
        namespace_id: Sequence[str] = (),
    ) -> tuple[list[RunCommit], bool]:
        """Return what DAG run ``run`` (``<dag_id>/<run_id>``) committed, one line per committing task, and
        whether only part of the namespace was searched.

        :param run: the run identity recorded in version metadata.
        :param tables: the tables to look at (the ones a task result names); by default the tables of
            ``namespace_id`` and its children, up to :data:`RUN_SCAN_LIMIT`.
        :param namespace_id: where to search when ``tables`` is not given (the root by default).
        """
        if tables:
            candidates, partial = [list(t) for t in tables], False
        else:
            candidates, partial = self._all_tables(list(namespace_id), RUN_SCAN_LIMIT)
        lines: dict[str | None, RunCommit] = {}
        for table_id in candidates:
            for version in run_versions(self.namespace.list_table_versions, table_id, run):
                key = (version.metadata or {}).get(RUN_KEY_METADATA)
                found = Run.from_metadata(version.metadata)
                line = lines.setdefault(key, RunCommit(found.task_id if found else None, None, []))
                line.versions.append((table_id, int(version.version)))
                stamp = _timestamp(version.timestamp_millis)
                if stamp and (line.timestamp is None or stamp > line.timestamp):
                    line.timestamp = stamp
        ordered = sorted(lines.values(), key=lambda c: c.timestamp or datetime.min.replace(tzinfo=UTC))
        return ordered, partial

    def _all_tables(self, start: list[str], limit: int) -> tuple[list[list[str]], bool]:
        found: list[list[str]] = []
        pending: list[list[str]] = [start]
        while pending and len(found) < limit:
            namespace_id = pending.pop()
            found.extend([*namespace_id, name] for name in self._table_names(namespace_id, limit - len(found)))
            pending.extend([*namespace_id, child] for child in self.child_namespaces(namespace_id))
        return found[:limit], bool(pending) or len(found) >= limit


def _dataset_versions(dataset: lance.LanceDataset, limit: int) -> list[ln.TableVersion]:
    """The newest ``limit`` versions a dataset lists itself, as the namespace would list them."""
    newest = sorted(dataset.versions(), key=lambda entry: -int(entry["version"]))[:limit]
    return [
        ln.TableVersion(
            version=int(entry["version"]),
            manifest_path=f"{dataset.uri}/_versions",
            timestamp_millis=int(entry["timestamp"].timestamp() * 1000),
        )
        for entry in newest
    ]


def _totals(dataset: lance.LanceDataset, version: int) -> tuple[int | None, int | None]:
    """Return ``(rows, size in bytes)`` of one version (from its manifest's summary, else its fragments)."""
    summary = _summaries(dataset).get(version)
    if summary and summary[0] is not None:
        return summary
    checked_out = dataset if dataset.version == version else dataset.checkout_version(version)
    return checked_out.count_rows(), None


def _summaries(dataset: lance.LanceDataset) -> dict[int, tuple[int | None, int | None]]:
    """Return ``{version: (rows, size)}`` of every version of a dataset (from each manifest's summary), read once
    per (location, latest version): a new version reads them again."""
    key = (dataset.uri, dataset.latest_version)
    cached = _SUMMARIES.get(key)
    if cached is not None:
        return cached
    result = {}
    for entry in dataset.versions():
        metadata = entry.get("metadata") or {}
        rows, size = metadata.get("total_rows"), metadata.get("total_files_size")
        result[int(entry["version"])] = (int(rows) if rows else None, int(size) if size else None)
    _remember(_SUMMARIES, key, result, _SUMMARIES_SIZE)
    return result
