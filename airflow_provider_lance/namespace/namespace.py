"""``DirectoryNamespace``: the Lance Directory Namespace (seed 000) as a ``lance_namespace.LanceNamespace``.

Each public method is one spec operation, its body the spec's steps. Modes:

* V1 (``dir_listing_enabled``): root tables are ``<name>.lance`` directories.
* V2 (``manifest_enabled``): namespaces, tables and table versions are rows of ``__manifest``.
* Compatibility mode (both, the default): the manifest is consulted first, then the directory listing.

Table existence (the seeds disagree, seed 001 asks for a non-empty ``_versions/`` and seed 000 counts declared
tables): a table exists when its manifest row exists, or, for a root table in directory-listing mode, when
``<name>.lance`` has at least one entry and no ``.lance-deregistered`` marker. Declared tables therefore
exist for TableExists, ListTables and DescribeTable (the reference agrees); operations that need data
(DescribeTable of a version, the version operations) treat a table without ``_versions/`` as having none.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import lance
import pydantic
from lance_namespace import (
    BatchCreateTableVersionsRequest,
    BatchCreateTableVersionsResponse,
    BatchDeleteTableVersionsRequest,
    BatchDeleteTableVersionsResponse,
    ConcurrentModificationError,
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    CreateTableVersionEntry,
    CreateTableVersionRequest,
    CreateTableVersionResponse,
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    DescribeTableVersionRequest,
    DescribeTableVersionResponse,
    DropNamespaceRequest,
    DropNamespaceResponse,
    DropTableRequest,
    DropTableResponse,
    InternalError,
    InvalidInputError,
    LanceNamespace,
    LanceNamespaceError,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    ListTableVersionsRequest,
    ListTableVersionsResponse,
    NamespaceAlreadyExistsError,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    PermissionDeniedError,
    RegisterTableRequest,
    RegisterTableResponse,
    TableAlreadyExistsError,
    TableExistsRequest,
    TableExistsResponse,
    TableNotFoundError,
    TableVersionNotFoundError,
    UnsupportedOperationError,
)

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.arrow_json import to_json_schema
from airflow_provider_lance.namespace.config import NamespaceConfig
from airflow_provider_lance.namespace.manifest import (
    NAMESPACE,
    TABLE,
    TABLE_VERSION,
    TABLE_VERSION_MANAGEMENT_KEY,
    DuplicateObjectError,
    ManifestRow,
    ManifestTable,
    sql_string,
)
from airflow_provider_lance.namespace.storage import Storage, is_not_found_error
from airflow_provider_lance.namespace.versions import TableVersions

RESERVED_MARKER = ".lance-reserved"
DEREGISTERED_MARKER = ".lance-deregistered"
MARKER_CONTENT = b"reserved"

_CALLBACK_EXECUTOR = ThreadPoolExecutor(max_workers=4, thread_name_prefix="lance-namespace-callback")


@dataclass(frozen=True)
class Table:
    """A located table: its identifier, its directory (key relative to the root) and its manifest row
    (None for a table found only by directory listing)."""

    parts: list[str]
    location: str
    row: ManifestRow | None = None

    @property
    def properties(self) -> dict[str, str] | None:
        return self.row.metadata if self.row and self.row.metadata else None


def _operation(method: Callable[..., Any]) -> Callable[..., Any]:
    """Accept a request model, a dict (pylance calls back with dicts) or nothing; translate storage failures
    into ``lance_namespace`` errors so that callers (and pylance) see a code."""
    model = method.__annotations__.get("request")

    @functools.wraps(method)
    def wrapper(self: DirectoryNamespace, request: Any = None) -> Any:
        request_class = _REQUEST_MODELS[model] if isinstance(model, str) else model
        if request is None:
            request = request_class()
        elif isinstance(request, dict):
            try:
                request = request_class.model_validate(request)
            except pydantic.ValidationError as error:
                raise InvalidInputError(f"Invalid {request_class.__name__}: {error}") from None
        elif not isinstance(request, request_class):
            raise InvalidInputError(f"Expected a {request_class.__name__} or a dict, got {type(request).__name__}")

        def run() -> Any:
            with self.manifest.operation():  # one check-out of the latest __manifest per operation
                return method(self, request)

        try:
            if isinstance(threading.current_thread(), threading._DummyThread):
                # Called back from a pylance (Rust) thread: pylance calls made on that thread crash the
                # interpreter (it holds the GIL without a Python thread state), so run on a Python thread.
                return _CALLBACK_EXECUTOR.submit(run).result()
            return run()
        except LanceNamespaceError:
            raise
        except PermissionError as error:
            raise PermissionDeniedError(f"{method.__name__}: permission denied: {error}") from error
        except (OSError, ValueError, RuntimeError) as error:
            raise InternalError(f"{method.__name__} failed: {error}") from error

    return wrapper


class DirectoryNamespace(LanceNamespace):
    """The Lance Directory Namespace over fsspec storage.

    Construct it like the reference: ``DirectoryNamespace(root="s3://bucket/prefix", **{"storage.region": ...})``.
    Properties: ``root``, ``manifest_enabled``, ``dir_listing_enabled``, ``table_version_management`` (or the
    reference's ``table_version_tracking_enabled``), ``commit_retries`` and ``storage.*``. Construction touches
    no storage.
    """

    def __init__(self, **properties: Any) -> None:
        self.config = NamespaceConfig.from_properties(properties)
        self.storage = Storage(self.config.root, self.config.storage_options)
        self.manifest = ManifestTable(self.storage, self.config.commit_retries)
        self.versions = TableVersions(self.storage, self.manifest)

    def namespace_id(self) -> str:
        return f"DirectoryNamespace {{ root: '{self.config.root}' }}"

    def __repr__(self) -> str:
        return f"DirectoryNamespace(root={self.config.root!r})"

    # -- shared steps -----------------------------------------------------------------------------------
    def _require_manifest(self, operation: str) -> None:
        if not self.config.manifest_enabled:
            raise UnsupportedOperationError(f"{operation} needs the manifest (manifest_enabled=true)")

    def _namespace_rows(self, *object_ids: str) -> dict[str, ManifestRow]:
        return self.manifest.get_many(oid for oid in object_ids if oid) if self.config.manifest_enabled else {}

    def _check_namespace(self, parts: list[str], rows: dict[str, ManifestRow]) -> None:
        """NamespaceNotFound unless ``parts`` is the root or a namespace row in ``rows``."""
        if not parts:
            return
        row = rows.get(ids.object_id(parts))
        if row is None or row.object_type != NAMESPACE:
            raise NamespaceNotFoundError(f"Namespace not found: '{ids.object_id(parts)}'")

    def _v1_table(self, parts: list[str]) -> Table | None:
        """Directory-listing lookup of a root table: ``<name>.lance`` with an entry and no deregistered
        marker (one listing request)."""
        if not (self.config.dir_listing_enabled and len(parts) == 1):
            return None
        location = ids.v1_location(parts[0])
        entries = self.storage.list_dir(location)
        if not entries or DEREGISTERED_MARKER in entries:
            return None
        return Table(parts, location)

    def _is_v1_location(self, table: Table) -> bool:
        """Whether the directory listing also sees this table (a root ``<name>.lance`` directory)."""
        return (
            self.config.dir_listing_enabled
            and len(table.parts) == 1
            and table.location == ids.v1_location(table.parts[0])
        )

    def _find_table(
        self,
        parts: list[str],
        check_parent: bool = True,
        rows: dict[str, ManifestRow] | None = None,
        listed: bool = False,
    ) -> Table:
        """Locate a table: manifest first, then the directory listing (compatibility mode). ``rows``: the
        rows of the table and its parent, when the caller already looked them up; ``listed``: the caller's
        own directory listing just found no root table (no second listing)."""
        table_oid = ids.object_id(parts)
        if rows is None:
            rows = self._namespace_rows(ids.object_id(parts[:-1]), table_oid)
        if check_parent:
            self._check_namespace(parts[:-1], rows)
        row = rows.get(table_oid)
        if row is not None and row.object_type == TABLE and row.location:
            return Table(parts, row.location, row)
        table = None if listed else self._v1_table(parts)
        if table is None:
            raise TableNotFoundError(f"Table not found: '{table_oid}'")
        return table

    def _managed(self) -> bool:
        """Table version management: on when the constructor asked for it or ``__manifest`` says so."""
        if not self.config.manifest_enabled:
            return False
        if self.config.table_version_management:
            return True
        return self.manifest.metadata().get(TABLE_VERSION_MANAGEMENT_KEY) == "true"

    def _insert(self, row: ManifestRow, parent: list[str]) -> None:
        """Insert one row under ``parent``, persisting table version management first when the constructor
        asked for it.

        A concurrent DropNamespace of the parent may delete it between our check and our insert. Both sides
        write, then look again (the drop for children, we for the parent), so at least one sees the other;
        here, a parent gone after the insert means the row is taken back and NamespaceNotFound is raised.
        """
        if self.config.table_version_management and not self._managed_persisted():
            self.manifest.update_metadata({TABLE_VERSION_MANAGEMENT_KEY: "true"})
        self.manifest.insert([row])
        if parent and ids.object_id(parent) not in self._namespace_rows(ids.object_id(parent)):
            self.manifest.delete(f"object_id = {sql_string(row.object_id)} AND object_type = '{row.object_type}'")
            raise NamespaceNotFoundError(f"Namespace not found: '{ids.object_id(parent)}' (dropped concurrently)")

    def _managed_persisted(self) -> bool:
        return self.manifest.metadata().get(TABLE_VERSION_MANAGEMENT_KEY) == "true"

    # -- namespaces ---------------------------------------------------------------------------------------
    @_operation
    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        """CreateNamespace (V2 only): check the parent, then merge-insert the namespace row."""
        parts = ids.validate_identifier(request.id, "namespace", allow_root=True)
        mode = (request.mode or "create").lower()
        if mode not in ("create", "exist_ok", "existok", "overwrite"):
            raise InvalidInputError(f"Invalid mode '{request.mode}': expected create, exist_ok or overwrite")
        if not parts:
            raise NamespaceAlreadyExistsError("The root namespace always exists")
        self._require_manifest("CreateNamespace")
        oid = ids.object_id(parts)
        rows = self._namespace_rows(ids.object_id(parts[:-1]), oid)
        self._check_namespace(parts[:-1], rows)
        existing = rows.get(oid)
        if existing is not None:
            if existing.object_type != NAMESPACE:
                raise NamespaceAlreadyExistsError(f"A table already uses the identifier '{oid}'")
            if mode in ("exist_ok", "existok"):
                return CreateNamespaceResponse(properties=existing.metadata or {})
            if mode == "create":
                raise NamespaceAlreadyExistsError(f"Namespace already exists: '{oid}'")
        row = ManifestRow(oid, NAMESPACE, None, dict(request.properties or {}) or None)
        if existing is not None:  # overwrite: replace the properties
            self.manifest.upsert([row])
        else:
            try:
                self._insert(row, parts[:-1])
            except DuplicateObjectError:
                if mode in ("exist_ok", "existok"):
                    return CreateNamespaceResponse(properties=self.manifest.get(oid).metadata or {})
                raise NamespaceAlreadyExistsError(f"Namespace already exists: '{oid}'") from None
        return CreateNamespaceResponse(properties=dict(request.properties) if request.properties else None)

    @_operation
    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        """ListNamespaces: V1 has none; V2 lists namespace rows exactly one level below the parent."""
        parts = ids.validate_identifier(request.id, "namespace", allow_root=True)
        if not self.config.manifest_enabled:
            if parts:
                raise NamespaceNotFoundError(f"Namespace not found: '{ids.object_id(parts)}'")
            return ListNamespacesResponse(namespaces=[])
        self._check_namespace(parts, self._namespace_rows(ids.object_id(parts)))
        rows = self.manifest.children(ids.child_prefix(parts), NAMESPACE)
        names = [name for row in rows if (name := ids.direct_child_name(row.object_id, parts))]
        page, token = ids.paginate(names, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    @_operation
    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        """DescribeNamespace: the namespace row's metadata as properties (the root has none)."""
        parts = ids.validate_identifier(request.id, "namespace", allow_root=True)
        if not parts:
            return DescribeNamespaceResponse(properties={})
        rows = self._namespace_rows(ids.object_id(parts))
        self._check_namespace(parts, rows)
        return DescribeNamespaceResponse(properties=rows[ids.object_id(parts)].metadata or {})

    @_operation
    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        """NamespaceExists: answers if it exists, raises NamespaceNotFound otherwise."""
        parts = ids.validate_identifier(request.id, "namespace", allow_root=True)
        self._check_namespace(parts, self._namespace_rows(ids.object_id(parts)))
        return NamespaceExistsResponse()

    @_operation
    def drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        """DropNamespace (V2 only): must exist and be empty, then its row is deleted."""
        parts = ids.validate_identifier(request.id, "namespace", allow_root=True)
        mode = (request.mode or "fail").lower()
        behavior = (request.behavior or "restrict").lower()
        if mode not in ("fail", "skip") or behavior not in ("restrict", "cascade"):
            raise InvalidInputError(f"Invalid drop mode '{request.mode}' or behavior '{request.behavior}'")
        if behavior == "cascade":
            raise UnsupportedOperationError("DropNamespace with behavior 'cascade' is not supported")
        if not parts:
            raise InvalidInputError("The root namespace cannot be dropped")
        self._require_manifest("DropNamespace")
        oid = ids.object_id(parts)
        rows = self._namespace_rows(oid)
        try:
            self._check_namespace(parts, rows)
        except NamespaceNotFoundError:
            if mode == "skip":
                return DropNamespaceResponse()
            raise
        if self.manifest.children(ids.child_prefix(parts)):
            raise NamespaceNotEmptyError(f"Namespace not empty: '{oid}'")
        deleted = self.manifest.delete(f"object_id = {sql_string(oid)} AND object_type = '{NAMESPACE}'")
        if deleted == 0 and mode != "skip":
            raise NamespaceNotFoundError(f"Namespace not found: '{oid}' (dropped concurrently)")
        if deleted and self.manifest.children(ids.child_prefix(parts)):
            # A child was added concurrently (see ``_insert``): put the namespace back.
            self.manifest.insert([rows[oid]])
            raise NamespaceNotEmptyError(f"Namespace not empty: '{oid}' (a child was added concurrently)")
        return DropNamespaceResponse()

    # -- tables ---------------------------------------------------------------------------------------
    @_operation
    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        """DeclareTable: check the parent, pick the location, write ``.lance-reserved`` (put-if-not-exists),
        then (V2) merge-insert the table row. A failure removes the marker this call wrote."""
        parts = ids.validate_identifier(request.id, "table")
        oid = ids.object_id(parts)
        if not self.config.manifest_enabled and len(parts) > 1:
            raise NamespaceNotFoundError(f"Namespace not found: '{ids.object_id(parts[:-1])}'")
        rows = self._namespace_rows(ids.object_id(parts[:-1]), oid)
        self._check_namespace(parts[:-1], rows)
        if oid in rows or self._v1_table(parts) is not None:
            raise TableAlreadyExistsError(f"Table already exists: '{oid}'")
        if request.location is not None:
            location = self._location_from_request(request.location)
        else:
            location = ids.table_location(parts, self.config.dir_listing_enabled)
        marker = f"{location}/{RESERVED_MARKER}"
        if self.storage.list_dir(location):  # one listing: a missing directory lists as empty
            raise TableAlreadyExistsError(f"Table already exists: '{oid}' (location '{location}' is not empty)")
        if not self.storage.put_if_not_exists(marker, MARKER_CONTENT):
            raise ConcurrentModificationError(f"Table '{oid}' is being declared concurrently")
        if self.config.manifest_enabled:
            try:
                self._insert(ManifestRow(oid, TABLE, location, dict(request.properties or {}) or None), parts[:-1])
            except Exception as error:
                self.storage.delete_tree(location)
                if isinstance(error, DuplicateObjectError):
                    raise TableAlreadyExistsError(f"Table already exists: '{oid}'") from None
                raise
        return DeclareTableResponse(
            location=self.storage.uri(location),
            storage_options=self.config.storage_options or None,
            properties=dict(request.properties) if request.properties else None,
            managed_versioning=True if self._managed() else None,
        )

    def _location_from_request(self, location: str) -> str:
        key = self.storage.key_of(location) if "://" in location else None
        return ids.validate_relative_location(key if key is not None else location)

    @_operation
    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        """ListTables: manifest rows one level below the namespace, merged (root, compatibility mode) with
        the ``*.lance`` directories of the root; manifest entries win on duplicates."""
        parts = ids.validate_identifier(request.id, "namespace", allow_root=True)
        if parts and not self.config.manifest_enabled:
            raise NamespaceNotFoundError(f"Namespace not found: '{ids.object_id(parts)}'")
        names: set[str] = set()
        if self.config.manifest_enabled:
            self._check_namespace(parts, self._namespace_rows(ids.object_id(parts)))
            prefix = ids.child_prefix(parts)
            child_ids = self.manifest.child_ids(prefix, TABLE)
            names.update(rest for oid in child_ids if (rest := oid[len(prefix) :]) and ids.DELIMITER not in rest)
        if self.config.dir_listing_enabled and not parts:
            names.update(self._v1_table_names(names))
        if request.include_declared is False:
            names = {name for name in names if self.versions.has_manifests(self._find_table([*parts, name], False))}
        page, token = ids.paginate(names, request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def _v1_table_names(self, known: set[str]) -> list[str]:
        """Root ``*.lance`` directories that are tables: one names-only listing of the root, then one
        listing per candidate the manifest does not already list (a table with a row exists anyway)."""
        names = []
        for entry in self.storage.list_names(""):
            if entry.endswith(ids.TABLE_SUFFIX) and entry != ids.TABLE_SUFFIX:
                name = entry[: -len(ids.TABLE_SUFFIX)]
                if name in known or self._v1_table([name]) is not None:
                    names.append(name)
        return names

    @_operation
    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        """DescribeTable: locate the table, open it with pylance when it has data, and return name, schema,
        version and location. A declared table without data answers ``is_only_declared``."""
        parts = ids.validate_identifier(request.id, "table")
        table = self._find_table(parts)
        managed = self._managed()
        version = request.version
        if version is None and managed:
            latest = self.versions.latest(table)
            version = latest.version if latest else None
        response = DescribeTableResponse(
            table=parts[-1],
            namespace=parts[:-1],
            location=self.storage.uri(table.location),
            table_uri=self.storage.uri(table.location),
            storage_options=self.config.storage_options or None,
            properties=table.properties,
            managed_versioning=True if managed else None,
        )
        # A declared table (no manifest yet) is answered from one listing instead of a failed open.
        declared_only = version is None and not managed and not self.versions.has_manifests(table)
        dataset = None if declared_only else self._open(table, version)
        if dataset is None:
            if request.version is not None:
                raise TableVersionNotFoundError(f"Table version not found: '{ids.object_id(parts)}' v{version}")
            response.is_only_declared = True
            return response
        response.version = dataset.version
        response.var_schema = to_json_schema(dataset.schema)
        return response

    def _open(self, table: Table, version: int | None) -> lance.LanceDataset | None:
        """Open the table's Lance dataset (at ``version``), or None when it has no such version."""
        try:
            return lance.dataset(
                self.storage.uri(table.location),
                version=version,
                storage_options=self.config.storage_options or None,
            )
        except (ValueError, OSError) as error:
            if is_not_found_error(error):  # not a 403 or a missing bucket: those must fail
                return None
            raise

    @_operation
    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        """TableExists: answers if the table (and the requested version) exists, raises otherwise."""
        parts = ids.validate_identifier(request.id, "table")
        listed = request.version is None and self.config.dir_listing_enabled and len(parts) == 1
        if listed and self._v1_table(parts) is not None:
            return TableExistsResponse()  # a root table found by its directory listing exists anyway
        table = self._find_table(parts, listed=listed)  # no second listing of a root table just listed
        if request.version is not None:
            self.versions.describe(table, request.version, self._managed())
        return TableExistsResponse()

    @_operation
    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        """RegisterTable: record an existing table directory (relative to the root) under an identifier.
        V1 only: re-register ``<name>.lance`` by removing its ``.lance-deregistered`` marker."""
        parts = ids.validate_identifier(request.id, "table")
        location = ids.validate_relative_location(request.location)
        oid = ids.object_id(parts)
        if not self.config.manifest_enabled:
            if len(parts) > 1:
                raise NamespaceNotFoundError(f"Namespace not found: '{ids.object_id(parts[:-1])}'")
            if location != ids.v1_location(parts[0]):
                raise InvalidInputError(f"In directory-listing mode '{oid}' can only be at '{ids.v1_location(oid)}'")
            if self._v1_table(parts) is not None:
                raise TableAlreadyExistsError(f"Table already exists: '{oid}'")
            if not self.storage.exists(f"{location}/{DEREGISTERED_MARKER}"):
                raise TableNotFoundError(f"No deregistered table at '{location}'")
            self.storage.delete(f"{location}/{DEREGISTERED_MARKER}")
            return RegisterTableResponse(location=self.storage.uri(location), properties=request.properties)
        rows = self._namespace_rows(ids.object_id(parts[:-1]), oid)
        self._check_namespace(parts[:-1], rows)
        if oid in rows or self._v1_table(parts) is not None:
            raise TableAlreadyExistsError(f"Table already exists: '{oid}'")
        if not self.storage.list_dir(location):
            raise InvalidInputError(f"Invalid location '{location}': no table data there")
        try:
            self._insert(ManifestRow(oid, TABLE, location, dict(request.properties or {}) or None), parts[:-1])
        except DuplicateObjectError:
            raise TableAlreadyExistsError(f"Table already exists: '{oid}'") from None
        if self._is_v1_location(Table(parts, location)):
            self.storage.delete(f"{location}/{DEREGISTERED_MARKER}")
        return RegisterTableResponse(location=self.storage.uri(location), properties=request.properties)

    @_operation
    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        """DeregisterTable: V2 deletes the row and keeps the files; V1 writes ``.lance-deregistered``.

        In compatibility mode a root ``<name>.lance`` table deregistered through its row also gets the marker
        (after the row is gone), so that the directory listing does not bring it back."""
        parts = ids.validate_identifier(request.id, "table")
        table = self._find_table(parts)
        marker = f"{table.location}/{DEREGISTERED_MARKER}"
        if table.row is not None:
            self._delete_table_rows(table)
            if self._is_v1_location(table):
                self.storage.put_if_not_exists(marker, MARKER_CONTENT)
        elif not self.storage.put_if_not_exists(marker, MARKER_CONTENT):
            raise TableNotFoundError(f"Table not found: '{ids.object_id(parts)}' (deregistered concurrently)")
        return DeregisterTableResponse(id=parts, location=self.storage.uri(table.location), properties=table.properties)

    @_operation
    def drop_table(self, request: DropTableRequest) -> DropTableResponse:
        """DropTable: V2 deletes the row (the commit point) then the directory; V1 deletes the directory
        and fails if anything is left."""
        parts = ids.validate_identifier(request.id, "table")
        table = self._find_table(parts)
        if table.row is not None:
            self._delete_table_rows(table)
            # The row is gone, so the drop has succeeded: a failure to delete files leaves them unreachable.
            with contextlib.suppress(OSError):
                self.storage.delete_tree(table.location)
        else:
            self.storage.delete_tree(table.location)
            if self.storage.list_dir(table.location):
                raise InternalError(f"Drop of '{ids.object_id(parts)}' left files behind; retry the drop")
            # A table found by directory listing has no table row but may have table_version rows (managed
            # commits through this engine): left behind, they would block commits to a re-created table.
            prefix = ids.object_id(parts) + ids.DELIMITER
            if self.config.manifest_enabled and self.manifest.children(prefix, TABLE_VERSION):
                where = f"starts_with(object_id, {sql_string(prefix)}) AND object_type = '{TABLE_VERSION}'"
                self.manifest.delete(where)
        return DropTableResponse(id=parts, location=self.storage.uri(table.location), properties=table.properties)

    def _delete_table_rows(self, table: Table) -> None:
        """Delete a table row and its ``table_version`` rows in one commit; TableNotFound if a concurrent
        call deleted it first (exactly one caller wins)."""
        oid = ids.object_id(table.parts)
        deleted = self.manifest.delete(
            f"(object_id = {sql_string(oid)} AND object_type = '{TABLE}') OR "
            f"(starts_with(object_id, {sql_string(oid + ids.DELIMITER)}) AND object_type = '{TABLE_VERSION}')"
        )
        if deleted == 0:
            raise TableNotFoundError(f"Table not found: '{oid}' (removed concurrently)")

    # -- table versions (seed 000 and seed 003; the work is in versions.py) ------------------------------------
    @_operation
    def create_table_version(self, request: CreateTableVersionRequest) -> CreateTableVersionResponse:
        """CreateTableVersion: see :meth:`TableVersions.create`."""
        table = self._find_table(ids.validate_identifier(request.id, "table"))
        entry = _entry_from(request)
        return CreateTableVersionResponse(version=self.versions.create([(table, entry)], self._managed())[0])

    @_operation
    def batch_create_table_versions(self, request: BatchCreateTableVersionsRequest) -> BatchCreateTableVersionsResponse:
        """BatchCreateTableVersions: with table version management, every entry's row is committed in one
        merge-insert (all or nothing); without it, entries are committed one by one (not atomic, as the
        spec says)."""
        if not request.entries:
            raise InvalidInputError("BatchCreateTableVersions needs at least one entry")
        # Every entry's table and parent rows in one lookup (one pass over the cached rows, not one per
        # entry); the errors stay those of the first offending entry, in entry order.
        identifiers: list[list[str] | InvalidInputError] = []
        for entry in request.entries:
            try:
                identifiers.append(ids.validate_identifier(entry.id, "table"))
            except InvalidInputError as error:
                identifiers.append(error)
        valid = [parts for parts in identifiers if not isinstance(parts, InvalidInputError)]
        rows = self._namespace_rows(*(oid for p in valid for oid in (ids.object_id(p[:-1]), ids.object_id(p))))
        located = []
        for parts, entry in zip(identifiers, request.entries, strict=True):
            if isinstance(parts, InvalidInputError):
                raise parts
            located.append((self._find_table(parts, rows=rows), entry))
        keys = [(ids.object_id(entry.id), entry.version) for entry in request.entries]
        if len(set(keys)) != len(keys):
            raise InvalidInputError("BatchCreateTableVersions has the same table version twice")
        return BatchCreateTableVersionsResponse(versions=self.versions.create(located, self._managed()))

    @_operation
    def list_table_versions(self, request: ListTableVersionsRequest) -> ListTableVersionsResponse:
        """ListTableVersions: see :meth:`TableVersions.list`."""
        table = self._find_table(ids.validate_identifier(request.id, "table"))
        versions, token = self.versions.list(
            table, self._managed(), bool(request.descending), request.page_token, request.limit
        )
        return ListTableVersionsResponse(versions=versions, page_token=token)

    @_operation
    def describe_table_version(self, request: DescribeTableVersionRequest) -> DescribeTableVersionResponse:
        """DescribeTableVersion: see :meth:`TableVersions.describe` (latest when no version is given)."""
        table = self._find_table(ids.validate_identifier(request.id, "table"))
        return DescribeTableVersionResponse(version=self.versions.describe(table, request.version, self._managed()))

    @_operation
    def batch_delete_table_versions(self, request: BatchDeleteTableVersionsRequest) -> BatchDeleteTableVersionsResponse:
        """BatchDeleteTableVersions: see :meth:`TableVersions.delete`."""
        table = self._find_table(ids.validate_identifier(request.id, "table"))
        # The request model has no ``ignore_missing`` field (the spec names one): it travels in the context.
        ignore_missing = (request.context or {}).get("ignore_missing", "false").lower() == "true"
        ranges = [(r.start_version, r.end_version) for r in request.ranges]
        return BatchDeleteTableVersionsResponse(
            deleted_count=self.versions.delete(table, ranges, self._managed(), ignore_missing)
        )


def _entry_from(request: CreateTableVersionRequest) -> CreateTableVersionEntry:
    return CreateTableVersionEntry(
        id=request.id or [],
        version=request.version,
        manifest_path=request.manifest_path,
        manifest_size=request.manifest_size,
        e_tag=request.e_tag,
        metadata=request.metadata,
        naming_scheme=request.naming_scheme,
    )


_REQUEST_MODELS: dict[str, type[pydantic.BaseModel]] = {
    cls.__name__: cls
    for cls in (
        BatchCreateTableVersionsRequest,
        BatchDeleteTableVersionsRequest,
        CreateNamespaceRequest,
        CreateTableVersionRequest,
        DeclareTableRequest,
        DeregisterTableRequest,
        DescribeNamespaceRequest,
        DescribeTableRequest,
        DescribeTableVersionRequest,
        DropNamespaceRequest,
        DropTableRequest,
        ListNamespacesRequest,
        ListTablesRequest,
        ListTableVersionsRequest,
        NamespaceExistsRequest,
        NamespaceExistsResponse,
        RegisterTableRequest,
        TableExistsRequest,
    )
}
