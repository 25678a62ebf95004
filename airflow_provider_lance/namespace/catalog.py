"""The catalog one ``DirectoryNamespace`` works on (configuration, storage and ``__manifest`` of one root), and
the lookups every operation starts with: is the parent a namespace, where is this table, are versions managed.

Table existence (the seeds disagree, seed 001 asks for a non-empty ``_versions/`` and seed 000 counts declared
tables): a table exists when its manifest row exists, or, for a root table in directory-listing mode, when
``<name>.lance`` has at least one entry and no ``.lance-deregistered`` marker. Declared tables therefore
exist for TableExists, ListTables and DescribeTable (the reference agrees); operations that need data
(DescribeTable of a version, the version operations) treat a table without ``_versions/`` as having none.
"""

from __future__ import annotations

import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import lance
import lance_namespace as ln

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.config import NamespaceConfig
from airflow_provider_lance.namespace.credentials import CredentialVendor
from airflow_provider_lance.namespace.group_commit import MissingParentError
from airflow_provider_lance.namespace.manifest import ManifestTable
from airflow_provider_lance.namespace.manifest_rows import NAMESPACE, TABLE, TABLE_VERSION_MANAGEMENT_KEY, ManifestRow
from airflow_provider_lance.namespace.rows_store import RowsStore
from airflow_provider_lance.namespace.snapshots import SnapshotStore
from airflow_provider_lance.namespace.storage import Storage
from airflow_provider_lance.namespace.tuning import SCHEMA_SESSION_BYTES

# Markers (seed 000): only their existence matters; the reference writes these 8 bytes.
RESERVED_MARKER = ".lance-reserved"
DEREGISTERED_MARKER = ".lance-deregistered"
MARKER_CONTENT = b"reserved"


@dataclass(frozen=True)
class Table:
    """A located table: its identifier, its directory (key relative to the root) and its manifest row
    (None for a table found only by directory listing)."""

    parts: list[str]
    location: str
    row: ManifestRow | None = None

    @property
    def object_id(self) -> str:
        return ids.object_id(self.parts)

    @property
    def properties(self) -> dict[str, str] | None:
        return self.row.metadata if self.row and self.row.metadata else None


class Catalog:
    """Configuration, storage and ``__manifest`` of one namespace root, for the ``DirectoryNamespace`` that owns
    it (``facade``, held weakly)."""

    def __init__(self, config: NamespaceConfig, facade: ln.LanceNamespace) -> None:
        self.config = config
        self._facade = weakref.ref(facade)
        self.storage = Storage(config.root, config.storage_options)
        store = RowsStore.of(self.storage, config.manifest_cache_dir, config.rows_object_max_rows)
        snapshots = SnapshotStore(self.storage, store, config.check_rows)
        self.manifest = ManifestTable(self.storage, config.commit_retries, config.maintenance, snapshots)
        # STS scopes credentials to S3 prefixes only: another root answers none (docs/engine.md, "Secrets")
        self.vendor = None
        if config.credential_vendor is not None and self.storage.scoped_credentials:
            self.vendor = CredentialVendor(config.credential_vendor, config.storage_options)
        self._session: tuple[int, lance.Session] | None = None  # (pid, session): see ``schema_session``
        self._session_lock = threading.Lock()

    @property
    def schema_session(self) -> lance.Session:
        """The pylance session of this instance's opens of a table version for its schema (DescribeTable): its
        caches, shared by every thread, halve the CPU of opening a version first seen (~0.2 -> ~0.1 ms on local
        disk, issue 42). Lance keys a cached manifest by its file's e-tag, so a table dropped and re-created at the
        same location is read afresh (tests/namespace/test_describe_session.py). A forked child makes its own."""
        with self._session_lock:
            if self._session is None or self._session[0] != os.getpid():
                session = lance.Session(index_cache_size_bytes=0, metadata_cache_size_bytes=SCHEMA_SESSION_BYTES)
                self._session = (os.getpid(), session)
            return self._session[1]

    @property
    def facade(self) -> ln.LanceNamespace:
        """The namespace pylance commits a managed write through (``namespace_client``): its callbacks are the
        facade's operations."""
        facade = self._facade()
        if facade is None:  # collected: the catalog outlived its namespace
            raise ln.InternalError("This catalog has no DirectoryNamespace to commit managed writes through")
        return facade

    # -- modes ------------------------------------------------------------------------------------------
    def require_manifest(self, operation: str) -> None:
        if not self.config.manifest_enabled:
            raise ln.UnsupportedOperationError(f"{operation} needs the manifest (manifest_enabled=true)")

    def managed(self) -> bool:
        """Table version management: on when the constructor asked for it or ``__manifest`` says so."""
        if not self.config.manifest_enabled:
            return False
        return bool(self.config.table_version_management) or self._management_persisted()

    def _management_persisted(self) -> bool:
        return self.manifest.metadata().get(TABLE_VERSION_MANAGEMENT_KEY) == "true"

    def persist_management(self) -> None:
        """Record in ``__manifest`` the table version management the constructor asked for (before a row)."""
        if self.config.table_version_management and not self._management_persisted():
            self.manifest.update_metadata({TABLE_VERSION_MANAGEMENT_KEY: "true"})

    def response_storage_options(self, location: str, request: Any) -> dict[str, str] | None:
        """Storage options for a response about the table at ``location`` (a key), with credentials unless the
        request declines them (``vend_credentials``; unset = ``credential_vendor.vend_by_default``): temporary
        ones scoped to the table (``credential_vendor.enabled``, S3 roots), else the namespace's own
        (``credential_vending_enabled``, in-process callers only)."""
        asked = getattr(request, "vend_credentials", None)
        vendor_config = self.config.credential_vendor
        if vendor_config is None:
            return self.storage.response_options(self.config.credential_vending and asked is not False)
        shared = self.storage.response_options(False) or {}
        if self.vendor is None or asked is False or (asked is None and not vendor_config.vend_by_default):
            return shared or None
        vended = self.vendor.vend(
            self.storage.bucket, self.storage.object_path(location), self.vendor.level(request.context)
        )
        return {
            **shared,
            **vended.options,
            "expires_at_millis": str(vended.expires_at_millis),
            "refresh_offset_millis": str(vended.refresh_offset_millis),
        }

    # -- namespaces -------------------------------------------------------------------------------------
    def rows(self, *object_ids: str) -> dict[str, ManifestRow]:
        """The manifest rows of these ids (the root's '' is skipped; nothing without a manifest)."""
        return self.manifest.get_many(oid for oid in object_ids if oid) if self.config.manifest_enabled else {}

    def check_namespace(self, parts: list[str], rows: dict[str, ManifestRow]) -> None:
        """NamespaceNotFound unless ``parts`` is the root or a namespace row in ``rows``."""
        if not parts:
            return
        row = rows.get(ids.object_id(parts))
        if row is None or row.object_type != NAMESPACE:
            raise ln.NamespaceNotFoundError(f"Namespace not found: '{ids.object_id(parts)}'")

    def insert_child(self, row: ManifestRow, parent: list[str]) -> None:
        """Insert one row under ``parent``, persisting table version management first when the constructor
        asked for it. The parent's row is looked for in the version the insert commits on top of (a guarded
        append: nothing commits in between), so a concurrent DropNamespace either committed first (the insert
        fails: NamespaceNotFound) or finds the child when it looks again after its own write."""
        error = self.insert_children([(row, parent)])[0]
        if error is not None:
            raise error

    def insert_children(self, children: list[tuple[ManifestRow, list[str]]]) -> list[BaseException | None]:
        """:meth:`insert_child` for each (row, parent), in the same group commit; each one's error (None:
        inserted)."""
        self.persist_management()
        errors = self.manifest.insert_each(
            [row for row, _ in children], [ids.object_id(parent) for _, parent in children]
        )
        return [
            ln.NamespaceNotFoundError(f"Namespace not found: '{error.object_id}' (dropped concurrently)")
            if isinstance(error, MissingParentError)
            else error
            for error in errors
        ]

    # -- tables -----------------------------------------------------------------------------------------
    def v1_table(self, parts: list[str]) -> Table | None:
        """Directory-listing lookup of a root table: ``<name>.lance`` with an entry and no deregistered
        marker (one listing)."""
        if not (self.config.dir_listing_enabled and len(parts) == 1):
            return None
        location = ids.v1_location(parts[0])
        names = self.storage.list_names(location)
        if not names or DEREGISTERED_MARKER in names:
            return None
        return Table(parts, location)

    def is_v1_location(self, table: Table) -> bool:
        """Whether the directory listing also sees this table (a root ``<name>.lance`` directory)."""
        return (
            self.config.dir_listing_enabled
            and len(table.parts) == 1
            and table.location == ids.v1_location(table.parts[0])
        )

    def find_table(
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
            rows = self.rows(ids.object_id(parts[:-1]), table_oid)
        if check_parent:
            self.check_namespace(parts[:-1], rows)
        row = rows.get(table_oid)
        if row is not None and row.object_type == TABLE and row.location:
            return Table(parts, row.location, row)
        table = None if listed else self.v1_table(parts)
        if table is None:
            raise ln.TableNotFoundError(f"Table not found: '{table_oid}'")
        return table
