"""Hook for a Lance namespace (the Lance Directory Namespace by default)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import AirflowException, BaseHook

from airflow_provider_lance.get_provider_info import CONN_FIELDS, UI_FIELD_BEHAVIOUR
from airflow_provider_lance.hooks.admin import LanceTableAdminMixin
from airflow_provider_lance.hooks.catalog import LanceCatalogMixin
from airflow_provider_lance.hooks.connection import ENGINE_IMPL, namespace_config
from airflow_provider_lance.hooks.data import LanceTableDataMixin
from airflow_provider_lance.hooks.versions import LanceTableVersionsMixin
from airflow_provider_lance.implementations import NamespaceCalls, connect, pages
from airflow_provider_lance.staging.runs import RUN_ID_METADATA, RUN_KEY_METADATA
from airflow_provider_lance.utils.identifiers import format_identifier, parse_identifier

if TYPE_CHECKING:
    from lance_namespace import LanceNamespace

#: Kept for existing imports: the canonical name of the provider's engine (an empty ``impl`` extra).
DEFAULT_IMPL = ENGINE_IMPL

__all__ = [
    "DEFAULT_IMPL",
    "ENGINE_IMPL",
    "RUN_ID_METADATA",
    "RUN_KEY_METADATA",
    "LanceHook",
    "format_identifier",
    "parse_identifier",
]


class LanceHook(LanceTableVersionsMixin, LanceTableDataMixin, LanceTableAdminMixin, LanceCatalogMixin, BaseHook):
    """
    Interact with a Lance namespace.

    The connection maps to namespace properties (all strings): the root comes from
    ``host`` (or the ``root`` extra; plain paths or URIs such as ``s3://bucket/prefix``),
    ``storage_options`` (a dict in extra) become ``storage.<key>`` properties, ``login`` /
    ``password`` become ``storage.aws_access_key_id`` / ``storage.aws_secret_access_key``,
    and any other extra key is passed through as a property (``manifest_enabled``,
    ``dir_listing_enabled``, ``table_version_management`` ...). The ``impl`` extra picks the
    implementation: empty for the provider's engine (canonical name
    ``airflow_provider_lance.namespace.DirectoryNamespace``); anything else goes to
    ``lance_namespace.connect``: ``dir`` for the reference ``lance.namespace.DirectoryNamespace``,
    ``rest`` (a Lance REST Namespace server such as ``lance-namespace-server``: host = its URI, password =
    its bearer token; built as :class:`airflow_provider_lance.rest.client.RestNamespace`, pylance's client
    plus the batch commits), or a full class path.

    :param lance_conn_id: Airflow connection id of the namespace.
    """

    conn_name_attr = "lance_conn_id"
    default_conn_name = "lance_default"
    conn_type = "lance"
    hook_name = "Lance"

    def __init__(self, lance_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lance_conn_id = lance_conn_id
        self._secrets: set[str] = set()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lance_conn_id={self.lance_conn_id!r})"

    # ------------------------------------------------------------------ UI metadata

    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        """Return connection widgets to add to the connection form (Airflow < 3.2)."""
        from flask_appbuilder.fieldwidgets import BS3TextFieldWidget
        from flask_babel import lazy_gettext
        from wtforms import BooleanField, StringField

        widgets: dict[str, Any] = {}
        for name, field in CONN_FIELDS.items():
            label = lazy_gettext(field["label"])
            if "boolean" in field["schema"]["type"]:
                widgets[name] = BooleanField(label, default=field["schema"].get("default", False))
            else:
                widgets[name] = StringField(label, widget=BS3TextFieldWidget())
        return widgets

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """Return custom field behaviour for the connection form (Airflow < 3.2)."""
        return {key.replace("-", "_"): copy.deepcopy(value) for key, value in UI_FIELD_BEHAVIOUR.items()}

    # ------------------------------------------------------------------ connection

    def _remember_secret(self, value: Any) -> None:
        if value is None:
            return
        text = str(value)
        if not text:
            return
        self._secrets.add(text)
        try:
            from airflow.providers.common.compat.sdk import mask_secret

            mask_secret(text)
        except Exception as error:  # the value itself stays out of the log line
            self.log.warning(
                "Connection %r: a secret could not be masked in task logs (%s); it may appear in them unmasked",
                self.lance_conn_id,
                type(error).__name__,
            )

    def redact(self, message: object) -> str:
        """Return ``message`` as text with every known secret of this connection replaced."""
        text = str(message)
        for secret in sorted(self._secrets, key=len, reverse=True):
            text = text.replace(secret, "***")
        return text

    def get_namespace_config(self) -> tuple[str, dict[str, str]]:
        """
        Build the implementation name and namespace properties from the Airflow connection.

        :return: ``(impl, properties)``; ``impl`` is ``ENGINE_IMPL`` for an empty ``impl`` extra,
            otherwise the name ``lance_namespace.connect`` gets.
        """
        return namespace_config(self.get_connection(self.lance_conn_id), self._remember_secret)

    @cached_property
    def namespace(self) -> LanceNamespace:
        """The ``lance_namespace.LanceNamespace`` client built from the connection."""
        impl, properties = self.get_namespace_config()
        if "root" not in properties and "uri" not in properties:
            raise AirflowException(
                f"Connection {self.lance_conn_id!r} has no namespace root (or REST server URI): set Host or "
                "the 'root' extra"
            )
        try:
            client = connect(impl, properties)
        except Exception as err:
            # The original exception may quote the properties (and so the secrets): drop it.
            raise AirflowException(
                f"Cannot build Lance namespace {impl!r} for connection {self.lance_conn_id!r}: {self.redact(err)}"
            ) from None
        self.log.info("Connected to Lance namespace %s (impl %s)", self.redact(properties.get("root", "")), impl)
        return client

    def get_conn(self) -> LanceNamespace:
        """Return the ``lance_namespace.LanceNamespace`` client."""
        return self.namespace

    @cached_property
    def _calls(self) -> NamespaceCalls:
        return NamespaceCalls(self.namespace)

    def _call(self, operation: str, request: Any) -> Any:
        """
        Call ``operation`` on the namespace through
        :class:`~airflow_provider_lance.implementations.NamespaceCalls`: the request in the form the
        implementation declares, its errors as ``lance_namespace`` errors, an operation it lacks as an
        ``UnsupportedOperationError`` naming the catalog and what would serve.

        :param operation: The ``LanceNamespace`` method name.
        :param request: The ``lance_namespace`` request model.
        """
        return self._calls.call(operation, request)

    def _all_pages(self, operation: str, field: str, request: Any) -> list[Any]:
        """
        Call a paged list ``operation`` until the engine returns no new page token; concatenate ``field``.

        :param operation: The list operation.
        :param field: The response field holding the items.
        :param request: The first page's request.
        """
        call = functools.partial(self._call, operation)
        return [item for response in pages(call, request) for item in getattr(response, field) or []]

    # ------------------------------------------------------------------ namespaces

    def create_namespace(
        self,
        namespace_id: str | Sequence[str],
        properties: dict[str, str] | None = None,
        mode: str | None = None,
    ) -> Any:
        """
        Create a namespace.

        :param namespace_id: Namespace identifier.
        :param properties: Namespace properties.
        :param mode: ``create`` (default), ``exist_ok`` or ``overwrite``.
        """
        import lance_namespace as ln

        request = ln.CreateNamespaceRequest(id=parse_identifier(namespace_id), properties=properties, mode=mode)
        return self._call("create_namespace", request)

    def drop_namespace(
        self, namespace_id: str | Sequence[str], mode: str | None = None, behavior: str | None = None
    ) -> Any:
        """
        Drop a namespace.

        :param namespace_id: Namespace identifier.
        :param mode: ``fail`` (default) or ``skip``.
        :param behavior: ``restrict`` (default) or ``cascade``.
        """
        import lance_namespace as ln

        request = ln.DropNamespaceRequest(id=parse_identifier(namespace_id), mode=mode, behavior=behavior)
        return self._call("drop_namespace", request)

    def describe_namespace(self, namespace_id: str | Sequence[str]) -> Any:
        """Describe a namespace; raises ``NamespaceNotFoundError`` when missing."""
        import lance_namespace as ln

        request = ln.DescribeNamespaceRequest(id=parse_identifier(namespace_id))
        return self._call("describe_namespace", request)

    def list_namespaces(self, namespace_id: str | Sequence[str] | None = None, limit: int | None = None) -> list[str]:
        """
        List the child namespaces of a namespace, following every page.

        :param namespace_id: Parent namespace (root by default).
        :param limit: Page size asked of the engine.
        """
        import lance_namespace as ln

        parent = parse_identifier(namespace_id)
        return self._all_pages(
            "list_namespaces",
            "namespaces",
            ln.ListNamespacesRequest(id=parent, limit=limit),
        )

    def namespace_exists(self, namespace_id: str | Sequence[str]) -> bool:
        """Return whether a namespace exists."""
        import lance_namespace as ln

        try:
            self._call("namespace_exists", ln.NamespaceExistsRequest(id=parse_identifier(namespace_id)))
        except ln.NamespaceNotFoundError:
            return False
        return True

    # ------------------------------------------------------------------ tables

    def declare_table(
        self,
        table_id: str | Sequence[str],
        location: str | None = None,
        properties: dict[str, str] | None = None,
    ) -> Any:
        """
        Declare a table (reserve its identifier and location without data).

        :param table_id: Table identifier.
        :param location: Optional table location.
        :param properties: Optional table properties.
        """
        import lance_namespace as ln

        request = ln.DeclareTableRequest(id=parse_identifier(table_id), location=location, properties=properties)
        return self._call("declare_table", request)

    def register_table(
        self,
        table_id: str | Sequence[str],
        location: str,
        mode: str | None = None,
        properties: dict[str, str] | None = None,
    ) -> Any:
        """
        Register an existing Lance table directory under an identifier.

        :param table_id: Table identifier.
        :param location: Table location relative to the namespace root.
        :param mode: ``create`` (default) or ``overwrite``.
        :param properties: Optional table properties.
        """
        import lance_namespace as ln

        request = ln.RegisterTableRequest(
            id=parse_identifier(table_id), location=location, mode=mode, properties=properties
        )
        return self._call("register_table", request)

    def deregister_table(self, table_id: str | Sequence[str]) -> Any:
        """Remove a table from the namespace without deleting its data."""
        import lance_namespace as ln

        request = ln.DeregisterTableRequest(id=parse_identifier(table_id))
        return self._call("deregister_table", request)

    def drop_table(self, table_id: str | Sequence[str]) -> Any:
        """Drop a table and delete its data."""
        import lance_namespace as ln

        request = ln.DropTableRequest(id=parse_identifier(table_id))
        return self._call("drop_table", request)

    def describe_table(
        self, table_id: str | Sequence[str], version: int | None = None, load_detailed_metadata: bool | None = None
    ) -> Any:
        """
        Describe a table; raises ``TableNotFoundError`` when missing.

        :param table_id: The table identifier.
        :param version: A version to describe (the latest when None).
        :param load_detailed_metadata: ``False`` when only the location, properties and storage options are
            needed: the namespace then need not open the table. ``True`` asks for version, schema and stats.
        """
        import lance_namespace as ln

        request = ln.DescribeTableRequest(
            id=parse_identifier(table_id), version=version, load_detailed_metadata=load_detailed_metadata
        )
        return self._call("describe_table", request)

    def table_exists(self, table_id: str | Sequence[str]) -> bool:
        """Return whether a table exists (missing table or parent namespace: ``False``)."""
        import lance_namespace as ln

        try:
            self._call("table_exists", ln.TableExistsRequest(id=parse_identifier(table_id)))
        except (ln.TableNotFoundError, ln.NamespaceNotFoundError):
            return False
        return True

    def list_tables(
        self,
        namespace_id: str | Sequence[str] | None = None,
        limit: int | None = None,
        include_declared: bool | None = None,
    ) -> list[str]:
        """
        List the tables of a namespace, following every page.

        :param namespace_id: Namespace (root by default).
        :param limit: Page size asked of the engine.
        :param include_declared: Whether declared-only tables are listed (engine default otherwise).
        """
        import lance_namespace as ln

        parent = parse_identifier(namespace_id)
        return self._all_pages(
            "list_tables",
            "tables",
            ln.ListTablesRequest(id=parent, limit=limit, include_declared=include_declared),
        )

    # ------------------------------------------------------------------ maintenance

    def maintain_manifest(self, **kwargs: Any) -> dict[str, Any]:
        """
        Compact the ``__manifest`` table and clean up its old versions (the provider's engine only).

        :param kwargs: Passed to ``airflow_provider_lance.namespace.maintenance.maintain_manifest``
            (``compact``, ``cleanup``, ``older_than``, ``min_fragments``).
        :return: a JSON-able dict of what was done.
        :raises AirflowException: when the connection uses another namespace implementation.
        """
        from airflow_provider_lance.namespace.maintenance import maintain_manifest

        return maintain_manifest(self._engine("__manifest maintenance"), **kwargs)

    def finalize_pending_versions(self) -> list[dict[str, Any]]:
        """
        Finish every committed table version still pointing at its staged manifest (a committer stopped
        between the commit point and the copy), so that path-based readers (``lance.dataset(location)``,
        Spark reading the path) see it. Engine reads touching a table do this too; this does it for the
        whole catalog at once (the provider's engine only).

        :return: ``[{"table_id": [...], "version": n}, ...]``, what was finished.
        """
        finished = self._engine("finalizing pending versions").finalize_pending_versions()
        return [{"table_id": list(table_id), "version": version} for table_id, version in finished]

    def _engine(self, what: str) -> Any:
        """The provider's engine behind this connection; AirflowException naming ``what`` for another one."""
        from airflow_provider_lance.namespace import DirectoryNamespace

        namespace = self.namespace
        if not isinstance(namespace, DirectoryNamespace):
            raise AirflowException(
                f"Connection {self.lance_conn_id!r} uses {type(namespace).__module__}.{type(namespace).__qualname__}: "
                f"{what} needs the provider's engine ({ENGINE_IMPL}, an empty 'impl' extra)"
            )
        return namespace

    # ------------------------------------------------------------------ checks shared by sensors and triggers

    def check_table_exists(self, table_id: str | Sequence[str]) -> bool:
        """Sensor check: True when the table exists; fatal namespace errors propagate."""
        return self.table_exists(table_id)
