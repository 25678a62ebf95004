"""Hook for a Lance namespace (the Lance Directory Namespace by default)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import AirflowException, BaseHook

from airflow_provider_lance.get_provider_info import CONN_FIELDS, UI_FIELD_BEHAVIOUR

if TYPE_CHECKING:
    from lance_namespace import LanceNamespace

#: Default implementation: the provider's own engine.
DEFAULT_IMPL = "airflow_provider_lance.namespace.DirectoryNamespace"

#: Short implementation names accepted in the ``impl`` extra.
IMPL_ALIASES = {
    "default": DEFAULT_IMPL,
    "airflow": DEFAULT_IMPL,
    "dir": "dir",
    "rest": "rest",
}

_SECRET_MARKERS = (
    "secret",
    "password",
    "token",
    "credential",
    "private",
    "sas_key",
    "account_key",
    "session",
)

#: Error codes that mean "the table (version) is not there yet" for sensors.
NOT_YET_CODES = frozenset({1, 4, 11})  # NamespaceNotFound, TableNotFound, TableVersionNotFound

RUN_KEY_METADATA = "airflow_run_key"


def parse_identifier(identifier: str | Sequence[str] | None) -> list[str]:
    """
    Normalise a Lance object identifier to a list of parts.

    ``"ns.sub.table"`` becomes ``["ns", "sub", "table"]``; a list or tuple is copied;
    ``None``, ``""`` and ``[]`` mean the root namespace (``[]``). A string holding a JSON
    list (what a rendered template may produce) is decoded.

    :param identifier: Dotted string or sequence of parts.
    :raises ValueError: If a part is empty or not a string.
    """
    if identifier is None:
        return []
    if isinstance(identifier, str):
        text = identifier.strip()
        if not text:
            return []
        if text.startswith("["):
            try:
                decoded = json.loads(text)
            except ValueError:
                decoded = None
            if isinstance(decoded, list):
                return parse_identifier(decoded)
        parts: list[Any] = text.split(".")
    elif isinstance(identifier, Iterable):
        parts = list(identifier)
    else:
        raise ValueError(f"Identifier must be a dotted string or a list of strings, got {identifier!r}")
    for part in parts:
        if not isinstance(part, str) or not part:
            raise ValueError(f"Invalid identifier {identifier!r}: every part must be a non-empty string")
    return [str(p) for p in parts]


def format_identifier(identifier: Sequence[str]) -> str:
    """Return the dotted form of an identifier (``"<root>"`` for the root namespace)."""
    return ".".join(identifier) if identifier else "<root>"


def _property_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _is_secret_key(key: str) -> bool:
    lowered = key.lower()
    return any(marker in lowered for marker in _SECRET_MARKERS)


def _as_model(obj: Any, model_cls: type) -> Any:
    """Coerce a dict response (the reference engine answers some calls with dicts) into ``model_cls``."""
    if obj is None or isinstance(obj, model_cls):
        return obj
    if isinstance(obj, dict):
        try:
            return model_cls.model_validate(obj)  # type: ignore[attr-defined]
        except Exception:
            return model_cls.model_construct(**obj)  # type: ignore[attr-defined]
    if hasattr(obj, "model_dump"):
        return _as_model(obj.model_dump(), model_cls)
    return obj


def _field(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


class LanceHook(BaseHook):
    """
    Interact with a Lance namespace.

    The connection maps to namespace properties (all strings): the root comes from
    ``host`` (or the ``root`` extra; plain paths or URIs such as ``s3://bucket/prefix``),
    ``storage_options`` (a dict in extra) become ``storage.<key>`` properties, ``login`` /
    ``password`` become ``storage.aws_access_key_id`` / ``storage.aws_secret_access_key``,
    and any other extra key is passed through as a property (``manifest_enabled``,
    ``dir_listing_enabled``, ``table_version_management`` ...). The ``impl`` extra picks the
    implementation: empty for the provider's engine, ``dir`` for the reference
    ``lance.namespace.DirectoryNamespace``, ``rest``, or a full class path.

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
        from wtforms import StringField

        return {
            name: StringField(lazy_gettext(field["label"]), widget=BS3TextFieldWidget())
            for name, field in CONN_FIELDS.items()
        }

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
        except Exception:  # pragma: no cover - masking is best effort
            pass

    def redact(self, message: object) -> str:
        """Return ``message`` as text with every known secret of this connection replaced."""
        text = str(message)
        for secret in sorted(self._secrets, key=len, reverse=True):
            text = text.replace(secret, "***")
        return text

    def get_namespace_config(self) -> tuple[str, dict[str, str]]:
        """
        Build the implementation name and namespace properties from the Airflow connection.

        :return: ``(impl, properties)``; ``impl`` is a class path or a ``lance_namespace`` alias.
        """
        conn = self.get_connection(self.lance_conn_id)
        extra = dict(conn.extra_dejson or {})
        impl_raw = str(extra.pop("impl", "") or "").strip()
        impl = IMPL_ALIASES.get(impl_raw, impl_raw) if impl_raw else DEFAULT_IMPL

        properties: dict[str, str] = {}
        root = extra.pop("root", None) or extra.pop("uri", None) or conn.host
        if root:
            properties["uri" if impl == "rest" else "root"] = str(root)

        storage_options = extra.pop("storage_options", None) or {}
        if isinstance(storage_options, str):
            try:
                storage_options = json.loads(storage_options)
            except ValueError as err:
                raise AirflowException(
                    f"Connection {self.lance_conn_id!r}: extra 'storage_options' must be a JSON object"
                ) from err
        if not isinstance(storage_options, dict):
            raise AirflowException(f"Connection {self.lance_conn_id!r}: extra 'storage_options' must be a dict")
        for key, value in storage_options.items():
            if value is None:
                continue
            prop = key if str(key).startswith("storage.") else f"storage.{key}"
            properties[prop] = _property_value(value)
            if _is_secret_key(str(key)):
                self._remember_secret(properties[prop])

        if conn.login:
            properties["storage.aws_access_key_id"] = str(conn.login)
        if conn.password:
            properties["storage.aws_secret_access_key"] = str(conn.password)
            self._remember_secret(conn.password)

        for key, value in extra.items():
            if value is None or key.startswith("extra__"):
                continue
            properties[str(key)] = _property_value(value)
            if _is_secret_key(str(key)):
                self._remember_secret(properties[str(key)])
        return impl, properties

    @cached_property
    def namespace(self) -> LanceNamespace:
        """The ``lance_namespace.LanceNamespace`` client built from the connection."""
        impl, properties = self.get_namespace_config()
        if impl != "rest" and "root" not in properties:
            raise AirflowException(
                f"Connection {self.lance_conn_id!r} has no namespace root: set Host or the 'root' extra"
            )
        try:
            if impl == DEFAULT_IMPL:
                from airflow_provider_lance.namespace import DirectoryNamespace

                client = DirectoryNamespace(**properties)
            else:
                import lance_namespace

                client = lance_namespace.connect(impl, properties)
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

    def _call(self, operation: str, request: Any) -> Any:
        """Call ``operation`` on the namespace; retry with a dict if the engine only takes mappings."""
        method = getattr(self.namespace, operation)
        try:
            return method(request)
        except TypeError as err:
            if "Mapping" not in str(err) or not hasattr(request, "model_dump"):
                raise
            return method(request.model_dump(exclude_none=True))

    def _all_pages(self, operation: str, field: str, make_request: Callable[[str | None], Any]) -> list[Any]:
        """Call a paged list ``operation`` until the engine returns no new page token; concatenate ``field``."""
        items: list[Any] = []
        token: str | None = None
        while True:
            response = self._call(operation, make_request(token))
            items.extend(_field(response, field) or [])
            next_token = _field(response, "page_token")
            if not next_token or next_token == token:
                return items
            token = next_token

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
        return _as_model(self._call("create_namespace", request), ln.CreateNamespaceResponse)

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
        return _as_model(self._call("drop_namespace", request), ln.DropNamespaceResponse)

    def describe_namespace(self, namespace_id: str | Sequence[str]) -> Any:
        """Describe a namespace; raises ``NamespaceNotFoundError`` when missing."""
        import lance_namespace as ln

        request = ln.DescribeNamespaceRequest(id=parse_identifier(namespace_id))
        return _as_model(self._call("describe_namespace", request), ln.DescribeNamespaceResponse)

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
            lambda token: ln.ListNamespacesRequest(id=parent, page_token=token, limit=limit),
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
        return _as_model(self._call("declare_table", request), ln.DeclareTableResponse)

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
        return _as_model(self._call("register_table", request), ln.RegisterTableResponse)

    def deregister_table(self, table_id: str | Sequence[str]) -> Any:
        """Remove a table from the namespace without deleting its data."""
        import lance_namespace as ln

        request = ln.DeregisterTableRequest(id=parse_identifier(table_id))
        return _as_model(self._call("deregister_table", request), ln.DeregisterTableResponse)

    def drop_table(self, table_id: str | Sequence[str]) -> Any:
        """Drop a table and delete its data."""
        import lance_namespace as ln

        request = ln.DropTableRequest(id=parse_identifier(table_id))
        return _as_model(self._call("drop_table", request), ln.DropTableResponse)

    def describe_table(self, table_id: str | Sequence[str], version: int | None = None) -> Any:
        """Describe a table; raises ``TableNotFoundError`` when missing."""
        import lance_namespace as ln

        request = ln.DescribeTableRequest(id=parse_identifier(table_id), version=version)
        return _as_model(self._call("describe_table", request), ln.DescribeTableResponse)

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
            lambda token: ln.ListTablesRequest(
                id=parent, page_token=token, limit=limit, include_declared=include_declared
            ),
        )

    # ------------------------------------------------------------------ versions

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
        return _as_model(self._call("create_table_version", request), ln.CreateTableVersionResponse)

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
        return _as_model(self._call("batch_create_table_versions", request), ln.BatchCreateTableVersionsResponse)

    def list_table_versions(self, table_id: str | Sequence[str], descending: bool | None = None) -> list[Any]:
        """
        List every version of a table (all pages), ascending unless ``descending``.

        :param table_id: Table identifier.
        :param descending: Newest first.
        """
        import lance_namespace as ln

        ident = parse_identifier(table_id)
        versions = self._all_pages(
            "list_table_versions",
            "versions",
            lambda token: ln.ListTableVersionsRequest(id=ident, page_token=token, descending=descending),
        )
        return [_as_model(v, ln.TableVersion) for v in versions]

    def describe_table_version(self, table_id: str | Sequence[str], version: int | None = None) -> Any:
        """
        Describe a table version (the latest when ``version`` is None).

        :return: a ``lance_namespace.TableVersion``; raises ``TableVersionNotFoundError`` when missing.
        """
        import lance_namespace as ln

        request = ln.DescribeTableVersionRequest(id=parse_identifier(table_id), version=version)
        response = _as_model(self._call("describe_table_version", request), ln.DescribeTableVersionResponse)
        return _as_model(_field(response, "version"), ln.TableVersion)

    def get_latest_version(self, table_id: str | Sequence[str]) -> int | None:
        """Return the latest version number of a table, or None when it has no version yet."""
        import lance_namespace as ln

        try:
            described = self.describe_table_version(table_id)
        except ln.TableVersionNotFoundError:
            return None
        return None if described is None else int(_field(described, "version"))

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
        import lance_namespace as ln

        normalised = []
        for item in ranges:
            if isinstance(item, dict):
                normalised.append(
                    {"start_version": int(item["start_version"]), "end_version": int(item["end_version"])}
                )
            else:
                start, end = item
                normalised.append({"start_version": int(start), "end_version": int(end)})
        request = ln.BatchDeleteTableVersionsRequest(
            id=parse_identifier(table_id),
            ranges=normalised,
            context={"ignore_missing": "true"} if ignore_missing else None,
        )
        response = _as_model(self._call("batch_delete_table_versions", request), ln.BatchDeleteTableVersionsResponse)
        return int(_field(response, "deleted_count") or 0)

    # ------------------------------------------------------------------ maintenance

    def maintain_manifest(self, **kwargs: Any) -> dict[str, Any]:
        """
        Compact the ``__manifest`` table and clean up its old versions (the provider's engine only).

        :param kwargs: Passed to ``airflow_provider_lance.namespace.maintenance.maintain_manifest``
            (``compact``, ``cleanup``, ``older_than``, ``min_fragments``).
        :return: a JSON-able dict of what was done.
        :raises AirflowException: when the connection uses another namespace implementation.
        """
        from airflow_provider_lance.namespace import DirectoryNamespace
        from airflow_provider_lance.namespace.maintenance import maintain_manifest

        namespace = self.namespace
        if not isinstance(namespace, DirectoryNamespace):
            raise AirflowException(
                f"Connection {self.lance_conn_id!r} uses {type(namespace).__module__}.{type(namespace).__qualname__}: "
                f"__manifest maintenance needs the provider's engine ({DEFAULT_IMPL}, an empty 'impl' extra)"
            )
        return maintain_manifest(namespace, **kwargs)

    # ------------------------------------------------------------------ checks shared by sensors and triggers

    def check_table_exists(self, table_id: str | Sequence[str]) -> bool:
        """Sensor check: True when the table exists; fatal namespace errors propagate."""
        return self.table_exists(table_id)

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
                return True, int(_field(described, "version"))
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

    # ------------------------------------------------------------------ UI test

    def test_connection(self) -> tuple[bool, str]:
        """List namespaces and tables at the root; never creates anything."""
        try:
            namespaces = self.list_namespaces(limit=1000)
            tables = self.list_tables(limit=1000)
        except Exception as err:
            return False, self.redact(f"{type(err).__name__}: {err}")
        return (
            True,
            f"Connection successfully tested: {len(namespaces)} namespace(s), {len(tables)} table(s) at root",
        )
