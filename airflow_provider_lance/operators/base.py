"""The shared base of the Lance operators: the hook, one mapping of namespace errors, OpenLineage."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from airflow.providers.common.compat.sdk import AirflowException, BaseOperator

from airflow_provider_lance.hooks.lance import LanceHook
from airflow_provider_lance.utils.openlineage import TouchedTable, operator_lineage

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

    def _fail(self, message: str, err: BaseException) -> AirflowException:
        """
        Build an exception with the namespace error's message (and no secrets).

        :param message: What failed.
        :param err: The namespace error.
        """
        return AirflowException(self.hook.redact(f"{message}: {type(err).__name__}: {err}"))

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

    def _touched(self, tables: list[TouchedTable], lifecycle: str | None) -> None:
        """
        Record the tables this task touched, for OpenLineage.

        :param tables: The tables.
        :param lifecycle: ``CREATE``, ``DROP``, ``OVERWRITE`` or None.
        """
        self._lineage = tables
        self._lifecycle = lifecycle

    def _root(self) -> str | None:
        """Return the namespace root of the connection, None when it cannot be read."""
        try:
            _, props = self.hook.get_namespace_config()
        except Exception:
            return None
        return props.get("root")

    def _table_location(self, table: list[str]) -> str | None:
        """
        Return a table's location, None when it cannot be described.

        :param table: The table identifier.
        """
        try:
            return self.hook.describe_table(table).location
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
