"""Table tags: CreateTableTag, ListTableTags, GetTableTagVersion, UpdateTableTag, DeleteTableTag.

A tag names a version (of the main line, or of ``branch``); tags are pylance's (``_refs/tags/``), so any
Lance reader sees them. Creating, moving or deleting a tag makes no table version.
"""

from __future__ import annotations

import lance
import lance_namespace as ln
from lance_namespace_urllib3_client.models import TagContents

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.catalog import Catalog, Table
from airflow_provider_lance.namespace.data.access import (
    check_branch,
    locate,
    pylance_errors,
    table_dataset,
    tag_not_found,
    tag_target,
)


def _tagged(catalog: Catalog, identifier: list[str] | None) -> tuple[Table, lance.LanceDataset, dict]:
    """The table, its dataset and its tags by name."""
    table = locate(catalog, identifier)
    dataset = table_dataset(catalog, table)
    return table, dataset, dataset.tags.list()


def _reference(dataset: lance.LanceDataset, table: Table, version: int, branch: str | None) -> object:
    """What a tag points at: a main-line version, or ``(branch, version)``."""
    if branch is None:
        return version
    check_branch(dataset, table, branch)
    return (branch, version)


def create_table_tag(catalog: Catalog, request: ln.CreateTableTagRequest) -> ln.CreateTableTagResponse:
    """CreateTableTag: name ``version`` (of ``branch``) ``tag``; TableTagAlreadyExists if the name is taken,
    TableVersionNotFound if the version does not exist; a name that cannot be a file name (empty, too long, a
    control character: pylance allows ``[A-Za-z0-9._-]``) is InvalidInput."""
    ids.validate_identifier([request.tag], "tag")
    table, dataset, tags = _tagged(catalog, request.id)
    if request.tag in tags:
        raise ln.TableTagAlreadyExistsError(f"Table tag already exists: '{request.tag}' of '{table.object_id}'")
    target = _reference(dataset, table, request.version, request.branch)
    with pylance_errors(f"tag of '{table.object_id}'", request.tag):
        dataset.tags.create(request.tag, target)
    return ln.CreateTableTagResponse()


def list_table_tags(catalog: Catalog, request: ln.ListTableTagsRequest) -> ln.ListTableTagsResponse:
    """ListTableTags: tags by name with their version, branch and manifest size, paged by name."""
    _, _, tags = _tagged(catalog, request.id)
    page, token = ids.paginate(tags, request.page_token, request.limit)
    contents = {
        name: TagContents(
            branch=tags[name]["branch"], version=tags[name]["version"], manifest_size=tags[name]["manifest_size"]
        )
        for name in page
    }
    return ln.ListTableTagsResponse(tags=contents, page_token=token)


def get_table_tag_version(catalog: Catalog, request: ln.GetTableTagVersionRequest) -> ln.GetTableTagVersionResponse:
    """GetTableTagVersion: the version (and branch) a tag names."""
    table, dataset, _ = _tagged(catalog, request.id)
    version, branch = tag_target(dataset, table, request.tag)
    return ln.GetTableTagVersionResponse(version=version, branch=branch)


def update_table_tag(catalog: Catalog, request: ln.UpdateTableTagRequest) -> ln.UpdateTableTagResponse:
    """UpdateTableTag: move an existing tag to ``version`` (of ``branch``)."""
    table, dataset, tags = _tagged(catalog, request.id)
    if request.tag not in tags:
        raise tag_not_found(table, request.tag)
    target = _reference(dataset, table, request.version, request.branch)
    with pylance_errors(f"tag of '{table.object_id}'", request.tag):
        dataset.tags.update(request.tag, target)
    return ln.UpdateTableTagResponse()


def delete_table_tag(catalog: Catalog, request: ln.DeleteTableTagRequest) -> ln.DeleteTableTagResponse:
    """DeleteTableTag: remove a tag (the version it named stays)."""
    table, dataset, tags = _tagged(catalog, request.id)
    if request.tag not in tags:
        raise tag_not_found(table, request.tag)
    with pylance_errors(f"tag of '{table.object_id}'", request.tag):
        dataset.tags.delete(request.tag)
    return ln.DeleteTableTagResponse()
