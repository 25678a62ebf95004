"""Table administration operations of ``LanceHook`` (a mixin): indices, tags, branches, restore, schema, rename."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from airflow_provider_lance.hooks.data import TableId
from airflow_provider_lance.utils.identifiers import parse_identifier


class LanceTableAdminMixin:
    """Indices, tags, branches, restore, schema changes and rename: one thin method per namespace operation."""

    _call: Callable[[str, Any], Any]

    # ------------------------------------------------------------------ indices

    def create_table_index(
        self, table_id: TableId, column: str, index_type: str, name: str | None = None, **options: Any
    ) -> Any:
        """
        Build an index on a column.

        :param table_id: Table identifier.
        :param column: The column.
        :param index_type: e.g. ``BTREE``, ``BITMAP``, ``IVF_PQ``, ``FTS``.
        :param name: Index name.
        :param options: Other ``CreateTableIndexRequest`` fields (``num_partitions`` ...).
        """
        import lance_namespace as ln

        request = ln.CreateTableIndexRequest(
            id=parse_identifier(table_id), column=column, index_type=index_type, name=name, **options
        )
        return self._call("create_table_index", request)

    def list_table_indices(self, table_id: TableId) -> list[Any]:
        """
        List the indices of a table.

        :param table_id: Table identifier.
        """
        import lance_namespace as ln

        response = self._call("list_table_indices", ln.ListTableIndicesRequest(id=parse_identifier(table_id)))
        return list(response.indexes or [])

    def drop_table_index(self, table_id: TableId, index_name: str) -> Any:
        """
        Drop an index.

        :param table_id: Table identifier.
        :param index_name: The index.
        """
        import lance_namespace as ln

        request = ln.DropTableIndexRequest(id=parse_identifier(table_id), index_name=index_name)
        return self._call("drop_table_index", request)

    # ------------------------------------------------------------------ tags, branches, restore

    def create_table_tag(self, table_id: TableId, tag: str, version: int) -> Any:
        """
        Tag a version of a table.

        :param table_id: Table identifier.
        :param tag: Tag name.
        :param version: The version to tag.
        """
        import lance_namespace as ln

        request = ln.CreateTableTagRequest(id=parse_identifier(table_id), tag=tag, version=int(version))
        return self._call("create_table_tag", request)

    def update_table_tag(self, table_id: TableId, tag: str, version: int) -> Any:
        """
        Move a tag to another version.

        :param table_id: Table identifier.
        :param tag: Tag name.
        :param version: The version the tag points at afterwards.
        """
        import lance_namespace as ln

        request = ln.UpdateTableTagRequest(id=parse_identifier(table_id), tag=tag, version=int(version))
        return self._call("update_table_tag", request)

    def list_table_tags(self, table_id: TableId) -> dict[str, int]:
        """
        Return the tags of a table as ``{tag: version}``.

        :param table_id: Table identifier.
        """
        import lance_namespace as ln

        response = self._call("list_table_tags", ln.ListTableTagsRequest(id=parse_identifier(table_id)))
        tags = response.tags or {}
        return {name: int(content.version) for name, content in tags.items()}

    def get_table_tag_version(self, table_id: TableId, tag: str) -> int:
        """
        Return the version a tag points at.

        :param table_id: Table identifier.
        :param tag: Tag name.
        """
        import lance_namespace as ln

        request = ln.GetTableTagVersionRequest(id=parse_identifier(table_id), tag=tag)
        return int(self._call("get_table_tag_version", request).version)

    def delete_table_tag(self, table_id: TableId, tag: str) -> Any:
        """
        Delete a tag (the version stays).

        :param table_id: Table identifier.
        :param tag: Tag name.
        """
        import lance_namespace as ln

        return self._call("delete_table_tag", ln.DeleteTableTagRequest(id=parse_identifier(table_id), tag=tag))

    def create_table_branch(self, table_id: TableId, name: str, from_version: int | None = None) -> Any:
        """
        Create a branch of a table.

        :param table_id: Table identifier.
        :param name: Branch name.
        :param from_version: Version to branch from (the latest by default).
        """
        import lance_namespace as ln

        request = ln.CreateTableBranchRequest(id=parse_identifier(table_id), name=name, from_version=from_version)
        return self._call("create_table_branch", request)

    def list_table_branches(self, table_id: TableId) -> list[str]:
        """
        Return the branch names of a table.

        :param table_id: Table identifier.
        """
        import lance_namespace as ln

        response = self._call("list_table_branches", ln.ListTableBranchesRequest(id=parse_identifier(table_id)))
        return sorted(response.branches or {})

    def delete_table_branch(self, table_id: TableId, name: str) -> Any:
        """
        Delete a branch.

        :param table_id: Table identifier.
        :param name: Branch name.
        """
        import lance_namespace as ln

        request = ln.DeleteTableBranchRequest(id=parse_identifier(table_id), name=name)
        return self._call("delete_table_branch", request)

    def restore_table(self, table_id: TableId, version: int) -> Any:
        """
        Make an old version the latest again (commits a new version with its content).

        :param table_id: Table identifier.
        :param version: The version to restore.
        """
        import lance_namespace as ln

        request = ln.RestoreTableRequest(id=parse_identifier(table_id), version=int(version))
        return self._call("restore_table", request)

    def restore_tables(self, targets: Sequence[tuple[TableId, int]]) -> bool:
        """
        Restore several tables to old versions. With table version management this is one atomic step: a
        Restore of each table is staged (nothing visible) and all are committed with one
        ``batch_create_table_versions``. Otherwise each table is restored on its own (``restore_table``).

        :param targets: ``(table, version to restore)`` pairs.
        :return: whether the restores were committed as one atomic step.
        """
        from airflow_provider_lance.staging import StagingNamespace, commit_entries, stage_restore

        pairs = [(parse_identifier(table), int(version)) for table, version in targets]
        if len(pairs) > 1 and self.manages_versions(pairs[0][0]):
            staging = StagingNamespace(self.namespace)
            entries = [stage_restore(self.namespace, table, version, staging=staging) for table, version in pairs]
            commit_entries(self.namespace, entries)
            return True
        for table, version in pairs:
            self.restore_table(table, version)
        return len(pairs) <= 1

    # ------------------------------------------------------------------ schema, rename

    def alter_table_add_columns(self, table_id: TableId, columns: dict[str, str]) -> Any:
        """
        Add columns computed from SQL expressions over the existing ones.

        :param table_id: Table identifier.
        :param columns: ``{new column: SQL expression}``.
        """
        import lance_namespace as ln

        entries = [{"name": name, "expression": expression} for name, expression in columns.items()]
        request = ln.AlterTableAddColumnsRequest(id=parse_identifier(table_id), new_columns=entries)
        return self._call("alter_table_add_columns", request)

    def alter_table_drop_columns(self, table_id: TableId, columns: list[str]) -> Any:
        """
        Drop columns.

        :param table_id: Table identifier.
        :param columns: Column names.
        """
        import lance_namespace as ln

        request = ln.AlterTableDropColumnsRequest(id=parse_identifier(table_id), columns=list(columns))
        return self._call("alter_table_drop_columns", request)

    def rename_table(self, table_id: TableId, new_table_name: str, new_namespace_id: TableId | None = None) -> Any:
        """
        Rename a table, optionally moving it to another namespace.

        :param table_id: Table identifier.
        :param new_table_name: The new last part of the identifier.
        :param new_namespace_id: The namespace to move it to (its own by default).
        """
        import lance_namespace as ln

        request = ln.RenameTableRequest(
            id=parse_identifier(table_id),
            new_table_name=new_table_name,
            new_namespace_id=None if new_namespace_id is None else parse_identifier(new_namespace_id),
        )
        return self._call("rename_table", request)
