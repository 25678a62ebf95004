"""Namespace operations (seed 000): CreateNamespace, ListNamespaces, DescribeNamespace, NamespaceExists,
DropNamespace. Namespaces exist only in the manifest (V2); in directory-listing mode only the root exists."""

from __future__ import annotations

import lance_namespace as ln

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.catalog import Catalog
from airflow_provider_lance.namespace.manifest import DuplicateObjectError
from airflow_provider_lance.namespace.manifest_rows import NAMESPACE, ManifestRow

# CreateNamespace modes (ids.create_mode) and DropNamespace modes and behaviors.
CREATE, EXIST_OK, OVERWRITE = "create", "exist_ok", "overwrite"
DROP_FAIL, DROP_SKIP = "fail", "skip"
RESTRICT, CASCADE = "restrict", "cascade"


def create_namespace(catalog: Catalog, request: ln.CreateNamespaceRequest) -> ln.CreateNamespaceResponse:
    """CreateNamespace (V2 only): check the parent, then merge-insert the namespace row."""
    parts = ids.validate_identifier(request.id, "namespace", allow_root=True)
    mode = ids.create_mode(request.mode, (CREATE, EXIST_OK, OVERWRITE), "CreateNamespace")
    if not parts:
        raise ln.NamespaceAlreadyExistsError("Namespace already exists: the root namespace always exists")
    catalog.require_manifest("CreateNamespace")
    oid = ids.object_id(parts)
    rows = catalog.rows(ids.object_id(parts[:-1]), oid)
    catalog.check_namespace(parts[:-1], rows)
    existing = rows.get(oid)
    if existing is not None:
        if existing.object_type != NAMESPACE:
            raise ln.NamespaceAlreadyExistsError(f"A table already uses the identifier '{oid}'")
        if mode == EXIST_OK:
            return ln.CreateNamespaceResponse(properties=existing.metadata or {})
        if mode == CREATE:
            raise ln.NamespaceAlreadyExistsError(f"Namespace already exists: '{oid}'")
    row = ManifestRow(oid, NAMESPACE, None, dict(request.properties or {}) or None)
    if existing is not None:  # overwrite: replace the properties
        catalog.manifest.upsert([row])
    else:
        try:
            catalog.insert_child(row, parts[:-1])
        except DuplicateObjectError:
            if mode == EXIST_OK:
                return ln.CreateNamespaceResponse(properties=catalog.manifest.get(oid).metadata or {})
            raise ln.NamespaceAlreadyExistsError(f"Namespace already exists: '{oid}'") from None
    return ln.CreateNamespaceResponse(properties=dict(request.properties) if request.properties else None)


def list_namespaces(catalog: Catalog, request: ln.ListNamespacesRequest) -> ln.ListNamespacesResponse:
    """ListNamespaces: V1 has none; V2 lists namespace rows exactly one level below the parent."""
    parts = ids.validate_identifier(request.id, "namespace", allow_root=True)
    if not catalog.config.manifest_enabled:
        if parts:
            raise ln.NamespaceNotFoundError(f"Namespace not found: '{ids.object_id(parts)}'")
        return ln.ListNamespacesResponse(namespaces=[])
    catalog.check_namespace(parts, catalog.rows(ids.object_id(parts)))
    names = catalog.manifest.index(ordered=True).child_names(ids.child_prefix(parts), NAMESPACE, request.page_token)
    page, token = ids.paginate_sorted(names, request.limit)
    return ln.ListNamespacesResponse(namespaces=page, page_token=token)


def describe_namespace(catalog: Catalog, request: ln.DescribeNamespaceRequest) -> ln.DescribeNamespaceResponse:
    """DescribeNamespace: the namespace row's metadata as properties (the root has none)."""
    parts = ids.validate_identifier(request.id, "namespace", allow_root=True)
    if not parts:
        return ln.DescribeNamespaceResponse(properties={})
    rows = catalog.rows(ids.object_id(parts))
    catalog.check_namespace(parts, rows)
    return ln.DescribeNamespaceResponse(properties=rows[ids.object_id(parts)].metadata or {})


def namespace_exists(catalog: Catalog, request: ln.NamespaceExistsRequest) -> ln.NamespaceExistsResponse:
    """NamespaceExists: answers if it exists, raises NamespaceNotFound otherwise."""
    parts = ids.validate_identifier(request.id, "namespace", allow_root=True)
    catalog.check_namespace(parts, catalog.rows(ids.object_id(parts)))
    return ln.NamespaceExistsResponse()


def drop_namespace(catalog: Catalog, request: ln.DropNamespaceRequest) -> ln.DropNamespaceResponse:
    """DropNamespace (V2 only): must exist and be empty, then its row is deleted. Cascade is refused."""
    parts = ids.validate_identifier(request.id, "namespace", allow_root=True)
    mode = (request.mode or DROP_FAIL).lower()
    behavior = (request.behavior or RESTRICT).lower()
    if mode not in (DROP_FAIL, DROP_SKIP) or behavior not in (RESTRICT, CASCADE):
        raise ln.InvalidInputError(f"Invalid drop mode '{request.mode}' or behavior '{request.behavior}'")
    if behavior == CASCADE:
        raise ln.UnsupportedOperationError("DropNamespace with behavior 'cascade' is not supported")
    if not parts:
        raise ln.InvalidInputError("The root namespace cannot be dropped")
    catalog.require_manifest("DropNamespace")
    oid = ids.object_id(parts)
    rows = catalog.rows(oid)
    try:
        catalog.check_namespace(parts, rows)
    except ln.NamespaceNotFoundError:
        if mode == DROP_SKIP:
            return ln.DropNamespaceResponse()
        raise
    if catalog.manifest.index().has_descendants(ids.child_prefix(parts)):
        raise ln.NamespaceNotEmptyError(f"Namespace not empty: '{oid}'")
    deleted = catalog.manifest.delete_object(oid, NAMESPACE)
    if deleted == 0 and mode != DROP_SKIP:
        raise ln.NamespaceNotFoundError(f"Namespace not found: '{oid}' (dropped concurrently)")
    if deleted and catalog.manifest.index().has_descendants(ids.child_prefix(parts)):
        # A child was added concurrently (see Catalog.insert_child): put the namespace back.
        catalog.manifest.insert([rows[oid]])
        raise ln.NamespaceNotEmptyError(f"Namespace not empty: '{oid}' (a child was added concurrently)")
    return ln.DropNamespaceResponse()
