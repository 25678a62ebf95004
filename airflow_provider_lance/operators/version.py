"""Operators acting on table versions: commit one staged version, commit many atomically, delete versions."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_provider_lance.hooks.lance import RUN_KEY_METADATA
from airflow_provider_lance.operators.base import LanceBaseOperator
from airflow_provider_lance.utils.identifiers import format_identifier, parse_identifier
from airflow_provider_lance.utils.openlineage import TouchedTable
from airflow_provider_lance.utils.retention import compute_retention_ranges

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context


def run_key_from_context(context: Context) -> str:
    """
    Return the idempotency key ``<dag_id>/<run_id>/<task_id>/<map_index>`` of the running task.

    :param context: The task context.
    """
    ti = context["ti"]
    map_index = getattr(ti, "map_index", -1)
    if map_index is None:
        map_index = -1
    return f"{ti.dag_id}/{ti.run_id}/{ti.task_id}/{map_index}"


class _LanceCommitOperator(LanceBaseOperator):
    """Shared logic of the version-committing operators: idempotency key and asset events."""

    def _prepare(self, entries: list[Any], run_key: str) -> list[Any]:
        """
        Return the entries as ``CreateTableVersionEntry`` models recording ``run_key`` in their metadata.

        :param entries: Entries (models or dicts).
        :param run_key: The task's idempotency key.
        """
        prepared = []
        for entry in entries:
            model = self.hook.to_version_entry(entry)
            metadata = dict(model.metadata or {})
            metadata[RUN_KEY_METADATA] = run_key
            prepared.append(model.model_copy(update={"metadata": metadata}))
        return prepared

    def _split_committed(self, entries: list[Any], run_key: str) -> tuple[list[Any], list[Any]]:
        """
        Return ``(already committed by this task, still to commit)``.

        :param entries: The prepared entries.
        :param run_key: The task's idempotency key.
        """
        import lance_namespace as ln

        done, todo = [], []
        for entry in entries:
            try:
                existing = self.hook.describe_table_version(entry.id, entry.version)
            except (ln.TableVersionNotFoundError, ln.TableNotFoundError):
                todo.append(entry)
                continue
            metadata = (existing.metadata if existing is not None else None) or {}
            if metadata.get(RUN_KEY_METADATA) == run_key:
                done.append(entry)
            else:
                todo.append(entry)  # let the engine report the conflict
        return done, todo

    def _finish(self, context: Context, committed: list[dict[str, Any]], already: bool) -> dict[str, Any]:
        """
        Record lineage and asset events of the committed versions and return the task's result.

        :param context: The task context.
        :param committed: ``{"table_id", "version"}`` of every version.
        :param already: Whether an earlier try of this task committed them.
        """
        self._touched([TouchedTable(c["table_id"], None, c["version"]) for c in committed], "OVERWRITE")
        self._emit_version_events(context, committed)
        return {"versions": committed, "already_committed": already}

    def _emit_version_events(self, context: Context, versions: list[dict[str, Any]]) -> None:
        """
        Attach ``extra={"version": N}`` to the asset events of the outlets matching committed tables.

        :param context: The task context.
        :param versions: ``{"table_id", "version"}`` of every committed version.
        """
        outlets = [o for o in (self.outlets or []) if hasattr(o, "uri")]
        if not outlets or not versions:
            return
        from airflow_provider_lance.assets.lance import lance_asset_uri

        root = self._root()
        events = context["outlet_events"]
        matched: set[int] = set()
        for committed in versions:
            table = committed["table_id"]
            dotted = ".".join(table)
            uri = lance_asset_uri(root, table) if root else None
            for index, asset in enumerate(outlets):
                if asset.uri == uri or getattr(asset, "name", None) == dotted:
                    events[asset].extra = {"version": committed["version"], "table_id": table}
                    matched.add(index)
        if not matched and len(outlets) == 1 and len(versions) == 1:
            events[outlets[0]].extra = {
                "version": versions[0]["version"],
                "table_id": versions[0]["table_id"],
            }


class LanceCreateTableVersionOperator(_LanceCommitOperator):
    """
    Commit a staged manifest as a new version of a table.

    The commit records ``airflow_run_key`` (``dag_id/run_id/task_id/map_index``) in the version
    metadata, so that a retried task recognises its own earlier commit and does not commit twice.

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
        ident = parse_identifier(self.table_id)
        name = format_identifier(ident)
        run_key = run_key_from_context(context)
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
        )
        committed = [{"table_id": ident, "version": entry.version}]
        done, _ = self._split_committed([entry], run_key)
        if done:
            self.log.info("Version %s of table %s was already committed by this task", entry.version, name)
            return self._finish(context, committed, already=True)
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


class LanceBatchCreateTableVersionsOperator(_LanceCommitOperator):
    """
    Atomically commit staged versions of several tables (``BatchCreateTableVersions``).

    Entries come from ``entries`` (a list of ``CreateTableVersionEntry`` dicts, or its JSON text,
    e.g. rendered from an upstream XCom) or from ``entries_file``, a JSON file holding
    ``{"entries": [...]}`` (what a Spark job can leave behind, since ``SparkSubmitOperator``
    returns nothing), read with :func:`airflow_provider_lance.staging.read_entries`. Each entry may
    name its table as ``id`` or ``table_id`` (list or dotted). Every entry's metadata records
    ``airflow_run_key``; a retry finding all its versions committed with that key returns the same
    result without committing again.

    :param entries: Version entries. (templated)
    :param entries_file: Path or URI of a JSON file with the entries. (templated)
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
        entries: Any = self.entries
        if isinstance(entries, str):
            entries = json.loads(entries) if entries.strip() else None
        if entries is None and self.entries_file:
            entries = self._read_entries_file(self.entries_file)
        if isinstance(entries, dict):
            entries = entries.get("entries")
        if not isinstance(entries, list) or not entries:
            raise AirflowFailException("No table version entries to commit")
        return entries

    def _read_entries_file(self, path: str) -> list[Any]:
        """
        Read the entries document at ``path`` (local path, ``file://`` or fsspec URI).

        :param path: Where the document is.
        """
        import lance_namespace as ln

        from airflow_provider_lance.staging import read_entries

        try:
            return read_entries(path, parse_entry=self.hook.to_version_entry)
        except FileNotFoundError:
            raise AirflowFailException(f"Entries file {path} does not exist") from None
        except json.JSONDecodeError as err:
            raise AirflowFailException(f"Entries file {path} is not valid JSON: {err}") from None
        except ln.InvalidInputError as err:
            raise AirflowFailException(f"Entries file {path} is not an entries document: {err}") from None

    def execute(self, context: Context) -> dict[str, Any]:
        run_key = run_key_from_context(context)
        try:
            entries = self._prepare(self._load_entries(), run_key)
        except (ValueError, TypeError) as err:
            raise AirflowFailException(f"Invalid table version entries: {err}") from None
        done, todo = self._split_committed(entries, run_key)
        if not todo:
            committed = [{"table_id": list(e.id), "version": e.version} for e in entries]
            self.log.info("All %d versions were already committed by this task", len(entries))
            return self._finish(context, committed, already=True)
        if done:
            self.log.warning(
                "%d of %d versions were already committed by this task; committing the %d others",
                len(done),
                len(entries),
                len(todo),
            )
        tables = ", ".join(format_identifier(e.id) for e in todo)
        with self._namespace_errors(f"Cannot commit table versions of {tables}"):
            response = self.hook.batch_create_table_versions(todo)
        versions = list(getattr(response, "versions", None) or [])
        committed = [{"table_id": list(e.id), "version": e.version} for e in done]
        for index, entry in enumerate(todo):
            number = versions[index].version if index < len(versions) else entry.version
            committed.append({"table_id": list(entry.id), "version": int(number)})
        for item in committed:
            self.log.info("Committed version %s of table %s", item["version"], format_identifier(item["table_id"]))
        return self._finish(context, committed, already=False)


class LanceBatchDeleteTableVersionsOperator(LanceBaseOperator):
    """
    Delete versions of a table, by explicit ranges or by a retention policy.

    With ``ranges`` the given ranges are deleted as they are (start inclusive, end exclusive).
    Otherwise ``keep_last`` and/or ``keep_newer_than`` define what to keep: a version survives
    when any rule keeps it, and the latest version is never deleted
    (:func:`airflow_provider_lance.utils.retention.compute_retention_ranges`).

    :param table_id: Table identifier, dotted string or list of parts. (templated)
    :param ranges: ``[{"start_version": a, "end_version": b}, ...]`` or pairs. (templated)
    :param keep_last: Keep the N newest versions. (templated)
    :param keep_newer_than: Keep versions younger than this timedelta or number of seconds. (templated)
    :param ignore_if_missing: Succeed when the table does not exist.
    :param lance_conn_id: Connection id of the namespace. (templated)
    """

    template_fields: Sequence[str] = ("table_id", "ranges", "keep_last", "keep_newer_than", "lance_conn_id")
    template_fields_renderers: ClassVar[dict[str, str]] = {"ranges": "json"}

    def __init__(
        self,
        *,
        table_id: str | list[str],
        ranges: list[Any] | None = None,
        keep_last: int | None = None,
        keep_newer_than: timedelta | float | None = None,
        ignore_if_missing: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if ranges is None and keep_last is None and keep_newer_than is None:
            raise ValueError("Give ranges, or a retention policy with keep_last and/or keep_newer_than")
        if ranges is not None and (keep_last is not None or keep_newer_than is not None):
            raise ValueError("ranges cannot be combined with keep_last / keep_newer_than")
        self.table_id = table_id
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
            ranges = json.loads(self.ranges) if isinstance(self.ranges, str) else self.ranges
            return [
                {"start_version": int(r["start_version"]), "end_version": int(r["end_version"])}
                if isinstance(r, dict)
                else {"start_version": int(r[0]), "end_version": int(r[1])}
                for r in ranges
            ]
        keep_last = None if self.keep_last in (None, "") else int(self.keep_last)
        if keep_last is not None and keep_last < 1:
            raise AirflowFailException("keep_last must be at least 1")
        versions = self.hook.list_table_versions(ident)
        ranges, deleted = compute_retention_ranges(versions, keep_last, self.keep_newer_than)
        self.log.info("Retention on %s: deleting versions %s", name, deleted)
        return ranges

    def execute(self, context: Context) -> dict[str, Any]:
        import lance_namespace as ln

        ident = parse_identifier(self.table_id)
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
