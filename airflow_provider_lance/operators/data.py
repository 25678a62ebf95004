"""Operators on table data: check rows (audit), tag versions, roll back a DAG run, optimize tables."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_provider_lance.operators.base import LanceBaseOperator
from airflow_provider_lance.operators.links import LanceCatalogLink
from airflow_provider_lance.utils.identifiers import format_identifier

if TYPE_CHECKING:
    from airflow.sdk import Context


class _LanceTablesOperator(LanceBaseOperator):
    """Shared parsing of a ``tables`` parameter (dotted names or lists of parts)."""

    def _tables(self, tables: Sequence[Any]) -> list[list[str]]:
        """
        Parse every table identifier; a malformed one fails the task naming the parameter.

        :param tables: The ``tables`` parameter.
        """
        if isinstance(tables, str):
            tables = [tables]
        return [self._ident(table, "tables") for table in tables]


class LanceTableCheckOperator(_LanceTablesOperator):
    """
    Check tables: the audit step of write-audit-publish.

    For every table: at least ``min_rows`` rows, and no row matching any of ``forbidden`` (SQL predicates
    such as ``"score < 0"`` or ``"id IS NULL"``). The task fails (no retry) naming each failed check.
    With ``tables`` the committed tables are checked (``CountTableRows`` through the namespace); with
    ``entries``/``entries_file`` the **staged, not yet committed** versions are (staged with ``audit=True``,
    e.g. ``LanceSparkStagingOperator(audit=True)``): stage → check → commit, nothing visible before the check.

    :param tables: Tables to check (dotted names). (templated)
    :param entries: Staged entries to check instead (list, ``{"entries": [...]}`` or its JSON). (templated)
    :param entries_file: Path or URI of an entries document to check instead. (templated)
    :param min_rows: Fewest rows each table must have. (templated)
    :param forbidden: SQL predicates no row may match. (templated)
    :param lance_conn_id: Connection id of the namespace. (templated)
    """

    template_fields: Sequence[str] = ("tables", "entries", "entries_file", "min_rows", "forbidden", "lance_conn_id")

    def __init__(
        self,
        *,
        tables: Sequence[Any] = (),
        entries: Any = None,
        entries_file: str | None = None,
        min_rows: int | str = 1,
        forbidden: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not tables and entries is None and entries_file is None:
            raise ValueError("Give tables to check, or the staged entries / entries_file")
        self.tables = tables
        self.entries = entries
        self.entries_file = entries_file
        self.min_rows = min_rows
        self.forbidden = forbidden

    def _counters(self) -> list[tuple[str, Callable[[str | None], int]]]:
        """(table name, count of rows matching a predicate) for every table or staged entry checked."""
        if self.entries is None and self.entries_file is None:
            return [
                (format_identifier(ident), functools.partial(self.hook.count_table_rows, ident))
                for ident in self._tables(self.tables)
            ]
        entries = [self.hook.to_version_entry(e) for e in self._staged_entries(self.entries, self.entries_file)]
        return [
            (f"{format_identifier(e.id)} (staged v{e.version})", functools.partial(self.hook.count_staged_rows, e))
            for e in entries
        ]

    def execute(self, context: Context) -> dict[str, Any]:
        failures, result = [], {}
        for name, count in self._counters():
            with self._namespace_errors(f"Cannot check table {name}"):
                rows = count(None)
                matches = {p: count(p) for p in self.forbidden}
            result[name] = {"rows": rows, "forbidden": matches}
            if rows < int(self.min_rows):
                failures.append(f"{name} has {rows} rows, fewer than min_rows={self.min_rows}")
            failures += [f"{name} has {n} rows matching {p!r}" for p, n in matches.items() if n]
            self.log.info("Table %s: %s rows, forbidden matches %s", name, rows, matches)
        if failures:
            raise AirflowFailException("Data check failed: " + "; ".join(failures))
        return result


class LanceTagTableVersionsOperator(_LanceTablesOperator):
    """
    Tag the latest version of every table (a tag that exists is moved), e.g. ``audited`` or ``release-2026-11``.

    :param tables: Tables to tag. (templated)
    :param tag: The tag name. (templated)
    :param lance_conn_id: Connection id of the namespace. (templated)
    """

    template_fields: Sequence[str] = ("tables", "tag", "lance_conn_id")
    operator_extra_links = (LanceCatalogLink(),)

    def __init__(self, *, tables: Sequence[Any], tag: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tables = tables
        self.tag = tag

    def execute(self, context: Context) -> dict[str, Any]:
        import lance_namespace as ln

        tagged = []
        for ident in self._tables(self.tables):
            name = format_identifier(ident)
            with self._namespace_errors(f"Cannot tag table {name}"):
                version = self.hook.get_latest_version(ident)
                if version is None:
                    raise AirflowFailException(f"Cannot tag table {name}: it has no version yet")
                try:
                    self.hook.create_table_tag(ident, self.tag, version)
                except ln.TableTagAlreadyExistsError:
                    self.hook.update_table_tag(ident, self.tag, version)
            self.log.info("Tagged version %s of table %s as %r", version, name, self.tag)
            tagged.append({"table_id": ident, "version": version, "tag": self.tag})
        return {"tagged": tagged}


class LanceRollbackRunOperator(_LanceTablesOperator):
    """
    Roll back what a DAG run committed: restore each table to its version before the run.

    Each table's version committed by ``run_id`` (its ``airflow_run_id`` metadata) is found; the version
    before it is restored, which commits a new version with the old content (history is kept). With table
    version management every table is restored in **one atomic step** (a Restore per table is staged, then
    all commit with one ``batch_create_table_versions``); without it each table's restore is atomic on its
    own. Every table is checked first, and a table written since the run (or already rolled back) is left
    alone with a warning. Tables the run did not commit are skipped.
    Use it with ``trigger_rule="one_failed"`` after an audit.

    :param tables: Tables the run may have committed. (templated)
    :param run_id: The run to roll back, ``<dag_id>/<run_id>`` (default: this DAG run). (templated)
    :param lance_conn_id: Connection id of the namespace. (templated)
    """

    template_fields: Sequence[str] = ("tables", "run_id", "lance_conn_id")
    operator_extra_links = (LanceCatalogLink(),)

    def __init__(self, *, tables: Sequence[Any], run_id: str = "{{ dag.dag_id }}/{{ run_id }}", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tables = tables
        self.run_id = run_id

    def execute(self, context: Context) -> dict[str, Any]:
        plan = []
        for ident in self._tables(self.tables):
            name = format_identifier(ident)
            with self._namespace_errors(f"Cannot roll back table {name}"):
                committed = self.hook.find_run_version(ident, self.run_id)
                latest = self.hook.get_latest_version(ident)
            if committed is None:
                self.log.info("Run %s committed nothing to %s", self.run_id, name)
            elif latest != committed.version:
                self.log.warning(
                    "%s changed since run %s (version %s is now %s): left alone",
                    name,
                    self.run_id,
                    committed.version,
                    latest,
                )
            elif committed.version <= 1:
                self.log.warning("%s was created by run %s: nothing to restore (drop it instead)", name, self.run_id)
            else:
                plan.append((ident, name, int(committed.version) - 1))
        names = ", ".join(name for _, name, _ in plan)
        with self._namespace_errors(f"Cannot restore tables {names}"):
            atomic = self.hook.restore_tables([(ident, version) for ident, _, version in plan])
        restored = []
        for ident, name, version in plan:
            with self._namespace_errors(f"Cannot read the latest version of table {name}"):
                latest = self.hook.get_latest_version(ident)
            self.log.info("Restored %s to version %s (as version %s)", name, version, latest)
            restored.append({"table_id": ident, "restored_version": version, "version": latest})
        self._emit_table_events(context, restored)
        return {"run_id": self.run_id, "restored": restored, "atomic": atomic}


class LanceOptimizeTableOperator(_LanceTablesOperator):
    """
    Table maintenance with pylance: compact small files, optimize indices, clean up old versions.

    :param tables: Tables to maintain. (templated)
    :param compact: Compact files.
    :param optimize_indices: Add new data to the indices.
    :param cleanup_older_than: Delete files of versions older than this (None: keep them).
    :param lance_conn_id: Connection id of the namespace. (templated)
    """

    template_fields: Sequence[str] = ("tables", "lance_conn_id")
    template_fields_renderers: ClassVar[dict[str, str]] = {"tables": "json"}

    def __init__(
        self,
        *,
        tables: Sequence[Any],
        compact: bool = True,
        optimize_indices: bool = True,
        cleanup_older_than: timedelta | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.tables = tables
        self.compact = compact
        self.optimize_indices = optimize_indices
        self.cleanup_older_than = cleanup_older_than

    def execute(self, context: Context) -> dict[str, Any]:
        import lance_namespace as ln

        results = []
        for ident in self._tables(self.tables):
            name = format_identifier(ident)
            with self._namespace_errors(
                f"Cannot optimize table {name}",
                expected=(ln.TableNotFoundError, ln.NamespaceNotFoundError),
                expected_message=f"Table {name} does not exist",
                tolerate=True,
            ):
                results.append(
                    self.hook.optimize_table(
                        ident,
                        compact=self.compact,
                        optimize_indices=self.optimize_indices,
                        cleanup_older_than=self.cleanup_older_than,
                    )
                )
        self._emit_table_events(context, [{"table_id": r["table_id"], "version": r["version"]} for r in results])
        return {"tables": results}
