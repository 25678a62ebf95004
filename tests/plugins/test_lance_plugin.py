"""The Airflow plugin ``lance`` in a real API server: listed by ``airflow plugins``, the page answers only to a
logged-in user (SimpleAuthManager) who may read the connection, and the extra link of the example DAG's commit
task (after a real ``airflow dags test`` with Spark) opens the run's page with the tables it committed."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from scripts.demo import demo_environment
from tests.browser import CHROMIUM, WatchedPage, chromium, free_port
from tests.example_dags.test_lance_spark_batch_commit import airflow

pytestmark = pytest.mark.airflow

DAG_ID = "lance_spark_batch_commit"
# The API server renders a page on a busy 2-core machine in seconds (the first opens Lance files): no 5 s default.
HTTP = SimpleNamespace(get=partial(httpx.get, timeout=60.0), post=partial(httpx.post, timeout=60.0))
USERS = {"admin": "admin-password", "viewer": "viewer-password"}


def test_plugin_is_listed(tmp_path: Path) -> None:
    home = tmp_path / "airflow"
    home.mkdir()
    env = demo_environment(tmp_path / "ns", tmp_path / "work", home)
    listed = airflow(env, "plugins", "-o", "json").stdout
    plugins = json.loads(listed[listed.index("[") :])
    (lance,) = [p for p in plugins if p["name"] == "lance"]
    assert "/lance" in str(lance["fastapi_apps"])
    assert "Lance catalog" in str(lance["external_views"])


@pytest.fixture(scope="module")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The example DAG run once (real Spark), then ``airflow api-server`` on 127.0.0.1 with SimpleAuthManager."""
    base = tmp_path_factory.mktemp("plugin")
    home, root, work = base / "airflow", base / "namespace", base / "staging"
    for path in (home, root, work):
        path.mkdir()
    passwords = base / "passwords.json"
    passwords.write_text(json.dumps(USERS))
    env = demo_environment(root, work, home)
    for key in [k for k in env if k.startswith("LANCE_TEST_")]:
        env.pop(key)
    env.update(
        {
            "AIRFLOW__CORE__AUTH_MANAGER": (
                "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
            ),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin,viewer:viewer",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
            "AIRFLOW__API_AUTH__JWT_SECRET": "lance-plugin-test-secret",
        }
    )
    airflow(env, "db", "migrate")
    airflow(env, "dags", "test", DAG_ID, "-c", json.dumps({"rows": 20}))
    port = free_port()
    log = (base / "api-server.log").open("w")
    server = subprocess.Popen(
        [env["PATH"].split(":")[0] + "/airflow", "api-server", "--host", "127.0.0.1", "--port", str(port), "-w", "1"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/api/v2/monitor/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None, (base / "api-server.log").read_text()[-5000:]
            assert time.monotonic() < deadline, "api-server did not start"
            time.sleep(0.5)
        yield {"url": url, "env": env}
    finally:
        server.terminate()
        server.wait(30)
        log.close()


def token(url: str, user: str) -> str:
    response = HTTP.post(f"{url}/auth/token", json={"username": user, "password": USERS[user]})
    assert response.status_code in (200, 201), response.text
    return response.json()["access_token"]


@pytest.mark.spark  # the API server's fixture runs the example DAG first
def test_page_answers_only_to_a_logged_in_user(api_server: dict[str, Any]) -> None:
    url = api_server["url"]
    page = f"{url}/lance/table/versions?id=demo&id=users"
    browser_redirect = HTTP.get(page, headers={"accept": "text/html"})
    assert browser_redirect.status_code == 303
    assert "/auth/login" in browser_redirect.headers["location"]
    anonymous = HTTP.get(page)
    assert anonymous.status_code == 401 and "demo" not in anonymous.text
    forged = HTTP.get(page, cookies={"_token": "not-a-jwt"})
    assert forged.status_code == 403 and "users" not in forged.text
    assert HTTP.post(page, headers={"authorization": f"Bearer {token(url, 'admin')}"}).status_code == 405

    admin = HTTP.get(page, headers={"authorization": f"Bearer {token(url, 'admin')}"})
    assert admin.status_code == 200 and f"{DAG_ID}" in admin.text
    # A viewer may not read connections, so it does not get the catalog either.
    viewer = HTTP.get(page, cookies={"_token": token(url, "viewer")})
    assert viewer.status_code == 404 and "may not read connection" in viewer.text and DAG_ID not in viewer.text


@pytest.mark.spark
@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium package is not installed (apt-get install chromium)")
def test_extra_link_of_the_commit_task_opens_what_it_committed(api_server: dict[str, Any]) -> None:
    url = api_server["url"]
    bearer = {"authorization": f"Bearer {token(url, 'admin')}"}
    runs = HTTP.get(f"{url}/api/v2/dags/{DAG_ID}/dagRuns", headers=bearer).json()["dag_runs"]
    (run_id,) = [run["dag_run_id"] for run in runs]
    links = HTTP.get(
        f"{url}/api/v2/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/commit_versions/links", headers=bearer
    ).json()["extra_links"]
    link = links["Lance catalog"]
    assert link.startswith("/lance/run?")
    plugins = HTTP.get(f"{url}/api/v2/plugins", headers=bearer).json()["plugins"]
    (lance,) = [p for p in plugins if p["name"] == "lance"]
    assert lance["external_views"][0]["href"] == "/lance/"

    with chromium() as browser:
        tab = WatchedPage(browser)
        tab.context.add_cookies([{"name": "_token", "value": token(url, "admin"), "url": url}])
        assert tab.open(url + link).status == 200
        lines = tab.tab.locator("table.commits tbody tr")
        assert lines.count() == 1  # the batch commit is one line
        assert sorted(tab.tab.locator("table.commits a.tv").all_inner_texts()) == [
            "demo.events v1",
            "demo.scores v1",
            "demo.users v1",
        ]
        assert "commit_versions" in lines.inner_text() and run_id in tab.tab.locator("h1").inner_text()
        tab.screenshot("airflow-run")
        tab.tab.locator("a.tv", has_text="demo.users v1").click()
        tab.tab.wait_for_load_state("load")
        assert run_id in tab.tab.locator('tr[data-version="1"]').inner_text()
        assert tab.tab.locator("select[name=conn]").input_value() == "lance_default"
        tab.screenshot("airflow-history")
        # The navigation entry: the UI's plugin route embeds the page.
        tab.open(f"{url}/plugin/lance")
        frame = tab.tab.frame_locator("iframe")
        assert frame.locator("table.namespaces").inner_text(timeout=60_000).split() == [
            "Namespace",
            "Tables",
            "demo",
            "3",
        ]
        tab.screenshot("airflow-ui")
        assert tab.dialogs == [] and tab.errors == []
        tab.close()
