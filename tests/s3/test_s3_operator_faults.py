"""The batch-commit operator on S3 through the fault-injecting proxy: a task that Airflow runs again (after a lost
acknowledgement, a lost heartbeat or a worker that died after the commit point) finishes as committed once,
neither as a conflict nor twice."""

from __future__ import annotations

import uuid

import pytest

import tests.airflow_helpers  # noqa: F401  (sets AIRFLOW_HOME before Airflow is imported)
from airflow_provider_lance.hooks.lance import LanceHook
from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.operators.version import LanceBatchCreateTableVersionsOperator
from tests.airflow_helpers import lance_root, set_conn, stage_append, write_table  # noqa: F401  (fixtures)
from tests.fault_proxy import FaultProxy, FaultRates
from tests.operators.context import make_context
from tests.s3.conftest import BUCKET, MotoServer

pytestmark = pytest.mark.s3


@pytest.mark.parametrize("seed", [1, 2])
def test_a_retried_batch_commit_commits_once_under_lost_acknowledgements(moto_server, set_conn, seed) -> None:  # noqa: F811
    root = f"s3://{BUCKET}/op-{uuid.uuid4().hex[:8]}"
    direct = moto_server.properties(root, table_version_management="true")
    clean = DirectoryNamespace(**direct)
    for name in ("a", "b", "c"):
        write_table(clean, [name])
    entries = [stage_append(clean, [name]) for name in ("a", "b", "c")]
    with FaultProxy(moto_server.endpoint, FaultRates(lost_ack=0.4, reset=0.05), seed=seed) as proxy:
        through_proxy = MotoServer(proxy.endpoint, 0).properties(root, table_version_management="true")
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
    set_conn(root=root, extra={key: value for key, value in direct.items() if key != "root"})
    hook_view = LanceHook()
    for name in ("a", "b", "c"):
        assert hook_view.get_latest_version(name) == 2  # committed once, not twice
