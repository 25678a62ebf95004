"""A deferrable sensor's trigger across credential lifetimes, with expiry enforced (tests/expiring_s3.py): the
trigger polls the namespace through the REST server (it holds no vended credential: the server reads
``__manifest`` with its own keys) while pylance writers commit the versions it waits for, each after the
credentials of the one before expired; every S3 request of the run is signed by a credential valid at that moment."""

from __future__ import annotations

import asyncio
import time

import lance
import pyarrow as pa
import pytest

from airflow_provider_lance.rest.client import RestNamespace
from airflow_provider_lance.triggers.lance import LanceTableVersionTrigger
from tests.airflow_helpers import conn_json
from tests.s3.conftest import moto_server, s3_root  # noqa: F401
from tests.s3.test_s3_expiry_enforced import LIFETIME, TOKEN, _valid_throughout, client, engine, expiring  # noqa: F401

pytestmark = [pytest.mark.airflow, pytest.mark.s3]


def test_version_trigger_waits_across_refreshes(
    monkeypatch: pytest.MonkeyPatch,
    expiring,  # noqa: F811
    client: RestNamespace,  # noqa: F811
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_LANCE_DEFAULT", conn_json(client._uri, "rest", password=TOKEN))
    lance.write_dataset(pa.table({"x": [0]}), namespace_client=client, table_id=["t"], mode="create")
    since = time.time()

    async def run() -> dict:
        trigger = LanceTableVersionTrigger(table_id="t", min_version=3, poll_interval=0.2)
        waiting = asyncio.create_task(trigger.run().__anext__())
        for value in (1, 2):
            await asyncio.sleep(1.25 * LIFETIME.total_seconds())
            assert not waiting.done()
            batch = pa.table({"x": [value]})
            await asyncio.to_thread(lance.write_dataset, batch, mode="append", namespace_client=client, table_id=["t"])
        return (await asyncio.wait_for(waiting, 30)).payload

    payload = asyncio.run(run())
    assert payload["status"] == "success" and payload["version"] == 3, payload
    _valid_throughout(expiring, since, renewals=1)
