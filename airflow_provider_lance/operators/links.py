"""The task's link to the catalog page of what it committed (Airflow UI: the task instance's extra links).

The link is built in the worker when the task finishes (Airflow stores it in XCom for the UI) from the task's
result: the versions a commit committed open the page of the DAG run restricted to those tables (one batch
is one line), what a rollback restored or a tag tagged opens the list of those table versions.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from airflow.providers.common.compat.sdk import BaseOperatorLink, XCom

from airflow_provider_lance.plugins import CONN_PARAM, URL_PREFIX

if TYPE_CHECKING:
    from airflow.models.taskinstancekey import TaskInstanceKey
    from airflow.sdk import BaseOperator


def catalog_path(result: Any, conn_id: str, run: str) -> str | None:
    """Return the page (path and query, below the plugin's prefix) showing what a task's result names.

    :param result: the task's return value (``versions``, ``restored`` or ``tagged`` lists of
        ``{"table_id": [...], "version": N}``).
    :param conn_id: the task's Lance connection.
    :param run: the DAG run, ``<dag_id>/<run_id>``.
    """
    if not isinstance(result, dict):
        return None
    params: list[tuple[str, str]] = [(CONN_PARAM, conn_id)]
    if result.get("versions"):
        params.append(("run", run))
        params.extend(("table", json.dumps(list(v["table_id"]))) for v in result["versions"])
        return f"/run?{urlencode(params)}"
    listed = result.get("restored") or result.get("tagged")
    if listed:
        for item in listed:
            params.extend([("table", json.dumps(list(item["table_id"]))), ("version", str(item["version"]))])
        return f"/versions?{urlencode(params)}"
    return None


class LanceCatalogLink(BaseOperatorLink):
    """The extra link "Lance catalog": the page of the table versions the task committed, restored or tagged."""

    name = "Lance catalog"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        """Return the link, empty when the task returned nothing to show (it failed, or committed nothing).

        :param operator: the task.
        :param ti_key: the task instance.
        """
        from airflow.configuration import conf

        result = XCom.get_value(ti_key=ti_key, key="return_value")
        path = catalog_path(result, getattr(operator, "lance_conn_id", ""), f"{ti_key.dag_id}/{ti_key.run_id}")
        if path is None:
            return ""
        base = (conf.get("api", "base_url", fallback="") or "").rstrip("/")
        return f"{base}{URL_PREFIX}{path}"
