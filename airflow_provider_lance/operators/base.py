"""The shared base of the Lance operators: the hook, one mapping of namespace errors, OpenLineage."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException
from airflow.sdk import BaseOperator

from airflow_provider_lance.hooks.errors import PERMANENT_ERRORS, describe_error
from airflow_provider_lance.hooks.lance import LanceHook
from airflow_provider_lance.utils.identifiers import parse_identifier
from airflow_provider_lance.utils.openlineage import TouchedTable, operator_lineage

if TYPE_CHECKING:
    from airflow.sdk import Context

_IF_EXISTS = ("ignore", "fail")


def check_if_exists(value: str) -> str:
    """
    Return ``value`` when it is a valid ``if_exists`` choice.

    :param value: ``ignore`` or ``fail``.
    :raises ValueError: for anything else.
    """
    if value not in _IF_EXISTS:
        raise ValueError(f"if_exists must be one of {_IF_EXISTS}, got {value!r}")
    return value


@dataclass
class NamespaceOutcome:
    """
    What a ``_namespace_errors`` block ended with.

    :param error: The expected error that was tolerated (the block stopped there), or None.
    """

    error: Exception | None = None


class LanceBaseOperator(BaseOperator):
    """
    Common base: connection handling, namespace error mapping and lineage bookkeeping.

    :param lance_conn_id: Connection id of the namespace. (templated)
    """

    ui_color = "#e8f0ff"

    def __init__(self, *, lance_conn_id: str = LanceHook.default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lance_conn_id = lance_conn_id
        self._lineage: list[TouchedTable] = []
        self._lifecycle: str | None = None

    @cached_property
    def hook(self) -> LanceHook:
        """The LanceHook of ``lance_conn_id``."""
        return LanceHook(lance_conn_id=self.lance_conn_id)

    @staticmethod
    def _ident(value: Any, param: str) -> list[str]:
        """
        Parse an identifier parameter; a malformed one fails the task (no retry) naming the parameter.

        :param value: The parameter's value.
        :param param: The parameter's name (``table_id`` ...).
        """
        try:
            return parse_identifier(value, param)
        except ValueError as err:
            raise AirflowFailException(str(err)) from None

    def _fail(self, message: str, err: BaseException) -> AirflowException:
        """
        Build an exception with the namespace error's message (dotted table names, no secrets).

        Errors that a retry cannot fix (conflicts, invalid input, missing objects) give an
        ``AirflowFailException``, so the task fails without retrying.

        :param message: What failed.
        :param err: The namespace error.
        """
        text = self.hook.redact(f"{message}: {describe_error(err)}")
        return AirflowFailException(text) if isinstance(err, PERMANENT_ERRORS) else AirflowException(text)

    @contextmanager
    def _namespace_errors(
        self,
        message: str,
        *,
        expected: tuple[type[Exception], ...] = (),
        expected_message: str = "",
        tolerate: bool = False,
    ) -> Iterator[NamespaceOutcome]:
        """
        Turn a namespace error raised in the block into an ``AirflowException`` naming what failed.

        ``with self._namespace_errors("Cannot drop table ns.t"): ...`` fails the task with
        ``Cannot drop table ns.t: <error class>: <message>``, secrets redacted and the traceback chain
        dropped (it may quote the connection's properties).

        :param message: What failed, for any ``LanceNamespaceError``.
        :param expected: Errors with their own meaning, such as ``TableNotFoundError``.
        :param expected_message: The message for an expected error.
        :param tolerate: Tolerate an expected error: the block stops and the yielded outcome records it.
        """
        import lance_namespace as ln

        outcome = NamespaceOutcome()
        try:
            yield outcome
        except expected as err:
            if not tolerate:
                raise self._fail(expected_message, err) from None
            outcome.error = err
        except ln.LanceNamespaceError as err:
            raise self._fail(message, err) from None

    def _staged_entries(self, entries: Any, entries_file: str | None) -> list[Any]:
        """
        Staged version entries from ``entries`` (a list, ``{"entries": [...]}`` or its JSON text, e.g. an
        upstream XCom) or else from ``entries_file`` (what a Spark job leaves behind).

        :param entries: The entries parameter.
        :param entries_file: Local path, ``file://`` or fsspec URI of an entries document.
        """
        if isinstance(entries, str):
            entries = json.loads(entries) if entries.strip() else None
        if entries is None and entries_file:
            entries = self._read_entries_file(entries_file)
        if isinstance(entries, dict):
            entries = entries.get("entries")
        if not isinstance(entries, list) or not entries:
            raise AirflowFailException("No table version entries given")
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

    def _touched(self, tables: list[TouchedTable], lifecycle: str | None) -> None:
        """
        Record the tables this task touched, for OpenLineage.

        :param tables: The tables.
        :param lifecycle: ``CREATE``, ``DROP``, ``OVERWRITE`` or None.
        """
        self._lineage = tables
        self._lifecycle = lifecycle

    def _emit_table_events(self, context: Context, versions: list[dict[str, Any]]) -> None:
        """
        Emit a ``lance://`` asset event per table with ``extra={"version": N, "table_id": [...]}``.

        An outlet ``Asset`` matches a table by URI (:func:`~airflow_provider_lance.assets.lance.lance_asset_uri`)
        or by name (the dotted table name); an outlet ``AssetAlias`` gets an event for every table.

        :param context: The task context.
        :param versions: ``{"table_id", "version"}`` of every table written.
        """
        outlets = list(self.outlets or [])
        if not outlets or not versions:
            return
        from airflow.sdk import Asset, AssetAlias

        from airflow_provider_lance.assets.lance import lance_asset_uri

        root = self._root()
        events = context["outlet_events"]
        for item in versions:
            table = list(item["table_id"])
            dotted = ".".join(table)
            uri = lance_asset_uri(root, table) if root else None
            extra = {"version": item["version"], "table_id": table}
            for outlet in outlets:
                if isinstance(outlet, AssetAlias) and uri:
                    events[outlet].add(Asset(uri=uri, name=uri), extra=extra)
                elif isinstance(outlet, Asset) and ((uri and outlet.uri == uri) or outlet.name == dotted):
                    events[outlet].extra = extra
        assets = [o for o in outlets if not isinstance(o, AssetAlias)]
        if len(assets) == 1 and len(versions) == 1 and not events[assets[0]].extra:
            events[assets[0]].extra = {"version": versions[0]["version"], "table_id": list(versions[0]["table_id"])}

    def _root(self) -> str | None:
        """Return the namespace root of the connection (a REST server's URI), None when it cannot be read."""
        try:
            _, props = self.hook.get_namespace_config()
        except Exception:
            return None
        return props.get("root") or props.get("uri")

    def _table_location(self, table: list[str]) -> str | None:
        """
        Return a table's location, None when it cannot be described.

        :param table: The table identifier.
        """
        try:
            return self.hook.describe_table(table, load_detailed_metadata=False).location
        except Exception:  # lineage is best effort: fall back to the table's asset identity
            return None

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """
        Report the tables this task created, dropped or committed to as OpenLineage output datasets.

        See :func:`airflow_provider_lance.utils.openlineage.operator_lineage` for the facets.

        :param task_instance: The task instance (unused).
        :return: an ``OperatorLineage``, or None when OpenLineage is not installed or nothing was touched.
        """
        if not self._lineage:
            return None
        return operator_lineage(
            self._lineage,
            self._lifecycle,
            root=self._root(),
            redact=self.hook.redact,
            locate=self._table_location,
        )
