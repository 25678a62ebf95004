"""What every version-committing operator shares: run identity, rerun detection, atomicity checks, asset events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_provider_lance.hooks.errors import CONFLICT_ADVICE
from airflow_provider_lance.operators.base import LanceBaseOperator
from airflow_provider_lance.operators.links import LanceCatalogLink
from airflow_provider_lance.staging.runs import RUN_ID_METADATA, RUN_KEY_METADATA
from airflow_provider_lance.utils.identifiers import format_identifier
from airflow_provider_lance.utils.openlineage import TouchedTable

if TYPE_CHECKING:
    from airflow.sdk import Context


def run_key_from_context(context: Context) -> str:
    """
    Return the task's key ``<dag_id>/<run_id>/<task_id>/<map_index>`` (recorded for audit).

    :param context: The task context.
    """
    ti = context["ti"]
    map_index = getattr(ti, "map_index", -1)
    if map_index is None:
        map_index = -1
    return f"{ti.dag_id}/{ti.run_id}/{ti.task_id}/{map_index}"


def run_identity(context: Context) -> str:
    """
    Return the DAG run's identity ``<dag_id>/<run_id>``: the same for every try and every clear of the run.

    :param context: The task context.
    """
    ti = context["ti"]
    return f"{ti.dag_id}/{ti.run_id}"


class LanceCommitOperator(LanceBaseOperator):
    """
    Shared logic of the version-committing operators.

    Every committed version records ``airflow_run_id`` (``dag_id/run_id``) and ``airflow_run_key``
    (``.../task_id/map_index``) in its metadata. Before committing, each table is searched for a version
    committed by the same DAG run: a retried task, or a DAG run cleared and run again, finds it and does
    not commit that table again (this needs a catalog that records version metadata, i.e. table version
    management).

    :param allow_non_atomic: Commit several tables on a catalog without table version management, where
        a failure part-way leaves some tables committed. Even then every entry is checked (table exists,
        version is the next one) before any is committed.
    :param lance_conn_id: Connection id of the namespace. (templated)
    """

    operator_extra_links = (LanceCatalogLink(),)

    def __init__(self, *, allow_non_atomic: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.allow_non_atomic = allow_non_atomic

    def _prepare(self, entries: list[Any], run_key: str, run_id: str) -> list[Any]:
        """
        Return the entries as ``CreateTableVersionEntry`` models recording the run in their metadata.

        :param entries: Entries (models or dicts).
        :param run_key: The task's key.
        :param run_id: The DAG run's identity.
        """
        prepared = []
        for entry in entries:
            model = self.hook.to_version_entry(entry)
            metadata = {**(model.metadata or {}), RUN_KEY_METADATA: run_key, RUN_ID_METADATA: run_id}
            prepared.append(model.model_copy(update={"metadata": metadata}))
        return prepared

    def _split_committed(self, entries: list[Any], run_id: str) -> tuple[list[dict[str, Any]], list[Any]]:
        """
        Return ``(versions this DAG run already committed, entries still to commit)``.

        :param entries: The prepared entries.
        :param run_id: The DAG run's identity.
        """
        import lance_namespace as ln

        done, todo = [], []
        for entry in entries:
            try:
                existing = self.hook.find_run_version(entry.id, run_id)
            except (ln.TableNotFoundError, ln.NamespaceNotFoundError):
                existing = None
            if existing is None:
                todo.append(entry)
            else:
                done.append({"table_id": list(entry.id), "version": int(existing.version)})
        return done, todo

    def _check_entries(self, entries: list[Any]) -> None:
        """
        Fail (no retry) unless every entry can be committed: its table exists, its version is the next one,
        and, for several tables, the catalog manages versions (atomic) or ``allow_non_atomic`` is set.

        :param entries: The entries to commit.
        """
        import lance_namespace as ln

        unmanaged = []
        for entry in entries:
            name = format_identifier(entry.id)
            try:
                latest = self.hook.get_latest_version(entry.id) or 0
                managed = self.hook.manages_versions(entry.id)
            except (ln.TableNotFoundError, ln.NamespaceNotFoundError):
                raise AirflowFailException(
                    f"Cannot commit version {entry.version} of table {name}: the table does not exist "
                    "(stage it again, or declare it first)"
                ) from None
            if int(entry.version) != latest + 1:
                raise AirflowFailException(
                    f"Cannot commit version {entry.version} of table {name}: the table is at version {latest}, "
                    f"so the next version is {latest + 1}; {CONFLICT_ADVICE}"
                )
            if not managed:
                unmanaged.append(name)
        if unmanaged and len(entries) > 1 and not self.allow_non_atomic:
            raise AirflowFailException(
                f"Refusing to commit {len(entries)} tables non-atomically: the catalog of connection "
                f"{self.lance_conn_id!r} does not manage the versions of {', '.join(unmanaged)}, so a failure "
                "part-way would leave some tables committed. Turn on 'Table version management' in the "
                "connection (extra table_version_management=true, on a new catalog) or pass "
                "allow_non_atomic=True to accept partial commits"
            )
        if unmanaged and len(entries) > 1:
            self.log.warning("Committing %d tables NON-atomically (allow_non_atomic=True)", len(entries))

    def _finish(self, context: Context, committed: list[dict[str, Any]], already: bool) -> dict[str, Any]:
        """
        Record lineage and asset events of the committed versions and return the task's result.

        :param context: The task context.
        :param committed: ``{"table_id", "version"}`` of every version.
        :param already: Whether this DAG run had committed all of them before.
        """
        self._touched([TouchedTable(c["table_id"], None, c["version"]) for c in committed], "OVERWRITE")
        self._emit_table_events(context, committed)
        return {"versions": committed, "already_committed": already}
