"""What a ``LanceHook`` knows about its catalog: the root, the mode, managed versions, runs (a mixin)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from airflow.providers.common.compat.sdk import AirflowException

from airflow_provider_lance.implementations import property_prefix
from airflow_provider_lance.namespace.identifiers import parse_bool
from airflow_provider_lance.namespace.storage import Storage, normalize_root
from airflow_provider_lance.staging.runs import run_versions
from airflow_provider_lance.utils.identifiers import parse_identifier


class LanceCatalogMixin:
    """Catalog-level questions: does it manage versions, which versions did a DAG run commit, test the connection."""

    lance_conn_id: str
    namespace: Any
    get_namespace_config: Callable[[], tuple[str, dict[str, str]]]
    redact: Callable[[object], str]
    describe_table: Callable[..., Any]
    list_table_versions: Callable[..., list[Any]]
    list_namespaces: Callable[..., list[str]]
    list_tables: Callable[..., list[str]]

    def manages_versions(self, table_id: str | Sequence[str]) -> bool:
        """
        Return whether the catalog manages the versions of a table (``describe_table`` answers
        ``managed_versioning=True``); only then is a batch commit of several tables atomic.

        :param table_id: An existing table.
        """
        described = self.describe_table(table_id, load_detailed_metadata=False)
        return bool(described.managed_versioning)

    def catalog_mode(self) -> dict[str, Any]:
        """
        Describe the catalog's mode: ``layout`` (``V1``, ``V2`` or ``V1+V2 compat``) and
        ``table_version_management`` (None when the implementation does not say).
        """
        from airflow_provider_lance.namespace import DirectoryNamespace

        namespace = self.namespace
        if not isinstance(namespace, DirectoryNamespace):
            _, props = self.get_namespace_config()
            tvm = props.get("table_version_management")
            managed = None if tvm is None else parse_bool("table_version_management", tvm, False)
            return {"layout": "unknown", "table_version_management": managed}
        config = namespace.config
        if config.manifest_enabled and config.dir_listing_enabled:
            layout = "V1+V2 compat"
        else:
            layout = "V2" if config.manifest_enabled else "V1"
        return {"layout": layout, "table_version_management": bool(namespace.catalog.managed())}

    def find_run_version(self, table_id: str | Sequence[str], run_id: str) -> Any:
        """
        Return the newest version of a table committed by DAG run ``run_id`` (``<dag_id>/<run_id>``),
        None when there is none (or the catalog does not record version metadata).

        :param table_id: Table identifier.
        :param run_id: The DAG run identity recorded as ``airflow_run_id`` metadata.
        """
        list_versions = functools.partial(self._call, "list_table_versions")
        return next(run_versions(list_versions, parse_identifier(table_id), run_id), None)

    def test_connection(self) -> tuple[bool, str]:
        """
        Check the root (exists, writable), then report the mode and what the root holds. Creates nothing
        (the write check's probe object is deleted).
        """
        try:
            impl, props = self.get_namespace_config()
            problem = None
            if property_prefix(impl) == "dir." and props.get("root"):
                storage = {k.removeprefix("storage."): v for k, v in props.items() if k.startswith("storage.")}
                problem = Storage(normalize_root(props["root"]), storage).check_root()
            elif hasattr(self.namespace, "readiness_problem"):  # a REST server: its readiness route says
                problem = self.namespace.readiness_problem()
            if problem:
                return False, self.redact(f"Connection {self.lance_conn_id!r}: {problem}")
            mode = self.catalog_mode()
            namespaces = self.list_namespaces(limit=1000)
            tables = self.list_tables(limit=1000)
        except (AirflowException, Exception) as err:
            from airflow_provider_lance.hooks.errors import humanize

            return False, self.redact(f"{type(err).__name__}: {humanize(err)}")
        tvm = mode["table_version_management"]
        managed = {True: "on (atomic batch commits)", False: "off (batch commits are not atomic)"}.get(tvm, "unknown")
        return (
            True,
            f"Connection successfully tested: layout {mode['layout']}, table version management {managed}; "
            f"{len(namespaces)} namespace(s), {len(tables)} table(s) at root",
        )
