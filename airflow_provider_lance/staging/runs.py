"""Which versions a pipeline run already committed: the run identity recorded in version metadata.

A pipeline run (an Airflow DAG run: ``<dag_id>/<run_id>``) records its identity as ``airflow_run_id`` in the
metadata of every version it commits. A rerun of the same run asks :func:`committed_by_run` before staging,
so that it stages nothing new for a table the run already committed (and the commit finds it committed).
Needs a catalog that records version metadata (table version management).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import lance_namespace as ln
from lance_namespace import LanceNamespace

from airflow_provider_lance.implementations import pages

# The metadata keys of the run identity and of the committing task's key (``<dag_id>/<run_id>/<task_id>/
# <map_index>``): defined once, where the engine's change feed reads them.
from airflow_provider_lance.namespace.changes import RUN_ID_METADATA, RUN_KEY_METADATA

__all__ = ["RUN_ID_METADATA", "RUN_KEY_METADATA", "committed_by_run", "committed_entry", "run_versions"]


def run_versions(
    list_versions: Callable[[ln.ListTableVersionsRequest], Any], table_id: Sequence[str], run_id: str
) -> Iterator[ln.TableVersion]:
    """Every version of a table committed by ``run_id``, newest first (none when the table does not exist): the
    one run lookup of the Spark job, the hook and the page.

    :param list_versions: Calls ``list_table_versions`` (a namespace's method, or the hook's call of it).
    :param table_id: the table identifier.
    :param run_id: the run identity.
    """
    request = ln.ListTableVersionsRequest(id=list(table_id), descending=True)
    try:
        for response in pages(list_versions, request):
            for version in ln.ListTableVersionsResponse.model_validate(response).versions or []:
                if (version.metadata or {}).get(RUN_ID_METADATA) == run_id:
                    yield version
    except (ln.TableNotFoundError, ln.NamespaceNotFoundError):
        return


def committed_by_run(namespace: LanceNamespace, table_id: Sequence[str], run_id: str) -> ln.TableVersion | None:
    """Return the newest version of a table committed by ``run_id``, None when there is none.

    :param namespace: the namespace.
    :param table_id: the table identifier.
    :param run_id: the run identity.
    """
    return next(run_versions(namespace.list_table_versions, table_id, run_id), None)


def committed_entry(table_id: Sequence[str], version: ln.TableVersion) -> ln.CreateTableVersionEntry:
    """Return an entry describing an already committed version (the commit recognises and skips it).

    :param table_id: the table identifier.
    :param version: the committed version.
    """
    return ln.CreateTableVersionEntry(
        id=list(table_id),
        version=int(version.version),
        manifest_path=version.manifest_path,
        manifest_size=version.manifest_size,
        e_tag=version.e_tag,
        metadata=dict(version.metadata or {}),
    )
