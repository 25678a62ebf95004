"""The batch-commit operator on S3 and Azure (moto, Azurite) through the fault-injecting proxy: a task that
Airflow runs again (after a lost acknowledgement, a lost heartbeat or a worker that died after the commit point)
finishes as committed once, neither as a conflict nor twice."""

from __future__ import annotations

import uuid

import pytest

import tests.airflow_helpers  # noqa: F401  (sets AIRFLOW_HOME before Airflow is imported)
from airflow_provider_lance.hooks.lance import LanceHook
from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace.storage import login_options
from airflow_provider_lance.operators.version import LanceBatchCreateTableVersionsOperator
from tests.airflow_helpers import lance_root, set_conn, stage_append, write_table  # noqa: F401  (fixtures)
from tests.fault_proxy import FaultProxy, FaultRates
from tests.operators.context import make_context
from tests.s3.conftest import ObjectStore


@pytest.mark.parametrize("seed", [1, 2])
def test_a_retried_batch_commit_commits_once_under_lost_acknowledgements(
    object_store: ObjectStore,
    set_conn,  # noqa: F811
    seed: int,
) -> None:
    root = f"{object_store.root}/op-{uuid.uuid4().hex[:8]}"
    direct = object_store.properties(root, table_version_management="true")
    clean = DirectoryNamespace(**direct)
    for name in ("a", "b", "c"):
        write_table(clean, [name])
    entries = [stage_append(clean, [name]) for name in ("a", "b", "c")]
    with FaultProxy(object_store.server.url, FaultRates(lost_ack=0.4, reset=0.05), seed=seed) as proxy:
        through_proxy = object_store.properties(root, via=proxy.endpoint, table_version_management="true")
        extra = {key: value for key, value in through_proxy.items() if key != "root"}
        set_conn(root=root, extra=extra)
        results = []
        for _ in range(2):  # the task, then Airflow's retry of it
            operator = LanceBatchCreateTableVersionsOperator(task_id="batch", entries=entries)
            try:
                results.append(operator.execute(make_context("batch")))
            except Exception as error:  # a failed attempt must say what happened, nothing half-done
                results.append(repr(error))
        injected = proxy.totals()["lost_ack"]
    print(f"\nseed {seed}: {injected} lost acknowledgements; attempts answered {results}")
    assert injected > 0
    expected = [{"table_id": [name], "version": 2} for name in ("a", "b", "c")]
    first, retry = results
    if isinstance(first, str):
        # the store failed a request before the commit point past the client's retries: a clean failure that
        # blames nobody, and the retry commits (a failure after the commit point would make it find the commit)
        assert first.startswith("AirflowException(") and "ServiceUnavailableError" in first, first
        assert retry == {"versions": expected, "already_committed": False}
    else:
        assert first == {"versions": expected, "already_committed": False}  # lost acks recognised by the engine
        assert retry == {"versions": expected, "already_committed": True}  # the retry finds this run's commit
    # a connection as a user writes one: login/password are the S3 key id/secret or the Azure account name/key
    login, password = (direct.pop(f"storage.{name}") for name in login_options(root))
    set_conn(root=root, login=login, password=password, extra={k: v for k, v in direct.items() if k != "root"})
    hook_view = LanceHook()
    for name in ("a", "b", "c"):
        assert hook_view.get_latest_version(name) == 2  # committed once, not twice
