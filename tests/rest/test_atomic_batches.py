"""Atomic batches through REST while the server dies: 8 clients commit batches of 3 tables each
(BatchCreateTableVersions), the server is SIGKILLed twice mid-way and restarted on the same port. Afterwards
every batch is in all 3 of its tables or in none, each at most once, and every acknowledged batch is there."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.rest.client import RestNamespace
from airflow_provider_lance.staging import StagingNamespace, stage_data
from tests.rest.servers import ServerProcess

pytestmark = pytest.mark.slow  # starts processes of its own

CLIENTS, ROUNDS, TABLES = 8, 10, ("a", "b", "c")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _batches_in(namespace: ln.LanceNamespace, table_id: list[str]) -> list[str]:
    try:
        dataset = lance.dataset(namespace_client=namespace, table_id=table_id)
    except Exception:  # not created yet
        return []
    return dataset.to_table(columns=["batch"]).column("batch").to_pylist()


def _client(
    worker: int, url: str, acknowledged: list[str], problems: list[str], failures: list[str], deadline: float
) -> None:
    """Commit ROUNDS batches; after a failure, find out from storage whether the batch landed (in all three
    tables: count it; in none: stage and commit it again; in some: a broken promise)."""
    check = DirectoryNamespace(root=_client.root)  # type: ignore[attr-defined]
    ids = [["w", f"c{worker}_{name}"] for name in TABLES]
    for round_ in range(ROUNDS):
        batch = f"{worker}-{round_}"
        while time.monotonic() < deadline:
            try:
                client = RestNamespace(uri=url)
                staging = StagingNamespace(client)
                entries = [
                    stage_data(client, table_id, pa.table({"batch": [batch]}), staging=staging) for table_id in ids
                ]
                client.batch_create_table_versions(ln.BatchCreateTableVersionsRequest(entries=entries))
                acknowledged.append(batch)
                break
            except Exception as error:
                failures.append(type(error).__name__)
                landed = [batch in _batches_in(check, table_id) for table_id in ids]
                if all(landed):
                    break
                if any(landed):
                    problems.append(f"batch {batch} is in {landed} of its tables")
                    return
                time.sleep(0.2)  # the server is down, or lost the race: stage again on the latest versions
        else:
            problems.append(f"batch {batch} was never committed")


def test_batches_stay_all_or_nothing_through_server_kills(root: Path) -> None:
    port = _free_port()
    args = ["--root", str(root), "--port", str(port), "--property", "table_version_management=true", "--no-page"]
    url = f"http://127.0.0.1:{port}"
    engine = DirectoryNamespace(root=str(root), table_version_management="true")
    engine.create_namespace(ln.CreateNamespaceRequest(id=["w"]))
    _client.root = str(root)  # type: ignore[attr-defined]

    acknowledged: list[str] = []
    problems: list[str] = []
    failures: list[str] = []
    deadline = time.monotonic() + 240
    server = ServerProcess(args)
    try:
        threads = [
            threading.Thread(target=_client, args=(w, url, acknowledged, problems, failures, deadline))
            for w in range(CLIENTS)
        ]
        for thread in threads:
            thread.start()
        for _ in range(2):
            time.sleep(0.8)
            server.kill()  # SIGKILL: commits in flight are cut wherever they are
            time.sleep(0.3)
            server = ServerProcess(args)
        for thread in threads:
            thread.join()
    finally:
        server.kill()

    assert problems == []
    assert failures, "the kills interrupted no client: the test proved nothing"
    fresh = DirectoryNamespace(root=str(root))
    expected = {f"{w}-{r}" for w in range(CLIENTS) for r in range(ROUNDS)}
    for worker in range(CLIENTS):
        per_table = [_batches_in(fresh, ["w", f"c{worker}_{name}"]) for name in TABLES]
        for batches in per_table:
            assert len(batches) == len(set(batches)), f"a batch was committed twice: {batches}"
        assert per_table[0] and all(set(batches) == set(per_table[0]) for batches in per_table)
        assert set(per_table[0]) == {b for b in expected if b.startswith(f"{worker}-")}
    assert set(acknowledged) <= expected
    # the reference reads the same catalog
    from lance.namespace import DirectoryNamespace as Reference

    reference = Reference(root=str(root), table_version_tracking_enabled="true")
    assert len(reference.list_tables(ln.ListTablesRequest(id=["w"])).tables) == CLIENTS * len(TABLES)
