"""What the catalog page reads from any ``lance_namespace.LanceNamespace`` (read-only calls only), per request.

Namespaces, tables, versions and their run metadata come from the namespace's read operations (list, describe);
what a version holds (rows, size, operation, schema) and what Lance keeps in the dataset itself (tags, branches,
indices) come from the table's own Lance files, opened with pylance (lance_files.py reads and caches what a
manifest says). The values returned are models.py's; the change feed is feed.py's. Storage options are used to
open files and are never part of anything returned here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import lance
import lance_namespace as ln
from lance_namespace import LanceNamespace

from airflow_provider_lance.implementations import pages
from airflow_provider_lance.namespace.changes import RUN_KEY_METADATA
from airflow_provider_lance.namespace.identifiers import VERSIONS_DIR, parse_staged_manifest_name
from airflow_provider_lance.namespace.storage import Storage, normalize_root
from airflow_provider_lance.namespace.vended import VendedCredentials
from airflow_provider_lance.page import lance_files
from airflow_provider_lance.page.models import Run, RunCommit, SchemaDiff, TableLine, TableSummary, VersionRow
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
# Names per list call when the page reads many (counting, searching): one call for a namespace of 10,000 tables.
_LIST_PAGE = 10_001


def _timestamp(millis: int | None) -> datetime | None:
    return datetime.fromtimestamp(millis / 1000, tz=UTC) if millis else None


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


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
        summary.schema = lance_files.schema_fields(dataset.schema)
        summary.rows, summary.size = lance_files.totals(dataset, dataset.version)
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
            versions, token = lance_files.dataset_versions(dataset, limit), None
        else:
            token = response.page_token if response.page_token != page_token else None
            versions = sorted(response.versions or [], key=lambda v: -int(v.version))
        summaries = lance_files.summaries(dataset)
        tagged: dict[int | None, list[str]] = {}
        for name, number in self.tags(table_id).items():
            tagged.setdefault(number, []).append(name)
        rows = []
        for version in versions:
            number = int(version.version)
            row = VersionRow(number, _timestamp(version.timestamp_millis), run=Run.from_metadata(version.metadata))
            row.tags = tagged.get(number, [])
            row.rows, row.size = summaries.get(number, (None, None))
            row.operation = lance_files.operation(dataset, number) if number <= dataset.version else None
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
        summaries = lance_files.summaries(self.dataset(table_id))
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
        row.rows, row.size = lance_files.totals(dataset, number)
        row.operation = lance_files.operation(dataset, number)
        return row

    def diff(self, table_id: Sequence[str], left: int, right: int) -> SchemaDiff:
        """Compare two versions of a table: schema changes and row counts.

        :param table_id: the table.
        :param left: the older version.
        :param right: the newer version.
        """
        rows = self.version(table_id, left), self.version(table_id, right)  # a missing version: not found
        old, new = (
            {name: kind for name, kind, _ in lance_files.schema_fields(self.dataset(table_id, v).schema)}
            for v in (left, right)
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
