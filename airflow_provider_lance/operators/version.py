"""Operators acting on table versions: commit one staged version, commit many atomically, delete versions."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_provider_lance.hooks.versions import version_ranges
from airflow_provider_lance.operators.base import LanceBaseOperator
from airflow_provider_lance.operators.commit import LanceCommitOperator, run_identity, run_key_from_context
from airflow_provider_lance.utils.identifiers import format_identifier
from airflow_provider_lance.utils.retention import compute_retention_ranges

if TYPE_CHECKING:
    from airflow.sdk import Context


class LanceCreateTableVersionOperator(LanceCommitOperator):
    """
    Commit a staged manifest as a new version of a table.

    The commit records the DAG run (``airflow_run_id``, ``dag_id/run_id``) in the version metadata, so
    that a retried task or a rerun of the cleared DAG run recognises its earlier commit.

    :param table_id: Table identifier, dotted string or list of parts. (templated)
    :param version: Version to commit (latest + 1). (templated)
    :param manifest_path: Path of the staged manifest. (templated)
    :param manifest_size: Size of the staged manifest in bytes. (templated)
    :param e_tag: ETag of the staged manifest. (templated)
    :param naming_scheme: Manifest naming scheme. (templated)
    :param metadata: Version metadata. (templated)
    :param lance_conn_id: Connection id of the namespace. (templated)
    """

    template_fields: Sequence[str] = (
        "table_id",
        "version",
        "manifest_path",
        "manifest_size",
        "e_tag",
        "naming_scheme",
        "metadata",
        "lance_conn_id",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"metadata": "json"}

    def __init__(
        self,
        *,
        table_id: str | list[str],
        version: int | str,
        manifest_path: str,
        manifest_size: int | str | None = None,
        e_tag: str | None = None,
        naming_scheme: str | None = None,
        metadata: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.table_id = table_id
        self.version = version
        self.manifest_path = manifest_path
        self.manifest_size = manifest_size
        self.e_tag = e_tag
        self.naming_scheme = naming_scheme
        self.metadata = metadata

    def execute(self, context: Context) -> dict[str, Any]:
        ident = self._ident(self.table_id, "table_id")
        name = format_identifier(ident)
        run_key, run_id = run_key_from_context(context), run_identity(context)
        (entry,) = self._prepare(
            [
                {
                    "id": ident,
                    "version": int(self.version),
                    "manifest_path": self.manifest_path,
                    "manifest_size": None if self.manifest_size in (None, "") else int(self.manifest_size),
                    "e_tag": self.e_tag or None,
                    "naming_scheme": self.naming_scheme or None,
                    "metadata": self.metadata,
                }
            ],
            run_key,
            run_id,
        )
        done, _ = self._split_committed([entry], run_id)
        if done:
            self.log.info("Version %s of table %s was already committed by this DAG run", done[0]["version"], name)
            return self._finish(context, done, already=True)
        with self._namespace_errors(f"Cannot commit version {entry.version} of table {name}"):
            response = self.hook.create_table_version(
                ident,
                entry.version,
                entry.manifest_path,
                manifest_size=entry.manifest_size,
                e_tag=entry.e_tag,
                naming_scheme=entry.naming_scheme,
                metadata=entry.metadata,
            )
        version = getattr(getattr(response, "version", None), "version", None) or entry.version
        committed = [{"table_id": ident, "version": int(version)}]
        self.log.info("Committed version %s of table %s", version, name)
        return self._finish(context, committed, already=False)


class LanceBatchCreateTableVersionsOperator(LanceCommitOperator):
    """
    Atomically commit staged versions of several tables (``BatchCreateTableVersions``).

    Entries come from ``entries`` (a list of ``CreateTableVersionEntry`` dicts, or its JSON text,
    e.g. rendered from an upstream XCom) or from ``entries_file``, a JSON file holding
    ``{"entries": [...]}`` (what a Spark job can leave behind, since ``SparkSubmitOperator``
    returns nothing), read with :func:`airflow_provider_lance.staging.read_entries`. Each entry may
    name its table as ``id`` or ``table_id`` (list or dotted). Every entry's metadata records the DAG run
    (``airflow_run_id``); a retry, or a rerun of the cleared DAG run, finds the tables it committed and
    does not commit them again.

    All or nothing: on a catalog without table version management a batch of several tables is refused
    unless ``allow_non_atomic=True``; every entry is checked (table exists, version is the next one)
    before anything is committed. A conflict with another run fails without retrying.

    :param entries: Version entries. (templated)
    :param entries_file: Path or URI of a JSON file with the entries. (templated)
    :param allow_non_atomic: Accept a non-atomic commit of several tables (see above).
    :param lance_conn_id: Connection id of the namespace. (templated)
    """

    template_fields: Sequence[str] = ("entries", "entries_file", "lance_conn_id")
    template_fields_renderers: ClassVar[dict[str, str]] = {"entries": "json"}

    def __init__(
        self,
        *,
        entries: list[dict[str, Any]] | str | None = None,
        entries_file: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if entries is None and entries_file is None:
            raise ValueError("Either entries or entries_file is required")
        self.entries = entries
        self.entries_file = entries_file

    def _load_entries(self) -> list[Any]:
        """Return the entries to commit, from ``entries`` or else ``entries_file``."""
        return self._staged_entries(self.entries, self.entries_file)

    def execute(self, context: Context) -> dict[str, Any]:
        run_key, run_id = run_key_from_context(context), run_identity(context)
        try:
            entries = self._prepare(self._load_entries(), run_key, run_id)
        except (ValueError, TypeError) as err:
            raise AirflowFailException(f"Invalid table version entries: {err}") from None
        done, todo = self._split_committed(entries, run_id)
        if not todo:
            self.log.info("All %d versions were already committed by this DAG run (%s)", len(entries), run_id)
            return self._finish(context, done, already=True)
        if done:
            self.log.warning(
                "%d of %d tables were already committed by this DAG run; committing the %d others",
                len(done),
                len(entries),
                len(todo),
            )
        self._check_entries(todo)
        tables = ", ".join(format_identifier(e.id) for e in todo)
        with self._namespace_errors(
            f"Cannot commit table versions of {tables} (all or none; a retry of this task finds a commit of this run)"
        ):
            response = self.hook.batch_create_table_versions(todo)
        versions = list(getattr(response, "versions", None) or [])
        committed = list(done)
        for index, entry in enumerate(todo):
            number = versions[index].version if index < len(versions) else entry.version
            committed.append({"table_id": list(entry.id), "version": int(number)})
        for item in committed:
            self.log.info("Committed version %s of table %s", item["version"], format_identifier(item["table_id"]))
        return self._finish(context, committed, already=False)


class LanceBatchDeleteTableVersionsOperator(LanceBaseOperator):
    """
    Delete versions of one table, of several tables or of every table of a namespace (scheduled clean-up),
    by explicit ranges or by a retention policy.

    With ``ranges`` the given ranges are deleted as they are (start inclusive, end exclusive), in every
    table. Otherwise ``keep_last`` and/or ``keep_newer_than`` define what to keep: a version survives
    when any rule keeps it, and the latest version is never deleted
    (:func:`airflow_provider_lance.utils.retention.compute_retention_ranges`).

    Several tables (``table_ids`` or ``namespace_id``) are cleaned in one call where the namespace offers it
    (the provider's engine: every table checked before anything is deleted, then every table's rows in one
    ``__manifest`` commit, all or nothing); other implementations get one call per table.

    :param table_id: Table identifier, dotted string or list of parts. (templated)
    :param table_ids: Several table identifiers, instead of ``table_id``. (templated)
    :param namespace_id: Every table of this namespace (listed when the task runs), instead of
        ``table_id``. (templated)
    :param ranges: ``[{"start_version": a, "end_version": b}, ...]`` or pairs. (templated)
    :param keep_last: Keep the N newest versions. (templated)
    :param keep_newer_than: Keep versions younger than this timedelta or number of seconds. (templated)
    :param ignore_if_missing: Succeed when a table does not exist (it is skipped).
    :param lance_conn_id: Connection id of the namespace. (templated)
    """

    template_fields: Sequence[str] = (
        "table_id",
        "table_ids",
        "namespace_id",
        "ranges",
        "keep_last",
        "keep_newer_than",
        "lance_conn_id",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"ranges": "json", "table_ids": "json"}

    def __init__(
        self,
        *,
        table_id: str | list[str] | None = None,
        table_ids: list[str | list[str]] | None = None,
        namespace_id: str | list[str] | None = None,
        ranges: list[Any] | None = None,
        keep_last: int | None = None,
        keep_newer_than: timedelta | float | None = None,
        ignore_if_missing: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if sum(value is not None for value in (table_id, table_ids, namespace_id)) != 1:
            raise ValueError("Give exactly one of table_id, table_ids and namespace_id")
        if ranges is None and keep_last is None and keep_newer_than is None:
            raise ValueError("Give ranges, or a retention policy with keep_last and/or keep_newer_than")
        if ranges is not None and (keep_last is not None or keep_newer_than is not None):
            raise ValueError("ranges cannot be combined with keep_last / keep_newer_than")
        self.table_id = table_id
        self.table_ids = table_ids
        self.namespace_id = namespace_id
        self.ranges = ranges
        self.keep_last = keep_last
        self.keep_newer_than = keep_newer_than
        self.ignore_if_missing = ignore_if_missing

    def _ranges_to_delete(self, ident: list[str], name: str) -> list[dict[str, int]]:
        """
        Return the ranges to delete: ``ranges`` as given, or what the retention policy deletes.

        :param ident: The table identifier.
        :param name: Its dotted name, for logs.
        """
        if self.ranges is not None:
            return version_ranges(self.ranges)
        keep_last = None if self.keep_last in (None, "") else int(self.keep_last)
        if keep_last is not None and keep_last < 1:
            raise AirflowFailException("keep_last must be at least 1")
        versions = self.hook.list_table_versions(ident)
        ranges, deleted = compute_retention_ranges(versions, keep_last, self.keep_newer_than)
        self.log.info("Retention on %s: deleting versions %s", name, deleted)
        return ranges

    def execute(self, context: Context) -> dict[str, Any]:
        if self.table_id is None:
            return self._clean_up_tables()
        import lance_namespace as ln

        ident = self._ident(self.table_id, "table_id")
        name = format_identifier(ident)
        ranges: list[dict[str, int]] = []
        deleted_count = 0
        with self._namespace_errors(
            f"Cannot delete versions of table {name}",
            expected=(ln.TableNotFoundError, ln.NamespaceNotFoundError),
            expected_message=f"Table {name} does not exist",
            tolerate=self.ignore_if_missing,
        ) as outcome:
            ranges = self._ranges_to_delete(ident, name)
            if ranges:
                deleted_count = self.hook.batch_delete_table_versions(ident, ranges)
        if outcome.error is not None:
            return {"table_id": ident, "deleted_count": 0, "ranges": []}
        if not ranges:
            self.log.info("Nothing to delete in table %s", name)
            return {"table_id": ident, "deleted_count": 0, "ranges": []}
        self.log.info("Deleted %s version(s) of table %s", deleted_count, name)
        return {"table_id": ident, "deleted_count": deleted_count, "ranges": ranges}

    def _clean_up_tables(self) -> dict[str, Any]:
        """Several tables: the ranges of each, then one clean-up of them all.

        :return: ``{"deleted_count": total, "tables": {dotted name: deleted count}}``, for XCom.
        """
        import lance_namespace as ln

        missing = (ln.TableNotFoundError, ln.NamespaceNotFoundError)
        if self.namespace_id is not None:
            namespace = self._ident(self.namespace_id, "namespace_id")
            with self._namespace_errors(f"Cannot list the tables of namespace {format_identifier(namespace)}"):
                tables = [[*namespace, name] for name in self.hook.list_tables(namespace)]
        else:
            table_ids = json.loads(self.table_ids) if isinstance(self.table_ids, str) else self.table_ids or []
            tables = [self._ident(table, "table_ids") for table in table_ids]
        deletions: list[tuple[list[str], list[dict[str, int]]]] = []
        for ident in tables:
            name = format_identifier(ident)
            with self._namespace_errors(
                f"Cannot delete versions of table {name}",
                expected=missing,
                expected_message=f"Table {name} does not exist",
                tolerate=self.ignore_if_missing,
            ) as outcome:
                if self.ignore_if_missing and self.ranges is not None and not self.hook.table_exists(ident):
                    raise ln.TableNotFoundError(f"Table {name} does not exist")
                ranges = self._ranges_to_delete(ident, name)
            if outcome.error is None and ranges:
                deletions.append((ident, ranges))
        counts: list[int] = []
        if deletions:
            with self._namespace_errors(f"Cannot delete versions of {len(deletions)} table(s)"):
                counts = self.hook.batch_delete_versions_of_tables(deletions)
        deleted = {format_identifier(ident): count for (ident, _), count in zip(deletions, counts, strict=True)}
        self.log.info("Deleted %s version(s) of %s table(s)", sum(counts), len(deleted))
        return {"deleted_count": sum(counts), "tables": deleted}
