"""Which versions a pipeline run already committed: the run identity recorded in version metadata.

A pipeline run (an Airflow DAG run: ``<dag_id>/<run_id>``) records its identity as ``airflow_run_id`` in the
metadata of every version it commits. A rerun of the same run asks :func:`committed_by_run` before staging,
so that it stages nothing new for a table the run already committed (and the commit finds it committed).
Needs a catalog that records version metadata (table version management).
"""

from __future__ import annotations

from collections.abc import Sequence

import lance_namespace as ln
from lance_namespace import LanceNamespace

# The metadata keys of the run identity and of the committing task's key (``<dag_id>/<run_id>/<task_id>/
# <map_index>``): defined once, where the engine's change feed reads them.
from airflow_provider_lance.namespace.changes import RUN_ID_METADATA, RUN_KEY_METADATA

__all__ = ["RUN_ID_METADATA", "RUN_KEY_METADATA", "committed_by_run"]


def committed_by_run(namespace: LanceNamespace, table_id: Sequence[str], run_id: str) -> ln.TableVersion | None:
    """Return the newest version of a table committed by ``run_id``, None when there is none.

    :param namespace: the namespace.
    :param table_id: the table identifier.
    :param run_id: the run identity.
    """
    request = ln.ListTableVersionsRequest(id=list(table_id), descending=True)
    try:
        while True:
            response = namespace.list_table_versions(request)
            for version in response.versions or []:
                if (version.metadata or {}).get(RUN_ID_METADATA) == run_id:
                    return version
            if not response.page_token or response.page_token == request.page_token:
                return None
            request = request.model_copy(update={"page_token": response.page_token})
    except (ln.TableNotFoundError, ln.NamespaceNotFoundError):
        return None


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
