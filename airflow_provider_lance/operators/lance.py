"""Operators for a Lance namespace: namespaces, tables and table versions."""

from __future__ import annotations

import json
import os
import time
import urllib.parse
from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException, BaseOperator

from airflow_provider_lance.hooks.lance import (
    RUN_KEY_METADATA,
    LanceHook,
    format_identifier,
    parse_identifier,
)

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

_IF_EXISTS = ("ignore", "fail")


def _check_if_exists(value: str) -> str:
    if value not in _IF_EXISTS:
        raise ValueError(f"if_exists must be one of {_IF_EXISTS}, got {value!r}")
    return value


def run_key_from_context(context: Context) -> str:
    """Return the idempotency key ``<dag_id>/<run_id>/<task_id>/<map_index>`` of the running task."""
    ti = context["ti"]
    map_index = getattr(ti, "map_index", -1)
    if map_index is None:
        map_index = -1
    return f"{ti.dag_id}/{ti.run_id}/{ti.task_id}/{map_index}"


def catalog_uri(root: str) -> str:
    """
    Return the namespace root as a URI without credentials (user info, query and fragment dropped).

    A plain local path becomes a ``file://`` URI; the trailing slash is removed.
    """
    parsed = urllib.parse.urlsplit(str(root))
    if len(parsed.scheme) <= 1:  # no scheme, or a Windows drive letter
        return Path(os.path.abspath(str(root))).as_uri().rstrip("/")
    netloc = parsed.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parsed.scheme, netloc, parsed.path.rstrip("/"), "", ""))


def openlineage_location(location: str) -> tuple[str, str]:
    """
    Split a table location into an OpenLineage dataset ``(namespace, name)``.

    Local files: ``("file", "/abs/path")``; object stores: ``("s3://bucket", "prefix/table")``.
    """
    uri = catalog_uri(location)
    parsed = urllib.parse.urlsplit(uri)
    path = urllib.parse.unquote(parsed.path)
    if parsed.scheme == "file":
        return ("file://" + parsed.netloc if parsed.netloc else "file"), path
    return f"{parsed.scheme}://{parsed.netloc}", path.lstrip("/")


class _LanceBaseOperator(BaseOperator):
    """Common base: connection handling and lineage bookkeeping."""

    ui_color = "#e8f0ff"

    def __init__(self, *, lance_conn_id: str = LanceHook.default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lance_conn_id = lance_conn_id
        self._lineage: list[tuple[list[str], str | None, int | None]] = []
        self._lifecycle: str | None = None

    @cached_property
    def hook(self) -> LanceHook:
        """The LanceHook of ``lance_conn_id``."""
        return LanceHook(lance_conn_id=self.lance_conn_id)

    def _fail(self, message: str, err: BaseException) -> AirflowException:
        """Build an exception with the namespace error's message (and no secrets)."""
        return AirflowException(self.hook.redact(f"{message}: {type(err).__name__}: {err}"))

    def _root(self) -> str | None:
        try:
            _, props = self.hook.get_namespace_config()
        except Exception:
            return None
        return props.get("root")

    def _emit_version_events(self, context: Context, versions: list[dict[str, Any]]) -> None:
        """Attach ``extra={"version": N}`` to the asset events of the outlets matching committed tables."""
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

    def _table_location(self, table: list[str]) -> str | None:
        try:
            return self.hook.describe_table(table).location
        except Exception:  # lineage is best effort: fall back to the table's asset identity
            return None

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """
        Report the tables this task created, dropped or committed to as OpenLineage output datasets.

        A dataset is named after the table's storage location (namespace ``file`` or ``s3://bucket``,
        name the path) and carries the facets ``storage`` (layer ``lance``), ``catalog`` (the namespace
        root, without credentials), ``symlinks`` (the logical ``ns.table`` name in that catalog),
        ``lifecycleStateChange`` (CREATE, DROP or OVERWRITE) and ``version`` (committed version).

        :return: an ``OperatorLineage``, or None when OpenLineage is not installed or nothing was touched.
        """
        if not self._lineage:
            return None
        try:
            from airflow.providers.common.compat.openlineage.facet import (
                Dataset,
                Identifier,
                LifecycleStateChange,
                LifecycleStateChangeDatasetFacet,
                SymlinksDatasetFacet,
            )
            from airflow.providers.openlineage.extractors import OperatorLineage
            from openlineage.client.generated.dataset_version_dataset import DatasetVersionDatasetFacet
            from openlineage.client.generated.storage_dataset import StorageDatasetFacet
        except ImportError:
            return None
        try:
            from openlineage.client.generated.catalog_dataset import CatalogDatasetFacet
        except ImportError:  # pragma: no cover - older openlineage-python without the catalog facet
            CatalogDatasetFacet = None

        from airflow_provider_lance.assets.lance import convert_asset_to_openlineage, create_asset

        root = self._root()
        catalog = self.hook.redact(catalog_uri(root)) if root else None
        outputs = []
        for table, location, version in self._lineage:
            location = location or self._table_location(table)
            if location:
                ol_namespace, ol_name = openlineage_location(self.hook.redact(location))
            else:
                fallback = convert_asset_to_openlineage(create_asset(root=root or "", table_id=table), None)
                ol_namespace, ol_name = fallback.namespace, fallback.name
            facets: dict[str, Any] = {"storage": StorageDatasetFacet(storageLayer="lance", fileFormat="lance")}
            if catalog:
                facets["symlinks"] = SymlinksDatasetFacet(
                    identifiers=[Identifier(namespace=catalog, name=".".join(table), type="TABLE")]
                )
                if CatalogDatasetFacet is not None:
                    facets["catalog"] = CatalogDatasetFacet(
                        framework="lance",
                        type="lance_namespace",
                        name=catalog,
                        metadataUri=catalog,
                        warehouseUri=catalog,
                    )
            if version is not None:
                facets["version"] = DatasetVersionDatasetFacet(datasetVersion=str(version))
            if self._lifecycle:
                facets["lifecycleStateChange"] = LifecycleStateChangeDatasetFacet(
                    lifecycleStateChange=getattr(LifecycleStateChange, self._lifecycle)
                )
            outputs.append(Dataset(namespace=ol_namespace, name=ol_name, facets=facets))
        return OperatorLineage(outputs=outputs)


# ---------------------------------------------------------------------------- namespaces


class LanceCreateNamespaceOperator(_LanceBaseOperator):
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
        self.if_exists = _check_if_exists(if_exists)

    def execute(self, context: Context) -> dict[str, Any]:
        import lance_namespace as ln

        ident = parse_identifier(self.namespace_id)
        try:
            self.hook.create_namespace(ident, properties=self.properties)
            created = True
            self.log.info("Created namespace %s", format_identifier(ident))
        except ln.NamespaceAlreadyExistsError as err:
            if self.if_exists == "fail":
                raise self._fail(f"Namespace {format_identifier(ident)} already exists", err) from None
            created = False
            self.log.info("Namespace %s already exists", format_identifier(ident))
        except ln.LanceNamespaceError as err:
            raise self._fail(f"Cannot create namespace {format_identifier(ident)}", err) from None
        return {"namespace_id": ident, "created": created}


class LanceDropNamespaceOperator(_LanceBaseOperator):
    """
    Drop a namespace.

    :param namespace_id: Namespace identifier, dotted string or list of parts. (templated)
    :param cascade: Also drop the namespace's tables and child namespaces.
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

        ident = parse_identifier(self.namespace_id)
        try:
            self.hook.drop_namespace(ident, behavior="cascade" if self.cascade else None)
            dropped = True
            self.log.info("Dropped namespace %s", format_identifier(ident))
        except ln.NamespaceNotFoundError as err:
            if not self.ignore_if_missing:
                raise self._fail(f"Namespace {format_identifier(ident)} does not exist", err) from None
            dropped = False
            self.log.info("Namespace %s does not exist: nothing to drop", format_identifier(ident))
        except ln.LanceNamespaceError as err:
            raise self._fail(f"Cannot drop namespace {format_identifier(ident)}", err) from None
        return {"namespace_id": ident, "dropped": dropped}


# ---------------------------------------------------------------------------- tables


class _LanceAddTableOperator(_LanceBaseOperator):
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
        self.if_exists = _check_if_exists(if_exists)

    def _add(self, ident: list[str]) -> str | None:
        raise NotImplementedError

    def execute(self, context: Context) -> dict[str, Any]:
        import lance_namespace as ln

        ident = parse_identifier(self.table_id)
        name = format_identifier(ident)
        try:
            location, created = self._add(ident), True
            self.log.info("%s table %s at %s", self._past, name, location)
        except ln.TableAlreadyExistsError as err:
            if self.if_exists == "fail":
                raise self._fail(f"Table {name} already exists", err) from None
            location, created = self.hook.describe_table(ident).location, False
            self.log.info("Table %s already exists at %s", name, location)
        except ln.LanceNamespaceError as err:
            raise self._fail(f"Cannot {self._verb} table {name}", err) from None
        self._lineage = [(ident, location, None)]
        self._lifecycle = "CREATE" if created else None
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


class _LanceRemoveTableOperator(_LanceBaseOperator):
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

        ident = parse_identifier(self.table_id)
        name = format_identifier(ident)
        try:
            response = getattr(self.hook, self._hook_method)(ident)
        except (ln.TableNotFoundError, ln.NamespaceNotFoundError) as err:
            if not self.ignore_if_missing:
                raise self._fail(f"Table {name} does not exist", err) from None
            self.log.info("Table %s does not exist: nothing to %s", name, self._verb)
            return {"table_id": ident, "location": None, self._result_key: False}
        except ln.LanceNamespaceError as err:
            raise self._fail(f"Cannot {self._verb} table {name}", err) from None
        self.log.info("%s table %s", self._result_key.capitalize(), name)
        self._lineage = [(ident, response.location, None)]
        self._lifecycle = "DROP"
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


# ---------------------------------------------------------------------------- versions


class _LanceCommitOperator(_LanceBaseOperator):
    """Shared logic of the version-committing operators: idempotency key and asset events."""

    def _prepare(self, entries: list[Any], run_key: str) -> list[Any]:
        prepared = []
        for entry in entries:
            model = self.hook.to_version_entry(entry)
            metadata = dict(model.metadata or {})
            metadata[RUN_KEY_METADATA] = run_key
            prepared.append(model.model_copy(update={"metadata": metadata}))
        return prepared

    def _split_committed(self, entries: list[Any], run_key: str) -> tuple[list[Any], list[Any]]:
        """Return ``(already committed by this task, still to commit)``."""
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
        self._lineage = [(c["table_id"], None, c["version"]) for c in committed]
        self._lifecycle = "OVERWRITE"
        self._emit_version_events(context, committed)
        return {"versions": committed, "already_committed": already}


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
        import lance_namespace as ln

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
        try:
            response = self.hook.create_table_version(
                ident,
                entry.version,
                entry.manifest_path,
                manifest_size=entry.manifest_size,
                e_tag=entry.e_tag,
                naming_scheme=entry.naming_scheme,
                metadata=entry.metadata,
            )
        except ln.LanceNamespaceError as err:
            raise self._fail(f"Cannot commit version {entry.version} of table {name}", err) from None
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
    returns nothing). Each entry may name its table as ``id`` or ``table_id`` (list or dotted).
    Every entry's metadata records ``airflow_run_key``; a retry finding all its versions
    committed with that key returns the same result without committing again.

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

    @staticmethod
    def _read_entries_file(path: str) -> Any:
        if "://" in path and not path.startswith("file://"):
            import fsspec

            with fsspec.open(path, "r") as handle:
                return json.load(handle)
        local = path[len("file://") :] if path.startswith("file://") else path
        try:
            with open(local, encoding="utf-8") as handle:
                return json.load(handle)
        except FileNotFoundError:
            raise AirflowFailException(f"Entries file {path} does not exist") from None
        except ValueError as err:
            raise AirflowFailException(f"Entries file {path} is not valid JSON: {err}") from None

    def execute(self, context: Context) -> dict[str, Any]:
        import lance_namespace as ln

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
        try:
            response = self.hook.batch_create_table_versions(todo)
        except ln.LanceNamespaceError as err:
            tables = ", ".join(format_identifier(e.id) for e in todo)
            raise self._fail(f"Cannot commit table versions of {tables}", err) from None
        versions = list(getattr(response, "versions", None) or [])
        committed = [{"table_id": list(e.id), "version": e.version} for e in done]
        for index, entry in enumerate(todo):
            number = versions[index].version if index < len(versions) else entry.version
            committed.append({"table_id": list(entry.id), "version": int(number)})
        for item in committed:
            self.log.info("Committed version %s of table %s", item["version"], format_identifier(item["table_id"]))
        return self._finish(context, committed, already=False)


def _to_seconds(value: timedelta | float | int | str | None) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)


def compute_retention_ranges(
    versions: list[Any],
    keep_last: int | None = None,
    keep_newer_than: timedelta | float | None = None,
    now_millis: int | None = None,
) -> tuple[list[dict[str, int]], list[int]]:
    """
    Compute the version ranges a retention policy deletes.

    A version is kept when any rule keeps it: it is the latest, one of the ``keep_last`` newest,
    or younger than ``keep_newer_than`` (versions without a timestamp are kept).

    :param versions: ``TableVersion`` objects (any order).
    :param keep_last: Number of newest versions to keep (at least 1 is always kept).
    :param keep_newer_than: Keep versions younger than this (timedelta or seconds).
    :param now_millis: Current time in ms (for tests).
    :return: ``(ranges, deleted version numbers)``; ranges are ``{"start_version", "end_version"}``,
        end exclusive, covering only existing deletable versions (engines may refuse missing ones).
    """
    ordered = sorted(versions, key=lambda v: int(v.version))
    if not ordered:
        return [], []
    numbers = [int(v.version) for v in ordered]
    keep = {numbers[-1]}
    if keep_last is not None:
        keep.update(numbers[-max(int(keep_last), 1) :])
    age = _to_seconds(keep_newer_than)
    if age is not None:
        now = int(time.time() * 1000) if now_millis is None else now_millis
        cutoff = now - int(age * 1000)
        for v in ordered:
            if v.timestamp_millis is None or int(v.timestamp_millis) >= cutoff:
                keep.add(int(v.version))
    ranges: list[dict[str, int]] = []
    deleted: list[int] = []
    for number in numbers:
        if number in keep:
            continue
        deleted.append(number)
        if ranges and ranges[-1]["end_version"] == number:
            ranges[-1]["end_version"] = number + 1
        else:
            ranges.append({"start_version": number, "end_version": number + 1})
    return ranges, deleted


class LanceBatchDeleteTableVersionsOperator(_LanceBaseOperator):
    """
    Delete versions of a table, by explicit ranges or by a retention policy.

    With ``ranges`` the given ranges are deleted as they are (start inclusive, end exclusive).
    Otherwise ``keep_last`` and/or ``keep_newer_than`` define what to keep: a version survives
    when any rule keeps it, and the latest version is never deleted.

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

    def execute(self, context: Context) -> dict[str, Any]:
        import lance_namespace as ln

        ident = parse_identifier(self.table_id)
        name = format_identifier(ident)
        try:
            if self.ranges is not None:
                ranges = self.ranges
                if isinstance(ranges, str):
                    ranges = json.loads(ranges)
                ranges = [
                    {"start_version": int(r["start_version"]), "end_version": int(r["end_version"])}
                    if isinstance(r, dict)
                    else {"start_version": int(r[0]), "end_version": int(r[1])}
                    for r in ranges
                ]
            else:
                keep_last = None if self.keep_last in (None, "") else int(self.keep_last)
                if keep_last is not None and keep_last < 1:
                    raise AirflowFailException("keep_last must be at least 1")
                versions = self.hook.list_table_versions(ident)
                ranges, deleted = compute_retention_ranges(versions, keep_last, self.keep_newer_than)
                self.log.info("Retention on %s: deleting versions %s", name, deleted)
            if not ranges:
                self.log.info("Nothing to delete in table %s", name)
                return {"table_id": ident, "deleted_count": 0, "ranges": []}
            deleted_count = self.hook.batch_delete_table_versions(ident, ranges)
        except (ln.TableNotFoundError, ln.NamespaceNotFoundError) as err:
            if not self.ignore_if_missing:
                raise self._fail(f"Table {name} does not exist", err) from None
            return {"table_id": ident, "deleted_count": 0, "ranges": []}
        except ln.LanceNamespaceError as err:
            raise self._fail(f"Cannot delete versions of table {name}", err) from None
        self.log.info("Deleted %s version(s) of table %s", deleted_count, name)
        return {"table_id": ident, "deleted_count": deleted_count, "ranges": ranges}


# ---------------------------------------------------------------------------- maintenance


class LanceMaintainManifestOperator(_LanceBaseOperator):
    """
    Compact the namespace's ``__manifest`` table and clean up its old versions.

    For scheduled maintenance of a busy catalog (the engine also maintains ``__manifest`` after
    commits). Safe while other processes read and write; versions younger than ``older_than``
    stay for running readers, and the latest version is never removed. Needs the provider's own
    engine (an empty ``impl`` extra); other implementations fail with a clear error.

    :param compact: Rewrite small fragments into one.
    :param cleanup: Delete the files of versions older than ``older_than``.
    :param older_than: Window of versions kept for running readers: a timedelta or a number of
        seconds (engine default, 10 minutes, when None). (templated)
    :param min_fragments: Compact only from this many fragments on. (templated)
    :param lance_conn_id: Connection id of the namespace. (templated)
    :return: the engine's report (``compacted``, ``fragments_before``/``fragments_after``,
        ``versions_removed``, ``bytes_removed``, ``version_before``/``version_after``, ``seconds``).
    """

    template_fields: Sequence[str] = ("older_than", "min_fragments", "lance_conn_id")

    def __init__(
        self,
        *,
        compact: bool = True,
        cleanup: bool = True,
        older_than: timedelta | float | str | None = None,
        min_fragments: int | str = 2,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not (compact or cleanup):
            raise ValueError("Nothing to do: enable compact and/or cleanup")
        self.compact = compact
        self.cleanup = cleanup
        self.older_than = older_than
        self.min_fragments = min_fragments

    def execute(self, context: Context) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "compact": self.compact,
            "cleanup": self.cleanup,
            "min_fragments": int(self.min_fragments),
        }
        seconds = _to_seconds(self.older_than)
        if seconds is not None:
            if seconds < 0:
                raise AirflowFailException("older_than must not be negative")
            kwargs["older_than"] = timedelta(seconds=seconds)
        try:
            result = self.hook.maintain_manifest(**kwargs)
        except ValueError as err:  # arguments the engine refuses (e.g. a window too short for readers)
            raise AirflowFailException(f"Invalid __manifest maintenance arguments: {err}") from None
        self.log.info("__manifest maintenance: %s", result)
        return json.loads(json.dumps(result, default=str))
