"""Real Airflow against the REST server whose principals are token principals: a DAG whose only credential is
a token file, rotated mid-run, goes on as the new token's principal; no token in the task logs, XCom, the
server's log or the catalog page."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lance_namespace as ln
import pytest

from tests.airflow_helpers import AIRFLOW_HOME, conn_json, load_dag_file, migrate_airflow_db

pytestmark = pytest.mark.airflow

DAG_FILE = Path(__file__).parent / "dags" / "lance_token_file.py"


@pytest.fixture
def token_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Our server over a fresh engine (namespaces ``before`` and ``after``) trusting a Kubernetes-like issuer:
    service account ``etl:before`` writes ``before``, ``etl:after`` writes ``after``; the connection
    ``lance_default`` names the server and a token file holding the first account's token."""
    from airflow_provider_lance.namespace import DirectoryNamespace
    from airflow_provider_lance.page import create_page_app
    from airflow_provider_lance.rest import ServerSettings, create_app
    from airflow_provider_lance.rest.authorization import page_source
    from airflow_provider_lance.rest.principals import PrincipalStore
    from tests.rest.servers import serve_app
    from tests.rest.token_issuer import issuer_entry, serve_issuer, service_account

    migrate_airflow_db()
    engine = DirectoryNamespace(root=str(tmp_path / "root"), table_version_management="true")
    for namespace in ("before", "after"):
        engine.create_namespace(ln.CreateNamespaceRequest(id=[namespace]))
    with serve_issuer() as issuer:
        principals = [
            {
                "name": f"{name}-worker",
                "match": {"subject": service_account("etl", name)},
                "grants": [{"namespace": name, "level": "write"}],
            }
            for name in ("before", "after")
        ]
        path = tmp_path / "principals.json"
        path.write_text(json.dumps({"issuers": [issuer_entry(issuer)], "principals": principals}))
        tokens = [issuer.token(service_account("etl", "before")), issuer.token(service_account("etl", "after"), "ec-1")]
        token_file, next_token = tmp_path / "token", tmp_path / "token.next"
        token_file.write_text(tokens[0])
        next_token.write_text(tokens[1])
        app = create_app(
            engine, ServerSettings(principals=PrincipalStore(str(path))), create_page_app(page_source(engine))
        )
        with serve_app(app) as url:
            monkeypatch.setenv("LANCE_TOKEN_FILE", str(token_file))
            monkeypatch.setenv("LANCE_NEXT_TOKEN", str(next_token))
            connection = conn_json(url, "rest", extra={"token_file": str(token_file)})
            monkeypatch.setenv("AIRFLOW_CONN_LANCE_DEFAULT", connection)
            yield {"url": url, "tokens": tokens, "engine": engine}


def test_a_dag_whose_only_credential_is_a_token_file_survives_its_rotation(
    token_run: dict[str, Any], capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    import httpx
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from starlette.testclient import TestClient

    from airflow_provider_lance.hooks.lance import LanceHook
    from airflow_provider_lance.page import create_page_app

    caplog.set_level(logging.INFO)
    module = load_dag_file(DAG_FILE, "lance_token_file_dags")
    dag_run = module.dag.test()
    states = {ti.task_id: str(getattr(ti.state, "value", ti.state)) for ti in dag_run.get_task_instances()}
    assert str(getattr(dag_run.state, "value", dag_run.state)) == "success", states
    assert set(states.values()) == {"success"}, states

    engine = token_run["engine"]
    versions = {
        t: engine.describe_table(ln.DescribeTableRequest(id=t.split("."))).version for t in ("before.t", "after.t")
    }
    assert versions == {"before.t": 1, "after.t": 2}  # the commit after the rotation went through
    hook = LanceHook()
    assert hook.table_exists("after.declared")
    with pytest.raises(ln.PermissionDeniedError, match="'after-worker'"):  # the hook now is the new account
        hook.namespace.declare_table(ln.DeclareTableRequest(id=["before", "late"]))

    with create_session() as session:
        xcoms = session.query(XComModel).filter(XComModel.run_id == dag_run.run_id).all()
        stored = json.dumps([str(x.value) for x in xcoms])
    assert xcoms, "the run pushed XCom values"
    captured = capfd.readouterr()
    task_logs = "\n".join(p.read_text(errors="replace") for p in (AIRFLOW_HOME / "logs").rglob("*") if p.is_file())
    server_log = "\n".join(record.getMessage() for record in caplog.records)
    with httpx.Client(base_url=token_run["url"]) as http:
        page = http.get("/", headers={"Authorization": f"Bearer {token_run['tokens'][1]}"})
        assert page.status_code == 200 and "after" in page.text
    airflow_page = TestClient(create_page_app(LanceHook().namespace)).get("/")
    assert airflow_page.status_code == 200 and "after" in airflow_page.text
    for token in token_run["tokens"]:
        for where, text in {
            "XCom": stored,
            "task output": captured.out + captured.err,
            "task log files": task_logs,
            "server log": server_log,
            "REST page": page.text,
            "Airflow page": airflow_page.text,
        }.items():
            assert token not in text and token[-40:] not in text, f"a token reached the {where}"
