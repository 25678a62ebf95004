"""The page's own server (``python -m airflow_provider_lance.page``) and its independence from Airflow."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.browser import free_port

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # starts processes of its own
def test_page_package_does_not_import_airflow() -> None:
    code = "import sys, airflow_provider_lance.page; assert not any(m.split('.')[0] == 'airflow' for m in sys.modules)"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=120)


@pytest.mark.slow  # starts processes of its own
def test_command_line_server(root: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "airflow_provider_lance.page", "--root", str(root), "--port", str(port)]
    server = subprocess.Popen([*command, "--property", "table_version_management=true"], cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except httpx.HTTPError:
                assert server.poll() is None and time.monotonic() < deadline, "the page server did not start"
                time.sleep(0.2)
        assert response.status_code == 200 and "Namespace &lt;root&gt;" in response.text
        assert response.headers["content-security-policy"].startswith("default-src 'none'")
        assert httpx.post(f"http://127.0.0.1:{port}/").status_code == 405
    finally:
        server.terminate()
        server.wait(10)


def test_an_error_has_the_same_status_on_the_page_as_in_rest(tmp_path: Path) -> None:
    """One error→HTTP mapping (utils/http_status.py): the page over a REST catalog reached without its token
    answers the UnauthenticatedError with 401, as the REST server answers the request itself."""
    import lance_namespace as ln

    from airflow_provider_lance.namespace import DirectoryNamespace
    from airflow_provider_lance.page.app import create_page_app
    from airflow_provider_lance.rest import ServerSettings
    from airflow_provider_lance.rest.client import RestNamespace
    from tests.rest.servers import serve_app, serve_namespace

    settings = ServerSettings(tokens=frozenset({"page-test-token"}))
    with serve_namespace(DirectoryNamespace(root=str(tmp_path)), settings) as rest_url:
        assert httpx.get(f"{rest_url}/v1/namespace/$/list").status_code == 401
        client = RestNamespace(uri=rest_url)  # no token
        with pytest.raises(ln.UnauthenticatedError):
            client.list_namespaces(ln.ListNamespacesRequest(id=[]))
        with serve_app(create_page_app(client)) as page_url:
            response = httpx.get(f"{page_url}/")
    assert response.status_code == 401
    assert "UnauthenticatedError" in response.text and "A valid bearer token is required" in response.text
