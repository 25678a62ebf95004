"""Table operations (seed 000): DeclareTable, ListTables, DescribeTable, TableExists, RegisterTable,
DeregisterTable, DropTable.

V1 (``dir_listing_enabled``): root tables are ``<name>.lance`` directories, markers say what is declared
(``.lance-reserved``) or deregistered (``.lance-deregistered``). V2 (``manifest_enabled``): tables are rows of
``__manifest``. Compatibility mode (both, the default): the manifest is consulted first, then the listing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import lance_namespace as ln
import pyarrow as pa
from lance_namespace_urllib3_client.models import TableBasicStats

from airflow_provider_lance.namespace import external_reader, version_lines, versions
from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.catalog import (
    DEREGISTERED_MARKER,
    MARKER_CONTENT,
    RESERVED_MARKER,
    Catalog,
    Table,
)
from airflow_provider_lance.namespace.data.access import open_dataset, tag_target
from airflow_provider_lance.namespace.data.schema import to_json_schema
from airflow_provider_lance.namespace.manifest import DuplicateObjectError
from airflow_provider_lance.namespace.manifest_rows import TABLE, ManifestRow
from airflow_provider_lance.namespace.operation import namespace_errors


def declare_table(catalog: Catalog, request: ln.DeclareTableRequest) -> ln.DeclareTableResponse:
    """DeclareTable: check the parent, pick the location, write ``.lance-reserved`` (put-if-not-exists), then
    (V2) insert the table row. A failure removes the marker this call wrote."""
    outcome = declare_tables(catalog, [request])[0]
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def declare_tables(
    catalog: Catalog, requests: list[ln.DeclareTableRequest]
) -> list[ln.DeclareTableResponse | BaseException]:
    """DeclareTable for each request, their rows inserted in one group commit; each request's own response
    or error, as if each had been a call of its own (two requests of one table: the second fails)."""
    outcomes: list[ln.DeclareTableResponse | BaseException] = []
    reserved: list[tuple[int, list[str], str]] = []  # (request, identifier, location) with a marker written
    for at, request in enumerate(requests):
        try:
            with namespace_errors("declare_table", catalog.storage.root):
                parts, location = reserve_table(catalog, request)
        except Exception as error:
            outcomes.append(error)
            continue
        outcomes.append(declared_response(catalog, request, location))
        reserved.append((at, parts, location))
    if not catalog.config.manifest_enabled or not reserved:
        return outcomes
    rows = [
        (ManifestRow(ids.object_id(parts), TABLE, location, dict(requests[at].properties or {}) or None), parts[:-1])
        for at, parts, location in reserved
    ]
    try:
        with namespace_errors("declare_table", catalog.storage.root):
            errors = catalog.insert_children(rows)
    except Exception as error:
        errors = [error] * len(reserved)
    for (at, parts, location), error in zip(reserved, errors, strict=True):
        if error is None:
            continue
        catalog.storage.delete_tree(location)
        if isinstance(error, DuplicateObjectError):
            error = ln.TableAlreadyExistsError(f"Table already exists: '{ids.object_id(parts)}'")
        outcomes[at] = error
    return outcomes


def reserve_table(catalog: Catalog, request: ln.DeclareTableRequest) -> tuple[list[str], str]:
    """The checks of a declare, then its ``.lance-reserved`` marker: the identifier and the location (for
    DeclareTable and BatchCommitTables alike). An existing table, a location that is not empty and a marker
    written first by a concurrent declare are all TableAlreadyExists, as the reference answers."""
    parts = ids.validate_identifier(request.id, "table")
    oid = ids.object_id(parts)
    if not catalog.config.manifest_enabled and len(parts) > 1:
        raise ln.NamespaceNotFoundError(f"Namespace not found: '{ids.object_id(parts[:-1])}'")
    rows = catalog.rows(ids.object_id(parts[:-1]), oid)
    catalog.check_namespace(parts[:-1], rows)
    if oid in rows or catalog.v1_table(parts) is not None:
        raise ln.TableAlreadyExistsError(f"Table already exists: '{oid}'")
    location = ids.table_location(parts, catalog.config.dir_listing_enabled)
    if request.location is not None:
        try:
            key = catalog.storage.key_of(request.location) if "://" in request.location else None
            requested = ids.validate_relative_location(key if key is not None else request.location)
        except ln.InvalidInputError as error:  # say where the table goes, as the reference does, and why
            raise ln.InvalidInputError(
                f"Cannot declare table {oid} at location {request.location}, must be at location "
                f"{catalog.storage.uri(location)} ({error})"
            ) from None
        if not catalog.config.manifest_enabled and requested != location:
            # without a row only the listing finds a table: anywhere else it would be declared and never found
            raise ln.InvalidInputError(
                f"Cannot declare table {oid} at location {request.location}, must be at location "
                f"{catalog.storage.uri(location)}"
            )
        location = requested
    if catalog.storage.list_names(location):  # one listing, names only: a missing directory lists as empty
        raise ln.TableAlreadyExistsError(f"Table already exists: '{oid}' (location '{location}' is not empty)")
    if not catalog.storage.put_if_not_exists(f"{location}/{RESERVED_MARKER}", MARKER_CONTENT):
        raise ln.TableAlreadyExistsError(f"Table already exists: '{oid}' (declared concurrently)")
    return parts, location


def declared_response(catalog: Catalog, request: ln.DeclareTableRequest, location: str) -> ln.DeclareTableResponse:
    """What a declare answers (DeclareTable and BatchCommitTables alike)."""
    return ln.DeclareTableResponse(
        location=catalog.storage.uri(location),
        storage_options=catalog.response_storage_options(location, request),
        properties=dict(request.properties) if request.properties else None,
        managed_versioning=True if catalog.managed() else None,
    )


def create_empty_table(catalog: Catalog, request: ln.CreateEmptyTableRequest) -> ln.CreateEmptyTableResponse:
    """CreateEmptyTable (DeclareTable's predecessor), modes ``create`` and ``exist_ok``. ``overwrite`` (would
    delete data) and per-table ``storage_options`` (one storage configuration per namespace) are refused."""
    mode = ids.create_mode(request.mode, ("create", "exist_ok"), "CreateEmptyTable")
    if request.storage_options:
        raise ln.UnsupportedOperationError("CreateEmptyTable with per-table storage_options is not supported")
    try:
        declared = declare_table(
            catalog, ln.DeclareTableRequest(id=request.id, properties=request.properties, context=request.context)
        )
    except ln.TableAlreadyExistsError:
        if mode == "create":
            raise
        existing = describe_table(catalog, ln.DescribeTableRequest(id=request.id, context=request.context))
        return ln.CreateEmptyTableResponse(
            location=existing.location,
            version=existing.version,
            storage_options=existing.storage_options,
            properties=existing.properties,
        )
    return ln.CreateEmptyTableResponse(
        location=declared.location, storage_options=declared.storage_options, properties=declared.properties
    )


def list_tables(catalog: Catalog, request: ln.ListTablesRequest) -> ln.ListTablesResponse:
    """ListTables: manifest rows one level below the namespace, merged (root, compatibility mode) with the
    ``*.lance`` directories of the root; manifest entries win on duplicates."""
    parts = ids.validate_identifier(request.id, "namespace", allow_root=True)
    if parts and not catalog.config.manifest_enabled:
        raise ln.NamespaceNotFoundError(f"Namespace not found: '{ids.object_id(parts)}'")
    merged = catalog.config.dir_listing_enabled and not parts  # the root in compatibility mode
    names: Iterator[str] = iter(())
    if catalog.config.manifest_enabled:
        catalog.check_namespace(parts, catalog.rows(ids.object_id(parts)))
        # in byte order and lazy: a page reads its names and no more (below the whole listing is merged)
        after = None if merged else request.page_token
        names = catalog.manifest.index(ordered=True).child_names(ids.child_prefix(parts), TABLE, after)
    if merged:
        known = set(names)
        names = iter(known.union(_v1_table_names(catalog, known)))
    if request.include_declared is False:
        names = (
            name for name in names if version_lines.has_manifests(catalog, catalog.find_table([*parts, name], False))
        )
    if merged:
        page, token = ids.paginate(names, request.page_token, request.limit)
    else:
        page, token = ids.paginate_sorted(names, request.limit)
    return ln.ListTablesResponse(tables=page, page_token=token)


def _v1_table_names(catalog: Catalog, known: set[str]) -> list[str]:
    """Root ``*.lance`` directories that are tables: one listing of the root, then one per candidate the
    manifest does not already list."""
    names = []
    for entry in catalog.storage.list_names(""):
        if entry.endswith(ids.TABLE_SUFFIX) and entry != ids.TABLE_SUFFIX:
            name = entry[: -len(ids.TABLE_SUFFIX)]
            if name in known or catalog.v1_table([name]) is not None:
                names.append(name)
    return names


# The schemas of managed table versions by (table URI, version, its ``table_version`` row metadata as stored):
# a row names one committed manifest (path, size, e-tag), which never changes, and a new commit of a number
# writes another row, so a hit agrees with storage. It saves the pylance open of every describe but the first
# of a version (0.5-4 ms on local disk, several GETs on S3; docs/benchmarks.md, "Table version management").
_SCHEMAS: dict[tuple[str, int, str | None], pa.Schema] = {}


def describe_table(catalog: Catalog, request: ln.DescribeTableRequest) -> ln.DescribeTableResponse:
    """DescribeTable: name, location and properties; unless ``load_detailed_metadata=false`` also the version
    and schema from pylance (stats when it is true). ``branch`` describes that branch's line, ``tag`` the
    version (and branch) it names. ``load_detailed_metadata=false`` opens nothing: the version only when known
    without opening. ``check_declared``: a declared table without data answers ``is_only_declared``."""
    parts = ids.validate_identifier(request.id, "table")
    table = catalog.find_table(parts)
    version = None if request.version is None else ids.check_version(request.version)
    branch = request.branch
    if request.tag is not None:
        if request.version is not None or request.branch is not None:
            raise ln.InvalidInputError("DescribeTable takes a tag, or a version and a branch: not both")
        version, branch = tag_target(open_dataset(catalog, table), table, request.tag)
    line, managed = version_lines.branch_line(catalog, table, branch)  # the table itself, or its branch
    if version is None and managed:  # the latest number from the rows and one names-only listing
        version = versions.known_versions(catalog, line, managed).latest
    else:
        external_reader.finish_pending(catalog, table)  # the main line's rows (a branch has none)
    response = ln.DescribeTableResponse(
        table=parts[-1],
        namespace=parts[:-1],
        location=catalog.storage.uri(table.location),
        table_uri=catalog.storage.uri(table.location) if request.with_table_uri else None,
        storage_options=catalog.response_storage_options(table.location, request),
        properties=table.properties,
        managed_versioning=True if managed else None,
    )
    named = request.version is not None or request.tag is not None  # a version that must exist
    if named and (managed or request.load_detailed_metadata is False):
        # TableVersionNotFound when it does not exist (a managed one: its manifest too, not only its row)
        versions.describe(catalog, line, version, managed)
    if request.load_detailed_metadata is False:
        response.version = version
        if request.check_declared and version is None:  # answered only when asked, as the reference does
            response.is_only_declared = not version_lines.has_manifests(catalog, line)
        return response
    # A declared table (no manifest yet) is answered from one listing instead of a failed open; a managed
    # table without a version (no row, no file) has none to open either.
    declared_only = version is None and (managed or not version_lines.has_manifests(catalog, line))
    # A managed version's schema is known from an earlier describe of the same row (no pylance open).
    row = version_lines.version_line(catalog, line).rows.get(version) if managed and version is not None else None
    key = (catalog.storage.uri(line.location), version, row[1]) if row and not request.load_detailed_metadata else None
    schema = _SCHEMAS.get(key) if key else None
    if schema is not None:
        response.version, response.var_schema = version, to_json_schema(schema)
        return response
    dataset = None if declared_only else open_dataset(catalog, line, version, catalog.schema_session)
    if dataset is None:
        if named:
            raise ln.TableVersionNotFoundError(f"Table version not found: '{table.object_id}' v{version}")
        if request.check_declared:
            response.is_only_declared = True
        return response
    response.version = dataset.version
    response.var_schema = to_json_schema(dataset.schema)
    if key and dataset.version == version:
        if len(_SCHEMAS) >= 4096:
            _SCHEMAS.clear()  # threads may race here: at worst a describe opens its table again
        _SCHEMAS[key] = dataset.schema
    if request.load_detailed_metadata:  # asked for explicitly: every detail, stats included
        fragments = [fragment.metadata for fragment in dataset.get_fragments()]
        response.stats = TableBasicStats(
            num_deleted_rows=sum(fragment.num_deletions for fragment in fragments), num_fragments=len(fragments)
        )
    return response


def table_exists(catalog: Catalog, request: ln.TableExistsRequest) -> ln.TableExistsResponse:
    """TableExists: answers if the table (and the requested version) exists, raises otherwise."""
    parts = ids.validate_identifier(request.id, "table")
    listed = request.version is None and catalog.config.dir_listing_enabled and len(parts) == 1
    if listed and catalog.v1_table(parts) is not None:
        return ln.TableExistsResponse()  # a root table found by its directory listing exists anyway
    table = catalog.find_table(parts, listed=listed)  # no second listing of a root table just listed
    external_reader.finish_pending(catalog, table)
    if request.version is not None:
        versions.describe(catalog, table, request.version, catalog.managed())
    return ln.TableExistsResponse()


def register_table(catalog: Catalog, request: ln.RegisterTableRequest) -> ln.RegisterTableResponse:
    """RegisterTable: record an existing table directory (relative to the root) under an identifier.
    V1 only: re-register ``<name>.lance`` by removing its ``.lance-deregistered`` marker."""
    parts = ids.validate_identifier(request.id, "table")
    location = ids.validate_relative_location(request.location)
    oid = ids.object_id(parts)
    storage = catalog.storage
    if not catalog.config.manifest_enabled:
        if len(parts) > 1:
            raise ln.NamespaceNotFoundError(f"Namespace not found: '{ids.object_id(parts[:-1])}'")
        if location != ids.v1_location(parts[0]):
            raise ln.InvalidInputError(
                f"Cannot register table {oid} at location {request.location}, must be at location "
                f"{storage.uri(ids.v1_location(parts[0]))} (directory-listing mode)"
            )
        if catalog.v1_table(parts) is not None:
            raise ln.TableAlreadyExistsError(f"Table already exists: '{oid}'")
        if not storage.exists(f"{location}/{DEREGISTERED_MARKER}"):
            raise ln.TableNotFoundError(f"No deregistered table at '{location}'")
        storage.delete(f"{location}/{DEREGISTERED_MARKER}")
        return ln.RegisterTableResponse(location=request.location, properties=request.properties)
    rows = catalog.rows(ids.object_id(parts[:-1]), oid)
    catalog.check_namespace(parts[:-1], rows)
    if oid in rows or catalog.v1_table(parts) is not None:
        raise ln.TableAlreadyExistsError(f"Table already exists: '{oid}'")
    _check_location_is_free(catalog, location)
    try:
        catalog.insert_child(ManifestRow(oid, TABLE, location, dict(request.properties or {}) or None), parts[:-1])
    except DuplicateObjectError:
        raise ln.TableAlreadyExistsError(f"Table already exists: '{oid}'") from None
    if catalog.is_v1_location(Table(parts, location)):
        storage.delete(f"{location}/{DEREGISTERED_MARKER}")
    return ln.RegisterTableResponse(location=request.location, properties=request.properties)


def _check_location_is_free(catalog: Catalog, location: str) -> None:
    """Two tables never share bytes: the location must not be another table's, nor lie inside or around one
    (a table directory is one with ``_versions/``, or a registered location)."""
    overlap = catalog.manifest.index().location_overlap(location)
    if overlap is not None:
        raise ln.InvalidInputError(f"Invalid location '{location}': it overlaps table '{overlap[1]}' at '{overlap[0]}'")
    for ancestor in ["/".join(location.split("/")[:depth]) for depth in range(1, location.count("/") + 1)]:
        if catalog.storage.list_names(ids.versions_dir(ancestor)):
            raise ln.InvalidInputError(f"Invalid location '{location}': it lies inside the table at '{ancestor}'")


def deregister_table(catalog: Catalog, request: ln.DeregisterTableRequest) -> ln.DeregisterTableResponse:
    """DeregisterTable: V2 deletes the row and keeps the files; V1 writes ``.lance-deregistered`` (also, after
    the row, for a root ``<name>.lance`` table in compatibility mode: the listing must not bring it back)."""
    parts = ids.validate_identifier(request.id, "table")
    table = catalog.find_table(parts)
    marker = f"{table.location}/{DEREGISTERED_MARKER}"
    if table.row is not None:
        _delete_table_rows(catalog, table)
        if catalog.is_v1_location(table):
            catalog.storage.put_if_not_exists(marker, MARKER_CONTENT)
    elif not catalog.storage.put_if_not_exists(marker, MARKER_CONTENT):
        raise ln.TableNotFoundError(f"Table not found: '{table.object_id}' (deregistered concurrently)")
    return ln.DeregisterTableResponse(
        id=parts, location=catalog.storage.uri(table.location), properties=table.properties
    )


def drop_table(catalog: Catalog, request: ln.DropTableRequest) -> ln.DropTableResponse:
    """DropTable: V2 deletes the row (the commit point) then the directory; V1 deletes the directory and fails
    if anything is left."""
    parts = ids.validate_identifier(request.id, "table")
    table = catalog.find_table(parts)
    storage = catalog.storage
    if table.row is not None:
        _delete_table_rows(catalog, table)
        # The row is gone, so the drop has succeeded: a failure to delete files leaves them unreachable.
        with contextlib.suppress(OSError):
            storage.delete_tree(table.location)
    else:
        storage.delete_tree(table.location)
        if storage.list_dir(table.location):
            raise ln.InternalError(f"Drop of '{table.object_id}' left files behind; retry the drop")
        # A table found by directory listing has no table row but may have table_version rows (managed commits
        # through this engine): left behind, they would block commits to a re-created table.
        if catalog.config.manifest_enabled and version_lines.version_rows(catalog, [table])[0]:
            catalog.manifest.delete_table_versions(table.object_id)
    return ln.DropTableResponse(id=parts, location=storage.uri(table.location), properties=table.properties)


def _delete_table_rows(catalog: Catalog, table: Table) -> None:
    """Delete a table row and its ``table_version`` rows in one commit; TableNotFound if a concurrent call
    won."""
    if catalog.manifest.delete_table(table.object_id) == 0:
        raise ln.TableNotFoundError(f"Table not found: '{table.object_id}' (removed concurrently)")
