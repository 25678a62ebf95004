"""Several server processes on one root (local disk and moto S3), clients spread across them: storage stays the
source of truth, so every write lands exactly once and a contested name has exactly one winner."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.rest.client import RestNamespace
from tests.rest.servers import ServerProcess
from tests.s3.conftest import moto_server, s3_props, s3_root  # noqa: F401  (fixtures)

pytestmark = pytest.mark.slow  # starts processes of its own

CLIENTS, OWN_TABLES, CONTESTED = 8, 6, 4


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def properties(request: pytest.FixtureRequest, root: Path) -> dict[str, str]:
    if request.param == "s3":  # catalog writes only: no credentials to vend (the command refuses the server's own)
        return {k: v for k, v in request.getfixturevalue("s3_props").items() if k != "credential_vending_enabled"}
    return {"root": str(root)}


@pytest.mark.parametrize("servers", [2, 4])
def test_writes_through_many_servers_land_exactly_once(
    properties: dict[str, str], servers: int, tmp_path: Path
) -> None:
    properties_file = tmp_path / "properties.json"  # credentials in a file, never in argv
    properties_file.write_text(json.dumps({**properties, "table_version_management": "true"}))
    processes = [ServerProcess(["--properties-file", str(properties_file), "--no-page"]) for _ in range(servers)]
    try:
        RestNamespace(uri=processes[0].url).create_namespace(ln.CreateNamespaceRequest(id=["s"]))
        wins: Counter[str] = Counter()
        errors: list[str] = []

        def client(worker: int) -> None:
            for i in range(OWN_TABLES):
                url = processes[(worker + i) % servers].url
                try:
                    RestNamespace(uri=url).declare_table(ln.DeclareTableRequest(id=["s", f"w{worker}_{i}"]))
                except Exception as error:
                    errors.append(f"own table w{worker}_{i}: {error}")
            for i in range(CONTESTED):  # every client declares the same names, each through another server
                url = processes[(worker + i) % servers].url
                try:
                    RestNamespace(uri=url).declare_table(ln.DeclareTableRequest(id=["s", f"shared{i}"]))
                    wins[f"shared{i}"] += 1
                except ln.TableAlreadyExistsError:
                    pass
                except Exception as error:
                    errors.append(f"shared{i}: {error}")

        threads = [threading.Thread(target=client, args=(w,)) for w in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for process in processes:
            process.kill()

    assert errors == []
    assert wins == {f"shared{i}": 1 for i in range(CONTESTED)}
    listed = DirectoryNamespace(**properties).list_tables(ln.ListTablesRequest(id=["s"])).tables
    expected = {f"w{w}_{i}" for w in range(CLIENTS) for i in range(OWN_TABLES)} | {
        f"shared{i}" for i in range(CONTESTED)
    }
    assert sorted(listed) == sorted(expected)  # each exactly once
