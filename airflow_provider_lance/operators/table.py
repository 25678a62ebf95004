"""Operators acting on tables: declare, register, deregister and drop."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_provider_lance.operators.base import LanceBaseOperator, check_if_exists
from airflow_provider_lance.utils.identifiers import format_identifier
from airflow_provider_lance.utils.openlineage import TouchedTable

if TYPE_CHECKING:
    from airflow.sdk import Context


class _LanceAddTableOperator(LanceBaseOperator):
    """
    Shared logic of the operators that add a table to the namespace (``if_exists`` handling).

    Subclasses implement ``_add`` (one hook call, returning the table location) and name the verb
    of their messages (``_verb``, ``_past``).
    """

    _verb: ClassVar[str]
    _past: ClassVar[str]

    template_fields: Sequence[str] = ("table_id", "location", "properties", "lance_conn_id")
    template_fields_renderers: ClassVar[dict[str, str]] = {"properties": "json"}

    def __init__(
        self,
        *,
        table_id: str | list[str],
        location: str | None = None,
        properties: dict[str, str] | None = None,
        if_exists: str = "ignore",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.table_id = table_id
        self.location = location
        self.properties = properties
        self.if_exists = check_if_exists(if_exists)

    def _add(self, ident: list[str]) -> str | None:
        """
        Add the table with one hook call and return its location.

        :param ident: The table identifier.
        """
        raise NotImplementedError

    def execute(self, context: Context) -> dict[str, Any]:
        import lance_namespace as ln

        ident = self._ident(self.table_id, "table_id")
        name = format_identifier(ident)
        location: str | None = None
        with self._namespace_errors(
            f"Cannot {self._verb} table {name}",
            expected=(ln.TableAlreadyExistsError,),
            expected_message=f"Table {name} already exists",
            tolerate=self.if_exists == "ignore",
        ) as outcome:
            location = self._add(ident)
        created = outcome.error is None
        if created:
            self.log.info("%s table %s at %s", self._past, name, location)
        else:
            with self._namespace_errors(f"Cannot describe table {name}"):
                location = self.hook.describe_table(ident, load_detailed_metadata=False).location
            self.log.info("Table %s already exists at %s", name, location)
        self._touched([TouchedTable(ident, location, None)], "CREATE" if created else None)
        return {"table_id": ident, "location": location, "created": created}


class LanceDeclareTableOperator(_LanceAddTableOperator):
    """
    Declare a table: reserve its identifier and location without writing data.

    :param table_id: Table identifier, dotted string or list of parts. (templated)
    :param location: Optional table location. (templated)
    :param properties: Optional table properties. (templated)
    :param if_exists: ``ignore`` (default) returns the existing table; ``fail`` fails.
    :param lance_conn_id: Connection id of the namespace. (templated)
    """

    _verb = "declare"
    _past = "Declared"

    def _add(self, ident: list[str]) -> str | None:
        return self.hook.declare_table(ident, location=self.location, properties=self.properties).location


class LanceRegisterTableOperator(_LanceAddTableOperator):
    """
    Register an existing Lance table directory under an identifier.

    :param table_id: Table identifier, dotted string or list of parts. (templated)
    :param location: Table location relative to the namespace root. (templated)
    :param properties: Optional table properties. (templated)
    :param if_exists: ``ignore`` (default) returns the existing table; ``fail`` fails.
    :param lance_conn_id: Connection id of the namespace. (templated)
    """

    _verb = "register"
    _past = "Registered"

    def __init__(self, *, table_id: str | list[str], location: str, **kwargs: Any) -> None:
        super().__init__(table_id=table_id, location=location, **kwargs)

    def _add(self, ident: list[str]) -> str | None:
        response = self.hook.register_table(ident, self.location, properties=self.properties)
        return response.location or self.location


class _LanceRemoveTableOperator(LanceBaseOperator):
    """
    Shared logic of the operators that remove a table from the namespace.

    Subclasses name the hook method (``_hook_method``), the verb of their messages (``_verb``) and
    the result key saying whether something was removed (``_result_key``).
    """

    _hook_method: ClassVar[str]
    _verb: ClassVar[str]
    _result_key: ClassVar[str]

    template_fields: Sequence[str] = ("table_id", "lance_conn_id")

    def __init__(self, *, table_id: str | list[str], ignore_if_missing: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.table_id = table_id
        self.ignore_if_missing = ignore_if_missing

    def execute(self, context: Context) -> dict[str, Any]:
        import lance_namespace as ln

        ident = self._ident(self.table_id, "table_id")
        name = format_identifier(ident)
        with self._namespace_errors(
            f"Cannot {self._verb} table {name}",
            expected=(ln.TableNotFoundError, ln.NamespaceNotFoundError),
            expected_message=f"Table {name} does not exist",
            tolerate=self.ignore_if_missing,
        ) as outcome:
            response = getattr(self.hook, self._hook_method)(ident)
        if outcome.error is not None:
            self.log.info("Table %s does not exist: nothing to %s", name, self._verb)
            return {"table_id": ident, "location": None, self._result_key: False}
        self.log.info("%s table %s", self._result_key.capitalize(), name)
        self._touched([TouchedTable(ident, response.location, None)], "DROP")
        return {"table_id": ident, "location": response.location, self._result_key: True}


class LanceDeregisterTableOperator(_LanceRemoveTableOperator):
    """
    Deregister a table: remove it from the namespace and keep its data.

    :param table_id: Table identifier, dotted string or list of parts. (templated)
    :param ignore_if_missing: Succeed when the table does not exist.
    :param lance_conn_id: Connection id of the namespace. (templated)
    """

    _hook_method = "deregister_table"
    _verb = "deregister"
    _result_key = "deregistered"


class LanceDropTableOperator(_LanceRemoveTableOperator):
    """
    Drop a table and delete its data.

    :param table_id: Table identifier, dotted string or list of parts. (templated)
    :param ignore_if_missing: Succeed when the table does not exist.
    :param lance_conn_id: Connection id of the namespace. (templated)
    """

    _hook_method = "drop_table"
    _verb = "drop"
    _result_key = "dropped"
