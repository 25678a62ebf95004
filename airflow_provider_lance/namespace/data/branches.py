"""Table branches and restore: CreateTableBranch, ListTableBranches, DeleteTableBranch, RestoreTable.

Branches are pylance's (``tree/<name>/``). With table version management pylance commits a branch's versions
through the facade too; ``__manifest`` records the main line only, a branch's versions are its files (version_lines.py).
"""

from __future__ import annotations

import lance_namespace as ln
from lance_namespace_urllib3_client.models import BranchContents

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.catalog import Catalog
from airflow_provider_lance.namespace.data.access import (
    check_branch,
    locate,
    pylance_errors,
    table_dataset,
    transaction_id,
    write_dataset,
)
from airflow_provider_lance.namespace.version_lines import is_main


def create_table_branch(catalog: Catalog, request: ln.CreateTableBranchRequest) -> ln.CreateTableBranchResponse:
    """CreateTableBranch: branch ``name`` off ``from_version`` (default: the latest) of ``from_branch``
    (default: main)."""
    table = locate(catalog, request.id)
    dataset = write_dataset(catalog, table)
    if request.name in dataset.branches.list():
        raise ln.TableBranchAlreadyExistsError(f"Table branch already exists: '{request.name}' of '{table.object_id}'")
    from_branch = None if is_main(request.from_branch) else request.from_branch
    if from_branch is not None:
        check_branch(dataset, table, from_branch)
    with pylance_errors(f"branch of '{table.object_id}'", request.name):
        dataset.create_branch(request.name, (from_branch, request.from_version))
    return ln.CreateTableBranchResponse()


def list_table_branches(catalog: Catalog, request: ln.ListTableBranchesRequest) -> ln.ListTableBranchesResponse:
    """ListTableBranches: branches by name with their parent branch and version, creation time (seconds)
    and manifest size, paged by name."""
    table = locate(catalog, request.id)
    branches = table_dataset(catalog, table).branches.list()
    page, token = ids.paginate(branches, request.page_token, request.limit)
    contents = {
        name: BranchContents(
            parent_branch=branches[name]["parent_branch"],
            parent_version=branches[name]["parent_version"],
            create_at=branches[name]["create_at"],
            manifest_size=branches[name]["manifest_size"],
            metadata=branches[name]["metadata"] or None,
        )
        for name in page
    }
    return ln.ListTableBranchesResponse(branches=contents, page_token=token)


def delete_table_branch(catalog: Catalog, request: ln.DeleteTableBranchRequest) -> ln.DeleteTableBranchResponse:
    """DeleteTableBranch: remove a branch and its versions (TableBranchNotFound if there is none)."""
    table = locate(catalog, request.id)
    dataset = table_dataset(catalog, table)
    check_branch(dataset, table, request.name)
    with pylance_errors(f"branch of '{table.object_id}'", request.name):
        dataset.branches.delete(request.name)
    return ln.DeleteTableBranchResponse()


def restore_table(catalog: Catalog, request: ln.RestoreTableRequest) -> ln.RestoreTableResponse:
    """RestoreTable: make ``version`` (of ``branch``) the latest again, as a new version."""
    table = locate(catalog, request.id)
    dataset = write_dataset(catalog, table, request.branch)
    with pylance_errors(f"restore of '{table.object_id}'"):
        restored = dataset.checkout_version((request.branch, request.version))
        restored.restore()
    return ln.RestoreTableResponse(transaction_id=transaction_id(restored))
