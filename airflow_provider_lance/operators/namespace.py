"""Operators acting on namespaces: create and drop."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_provider_lance.operators.base import LanceBaseOperator, check_if_exists
from airflow_provider_lance.utils.identifiers import format_identifier

if TYPE_CHECKING:
    from airflow.sdk import Context


class LanceCreateNamespaceOperator(LanceBaseOperator):
    """
    Create a namespace.

    :param namespace_id: Namespace identifier, dotted string or list of parts. (templated)
    :param properties: Namespace properties. (templated)
    :param if_exists: ``ignore`` (default) succeeds when the namespace exists; ``fail`` fails.
    :param lance_conn_id: Connection id of the namespace. (templated)
    """

    template_fields: Sequence[str] = ("namespace_id", "properties", "lance_conn_id")
    template_fields_renderers: ClassVar[dict[str, str]] = {"properties": "json"}

    def __init__(
        self,
        *,
        namespace_id: str | list[str],
        properties: dict[str, str] | None = None,
        if_exists: str = "ignore",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.namespace_id = namespace_id
        self.properties = properties
        self.if_exists = check_if_exists(if_exists)

    def execute(self, context: Context) -> dict[str, Any]:
        import lance_namespace as ln

        ident = self._ident(self.namespace_id, "namespace_id")
        name = format_identifier(ident)
        with self._namespace_errors(
            f"Cannot create namespace {name}",
            expected=(ln.NamespaceAlreadyExistsError,),
            expected_message=f"Namespace {name} already exists",
            tolerate=self.if_exists == "ignore",
        ) as outcome:
            self.hook.create_namespace(ident, properties=self.properties)
        created = outcome.error is None
        self.log.info("Created namespace %s" if created else "Namespace %s already exists", name)
        return {"namespace_id": ident, "created": created}


class LanceDropNamespaceOperator(LanceBaseOperator):
    """
    Drop a namespace.

    :param namespace_id: Namespace identifier, dotted string or list of parts. (templated)
    :param cascade: Ask the implementation to drop the namespace's tables and child namespaces too
        (``behavior="cascade"``). The provider's engine does not support it and fails with
        ``UnsupportedOperationError``: drop the children first, or use an implementation that supports it.
    :param ignore_if_missing: Succeed when the namespace does not exist.
    :param lance_conn_id: Connection id of the namespace. (templated)
    """

    template_fields: Sequence[str] = ("namespace_id", "lance_conn_id")

    def __init__(
        self,
        *,
        namespace_id: str | list[str],
        cascade: bool = False,
        ignore_if_missing: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.namespace_id = namespace_id
        self.cascade = cascade
        self.ignore_if_missing = ignore_if_missing

    def execute(self, context: Context) -> dict[str, Any]:
        import lance_namespace as ln

        ident = self._ident(self.namespace_id, "namespace_id")
        name = format_identifier(ident)
        with self._namespace_errors(
            f"Cannot drop namespace {name}",
            expected=(ln.NamespaceNotFoundError,),
            expected_message=f"Namespace {name} does not exist",
            tolerate=self.ignore_if_missing,
        ) as outcome:
            self.hook.drop_namespace(ident, behavior="cascade" if self.cascade else None)
        dropped = outcome.error is None
        self.log.info("Dropped namespace %s" if dropped else "Namespace %s does not exist: nothing to drop", name)
        return {"namespace_id": ident, "dropped": dropped}
