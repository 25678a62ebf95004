"""The table version operations of ``LanceHook`` (a mixin, to keep each module small)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from airflow_provider_lance.utils.identifiers import parse_identifier


class LanceTableVersionsMixin:
    """Table versions: commit one or many staged versions, list, describe, delete, sensor checks."""

    namespace: Any  # the implementation the connection names (``LanceHook.namespace``)
    _call: Callable[[str, Any], Any]
    _all_pages: Callable[[str, str, Any], list[Any]]

    def create_table_version(
        self,
        table_id: str | Sequence[str],
        version: int,
        manifest_path: str,
        manifest_size: int | None = None,
        e_tag: str | None = None,
        naming_scheme: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> Any:
        """
        Commit a staged manifest as version ``version`` of a table.

        :param table_id: Table identifier.
        :param version: Version number to commit (latest + 1).
        :param manifest_path: Path of the staged manifest.
        :param manifest_size: Size of the staged manifest in bytes.
        :param e_tag: ETag of the staged manifest.
        :param naming_scheme: Manifest naming scheme (``V1``/``V2``).
        :param metadata: Version metadata to record.
        """
        import lance_namespace as ln

        request = ln.CreateTableVersionRequest(
            id=parse_identifier(table_id),
            version=version,
            manifest_path=manifest_path,
            manifest_size=manifest_size,
            e_tag=e_tag,
            naming_scheme=naming_scheme,
            metadata=metadata,
        )
        return self._call("create_table_version", request)

    @staticmethod
    def to_version_entry(entry: Any) -> Any:
        """Coerce a dict (``table_id`` or ``id`` accepted) into a ``CreateTableVersionEntry``."""
        import lance_namespace as ln

        if isinstance(entry, ln.CreateTableVersionEntry):
            return entry
        if hasattr(entry, "model_dump"):
            entry = entry.model_dump(exclude_none=True)
        if not isinstance(entry, dict):
            raise ValueError(f"A table version entry must be a dict, got {type(entry).__name__}")
        data = {k: v for k, v in entry.items() if v is not None}
        if "table_id" in data:
            data["id"] = data.pop("table_id")
        data["id"] = parse_identifier(data.get("id"))
        if data.get("metadata") is not None:
            data["metadata"] = {str(k): str(v) for k, v in data["metadata"].items()}
        return ln.CreateTableVersionEntry.model_validate(data)

    def batch_create_table_versions(self, entries: Iterable[Any]) -> Any:
        """
        Atomically commit staged versions of several tables.

        :param entries: ``CreateTableVersionEntry`` objects or dicts.
        """
        import lance_namespace as ln

        request = ln.BatchCreateTableVersionsRequest(entries=[self.to_version_entry(e) for e in entries])
        return self._call("batch_create_table_versions", request)

    def list_table_versions(self, table_id: str | Sequence[str], descending: bool | None = None) -> list[Any]:
        """
        List every version of a table (all pages), ascending unless ``descending``.

        :param table_id: Table identifier.
        :param descending: Newest first.
        """
        import lance_namespace as ln

        ident = parse_identifier(table_id)
        return self._all_pages(
            "list_table_versions", "versions", ln.ListTableVersionsRequest(id=ident, descending=descending)
        )

    def describe_table_version(self, table_id: str | Sequence[str], version: int | None = None) -> Any:
        """
        Describe a table version (the latest when ``version`` is None).

        :return: a ``lance_namespace.TableVersion``; raises ``TableVersionNotFoundError`` when missing.
        """
        import lance_namespace as ln

        request = ln.DescribeTableVersionRequest(id=parse_identifier(table_id), version=version)
        return self._call("describe_table_version", request).version

    def get_latest_version(self, table_id: str | Sequence[str]) -> int | None:
        """Return the latest version number of a table, or None when it has no version yet."""
        import lance_namespace as ln

        try:
            described = self.describe_table_version(table_id)
        except ln.TableVersionNotFoundError:
            return None
        return None if described is None else int(described.version)

    def batch_delete_table_versions(
        self, table_id: str | Sequence[str], ranges: Iterable[Any], ignore_missing: bool = False
    ) -> int:
        """
        Delete version ranges of a table.

        :param table_id: Table identifier.
        :param ranges: ``{"start_version": a, "end_version": b}`` dicts or ``(a, b)`` pairs,
            start inclusive, end exclusive (``-1``: through the latest).
        :param ignore_missing: Skip versions that do not exist (sent as ``ignore_missing`` in the
            request context, since the request model has no such field).
        :return: the number of versions deleted.
        """
        return self.batch_delete_versions_of_tables([(table_id, ranges)], ignore_missing, one_call=False)[0]

    def batch_delete_versions_of_tables(
        self,
        deletions: Iterable[tuple[str | Sequence[str], Iterable[Any]]],
        ignore_missing: bool = False,
        one_call: bool = True,
    ) -> list[int]:
        """
        Delete version ranges of several tables: scheduled clean-up of a catalog.

        The provider's engine does it in one call: every table is checked before anything is deleted (a
        missing table or version deletes nothing), then every table's manifests go, then every table's
        ``table_version`` rows in one ``__manifest`` commit. Other implementations (the reference, REST
        servers) get one BatchDeleteTableVersions call per table, in order: a failing table stops the
        clean-up there, with the tables before it cleaned.

        :param deletions: ``(table id, ranges)`` pairs, ranges as :meth:`batch_delete_table_versions` takes.
        :param ignore_missing: Skip versions that do not exist.
        :param one_call: Use the engine's call for several tables when the namespace offers it.
        :return: the number of versions deleted in each table, in order.
        """
        import lance_namespace as ln

        requests = [
            ln.BatchDeleteTableVersionsRequest(
                id=parse_identifier(table_id),
                ranges=version_ranges(ranges),
                context={"ignore_missing": "true"} if ignore_missing else None,
            )
            for table_id, ranges in deletions
        ]
        in_one_call = getattr(self.namespace, "batch_delete_versions_of_tables", None) if one_call else None
        if in_one_call is not None:
            responses = in_one_call(requests)
        else:
            responses = [self._call("batch_delete_table_versions", request) for request in requests]
        return [int(response.deleted_count or 0) for response in responses]

    def check_table_version(
        self,
        table_id: str | Sequence[str],
        version: int | None = None,
        min_version: int | None = None,
        baseline: int | None = None,
    ) -> tuple[bool, int | None]:
        """
        Sensor check for table versions.

        :param table_id: Table identifier.
        :param version: Done when this exact version exists.
        :param min_version: Done when the latest version is at least this.
        :param baseline: Done when the latest version is newer than this.
        :return: ``(done, version found)``; a missing table or version means ``(False, None)``.
        """
        import lance_namespace as ln

        not_yet = (ln.TableNotFoundError, ln.TableVersionNotFoundError, ln.NamespaceNotFoundError)
        try:
            if version is not None:
                described = self.describe_table_version(table_id, int(version))
                return True, int(described.version)
            latest = self.get_latest_version(table_id)
        except not_yet:
            return False, None
        if latest is None:
            return False, None
        if min_version is not None and latest < int(min_version):
            return False, latest
        if baseline is not None and latest <= int(baseline):
            return False, latest
        return True, latest


def version_ranges(ranges: Iterable[Any]) -> list[dict[str, int]]:
    """
    Version ranges as BatchDeleteTableVersions takes them.

    :param ranges: ``{"start_version": a, "end_version": b}`` dicts or ``(a, b)`` pairs (a JSON string of
        them, as a rendered template gives, too).
    :return: ``{"start_version", "end_version"}`` dicts of integers.
    """
    if isinstance(ranges, str):
        ranges = json.loads(ranges)
    return [
        {"start_version": int(item["start_version"]), "end_version": int(item["end_version"])}
        if isinstance(item, dict)
        else {"start_version": int(item[0]), "end_version": int(item[1])}
        for item in ranges
    ]
