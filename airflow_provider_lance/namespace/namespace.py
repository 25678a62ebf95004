"""``DirectoryNamespace``: the Lance Directory Namespace (seed 000) as a ``lance_namespace.LanceNamespace``.

A thin facade: each spec operation is a function of the module named after its area (namespaces.py,
tables.py, versions.py, delete_versions.py, commit.py), and
:func:`~airflow_provider_lance.namespace.operation.operation` makes it a method (request coercion, error codes,
thread hand-off).
"""

from __future__ import annotations

from typing import Any

import lance_namespace as ln

from airflow_provider_lance.namespace import (
    batch_commit,
    commit,
    delete_versions,
    external_reader,
    namespaces,
    rename,
    tables,
    versions,
)
from airflow_provider_lance.namespace.catalog import Catalog
from airflow_provider_lance.namespace.changes import ChangeFeed, ChangesPage
from airflow_provider_lance.namespace.concurrency import run_on_python_thread
from airflow_provider_lance.namespace.config import NamespaceConfig
from airflow_provider_lance.namespace.data import branches, indices, reads, schema_changes, tags, writes
from airflow_provider_lance.namespace.operation import coerce_request, namespace_errors, operation


class DirectoryNamespace(ln.LanceNamespace):
    """The Lance Directory Namespace over fsspec storage, constructed like the reference:
    ``DirectoryNamespace(root="s3://bucket/prefix", **{"storage.region": ...})`` (properties: docs/engine.md).
    Construction touches no storage. Another process finds it by its class path,
    ``airflow_provider_lance.namespace.DirectoryNamespace`` (``lance_namespace.connect``).
    """

    def __init__(self, **properties: Any) -> None:
        self.catalog = Catalog(NamespaceConfig.from_properties(properties), facade=self)
        self.config = self.catalog.config
        self.storage = self.catalog.storage
        self.manifest = self.catalog.manifest
        self._feed = ChangeFeed(self.catalog)

    def namespace_id(self) -> str:
        """``DirectoryNamespace { root: "<root>" }`` like the reference (a local root as a plain path)."""
        return f'DirectoryNamespace {{ root: "{self.catalog.storage.display_root()}" }}'

    def finalize_pending_versions(self) -> list[tuple[list[str], int]]:
        """Finish every committed table version still pointing at its staged manifest (a committer stopped
        between the commit point and the copy): afterwards path-based readers (``lance.dataset(location)``,
        Spark, the reference) see it. Returns the (table id, version) pairs finished."""
        with (
            namespace_errors("finalize_pending_versions", self.catalog.storage.root),
            self.catalog.manifest.operation(),
        ):
            return external_reader.finish_all_pending(self.catalog)

    def declare_tables(self, requests: list[Any]) -> list[Any]:
        """DeclareTable for many requests in one call (models or dicts), their rows in one ``__manifest``
        commit: a response or a ``lance_namespace`` error for each, as separate calls would answer. The REST
        server sends the declares that arrive together through it."""
        parsed: list[Any] = []
        for request in requests:
            try:
                parsed.append(coerce_request(request, ln.DeclareTableRequest))
            except ln.InvalidInputError as error:
                parsed.append(error)
        valid = [request for request in parsed if not isinstance(request, BaseException)]
        with namespace_errors("declare_table", self.catalog.storage.root), self.catalog.manifest.operation():
            outcomes = iter(tables.declare_tables(self.catalog, valid))
        return [request if isinstance(request, BaseException) else next(outcomes) for request in parsed]

    def batch_delete_versions_of_tables(self, requests: list[Any]) -> list[ln.BatchDeleteTableVersionsResponse]:
        """BatchDeleteTableVersions for several tables in one call (models or dicts; one table per request):
        every request is checked before anything is deleted, then the manifests of every table go, then the
        rows of every table in one ``__manifest`` commit. Scheduled clean-up of many tables (the hook and
        ``LanceBatchDeleteTableVersionsOperator`` use it when the namespace offers it)."""
        parsed = [coerce_request(request, ln.BatchDeleteTableVersionsRequest) for request in requests]
        with (
            namespace_errors("batch_delete_table_versions", self.catalog.storage.root),
            self.catalog.manifest.operation(),
        ):
            return delete_versions.batch_delete_versions_of_tables(self.catalog, parsed)

    def changes(self, since: str | None = None, limit: int | None = None, back: int | None = None) -> ChangesPage:
        """The catalog's change feed (ours, not the spec's; docs/change-feed.md): every commit to ``__manifest``
        after the cursor ``since``, oldest first, and the cursor to resume from. An idle poll is one storage
        request; a cursor older than the kept history raises ``CursorExpiredError`` (resynchronise).

        :param since: a cursor answered before; None starts from now.
        :param limit: the most changes to answer.
        :param back: instead of ``since``: the changes of the last ``back`` ``__manifest`` versions kept.
        """
        with namespace_errors("changes", self.catalog.storage.root), self.catalog.manifest.operation():
            return run_on_python_thread(lambda: self._feed.changes(since, limit, back))

    def __repr__(self) -> str:
        return f"DirectoryNamespace(root={self.config.root!r})"

    # namespaces
    create_namespace = operation(namespaces.create_namespace)
    list_namespaces = operation(namespaces.list_namespaces)
    describe_namespace = operation(namespaces.describe_namespace)
    namespace_exists = operation(namespaces.namespace_exists)
    drop_namespace = operation(namespaces.drop_namespace)

    # tables
    declare_table = operation(tables.declare_table)
    create_empty_table = operation(tables.create_empty_table)
    list_tables = operation(tables.list_tables)
    describe_table = operation(tables.describe_table)
    table_exists = operation(tables.table_exists)
    register_table = operation(tables.register_table)
    deregister_table = operation(tables.deregister_table)
    drop_table = operation(tables.drop_table)

    # table versions
    create_table_version = operation(commit.create_table_version)
    batch_create_table_versions = operation(commit.batch_create_table_versions)
    list_table_versions = operation(versions.list_table_versions)
    describe_table_version = operation(versions.describe_table_version)
    batch_delete_table_versions = operation(delete_versions.batch_delete_table_versions)
    batch_commit_tables = operation(batch_commit.batch_commit_tables)

    # data plane
    create_table = operation(writes.create_table)
    insert_into_table = operation(writes.insert_into_table)
    merge_insert_into_table = operation(writes.merge_insert_into_table)
    update_table = operation(writes.update_table)
    delete_from_table = operation(writes.delete_from_table)
    count_table_rows = operation(reads.count_table_rows)
    query_table = operation(reads.query_table)
    explain_table_query_plan = operation(reads.explain_table_query_plan)
    analyze_table_query_plan = operation(reads.analyze_table_query_plan)
    get_table_stats = operation(reads.get_table_stats)
    describe_transaction = operation(reads.describe_transaction)
    alter_transaction = operation(reads.alter_transaction)
    list_all_tables = operation(reads.list_all_tables)
    create_table_index = operation(indices.create_table_index)
    create_table_scalar_index = operation(indices.create_table_scalar_index)
    list_table_indices = operation(indices.list_table_indices)
    describe_table_index_stats = operation(indices.describe_table_index_stats)
    drop_table_index = operation(indices.drop_table_index)
    create_table_tag = operation(tags.create_table_tag)
    list_table_tags = operation(tags.list_table_tags)
    get_table_tag_version = operation(tags.get_table_tag_version)
    update_table_tag = operation(tags.update_table_tag)
    delete_table_tag = operation(tags.delete_table_tag)
    create_table_branch = operation(branches.create_table_branch)
    list_table_branches = operation(branches.list_table_branches)
    delete_table_branch = operation(branches.delete_table_branch)
    restore_table = operation(branches.restore_table)
    update_table_schema_metadata = operation(schema_changes.update_table_schema_metadata)
    alter_table_add_columns = operation(schema_changes.alter_table_add_columns)
    alter_table_alter_columns = operation(schema_changes.alter_table_alter_columns)
    alter_table_drop_columns = operation(schema_changes.alter_table_drop_columns)
    rename_table = operation(rename.rename_table)
