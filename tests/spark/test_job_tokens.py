"""The staging job (on the tests' local[2] session) against a REST server whose principals are token
principals: its only credential is a token file, handed over the way LanceSparkStagingOperator does it for a
connection with ``token_file`` (``LANCE_NAMESPACE_PROPERTIES``), and asked before every call."""

from __future__ import annotations

import json
from pathlib import Path

import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.rest import ServerSettings, create_app
from airflow_provider_lance.rest.principals import PrincipalStore
from airflow_provider_lance.rest.token_sources import provider_properties
from airflow_provider_lance.spark.job import ENV_IMPL, ENV_PROPERTIES, run
from airflow_provider_lance.staging import latest_version, read_entries
from tests.rest.servers import serve_app
from tests.rest.token_issuer import issuer_entry, serve_issuer, service_account

pytestmark = pytest.mark.spark


def test_the_staging_job_with_a_token_file(
    spark: object, tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = DirectoryNamespace(root=str(root), table_version_management="true")
    engine.create_namespace(ln.CreateNamespaceRequest(id=["shop"]))
    with serve_issuer() as issuer:
        principal = {"name": "spark", "match": {"subject": "system:serviceaccount:spark:*"}}
        principal["grants"] = [{"namespace": "shop", "level": "write"}]
        path = tmp_path / "principals.json"
        path.write_text(json.dumps({"issuers": [issuer_entry(issuer)], "principals": [principal]}))
        token_file = tmp_path / "token"
        token_file.write_text(issuer.token(service_account("spark", "driver"), "ec-1"))
        with serve_app(create_app(engine, ServerSettings(principals=PrincipalStore(str(path))))) as url:
            monkeypatch.setenv(ENV_IMPL, "rest")
            monkeypatch.setenv(
                ENV_PROPERTIES, json.dumps({"uri": url, **provider_properties(token_file=str(token_file))})
            )
            entries_out = tmp_path / "entries.json"
            summary = run(["--table", "shop.users=range:40", "--entries-out", str(entries_out)], spark=spark)
    assert summary["tables"] == [{"table": "shop.users", "version": 1, "rows": 40}]
    assert [e.id for e in read_entries(str(entries_out))] == [["shop", "users"]]
    assert latest_version(engine, ["shop", "users"]) == 0  # staged through the server, not committed
